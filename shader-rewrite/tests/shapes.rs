//! Unit tests on SPIR-V in/out for every base form and storage class the lowering follows.
//! Each input validates with raw access chains; each output must pass spirv-val and be free of
//! them. (Execution on lavapipe is covered by the end-to-end tests in tests/.)
mod common;
use common::{disassemble, rewrite_valid};
use shader_rewrite::{Options, RewriteError, Target};
use spvasm::{Module, GID_X};

const HEAD: &str = r#"
OpCapability Shader
OpCapability RawAccessChainsNV
OpExtension "SPV_NV_raw_access_chains"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid
OpExecutionMode %main LocalSize 1 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %rta ArrayStride 4
OpMemberDecorate %Block 0 Offset 0
OpDecorate %Block Block
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
OpDecorate %buf2 DescriptorSet 0
OpDecorate %buf2 Binding 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%u32 = OpTypeInt 32 0
%f32 = OpTypeFloat 32
%v3u = OpTypeVector %u32 3
%v4f = OpTypeVector %f32 4
%rta = OpTypeRuntimeArray %u32
%Block = OpTypeStruct %rta
%pBlock = OpTypePointer StorageBuffer %Block
%buf = OpVariable %pBlock StorageBuffer
%buf2 = OpVariable %pBlock StorageBuffer
%pin = OpTypePointer Input %v3u
%gid = OpVariable %pin Input
%pu = OpTypePointer StorageBuffer %u32
%pv4f = OpTypePointer StorageBuffer %v4f
%c0 = OpConstant %u32 0
%c4 = OpConstant %u32 4
%c16 = OpConstant %u32 16
%c20 = OpConstant %u32 20
"#;

/// An empty `if (%odd)` diamond: from the current block through `%t` to the merge block `%m`,
/// which the text goes on in.
const ODD_DIAMOND: &str = "OpSelectionMerge %m None
OpBranchConditional %odd %t %m
%t = OpLabel
OpBranch %m
%m = OpLabel";

fn module(extra_caps: &str, types: &str, body: &str, functions: &str) -> String {
    let head = HEAD.replacen("OpCapability Shader\n", &format!("OpCapability Shader\n{extra_caps}"), 1);
    format!(
        "{head}{types}
%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
{body}
OpReturn
OpFunctionEnd
{functions}"
    )
}

fn all() -> Options {
    Options::default()
}
/// Every feature, the driver's robustness rounding ranges to whole words: the lowering makes
/// every per-component check itself.
fn checked() -> Options {
    Options { target: Target { robust_storage_byte_exact: false, ..Target::all() }, ..Options::default() }
}
fn core() -> Options {
    Options { target: Target::core(), ..Options::default() }
}

#[test]
fn plain_variable_all_robustness_modes() {
    for robust in ["", "RobustnessPerComponentNV", "RobustnessPerElementNV"] {
        let body = format!(
            "%p = OpRawAccessChainNV %pv4f %buf %c20 %i %c4 {robust}
%v = OpLoad %v4f %p Aligned 4
%q = OpRawAccessChainNV %pv4f %buf %c20 %i %c0 {robust}
OpStore %q %v Aligned 4"
        );
        for o in [all(), core()] {
            let (_, s) = rewrite_valid(&module("", "", &body, ""), "vulkan1.1", &o);
            assert_eq!((s.raw_chains, s.loads, s.stores), (2, 1, 1));
        }
    }
}

#[test]
fn base_through_select_phi_and_copy_object() {
    // Selecting between two buffers needs full VariablePointers (spirv-val: "Variable pointers
    // must point into the same structure" under VariablePointersStorageBuffer).
    let caps = "OpCapability VariablePointers\n";
    let body = format!(
        "%odd = OpULessThan %bool %i %c4
%sel = OpSelect %pBlock %odd %buf %buf2
%cp = OpCopyObject %pBlock %sel
{ODD_DIAMOND}
%phi = OpPhi %pBlock %cp %t %buf %entry
%p = OpRawAccessChainNV %pu %phi %c0 %c0 %i RobustnessPerComponentNV
%v = OpLoad %u32 %p Aligned 4
%q = OpRawAccessChainNV %pu %sel %c4 %i %c0 RobustnessPerElementNV
OpStore %q %v Aligned 4"
    );
    let text = module(caps, "", &body, "").replace("OpExtension \"SPV_NV_raw_access_chains\"", "OpExtension \"SPV_NV_raw_access_chains\"\nOpExtension \"SPV_KHR_variable_pointers\"");
    let (_, s) = rewrite_valid(&text, "vulkan1.1", &all());
    assert_eq!(s.raw_chains, 2);
    // Both leave their checks to the driver: the per-component u32 load through the phi'd
    // pointer, and the per-element store of a u32 that is its whole element, at Offset 0.
    assert_eq!(s.raw_chain_bounds_by_driver, 2);
    // Where a null pointer may be selected, those chains keep their checks: an access through a
    // null pointer is undefined whatever the robustness; its range is empty.
    let null = text.replace("%sel = OpSelect %pBlock %odd %buf %buf2", "%sel = OpSelect %pBlock %odd %buf %nullp").replace("%c0 = OpConstant %u32 0", "%c0 = OpConstant %u32 0\n%nullp = OpConstantNull %pBlock");
    let (words, s) = rewrite_valid(&null, "vulkan1.1", &all());
    assert_eq!(s.raw_chain_bounds_by_driver, 0);
    let dis = disassemble(&words);
    assert!(dis.contains("OpSelectionMerge"), "the checks branch:\n{dis}");
}

#[test]
fn base_through_function_parameter() {
    let functions = "%f = OpFunction %void None %fnp
%param = OpFunctionParameter %pBlock
%idx = OpFunctionParameter %u32
%fe = OpLabel
%p = OpRawAccessChainNV %pu %param %c4 %idx %c0 RobustnessPerElementNV
%v = OpLoad %u32 %p Aligned 4
%w = OpIAdd %u32 %v %c4
OpStore %p %w Aligned 4
OpReturn
OpFunctionEnd";
    let body = "%r1 = OpFunctionCall %void %f %buf %i\n%r2 = OpFunctionCall %void %f %buf2 %i";
    // Passing an SSBO pointer to a function needs VariablePointersStorageBuffer.
    let text = module("OpCapability VariablePointersStorageBuffer\n", "%fnp = OpTypeFunction %void %pBlock %u32\n", body, functions)
        .replace("OpExtension \"SPV_NV_raw_access_chains\"", "OpExtension \"SPV_NV_raw_access_chains\"\nOpExtension \"SPV_KHR_variable_pointers\"");
    for o in [all(), core()] {
        rewrite_valid(&text, "vulkan1.1", &o);
    }
}

#[test]
fn nonuniform_descriptor_array_keeps_nonuniform() {
    let caps = "OpCapability RuntimeDescriptorArray\nOpCapability ShaderNonUniform\nOpCapability StorageBufferArrayNonUniformIndexing\n";
    let types = "%arr = OpTypeRuntimeArray %Block\n%parr = OpTypePointer StorageBuffer %arr\n%bufs = OpVariable %parr StorageBuffer\n";
    let body = "%b = OpAccessChain %pBlock %bufs %i
%p = OpRawAccessChainNV %pv4f %b %c16 %i %c0 RobustnessPerElementNV
%v = OpLoad %v4f %p Aligned 16
OpStore %p %v Aligned 16";
    let text = module(caps, types, body, "")
        .replace("OpDecorate %buf2 Binding 1", "OpDecorate %buf2 Binding 1\nOpDecorate %bufs DescriptorSet 1\nOpDecorate %bufs Binding 0\nOpDecorate %b NonUniform\nOpDecorate %p NonUniform\nOpDecorate %i NonUniform")
        .replace("OpExtension \"SPV_NV_raw_access_chains\"", "OpExtension \"SPV_NV_raw_access_chains\"\nOpExtension \"SPV_EXT_descriptor_indexing\"");
    let (words, _) = rewrite_valid(&text, "vulkan1.1", &all());
    let dis = common::disassemble(&words);
    assert!(dis.matches("NonUniform").count() >= 6, "NonUniform lost:\n{dis}");
    // With the lavapipe array-length quirk: a subgroup waterfall loop, still valid, in
    // SPIR-V 1.3 (GroupNonUniform) and 1.0 (SPV_KHR_shader_ballot) modules.
    let quirk = Options { target: Target { nonuniform_array_length_broken: true, ..Target::all() }, ..all() };
    let (words, _) = rewrite_valid(&text, "vulkan1.1", &quirk);
    assert!(common::disassemble(&words).contains("OpGroupNonUniformBroadcastFirst"));
    let old = text.replace("OpExtension \"SPV_EXT_descriptor_indexing\"", "OpExtension \"SPV_EXT_descriptor_indexing\"\nOpExtension \"SPV_KHR_storage_buffer_storage_class\"");
    let (words, _) = rewrite_valid(&old, "vulkan1.0", &quirk);
    assert!(common::disassemble(&words).contains("OpSubgroupFirstInvocationKHR"));
}

#[test]
fn spirv_1_5_interface_lists_alias_variables() {
    let body = "%p = OpRawAccessChainNV %pu %buf %c0 %c0 %i RobustnessPerComponentNV\n%v = OpLoad %u32 %p Aligned 4\nOpStore %p %v Aligned 4";
    let text = module("", "", body, "").replace("%main \"main\" %gid", "%main \"main\" %gid %buf %buf2");
    let (words, _) = rewrite_valid(&text, "vulkan1.2", &all());
    let dis = common::disassemble(&words);
    let ep = dis.lines().find(|l| l.contains("OpEntryPoint")).unwrap();
    // Every buffer variable left is listed (spirv-val checks that the used ones are); %buf2,
    // which nothing used, is gone with the other dead declarations.
    let interface: Vec<&str> = ep.split_whitespace().skip(4).collect();
    let buffers: Vec<&str> = dis.lines().filter(|l| l.contains("OpVariable") && l.contains("StorageBuffer")).map(|l| l.split_whitespace().next().unwrap()).collect();
    assert!(buffers.iter().all(|b| interface.contains(b)), "{ep}\n{dis}");
    assert_eq!(interface.len(), 1 + buffers.len(), "{ep}\n{dis}");
}

#[test]
fn buffer_block_in_uniform_spirv_1_0() {
    let text = Module::compute(1)
        .spirv(0)
        .raw_access_chains()
        .gid()
        .decorate("OpDecorate %rta ArrayStride 4\nOpMemberDecorate %Block 0 Offset 0\nOpDecorate %Block BufferBlock\nOpDecorate %buf DescriptorSet 0\nOpDecorate %buf Binding 0")
        .globals("%rta = OpTypeRuntimeArray %u32\n%Block = OpTypeStruct %rta\n%pBlock = OpTypePointer Uniform %Block\n%buf = OpVariable %pBlock Uniform")
        .main(&format!(
            "{GID_X}
%p = OpRawAccessChainNV %pun_v2u %buf %c8 %i %c0 RobustnessPerElementNV
%v = OpLoad %v2u %p Aligned 8
%q = OpRawAccessChainNV %pun_v2u %buf %c0 %c0 %i RobustnessPerComponentNV
OpStore %q %v Aligned 4"
        ))
        .text();
    for o in [all(), core()] {
        rewrite_valid(&text, "vulkan1.0", &o);
    }
}

/// Every element type, vector size and alignment, on both targets.
#[test]
fn element_types_and_alignments() {
    let types = [("%u8", 8, "OpCapability Int8\nOpCapability StorageBuffer8BitAccess\n", "%u8 = OpTypeInt 8 0\n"),
        ("%i16", 16, "OpCapability Int16\nOpCapability StorageBuffer16BitAccess\n", "%i16 = OpTypeInt 16 1\n"),
        ("%f16", 16, "OpCapability StorageBuffer16BitAccess\n", "%f16 = OpTypeFloat 16\n"),
        ("%u32", 32, "", ""),
        ("%f64", 64, "OpCapability Float64\n", "%f64 = OpTypeFloat 64\n"),
        ("%i64", 64, "OpCapability Int64\n", "%i64 = OpTypeInt 64 1\n")];
    for (t, width, caps, decl) in types {
        for n in 1..=4u32 {
            for robust in ["", "RobustnessPerComponentNV", "RobustnessPerElementNV"] {
                let comp = width / 8;
                for align in [comp, (comp * n).next_power_of_two().min(32)] {
                    let (vt, vdecl) = match (n, t) {
                        (1, _) => (t.to_string(), String::new()),
                        (3, "%u32") => ("%v3u".to_string(), String::new()), // declared by HEAD
                        _ => (format!("%vec{n}"), format!("%vec{n} = OpTypeVector {t} {n}\n")),
                    };
                    let stride = comp * n.next_power_of_two() * 2;
                    let types = format!("{decl}{vdecl}%pe = OpTypePointer StorageBuffer {vt}\n%stride = OpConstant %u32 {stride}\n%off = OpConstant %u32 {comp}\n");
                    let body = format!(
                        "%p = OpRawAccessChainNV %pe %buf %stride %i %c0 {robust}
%v = OpLoad {vt} %p Aligned {align}
%q = OpRawAccessChainNV %pe %buf2 %c0 %c0 %i {}
OpStore %q %v Aligned {comp}",
                        if robust == "RobustnessPerElementNV" { "RobustnessPerComponentNV" } else { robust }
                    );
                    let mut text = module(caps, &types, &body, "");
                    if caps.contains("BitAccess") {
                        let ext = if width == 8 { "SPV_KHR_8bit_storage" } else { "SPV_KHR_16bit_storage" };
                        text = text.replace("OpExtension \"SPV_NV_raw_access_chains\"", &format!("OpExtension \"SPV_NV_raw_access_chains\"\nOpExtension \"{ext}\""));
                    }
                    for o in [all(), checked(), core()] {
                        let r = std::panic::catch_unwind(|| rewrite_valid(&text, "vulkan1.1", &o));
                        assert!(r.is_ok(), "type {t} n={n} {robust} Aligned {align} target {:?}", o.target);
                    }
                }
            }
        }
    }
}

#[test]
fn bounds_checks_count_view_elements() {
    // The first robust access sits in the entry block, whose remainder moves to a new block: the
    // original OpPhi naming %entry must be renamed, the backend's own OpPhi (whose parent is the
    // entry block's first part, still %entry) must not (spirv-val checks both).
    let body = format!(
        "%p = OpRawAccessChainNV %pu %buf %c0 %c0 %i RobustnessPerComponentNV
%v = OpLoad %u32 %p Aligned 4
%odd = OpULessThan %bool %i %c4
{ODD_DIAMOND}
%phi = OpPhi %u32 %v %entry %c0 %t
%p2 = OpRawAccessChainNV %pu %buf %c4 %phi %c0 RobustnessPerElementNV
%v2 = OpLoad %u32 %p2 Aligned 4
%p3 = OpRawAccessChainNV %pv4f %buf %c16 %v2 %c0 RobustnessPerComponentNV
%v3 = OpLoad %v4f %p3 Aligned 16
OpStore %p3 %v3 Aligned 16
%p4 = OpRawAccessChainNV %pu %buf %c4 %i %c4 RobustnessPerElementNV
OpStore %p4 %v2 Aligned 4"
    );
    let (words, s) = rewrite_valid(&module("", "", &body, ""), "vulkan1.1", &checked());
    assert_eq!((s.loads, s.stores), (3, 2));
    let dis = disassemble(&words);
    // Every check compares the offset in elements of the view that fits it (the word view for
    // the u32 accesses and each vec4 component, the uvec4 view for the whole vec4) with that
    // view's OpArrayLength: no byte length, no limit arithmetic, no 8-bit view; one
    // OpArrayLength per view and block (the original blocks %entry and %m).
    assert_eq!(dis.matches("OpUGreaterThanEqual").count(), 0, "{dis}");
    assert!(!dis.contains("OpTypeInt 8"), "{dis}");
    assert_eq!(dis.matches("OpArrayLength").count(), 3, "{dis}");
    // One `index < count` per check: 1 + 1 + (1 + 4) + 4 + 1: the store's whole-vector check
    // is the load's (same index and count, in a block that dominates it).
    assert_eq!(dis.matches("OpULessThan ").count() - 1, 12, "{dis}");
}

/// Where robustBufferAccess2 checks storage buffers to the byte (Target::robust_buffer_access2
/// and robust_storage_byte_exact, no poison byte), a per-component access made of one access per
/// component (Aligned = the component size, or one component) is those accesses, unchecked: no
/// length, no comparison, no branch. A vector whose whole access is wider pieces keeps its
/// whole-vector check; its edge path accesses each component unchecked. A poison byte, or
/// ranges rounded to whole words, bring the lowering's own checks back.
#[test]
fn per_component_checks_left_to_the_driver() {
    let body = "%off = OpShiftLeftLogical %u32 %i %c4
%p = OpRawAccessChainNV %pv4f %buf %c0 %c0 %off RobustnessPerComponentNV
%v = OpLoad %v4f %p Aligned 4
OpStore %p %v Aligned 4
%q = OpRawAccessChainNV %pu %buf2 %c0 %c0 %i RobustnessPerComponentNV
%w = OpLoad %u32 %q Aligned 16
OpStore %q %w Aligned 16";
    let text = module("", "", body, "");
    let (words, s) = rewrite_valid(&text, "vulkan1.1", &all());
    assert_eq!((s.loads, s.stores, s.raw_chain_bounds_by_driver), (2, 2, 4));
    let dis = disassemble(&words);
    for op in ["OpArrayLength", "OpULessThan", "OpSelectionMerge", "OpPhi"] {
        assert!(!dis.contains(op), "{op}: {dis}");
    }
    // 4 + 1 loads of words (and the invocation id), as many stores through the same pointers.
    assert_eq!((dis.matches("OpLoad").count(), dis.matches("OpStore").count(), dis.matches("OpAccessChain").count()), (6, 5, 5), "{dis}");
    for o in [checked(), Options { oob_poison: Some(0x5a), ..all() }, Options { target: Target { robust_buffer_access2: false, ..Target::all() }, ..all() }] {
        let (words, s) = rewrite_valid(&text, "vulkan1.1", &o);
        assert_eq!(s.raw_chain_bounds_by_driver, 0);
        assert!(disassemble(&words).contains("OpArrayLength"), "{:?}", o.target);
    }
    // Aligned 16: one uvec4 access when the whole vector is in range; the edge path's four
    // word accesses unchecked.
    let body = "%p = OpRawAccessChainNV %pv4f %buf %c0 %c0 %i RobustnessPerComponentNV
%v = OpLoad %v4f %p Aligned 16
OpStore %p %v Aligned 16";
    let (words, s) = rewrite_valid(&module("", "", body, ""), "vulkan1.1", &all());
    assert_eq!(s.raw_chain_bounds_by_driver, 0);
    let dis = disassemble(&words);
    assert_eq!((dis.matches("OpArrayLength").count(), dis.matches("OpULessThan").count()), (1, 1), "{dis}");
    // The invocation id, the uvec4, the four words.
    assert_eq!((dis.matches("OpLoad").count(), dis.matches("OpStore").count()), (6, 5), "{dis}");
    // 64-bit components: one scalar access each through a uint64_t view (Int64), where a uvec2
    // could be checked per word; a uvec4 and two such accesses at the edge with Aligned 16.
    // Without Int64 on the target, the lowering's own checks.
    let doubles = |align: u32| {
        let body = format!(
            "%off = OpShiftLeftLogical %u32 %i %c4
%p = OpRawAccessChainNV %pd2 %buf %c0 %c0 %off RobustnessPerComponentNV
%v = OpLoad %d2 %p Aligned {align}
OpStore %p %v Aligned {align}"
        );
        module("OpCapability Float64\n", "%f64 = OpTypeFloat 64\n%d2 = OpTypeVector %f64 2\n%pd2 = OpTypePointer StorageBuffer %d2\n", &body, "")
    };
    let (words, s) = rewrite_valid(&doubles(8), "vulkan1.1", &all());
    assert_eq!(s.raw_chain_bounds_by_driver, 2);
    let dis = disassemble(&words);
    assert!(dis.contains("OpCapability Int64") && dis.contains("OpTypeInt 64 0") && !dis.contains("OpArrayLength"), "{dis}");
    assert_eq!((dis.matches("OpLoad").count(), dis.matches("OpStore").count()), (3, 2), "{dis}");
    let (words, _) = rewrite_valid(&doubles(16), "vulkan1.1", &all());
    let dis = disassemble(&words);
    assert_eq!((dis.matches("OpArrayLength").count(), dis.matches("OpLoad").count(), dis.matches("OpStore").count()), (1, 4, 3), "{dis}");
    let no_int64 = Options { target: Target { int64: false, ..Target::all() }, ..all() };
    let (words, s) = rewrite_valid(&doubles(8), "vulkan1.1", &no_int64);
    assert_eq!(s.raw_chain_bounds_by_driver, 0);
    assert!(disassemble(&words).contains("OpArrayLength"));
}

/// Where the driver also checks each component of a vector access on its own
/// (`Target::robust_vector_components`, lavapipe), a per-component vector of 32-bit components
/// is its whole access, unchecked, in the widest views its alignment allows: one uvec4 load and
/// store for a vec4 `Aligned 16`, two uvec2 for `Aligned 8`. Vectors of 64-bit components move
/// in u64vec2 views (Int64; the uvec4 of their plain pieces would be checked per word), and
/// keep their whole-vector check without Int64; without the robustness to the byte nothing
/// changes.
#[test]
fn per_component_vectors_left_to_a_driver_that_checks_components() {
    let vectors = Options { target: Target::lavapipe(), ..all() };
    for align in [16, 8] {
        let body = format!(
            "%p = OpRawAccessChainNV %pv4f %buf %c0 %c0 %i RobustnessPerComponentNV
%v = OpLoad %v4f %p Aligned {align}
OpStore %p %v Aligned {align}"
        );
        let text = module("", "", &body, "");
        let (words, s) = rewrite_valid(&text, "vulkan1.1", &vectors);
        assert_eq!(s.raw_chain_bounds_by_driver, 2);
        let dis = disassemble(&words);
        for op in ["OpArrayLength", "OpULessThan", "OpSelectionMerge", "OpPhi"] {
            assert!(!dis.contains(op), "{op}: {dis}");
        }
        let per = 16 / align;
        // The invocation id and the pieces, loaded then stored through the same pointers.
        assert_eq!((dis.matches("OpLoad").count(), dis.matches("OpStore").count()), (1 + per, per), "{dis}");
        // Through the view of elements of `align` bytes (uvec4 or uvec2) alone.
        assert_eq!((dis.matches(&format!("ArrayStride {align}")).count(), dis.matches("ArrayStride").count()), (1, 1), "{dis}");
        // Without the quirk: the whole-vector check and its edge path.
        let (words, s) = rewrite_valid(&text, "vulkan1.1", &all());
        assert_eq!(s.raw_chain_bounds_by_driver, 0);
        assert!(disassemble(&words).contains("OpArrayLength"));
        let rounded = Options { target: Target { robust_storage_byte_exact: false, ..Target::lavapipe() }, ..all() };
        let (_, s) = rewrite_valid(&text, "vulkan1.1", &rounded);
        assert_eq!(s.raw_chain_bounds_by_driver, 0);
    }
    let body = "%p = OpRawAccessChainNV %pd2 %buf %c0 %c0 %i RobustnessPerComponentNV
%v = OpLoad %d2 %p Aligned 16
OpStore %p %v Aligned 16";
    let text = module("OpCapability Float64\n", "%f64 = OpTypeFloat 64\n%d2 = OpTypeVector %f64 2\n%pd2 = OpTypePointer StorageBuffer %d2\n", body, "");
    let (words, s) = rewrite_valid(&text, "vulkan1.1", &vectors);
    assert_eq!(s.raw_chain_bounds_by_driver, 2);
    let dis = disassemble(&words);
    assert!(!dis.contains("OpArrayLength") && dis.contains("OpCapability Int64"), "{dis}");
    assert_eq!((dis.matches("OpLoad").count(), dis.matches("OpStore").count(), dis.matches("ArrayStride 16").count()), (2, 1, 1), "{dis}");
    let no_int64 = Options { target: Target { int64: false, ..Target::lavapipe() }, ..all() };
    let (words, s) = rewrite_valid(&text, "vulkan1.1", &no_int64);
    assert_eq!(s.raw_chain_bounds_by_driver, 0);
    assert!(disassemble(&words).contains("OpArrayLength"));
}

/// A chain whose Stride is the size of the view element it is accessed through (a vec4 at
/// Stride 16: one uvec4) indexes the view with `(Index + Offset / 16) & 0x0fffffff`, the
/// wrapped byte address shifted back, without the product: no OpIMul, no shift, and the
/// address itself goes when nothing else reads it. A Stride of another size keeps the shift.
#[test]
fn element_index_from_the_chains_index() {
    for (offset, add) in [("%c0", false), ("%c16", true)] {
        let body = format!(
            "%p = OpRawAccessChainNV %pv4f %buf %c16 %i {offset}
%v = OpLoad %v4f %p Aligned 16
OpStore %p %v Aligned 16"
        );
        let (words, _) = rewrite_valid(&module("", "", &body, ""), "vulkan1.1", &all());
        let dis = disassemble(&words);
        assert!(dis.contains(" 268435455"), "{dis}");
        assert_eq!(dis.matches("OpBitwiseAnd").count(), 1, "{dis}");
        for op in ["OpIMul", "OpShiftRightLogical"] {
            assert!(!dis.contains(op), "{op}: {dis}");
        }
        assert_eq!(dis.contains("OpIAdd"), add, "{dis}");
    }
    let body = "%p = OpRawAccessChainNV %pv4f %buf %c20 %i %c0
%v = OpLoad %v4f %p Aligned 4
OpStore %p %v Aligned 4";
    let (words, _) = rewrite_valid(&module("", "", body, ""), "vulkan1.1", &all());
    let dis = disassemble(&words);
    assert!(dis.contains("OpIMul") && dis.contains("OpShiftRightLogical") && !dis.contains("OpBitwiseAnd"), "{dis}");
}

/// A per-element access of one scalar that is the whole element (Stride = its size), at
/// Offset 0, lies in the range exactly when its element does: left to the driver like a
/// per-component one. At another Offset (the address could wrap apart from the element), or a
/// scalar narrower than the element, the lowering checks the element itself.
#[test]
fn per_element_scalar_checks_left_to_the_driver() {
    let chain = |stride: &str, offset: &str| {
        module(
            "",
            "%c8 = OpConstant %u32 8\n",
            &format!(
                "%p = OpRawAccessChainNV %pu %buf {stride} %i {offset} RobustnessPerElementNV
%v = OpLoad %u32 %p Aligned 4
OpStore %p %v Aligned 4"
            ),
            "",
        )
    };
    let (words, s) = rewrite_valid(&chain("%c4", "%c0"), "vulkan1.1", &all());
    assert_eq!(s.raw_chain_bounds_by_driver, 2);
    assert!(!disassemble(&words).contains("OpArrayLength"));
    for text in [chain("%c4", "%c4"), chain("%c8", "%c0")] {
        let (words, s) = rewrite_valid(&text, "vulkan1.1", &all());
        assert_eq!(s.raw_chain_bounds_by_driver, 0);
        assert!(disassemble(&words).contains("OpArrayLength"));
    }
}

#[test]
fn robust_access_in_loop_header_is_split() {
    let body = "OpBranch %header
%header = OpLabel
%k = OpPhi %u32 %c0 %entry %k2 %cont
%p = OpRawAccessChainNV %pu %buf %c4 %k %c0 RobustnessPerElementNV
%v = OpLoad %u32 %p Aligned 4
%done = OpULessThan %bool %v %c4
OpLoopMerge %exit %cont None
OpBranchConditional %done %exit %cont
%cont = OpLabel
%k2 = OpIAdd %u32 %k %c4
OpBranch %header
%exit = OpLabel";
    rewrite_valid(&module("", "", body, ""), "vulkan1.1", &all());
}

#[test]
fn physical_storage_buffer_bases() {
    let text = Module::compute(1)
        .spirv(5)
        .physical_addressing()
        .raw_access_chains()
        .ext("SPV_KHR_physical_storage_buffer")
        .gid()
        .push_constants("pc", &[("%v2u", 0)])
        .main(&format!(
            "{GID_X}
%ap = OpAccessChain %pp_v2u %pc %c0
%a = OpLoad %v2u %ap
%base = OpBitcast %pg_u32 %a
%p = OpRawAccessChainNV %pg_v4f %base %c16 %i %c4
%v = OpLoad %v4f %p Aligned 4
%q = OpRawAccessChainNV %pg_v4f %base %c0 %c0 %c0
OpStore %q %v Aligned 16"
        ))
        .text();
    let (_, s) = rewrite_valid(&text, "vulkan1.2", &all());
    assert_eq!(s.raw_chains_physical, 2);
}

fn expect_unsupported(text: &str, needle: &str) {
    let words = common::assemble(text, "vulkan1.1");
    match shader_rewrite::rewrite(&words, &all()) {
        Err(RewriteError::Unsupported { instruction, reason }) => {
            let msg = format!("{instruction}: {reason}");
            assert!(msg.contains(needle), "{msg}");
        }
        other => panic!("expected Unsupported containing {needle:?}, got {other:?}"),
    }
}

#[test]
fn precise_errors() {
    // A chain result consumed by something other than OpLoad/OpStore.
    let body = "%p = OpRawAccessChainNV %pu %buf %c0 %c0 %i\n%cp = OpCopyObject %pu %p";
    expect_unsupported(&module("", "", body, ""), "only OpLoad and OpStore");
    // Aligned below the component size.
    let body = "%p = OpRawAccessChainNV %pu %buf %c0 %c0 %i\n%v = OpLoad %u32 %p Aligned 2";
    let words = common::assemble(&module("", "", body, ""), "vulkan1.1");
    let e = shader_rewrite::rewrite(&words, &all()).unwrap_err();
    assert!(e.to_string().contains("Aligned 2 is smaller than the component size 4"), "{e}");
    // A base the lowering cannot follow: a pointer into the block.
    let body = "%m = OpAccessChain %pu %buf %c0 %c0\n%p = OpRawAccessChainNV %pu %m %c0 %c0 %i";
    let _ = body; // not valid input for spirv-as/val either way; checked through the API below
}

#[test]
fn malformed_inputs_are_errors_not_panics() {
    let text = module("", "", "%p = OpRawAccessChainNV %pu %buf %c0 %c0 %i\n%v = OpLoad %u32 %p Aligned 4", "");
    let words = common::assemble(&text, "vulkan1.1");
    // A header alone declares nothing to emulate: it passes through unchanged.
    assert_eq!(shader_rewrite::rewrite(&words[..5], &all()).unwrap().words, &words[..5]);
    for cut in [0, 3, 6, 20, words.len() / 2, words.len() - 1] {
        // Either a Malformed error, or (cut at an instruction boundary before any function) a
        // module that still validates.
        match shader_rewrite::rewrite(&words[..cut], &all()) {
            Err(RewriteError::Malformed { .. }) => {}
            Ok(out) => common::validate(&out.words, "vulkan1.1").unwrap_or_else(|e| panic!("cut at {cut}: {e}")),
            Err(e) => panic!("cut at {cut}: {e}"),
        }
    }
    // An unknown opcode in a function body: a precise error, not a guess at its layout.
    let mut bad = words.clone();
    let ret = bad.iter().rposition(|&w| w == (1 << 16) | 253).expect("OpReturn");
    bad[ret] = (1 << 16) | 0xfff0;
    let e = shader_rewrite::rewrite(&bad, &all()).unwrap_err();
    assert!(e.to_string().contains("unknown opcode 65520"), "{e}");
}

#[test]
fn modules_without_raw_chains_pass_through_identical() {
    let text = module("", "", "", "").replace("OpCapability RawAccessChainsNV\n", "").replace("OpExtension \"SPV_NV_raw_access_chains\"\n", "");
    let words = common::assemble(&text, "vulkan1.1");
    assert!(!shader_rewrite::needs_rewrite(&words, &all()));
    let out = shader_rewrite::rewrite(&words, &all()).unwrap();
    assert_eq!(out.words, words);
    assert!(out.stats.is_empty());
}

#[test]
fn several_entry_points_share_aliases() {
    // Two compute entry points in a SPIR-V 1.5 module: each interface lists the alias
    // variables of the buffers it uses.
    let text = module("", "", "%p = OpRawAccessChainNV %pu %buf %c0 %c0 %i RobustnessPerComponentNV\n%v = OpLoad %u32 %p Aligned 4\nOpStore %p %v Aligned 4", "
%second = OpFunction %void None %fn
%se = OpLabel
%g2 = OpLoad %v3u %gid
%j = OpCompositeExtract %u32 %g2 1
%q = OpRawAccessChainNV %pv4f %buf2 %c16 %j %c0 RobustnessPerElementNV
%w = OpLoad %v4f %q Aligned 16
OpStore %q %w Aligned 16
OpReturn
OpFunctionEnd")
    .replace("OpEntryPoint GLCompute %main \"main\" %gid", "OpEntryPoint GLCompute %main \"main\" %gid %buf\nOpEntryPoint GLCompute %second \"second\" %gid %buf2")
    .replace("OpExecutionMode %main LocalSize 1 1 1", "OpExecutionMode %main LocalSize 1 1 1\nOpExecutionMode %second LocalSize 1 1 1");
    let (words, s) = rewrite_valid(&text, "vulkan1.2", &all());
    assert_eq!(s.raw_chains, 2);
    let dis = common::disassemble(&words);
    // Each interface lists its buffers' views (the second's vec4 view replaces %buf2 itself,
    // which nothing else reads).
    for ep in dis.lines().filter(|l| l.contains("OpEntryPoint")) {
        assert!(ep.split_whitespace().count() >= 6, "aliases missing from {ep}");
    }
}

#[test]
fn memory_operands_other_than_aligned_are_kept() {
    // Volatile | Nontemporal on a load, Volatile on a store: kept on every emitted access.
    let body = "%p = OpRawAccessChainNV %pv4f %buf %c16 %i %c0 RobustnessPerElementNV
%v = OpLoad %v4f %p Volatile|Aligned|Nontemporal 4
OpStore %p %v Volatile|Aligned 16";
    let (words, _) = rewrite_valid(&module("", "", body, ""), "vulkan1.1", &all());
    let dis = common::disassemble(&words);
    assert!(dis.lines().filter(|l| l.contains("OpLoad") && l.contains("Volatile|Nontemporal")).count() >= 4, "{dis}");
    assert!(dis.lines().any(|l| l.contains("OpStore") && l.contains("Volatile")), "{dis}");
    // Vulkan memory model: MakePointerAvailable/Visible with their scope operands.
    // (QueueFamily scope: Device scope would need VulkanMemoryModelDeviceScope.)
    let vmm = module("OpCapability VulkanMemoryModel\n", "%dev = OpConstant %u32 5\n", "%p = OpRawAccessChainNV %pu %buf %c0 %c0 %i RobustnessPerComponentNV
%v = OpLoad %u32 %p Aligned|MakePointerVisible|NonPrivatePointer 4 %dev
OpStore %p %v Aligned|MakePointerAvailable|NonPrivatePointer 4 %dev", "")
    .replace("OpMemoryModel Logical GLSL450", "OpMemoryModel Logical Vulkan")
    .replace("%main \"main\" %gid", "%main \"main\" %gid %buf");
    let (words, _) = rewrite_valid(&vmm, "vulkan1.2", &all());
    let dis = common::disassemble(&words);
    assert!(dis.contains("MakePointerVisible|NonPrivatePointer %"), "{dis}");
    assert!(dis.contains("MakePointerAvailable|NonPrivatePointer %"), "{dis}");
}

#[test]
fn buffers_read_only_through_new_views_are_removed() {
    // Aligned 16 vec4 chains on the uint[] blocks: every access goes through a uvec4 view, so
    // the application's own block variables end up unused and go (cleanup.rs), in SPIR-V 1.3
    // and in 1.5 (where they were listed in the interface).
    let body = "%p = OpRawAccessChainNV %pv4f %buf %c16 %i %c0\n%v = OpLoad %v4f %p Aligned 16\n%q = OpRawAccessChainNV %pv4f %buf2 %c16 %i %c0\nOpStore %q %v Aligned 16";
    for (text, env) in [
        (module("", "", body, ""), "vulkan1.1"),
        (module("", "", body, "").replace("%main \"main\" %gid", "%main \"main\" %gid %buf %buf2"), "vulkan1.2"),
    ] {
        let (words, s) = rewrite_valid(&text, env, &all());
        assert_eq!(s.alias_variables, 2, "{env}");
        let dis = common::disassemble(&words);
        let buffers = dis.lines().filter(|l| l.contains("OpVariable") && l.contains("StorageBuffer")).count();
        assert_eq!(buffers, 2, "{env}: only the two views are left:\n{dis}");
        assert!(!dis.contains("%buf "), "{env}: the old block's name and decorations go with it:\n{dis}");
    }
}
