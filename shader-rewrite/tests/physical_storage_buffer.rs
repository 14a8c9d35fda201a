//! SPV_KHR_physical_storage_buffer lowered onto the layer's buffer table (Options::bda), checked
//! as SPIR-V in/out: each rewritten module passes spirv-val (vulkan1.2), declares no
//! PhysicalStorageBuffer anything, indexes the table NonUniform on its set and binding, and the
//! stats count what was lowered. Targets with and without Int64 (addresses are uvec2 on both).
mod common;
use common::{assemble, assert_unique_pointer_types, disassemble, validate};
use shader_rewrite::bda::BdaTable;
use shader_rewrite::{rewrite, Options, RewriteError, Stats, Target};

const ENV: &str = "vulkan1.2";
const TABLE: BdaTable = BdaTable { set: 3, binding: 7, count: 4096 };

/// Options with the table, for a target with or without Int64, whose lowering checks bounds
/// itself (no robustBufferAccess2: the shapes most tests here look at).
fn options(int64: bool) -> Options {
    Options { target: Target { int64, robust_buffer_access2: false, ..Target::all() }, bda: Some(TABLE), ..Options::default() }
}

/// [`options`] on a target with robustBufferAccess2 on: the driver checks bounds.
fn robust_options(int64: bool) -> Options {
    let mut o = options(int64);
    o.target.robust_buffer_access2 = true;
    o
}

/// The start of `%main`: `%x` = the address in the push constants.
const MAIN_X: &str = "%main = OpFunction %void None %fn\n%l = OpLabel\n%a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n";

/// A compute module: capabilities (beyond Shader and PhysicalStorageBufferAddresses), then
/// `body` (decorations, types, functions: everything after OpExecutionMode), with a push
/// constant block `%pc` holding an address in member 0 (`%ulong`) declared by the header, and
/// the global variables `body` declares in the entry point's interface.
fn module(caps: &[&str], decorations: &str, body: &str) -> String {
    let caps: String = caps.iter().map(|c| format!("OpCapability {c}\n")).collect();
    let globals: String = body
        .split('\n')
        .filter(|l| l.contains("= OpVariable") && !l.ends_with(" Function"))
        .map(|l| format!(" {}", l.split_whitespace().next().unwrap()))
        .collect();
    let raw = if caps.contains("RawAccessChainsNV") { "OpExtension \"SPV_NV_raw_access_chains\"\n" } else { "" };
    format!(
        "OpCapability Shader\nOpCapability PhysicalStorageBufferAddresses\nOpCapability Int64\n{caps}\
         OpExtension \"SPV_KHR_physical_storage_buffer\"\n{raw}\
         OpMemoryModel PhysicalStorageBuffer64 GLSL450\n\
         OpEntryPoint GLCompute %main \"main\" %pc{globals}\n\
         OpExecutionMode %main LocalSize 1 1 1\n\
         OpDecorate %PC Block\nOpMemberDecorate %PC 0 Offset 0\n{decorations}\n\
         %void = OpTypeVoid\n%fn = OpTypeFunction %void\n\
         %uint = OpTypeInt 32 0\n%int = OpTypeInt 32 1\n%ulong = OpTypeInt 64 0\n%float = OpTypeFloat 32\n%bool = OpTypeBool\n\
         %i0 = OpConstant %int 0\n%i1 = OpConstant %int 1\n%i2 = OpConstant %int 2\n%i3 = OpConstant %int 3\n\
         %u0 = OpConstant %uint 0\n%u1 = OpConstant %uint 1\n%u4 = OpConstant %uint 4\n\
         %PC = OpTypeStruct %ulong\n%ppc = OpTypePointer PushConstant %PC\n%pcu = OpTypePointer PushConstant %ulong\n\
         %pc = OpVariable %ppc PushConstant\n{body}"
    )
}

/// Assembles, rewrites under both address types, validates, checks no trace of physical
/// pointers is left and the table is used as declared; returns the u64 disassembly and stats.
fn lower(text: &str) -> (String, Stats) {
    lower_for(text, &[true, false])
}

/// [`lower`] for targets with (true) and/or without (false) Int64.
fn lower_for(text: &str, int64s: &[bool]) -> (String, Stats) {
    lower_in(text, ENV, int64s)
}

/// [`lower_for`] in Vulkan environment `env`; the lowering that leaves bounds to the driver is
/// checked too (after the one returned).
fn lower_in(text: &str, env: &str, int64s: &[bool]) -> (String, Stats) {
    let options: Vec<Options> = int64s.iter().map(|&int64| options(int64)).chain(int64s.iter().map(|&int64| robust_options(int64))).collect();
    lower_with(text, env, &options)
}

/// [`lower_in`] under each of `options` (with a BdaTable).
fn lower_with(text: &str, env: &str, options: &[Options]) -> (String, Stats) {
    let words = assemble(text, env);
    validate(&words, env).unwrap_or_else(|e| panic!("input does not validate: {e}\n{text}"));
    let mut first = None;
    for (n, o) in options.iter().enumerate() {
        let out = rewrite(&words, o).unwrap_or_else(|e| panic!("rewrite failed ({o:?}): {e}"));
        let dis = disassemble(&out.words);
        if let Err(e) = validate(&out.words, env) {
            panic!("rewritten module fails spirv-val ({o:?}): {e}\n{dis}");
        }
        for gone in ["PhysicalStorageBuffer", "SPV_KHR_physical_storage_buffer", "OpConvertUToPtr", "OpConvertPtrToU", "RestrictPointer", "AliasedPointer"] {
            assert!(!dis.contains(gone), "{gone} left ({o:?}):\n{dis}");
        }
        assert!(dis.contains("OpMemoryModel Logical"), "{dis}");
        assert_unique_pointer_types(&dis, &format!("{o:?}"));
        if o.target.robust_buffer_access2 {
            // The driver checks bounds: no length taken, no waterfall loop.
            assert!(!dis.contains("OpArrayLength") && !dis.contains("OpGroupNonUniform"), "bounds checked with robustBufferAccess2 on:\n{dis}");
        }
        if dis.contains("OpArrayLength") {
            assert!(dis.contains("DescriptorSet 3") && dis.contains("Binding 7"), "table not on its set/binding:\n{dis}");
            assert!(dis.contains("NonUniform"), "table indexed without NonUniform:\n{dis}");
        }
        if let Ok(dir) = std::env::var("PSB_TEST_DUMP_DIR") {
            // Debug aid: the outputs' disassembly, one file per test and option set.
            std::fs::write(format!("{dir}/{}-{n}.spvasm", std::thread::current().name().unwrap_or("test")), &dis).unwrap();
        }
        let again = rewrite(&words, o).unwrap();
        assert_eq!(again.words, out.words, "rewriting is not deterministic");
        first.get_or_insert((dis, out.stats));
    }
    first.unwrap()
}

/// The rewrite error for `text` (u64 addresses).
fn error(text: &str) -> RewriteError {
    let words = assemble(text, ENV);
    rewrite(&words, &options(true)).expect_err("rewrite should fail")
}

#[test]
fn without_options_bda_nothing_changes() {
    let text = module(&[], "", "%main = OpFunction %void None %fn\n%l = OpLabel\nOpReturn\nOpFunctionEnd\n");
    let words = assemble(&text, ENV);
    let out = rewrite(&words, &Options::default()).unwrap();
    assert_eq!(out.words, words);
    assert!(out.stats.is_empty());
    assert!(shader_rewrite::scan(&words).unwrap().physical_storage_buffer);
    assert!(!shader_rewrite::needs_rewrite(&words, &Options::default()));
    assert!(shader_rewrite::needs_rewrite(&words, &options(true)));
}

/// Scalar and vector members of a struct through OpConvertUToPtr + OpAccessChain.
#[test]
fn scalar_and_vector_members() {
    let text = module(
        &[],
        "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 16\nOpMemberDecorate %S 2 Offset 32",
        &format!("%v4f = OpTypeVector %float 4\n%v2u = OpTypeVector %uint 2\n%S = OpTypeStruct %uint %v4f %v2u\n\
         %pS = OpTypePointer PhysicalStorageBuffer %S\n%pu = OpTypePointer PhysicalStorageBuffer %uint\n\
         %pv4 = OpTypePointer PhysicalStorageBuffer %v4f\n%pv2 = OpTypePointer PhysicalStorageBuffer %v2u\n\
         {MAIN_X}%p = OpConvertUToPtr %pS %x\n\
         %m0 = OpAccessChain %pu %p %i0\n%v = OpLoad %uint %m0 Aligned 16\n\
         %m1 = OpAccessChain %pv4 %p %i1\n%f = OpLoad %v4f %m1 Aligned 16\n\
         %m2 = OpAccessChain %pv2 %p %i2\n%w = OpLoad %v2u %m2 Aligned 8\n\
         OpStore %m0 %v Aligned 4\nOpStore %m1 %f Aligned 16\nOpStore %m2 %w Aligned 8\n\
         OpReturn\nOpFunctionEnd\n"),
    );
    let (dis, stats) = lower(&text);
    assert_eq!((stats.physical_loads, stats.physical_stores, stats.physical_chains), (3, 3, 3), "{stats:?}");
    assert!(dis.contains("OpArrayLength"), "{dis}");
    // Only the views used are declared: no 16-bit one (nor its capability) for 32-bit accesses,
    // whatever ids the module's literals happen to equal (LocalSize 64 below).
    for local_size in ["1", "64"] {
        let (dis, _) = lower(&text.replace("LocalSize 1 1 1", &format!("LocalSize {local_size} 1 1")));
        assert!(!dis.contains("OpTypeInt 16") && !dis.contains("16BitAccess"), "{dis}");
    }
}

/// An address's slot where the driver checks bounds: for a power-of-two table the high word's
/// low bits (one OpBitwiseAnd, no tag check or clamp: `shader_rewrite::bda`); for any other
/// size, and where the lowering checks bounds (the length of an address outside the table is
/// 0), `hi - tag` compared with the count and clamped. The address is a uvec2 on both targets
/// (no 64-bit value made, no Int64 declared for it).
#[test]
fn slot_decode_by_table_size() {
    let text = module(
        &[],
        "",
        &format!("%pu = OpTypePointer PhysicalStorageBuffer %uint
{MAIN_X}%p = OpConvertUToPtr %pu %x
         %v = OpLoad %uint %p Aligned 4
OpStore %p %v Aligned 4
OpReturn
OpFunctionEnd
"),
    );
    // The input without Int64: the address pushed as a uvec2, made a pointer by OpBitcast.
    let text = text.replace("OpCapability Int64\n", "").replace("%ulong = OpTypeInt 64 0", "%ulong = OpTypeVector %uint 2").replace("OpConvertUToPtr", "OpBitcast");
    let lowered = |o: Options| lower_with(&text, ENV, &[o]).0;
    for int64 in [true, false] {
        let dis = lowered(robust_options(int64));
        assert!(dis.contains("OpBitwiseAnd") && dis.contains(" 4095\n"), "{dis}");
        assert!(!dis.contains("OpULessThan") && !dis.contains("OpSelect") && !dis.contains("OpISub"), "{dis}");
        assert!(!dis.contains("Int64") && !dis.contains("OpTypeInt 64"), "{dis}");
        let odd = Options { bda: Some(BdaTable { count: 4000, ..TABLE }), ..robust_options(int64) };
        let dis = lowered(odd);
        assert!(dis.contains("OpULessThan") && dis.contains(" 4000\n") && !dis.contains("OpBitwiseAnd"), "{dis}");
        let dis = lowered(options(int64));
        assert!(dis.contains("OpULessThan") && dis.contains(" 4096\n"), "{dis}");
    }
}

/// What the lowering cannot do is an error naming the instruction, never a wrong module.
#[test]
fn ptr_access_chain_without_array_stride_is_an_error() {
    let text = module(
        &[],
        "",
        &format!("%pu = OpTypePointer PhysicalStorageBuffer %uint\n\
         {MAIN_X}%p = OpConvertUToPtr %pu %x\n\
         %q = OpPtrAccessChain %pu %p %i1\n%v = OpLoad %uint %q Aligned 4\n\
         OpReturn\nOpFunctionEnd\n"),
    );
    let e = error(&text);
    assert!(matches!(&e, RewriteError::Unsupported { reason, .. } if reason.contains("ArrayStride")), "{e}");
}

/// buffer_reference-style linked list: a struct whose member points to the next node, chased
/// in a loop through a Function variable holding the pointer, then with OpPhis (the loop
/// header reads memory too, so it is split), pointers compared against null.
#[test]
fn linked_list() {
    let decorations = "OpMemberDecorate %Node 0 Offset 0\nOpMemberDecorate %Node 1 Offset 8\nOpDecorate %Node Block";
    let types = "OpTypeForwardPointer %pNode PhysicalStorageBuffer\n%Node = OpTypeStruct %pNode %uint\n\
         %pNode = OpTypePointer PhysicalStorageBuffer %Node\n%ppNode = OpTypePointer PhysicalStorageBuffer %pNode\n\
         %pu = OpTypePointer PhysicalStorageBuffer %uint\n%fpNode = OpTypePointer Function %pNode\n%fu = OpTypePointer Function %uint\n\
         %z64 = OpConstant %ulong 0\n";
    let variable_loop = "%main = OpFunction %void None %fn\n%entry = OpLabel\n\
         %var = OpVariable %fpNode Function\n%sum = OpVariable %fu Function\n\
         %a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n%head = OpConvertUToPtr %pNode %x\n\
         OpStore %var %head\nOpStore %sum %u0\nOpBranch %header\n\
         %header = OpLabel\nOpLoopMerge %merge %cont None\nOpBranch %check\n\
         %check = OpLabel\n%cur = OpLoad %pNode %var\n%n = OpConvertPtrToU %ulong %cur\n%nz = OpINotEqual %bool %n %z64\nOpBranchConditional %nz %body %merge\n\
         %body = OpLabel\n%vp = OpAccessChain %pu %cur %i1\n%v = OpLoad %uint %vp Aligned 8\n%s = OpLoad %uint %sum\n%s2 = OpIAdd %uint %s %v\nOpStore %sum %s2\n\
         %np = OpAccessChain %ppNode %cur %i0\n%next = OpLoad %pNode %np Aligned 8\nOpStore %var %next\nOpBranch %cont\n\
         %cont = OpLabel\nOpBranch %header\n\
         %merge = OpLabel\n%hv = OpAccessChain %pu %head %i1\n%total = OpLoad %uint %sum\nOpStore %hv %total Aligned 8\nOpReturn\nOpFunctionEnd\n";
    let (_, stats) = lower(&module(&[], decorations, &format!("{types}{variable_loop}")));
    assert_eq!((stats.physical_loads, stats.physical_stores, stats.physical_chains), (2, 1, 3), "{stats:?}");

    let phi_loop = "%main = OpFunction %void None %fn\n%entry = OpLabel\n\
         %a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n%head = OpConvertUToPtr %pNode %x\nOpBranch %header\n\
         %header = OpLabel\n%cur = OpPhi %pNode %head %entry %next %body\n%acc = OpPhi %uint %u0 %entry %acc2 %body\n\
         %n = OpConvertPtrToU %ulong %cur\n%nz = OpINotEqual %bool %n %z64\n%vp = OpAccessChain %pu %cur %i1\n%v = OpLoad %uint %vp Aligned 8\n\
         OpLoopMerge %merge %body None\nOpBranchConditional %nz %body %merge\n\
         %body = OpLabel\n%acc2 = OpIAdd %uint %acc %v\n%np = OpAccessChain %ppNode %cur %i0\n%next = OpLoad %pNode %np Aligned 8\nOpBranch %header\n\
         %merge = OpLabel\n%hv = OpAccessChain %pu %head %i1\nOpStore %hv %acc Aligned 8\nOpReturn\nOpFunctionEnd\n";
    let (_, stats) = lower(&module(&[], decorations, &format!("{types}{phi_loop}")));
    assert_eq!((stats.physical_loads, stats.physical_stores), (2, 1), "{stats:?}");
}

/// Pointers held in a storage buffer: a struct of pointers and an array of them (8 bytes each
/// in the explicit layout), loaded, followed, and stored back.
#[test]
fn struct_of_pointers_in_a_storage_buffer() {
    let text = module(
        &[],
        "OpDecorate %Buf Block\nOpMemberDecorate %Buf 0 Offset 0\nOpMemberDecorate %Buf 1 Offset 8\nOpMemberDecorate %Buf 2 Offset 16\n\
         OpDecorate %arr ArrayStride 8\nOpDecorate %sb DescriptorSet 0\nOpDecorate %sb Binding 0",
        "%pu = OpTypePointer PhysicalStorageBuffer %uint\n%pf = OpTypePointer PhysicalStorageBuffer %float\n\
         %arr = OpTypeArray %pu %u4\n%Buf = OpTypeStruct %pu %pf %arr\n%pBuf = OpTypePointer StorageBuffer %Buf\n\
         %sbpu = OpTypePointer StorageBuffer %pu\n%sbpf = OpTypePointer StorageBuffer %pf\n%sb = OpVariable %pBuf StorageBuffer\n\
         %main = OpFunction %void None %fn\n%l = OpLabel\n\
         %m0 = OpAccessChain %sbpu %sb %i0\n%p = OpLoad %pu %m0\n%v = OpLoad %uint %p Aligned 4\n\
         %m1 = OpAccessChain %sbpf %sb %i1\n%q = OpLoad %pf %m1\n%f = OpConvertUToF %float %v\nOpStore %q %f Aligned 4\n\
         %e = OpAccessChain %sbpu %sb %i2 %i3\n%r = OpLoad %pu %e\nOpStore %r %v Aligned 4\nOpStore %m0 %r\n\
         OpReturn\nOpFunctionEnd\n",
    );
    let (dis, stats) = lower(&text);
    assert_eq!((stats.physical_loads, stats.physical_stores), (1, 2), "{stats:?}");
    assert!(dis.contains("DescriptorSet 0"), "{dis}");
}

/// Address arithmetic in integers (OpConvertPtrToU, OpIAdd, OpConvertUToPtr), OpBitcast to and
/// from uvec2, and OpPtrAccessChain by the pointer type's ArrayStride (constant and dynamic
/// Element, then an index into the pointee array).
#[test]
fn pointer_arithmetic_and_ptr_access_chains() {
    let text = module(
        &[],
        "OpDecorate %pu ArrayStride 4\nOpDecorate %pA ArrayStride 32\nOpDecorate %A ArrayStride 8",
        &format!("%v2u = OpTypeVector %uint 2\n%A = OpTypeArray %v2u %u4\n%pu = OpTypePointer PhysicalStorageBuffer %uint\n\
         %pA = OpTypePointer PhysicalStorageBuffer %A\n%pv2 = OpTypePointer PhysicalStorageBuffer %v2u\n%l8 = OpConstant %ulong 8\n\
         {MAIN_X}%p = OpConvertUToPtr %pu %x\n\
         %n = OpConvertPtrToU %ulong %p\n%n8 = OpIAdd %ulong %n %l8\n%p8 = OpConvertUToPtr %pu %n8\n%v = OpLoad %uint %p8 Aligned 4\n\
         %q = OpPtrAccessChain %pu %p %i3\nOpStore %q %v Aligned 4\n\
         %dyn = OpPtrAccessChain %pu %p %v\nOpStore %dyn %v Aligned 4\n\
         %w = OpBitcast %v2u %p\n%lo = OpCompositeExtract %uint %w 0\n%lo4 = OpIAdd %uint %lo %u4\n%w4 = OpCompositeInsert %v2u %lo4 %w 0\n\
         %p4 = OpBitcast %pu %w4\n%v4 = OpLoad %uint %p4 Aligned 4\n\
         %arr = OpConvertUToPtr %pA %x\n%el = OpPtrAccessChain %pv2 %arr %i1 %v4\n%pair = OpLoad %v2u %el Aligned 8\nOpStore %el %pair Aligned 8\n\
         OpReturn\nOpFunctionEnd\n"),
    );
    let (_, stats) = lower(&text);
    assert_eq!((stats.physical_loads, stats.physical_stores, stats.physical_chains), (3, 3, 3), "{stats:?}");
}

/// 32- and 64-bit atomics: IAdd, Exchange, CompareExchange, signed min, load, store.
#[test]
fn atomics() {
    let body32 = &format!("%pu = OpTypePointer PhysicalStorageBuffer %uint\n%pi = OpTypePointer PhysicalStorageBuffer %int\n\
         {MAIN_X}%p = OpConvertUToPtr %pu %x\n%s = OpConvertUToPtr %pi %x\n\
         %r0 = OpAtomicIAdd %uint %p %u1 %u0 %u1\n%r1 = OpAtomicExchange %uint %p %u1 %u0 %r0\n\
         %r2 = OpAtomicCompareExchange %uint %p %u1 %u0 %u0 %r1 %r0\n%r3 = OpAtomicSMax %int %s %u1 %u0 %i2\n\
         %r4 = OpAtomicLoad %uint %p %u1 %u0\nOpAtomicStore %p %u1 %u0 %r4\n\
         OpReturn\nOpFunctionEnd\n");
    let (dis, stats) = lower(&module(&[], "", body32));
    assert_eq!(stats.physical_atomics, 6, "{stats:?}");
    assert!(dis.contains("OpAtomicCompareExchange"), "{dis}");

    let body64 = &format!("%pl = OpTypePointer PhysicalStorageBuffer %ulong\n%l1 = OpConstant %ulong 1\n\
         {MAIN_X}%p = OpConvertUToPtr %pl %x\n\
         %r0 = OpAtomicIAdd %ulong %p %u1 %u0 %l1\n%r1 = OpAtomicExchange %ulong %p %u1 %u0 %r0\n\
         %r2 = OpAtomicCompareExchange %ulong %p %u1 %u0 %u0 %r1 %r0\n\
         OpReturn\nOpFunctionEnd\n");
    let text = module(&["Int64Atomics"], "", body64);
    let (dis, stats) = lower_for(&text, &[true]);
    assert_eq!(stats.physical_atomics, 3, "{stats:?}");
    assert!(dis.contains("ArrayStride 8"), "{dis}");
    let words = assemble(&text, ENV);
    let e = rewrite(&words, &options(false)).expect_err("64-bit atomics need Int64");
    assert!(e.to_string().contains("shaderInt64"), "{e}");
}

/// An atomic (its helper branches around) alone of its kind, in a block that ends as a selection
/// header: inlined there, the block's OpSelectionMerge going on with its branch.
#[test]
fn atomic_in_a_selection_header_is_inlined() {
    let body = format!(
        "%pu = OpTypePointer PhysicalStorageBuffer %uint\n{MAIN_X}%p = OpConvertUToPtr %pu %x\n\
         %old = OpAtomicIAdd %uint %p %u1 %u0 %u1\n%nz = OpINotEqual %bool %old %u0\n\
         OpSelectionMerge %m None\nOpBranchConditional %nz %t %m\n%t = OpLabel\nOpStore %p %old Aligned 4\nOpBranch %m\n\
         %m = OpLabel\nOpReturn\nOpFunctionEnd\n"
    );
    let (dis, stats) = lower(&module(&[], "", &body));
    assert_eq!(stats.physical_atomics, 1, "{stats:?}");
    assert_eq!(dis.matches("OpFunction ").count(), 1, "{dis}");
    assert_eq!(dis.matches("OpSelectionMerge").count(), 2, "{dis}");
}

/// The corpus's linked-list module (a loop phi of pointers), as text.
fn linked_list_text() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/physical-storage-buffer/linked-list.spvasm");
    std::fs::read_to_string(path).unwrap()
}

/// With robustBufferAccess2 on (Target::robust_buffer_access2) the driver checks every access
/// against its descriptor's range: the record is (slot, offset), no length is taken (not even
/// under the array-length quirk), atomics do not branch around, and the module is smaller. A
/// debug poison byte needs the lowering's own checks back.
#[test]
fn robust_buffer_access2_leaves_bounds_to_the_driver() {
    let words = assemble(&linked_list_text(), "vulkan1.1");
    for int64 in [true, false] {
        let mut robust = robust_options(int64);
        robust.target.nonuniform_array_length_broken = true;
        let mut checked = robust;
        checked.target.robust_buffer_access2 = false;
        let out = rewrite(&words, &robust).unwrap_or_else(|e| panic!("{e}"));
        let dis = disassemble(&out.words);
        validate(&out.words, "vulkan1.1").unwrap_or_else(|e| panic!("{e}\n{dis}"));
        for absent in ["OpArrayLength", "OpGroupNonUniform", "%v3uint"] {
            assert!(!dis.contains(absent), "{absent} with robustBufferAccess2:\n{dis}");
        }
        assert!(dis.contains("NonUniform") && dis.contains("DescriptorSet 3"), "{dis}");
        let with_checks = rewrite(&words, &checked).unwrap();
        assert!(disassemble(&with_checks.words).contains("OpArrayLength"));
        assert!(out.words.len() + 100 < with_checks.words.len(), "{} words against {} with the lowering's checks", out.words.len(), with_checks.words.len());
        let poisoned = rewrite(&words, &Options { oob_poison: Some(0xab), ..robust }).unwrap();
        assert!(disassemble(&poisoned.words).contains("OpArrayLength"), "the poison byte needs the lowering's own checks");
    }
    // An atomic: done unconditionally (an atomic outside the range modifies nothing).
    let body = format!("%pu = OpTypePointer PhysicalStorageBuffer %uint\n{MAIN_X}%p = OpConvertUToPtr %pu %x\n%old = OpAtomicIAdd %uint %p %u1 %u0 %u1\nOpReturn\nOpFunctionEnd\n");
    let (dis, _) = lower_with(&module(&[], "", &body), ENV, &[robust_options(true), robust_options(false)]);
    assert!(dis.contains("OpAtomicIAdd") && !dis.contains("OpBranchConditional") && !dis.contains("OpArrayLength"), "{dis}");
}

/// Where accesses go: with robustBufferAccess2 (the driver checks bounds) every leaf access and
/// address decode is emitted where it is used, no function of the layer's is left (a call
/// costs the drivers more than such a body); where the lowering checks bounds itself, leaves
/// of a kind used more than once share a helper function. A struct accessed once in the module
/// is split where it is accessed (no helper of its own, made only to be inlined again).
#[test]
fn accesses_in_place_where_the_driver_checks_bounds() {
    let decorations = "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 4\nOpMemberDecorate %S 2 Offset 16";
    let types = "%v4 = OpTypeVector %float 4\n%S = OpTypeStruct %uint %float %v4\n%pS = OpTypePointer PhysicalStorageBuffer %S\n\
         %pu = OpTypePointer PhysicalStorageBuffer %uint\n%u16 = OpConstant %uint 16\n";
    // Four uint loads and stores through one pointer and a struct copied once.
    let once = format!(
        "{types}{MAIN_X}%p = OpConvertUToPtr %pS %x\n%q = OpPtrAccessChain %pS %p %i1\n\
         %s = OpLoad %S %p Aligned 16\nOpStore %q %s Aligned 16\n\
         %a0 = OpAccessChain %pu %p %i0\n%v0 = OpLoad %uint %a0 Aligned 16\n%a1 = OpAccessChain %pu %q %i0\n%v1 = OpLoad %uint %a1 Aligned 16\n\
         %w = OpIAdd %uint %v0 %v1\nOpStore %a0 %w Aligned 16\nOpStore %a1 %w Aligned 16\nOpReturn\nOpFunctionEnd\n"
    );
    let text = module(&[], &format!("{decorations}\nOpDecorate %pS ArrayStride 32"), &once);
    let calls = |text: &str, o: &Options| {
        let out = rewrite(&assemble(text, ENV), o).unwrap_or_else(|e| panic!("{e}"));
        let dis = disassemble(&out.words);
        (dis.matches("OpFunctionCall").count(), dis.matches("= OpFunction ").count(), dis)
    };
    lower(&text);
    // Helpers returning the struct (its load's) in the checked lowering's output.
    let struct_helpers = |dis: &str| {
        let structs: Vec<&str> = dis.lines().filter(|l| l.contains("= OpTypeStruct ")).filter_map(|l| l.split_whitespace().next()).collect();
        dis.lines().filter(|l| l.contains("= OpFunction ") && l.split_whitespace().nth(3).is_some_and(|t| structs.contains(&t))).count()
    };
    for int64 in [true, false] {
        let (n, functions, dis) = calls(&text, &robust_options(int64));
        assert_eq!((n, functions), (0, 1), "robustBufferAccess2: calls left:\n{dis}");
        // Checked: the word load and store helpers (the uint and float leaves, 4 calls each),
        // the vec4 leaves' and locate inlined (called once).
        let (n, functions, dis) = calls(&text, &options(int64));
        assert_eq!((n, functions), (8, 3), "{dis}");
        assert_eq!(struct_helpers(&dis), 0, "a helper for the struct accessed once:\n{dis}");
    }
    // The struct loaded twice: no call either with robustBufferAccess2 (where bounds are
    // checked, its helpers are small enough to be inlined at both calls: `inline::SMALL_BODY`).
    let twice = once.replace("%s = OpLoad %S %p Aligned 16\nOpStore %q %s Aligned 16\n", "%s = OpLoad %S %p Aligned 16\n%t = OpLoad %S %q Aligned 16\nOpStore %q %s Aligned 16\nOpStore %p %t Aligned 16\n");
    let text = module(&[], &format!("{decorations}\nOpDecorate %pS ArrayStride 32"), &twice);
    lower(&text);
    let (n, functions, dis) = calls(&text, &robust_options(true));
    assert_eq!((n, functions), (0, 1), "{dis}");
}

/// Neighbouring loads through one place in one block, read as one unit where the driver checks
/// bounds per component (robustBufferAccess2 and `robust_vector_components`): `a`, `b` (8
/// bytes from an `Aligned 8` start) are combined, the same with a store between, a 12-byte span,
/// a start aligned below the unit, or the lowering's own checks are not.
#[test]
fn neighbouring_loads_read_as_one_unit() {
    let decorations = "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 4\nOpMemberDecorate %S 2 Offset 8";
    let types = "%S = OpTypeStruct %uint %float %uint\n%pS = OpTypePointer PhysicalStorageBuffer %S\n\
         %pu = OpTypePointer PhysicalStorageBuffer %uint\n%pf = OpTypePointer PhysicalStorageBuffer %float\n";
    let body = |first_align: u32, between: &str, third: bool| {
        let third = if third { "%pcc = OpAccessChain %pu %p %i2\n%c = OpLoad %uint %pcc Aligned 4\n%s2 = OpIAdd %uint %s %c\n" } else { "%s2 = OpCopyObject %uint %s\n" };
        format!(
            "{types}{MAIN_X}%p = OpConvertUToPtr %pS %x\n%pa = OpAccessChain %pu %p %i0\n%va = OpLoad %uint %pa Aligned {first_align}\n{between}\
             %pb = OpAccessChain %pf %p %i1\n%vb = OpLoad %float %pb Aligned 4\n%bu = OpBitcast %uint %vb\n%s = OpIAdd %uint %va %bu\n{third}\
             OpStore %pa %s2 Aligned 4\nOpReturn\nOpFunctionEnd\n"
        )
    };
    let mut lavapipe = robust_options(true);
    lavapipe.target.robust_vector_components = true;
    let combined = |text: &str, o: &Options| {
        let (_, stats) = lower_with(&module(&[], decorations, text), ENV, &[*o]);
        stats.physical_combined_loads
    };
    assert_eq!(combined(&body(8, "", false), &lavapipe), 2, "a and b: one 8-byte unit");
    let (dis, _) = lower_with(&module(&[], decorations, &body(8, "", false)), ENV, &[lavapipe]);
    // The push constant's load and the unit's: one load of the table for the two.
    assert_eq!(dis.matches("OpLoad").count(), 2, "{dis}");
    assert_eq!(combined(&body(8, "OpStore %pa %va Aligned 4\n", false), &lavapipe), 0, "a store between");
    assert_eq!(combined(&body(8, "", true), &lavapipe), 0, "a, b and c span 12 bytes");
    assert_eq!(combined(&body(4, "", false), &lavapipe), 0, "a only 4-aligned");
    let mut per_vector = lavapipe;
    per_vector.target.robust_vector_components = false;
    assert_eq!(combined(&body(8, "", false), &per_vector), 0, "the driver checks vectors as a whole");
    assert_eq!(combined(&body(8, "", false), &options(true)), 0, "the lowering's own checks");
}

/// Target::nonuniform_access_per_lane (lavapipe): a loop holding lowered accesses is marked
/// DontUnroll (an unrolled loop of per-lane accesses multiplies the driver's code); a loop
/// whose control asks for something keeps it; without the quirk nothing changes.
#[test]
fn loops_of_accesses_stay_rolled_where_accesses_are_per_lane() {
    let text = linked_list_text();
    let merge = |dis: &str| dis.lines().find(|l| l.contains("OpLoopMerge")).map(|l| l.split_whitespace().last().unwrap().to_string()).unwrap();
    for robust in [true, false] {
        let mut o = if robust { robust_options(true) } else { options(true) };
        let (dis, stats) = lower_with(&text, "vulkan1.1", &[o]);
        assert_eq!((merge(&dis).as_str(), stats.physical_rolled_loops), ("None", 0), "{dis}");
        o.target.nonuniform_access_per_lane = true;
        let (dis, stats) = lower_with(&text, "vulkan1.1", &[o]);
        assert_eq!((merge(&dis).as_str(), stats.physical_rolled_loops), ("DontUnroll", 1), "{dis}");
        let (dis, stats) = lower_with(&text.replace("OpLoopMerge %merge %body None", "OpLoopMerge %merge %body Unroll"), "vulkan1.1", &[o]);
        assert_eq!((merge(&dis).as_str(), stats.physical_rolled_loops), ("Unroll", 0), "{dis}");
    }
}

/// Where the driver checks bounds, accesses at a dynamically uniform slot (a pointer from the
/// push constants) are not NonUniform, and a module with none declares no non-uniform
/// capability; a pointer loaded from memory through it keeps NonUniform on its accesses.
#[test]
fn uniform_slots_are_not_non_uniform() {
    let types = "%pu = OpTypePointer PhysicalStorageBuffer %uint\n%pp = OpTypePointer PhysicalStorageBuffer %pu\n";
    let direct = format!("{types}{MAIN_X}%p = OpConvertUToPtr %pu %x\n%v = OpLoad %uint %p Aligned 4\n%w = OpIAdd %uint %v %u1\nOpStore %p %w Aligned 4\nOpReturn\nOpFunctionEnd\n");
    let chased = format!("{types}{MAIN_X}%p = OpConvertUToPtr %pp %x\n%q = OpLoad %pu %p Aligned 8\n%v = OpLoad %uint %q Aligned 4\nOpStore %q %v Aligned 4\nOpReturn\nOpFunctionEnd\n");
    let non_uniform = |dis: &str| (dis.lines().filter(|l| l.contains(" NonUniform")).count(), dis.contains("OpCapability ShaderNonUniform"));
    for int64 in [true, false] {
        let (dis, _) = lower_with(&module(&[], "", &direct), ENV, &[robust_options(int64)]);
        assert_eq!(non_uniform(&dis), (0, false), "a push-constant pointer's accesses:\n{dis}");
        let (dis, _) = lower_with(&module(&[], "", &chased), ENV, &[robust_options(int64)]);
        // The load of the pointer is not NonUniform; the chain its load and store share is.
        assert_eq!(non_uniform(&dis), (1, true), "a loaded pointer's accesses:\n{dis}");
    }
}

/// Where the driver checks bounds, an access chain's element index is the decoded offset in
/// view units plus the chain's indices scaled to those units (`(offset >> 2) + i`, arithmetic
/// shift: a pointer below its buffer), not the byte sum shifted back (what lavapipe compiles
/// slower): an element of a uint array is indexed by `i` itself, a member of a struct array
/// by `i × 4 + 1` words, an 8-byte member through the 8-byte view by `i × 2 + 1`.
#[test]
fn element_indices_are_the_chain_s_indices_in_view_units() {
    let decorations = "OpDecorate %arr ArrayStride 4\nOpDecorate %B Block\nOpDecorate %C Block\nOpMemberDecorate %B 0 Offset 0\nOpDecorate %sarr ArrayStride 16\nOpMemberDecorate %T 0 Offset 0\nOpMemberDecorate %T 1 Offset 4\nOpMemberDecorate %T 2 Offset 8\nOpMemberDecorate %C 0 Offset 0";
    let types = "%arr = OpTypeRuntimeArray %uint\n%B = OpTypeStruct %arr\n%pB = OpTypePointer PhysicalStorageBuffer %B\n%pu = OpTypePointer PhysicalStorageBuffer %uint\n\
         %v2 = OpTypeVector %uint 2\n%T = OpTypeStruct %uint %uint %v2\n%sarr = OpTypeRuntimeArray %T\n%C = OpTypeStruct %sarr\n%pC = OpTypePointer PhysicalStorageBuffer %C\n%pv2 = OpTypePointer PhysicalStorageBuffer %v2\n";
    let body = format!(
        "{types}{MAIN_X}%p = OpConvertUToPtr %pB %x\n%a0 = OpAccessChain %pu %p %i0 %u0\n%i = OpLoad %uint %a0 Aligned 4\n\
         %ai = OpAccessChain %pu %p %i0 %i\n%v = OpLoad %uint %ai Aligned 4\n\
         %c = OpConvertUToPtr %pC %x\n%cm = OpAccessChain %pu %c %i0 %i %i1\nOpStore %cm %v Aligned 4\n\
         %cw = OpAccessChain %pv2 %c %i0 %i %i2\n%w = OpLoad %v2 %cw Aligned 8\nOpStore %cw %w Aligned 8\nOpReturn\nOpFunctionEnd\n"
    );
    let text = module(&[], decorations, &body);
    lower(&text);
    let (dis, _) = lower_with(&text, ENV, &[robust_options(true)]);
    let lines: Vec<&str> = dis.lines().map(str::trim).collect();
    let def = |id: &str| *lines.iter().find(|l| l.starts_with(&format!("{id} = "))).unwrap_or_else(|| panic!("{id} not defined:\n{dis}"));
    let opcode = |id: &str| def(id).split_whitespace().nth(2).unwrap().to_string();
    let ops = |id: &str| def(id).split_whitespace().skip(4).map(str::to_string).collect::<Vec<_>>();
    let konst = |id: &str| (opcode(id) == "OpConstant").then(|| ops(id)[0].parse::<u32>().unwrap());
    // The table accesses' chains (the push constant's first), their last index each.
    let chains: Vec<&str> = lines.iter().filter(|l| l.contains("= OpAccessChain ")).map(|l| l.split_whitespace().next().unwrap()).skip(1).collect();
    assert_eq!(chains.len(), 4, "{dis}");
    let last = |k: usize| ops(chains[k]).last().unwrap().clone();
    let shifted = |id: &str, by: u32| opcode(id) == "OpShiftRightArithmetic" && konst(&ops(id)[1]) == Some(by);
    // The first load (element 0, which gives `i`): the shifted offset alone.
    assert!(shifted(&last(0), 2), "element 0: {}\n{dis}", def(&last(0)));
    let i = lines.iter().find(|l| l.contains("= OpLoad ") && l.contains(chains[0])).unwrap().split_whitespace().next().unwrap();
    // uint array: (offset >> 2) + i, the same shifted offset.
    let sum = last(1);
    assert!(opcode(&sum) == "OpIAdd" && ops(&sum) == [last(0), i.to_string()], "uint element: {}\n{dis}", def(&sum));
    // struct member 1: ((offset >> 2) + i × 4) + 1; the 8-byte member: ((offset >> 3) + i × 2) + 1.
    for (k, shift, scale) in [(2, 2, 4), (3, 3, 2)] {
        let outer = last(k);
        assert!(opcode(&outer) == "OpIAdd" && konst(&ops(&outer)[1]) == Some(1), "member: {}\n{dis}", def(&outer));
        let inner = ops(&outer)[0].clone();
        assert!(opcode(&inner) == "OpIAdd" && shifted(&ops(&inner)[0], shift), "member: {}\n{dis}", def(&inner));
        let product = ops(&inner)[1].clone();
        assert!(opcode(&product) == "OpIMul" && ops(&product)[0] == i && konst(&ops(&product)[1]) == Some(scale), "member: {}\n{dis}", def(&product));
    }
    assert!(!dis.contains("OpShiftRightLogical"), "a byte sum shifted back:\n{dis}");
}

/// Pointers through function parameters and results, OpSelect and OpPhi.
#[test]
fn pointers_through_calls_selects_and_phis() {
    let text = module(
        &[],
        "OpDecorate %pu ArrayStride 4\nOpDecorate %param Restrict",
        &format!("%pu = OpTypePointer PhysicalStorageBuffer %uint\n%fnP = OpTypeFunction %pu %pu %uint\n\
         {MAIN_X}%p = OpConvertUToPtr %pu %x\n\
         %v = OpLoad %uint %p Aligned 4\n%r = OpFunctionCall %pu %f %p %v\n%c = OpIEqual %bool %v %u0\n\
         %s = OpSelect %pu %c %p %r\nOpStore %s %v Aligned 4\nOpSelectionMerge %m None\nOpBranchConditional %c %t %m\n\
         %t = OpLabel\n%q = OpPtrAccessChain %pu %p %i1\nOpBranch %m\n\
         %m = OpLabel\n%phi = OpPhi %pu %q %t %p %l\nOpStore %phi %v Aligned 4\nOpReturn\nOpFunctionEnd\n\
         %f = OpFunction %pu None %fnP\n%param = OpFunctionParameter %pu\n%k = OpFunctionParameter %uint\n%fl = OpLabel\n\
         %e = OpPtrAccessChain %pu %param %k\nOpReturnValue %e\nOpFunctionEnd\n"),
    );
    let (dis, stats) = lower(&text);
    assert_eq!((stats.physical_loads, stats.physical_stores), (1, 2), "{stats:?}");
    assert!(!dis.contains("Restrict"), "{dis}");
    // SPIR-V 1.3 (Vulkan 1.1): OpSelect of uvec2 addresses needs a bvec2 condition (spirv-val
    // checks it), the descriptor-indexing extension comes in. (Before SPIR-V 1.4 the interface
    // lists only Input/Output variables.)
    let (dis, _) = lower_in(&text.replace("\"main\" %pc", "\"main\""), "vulkan1.1", &[false]);
    assert!(dis.contains("SPV_EXT_descriptor_indexing"), "{dis}");
}

/// Every scalar width and vector size: a member of each vector size at an offset aligned to
/// the value's size, loaded and stored through a member chain, and the whole struct loaded and
/// stored (split into its leaves).
#[test]
fn every_scalar_width_and_vector_size() {
    let scalars = [
        ("%t = OpTypeInt 8 0", "u8"),
        ("%t = OpTypeInt 8 1", "i8"),
        ("%t = OpTypeInt 16 0", "u16"),
        ("%t = OpTypeInt 16 1", "i16"),
        ("%t = OpTypeFloat 16", "f16"),
        ("%t = OpCopyObject", "u32"),
        ("%t = OpCopyObject", "i32"),
        ("%t = OpCopyObject", "f32"),
        ("%t = OpCopyObject", "u64"),
        ("%t = OpTypeInt 64 1", "i64"),
        ("%t = OpTypeFloat 64", "f64"),
    ];
    for (decl, name) in scalars {
        // 32-bit scalars and u64 are declared by the header already.
        let (decl, t) = match name {
            "u32" => (String::new(), "%uint"),
            "i32" => (String::new(), "%int"),
            "f32" => (String::new(), "%float"),
            "u64" => (String::new(), "%ulong"),
            _ => (format!("{decl}\n"), "%t"),
        };
        let bytes: u32 = name[1..].parse::<u32>().unwrap() / 8;
        let mut decorations = String::new();
        let (mut vectors, mut members, mut pointers) = (String::new(), String::new(), String::new());
        let mut body = String::from("%main = OpFunction %void None %fn\n%l = OpLabel\n%a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n%p = OpConvertUToPtr %pS %x\n");
        for n in 1..=4u32 {
            let member = n - 1;
            let align = (bytes * if n == 3 { 4 } else { n }).min(16);
            decorations += &format!("OpMemberDecorate %S {member} Offset {}\n", 32 * member);
            let vt = if n == 1 { t.to_string() } else { format!("%v{n}") };
            if n > 1 {
                vectors += &format!("%v{n} = OpTypeVector {t} {n}\n");
            }
            members += &format!(" {vt}");
            pointers += &format!("%pm{n} = OpTypePointer PhysicalStorageBuffer {vt}\n");
            body += &format!("%m{n} = OpAccessChain %pm{n} %p %i{member}\n%x{n} = OpLoad {vt} %m{n} Aligned {align}\nOpStore %m{n} %x{n} Aligned {align}\n");
        }
        let types = format!("{decl}{vectors}%S = OpTypeStruct{members}\n%pS = OpTypePointer PhysicalStorageBuffer %S\n{pointers}");
        let end = "OpReturn\nOpFunctionEnd\n";
        let whole = "%whole = OpLoad %S %p Aligned 16\nOpStore %p %whole Aligned 16\n";
        // 8/16-bit values: with the storage capabilities alone (no struct of them may be loaded
        // whole), and with the arithmetic ones too.
        let variants: Vec<(Vec<&str>, bool)> = match name {
            "u8" | "i8" => vec![(vec!["StorageBuffer8BitAccess"], false), (vec!["StorageBuffer8BitAccess", "Int8"], true)],
            "u16" | "i16" | "f16" => vec![(vec!["StorageBuffer16BitAccess"], false), (vec!["StorageBuffer16BitAccess", "Int16", "Float16"], true)],
            "f64" => vec![(vec!["Float64"], true)],
            _ => vec![(vec![], true)],
        };
        for (caps, with_whole) in variants {
            let text = module(&caps, &decorations, &format!("{types}{body}{}{end}", if with_whole { whole } else { "" }));
            // Both address types, and a target without 8/16-bit storage, emulated.
            let core_storage = Target { int64: true, ..Target::core() };
            let emulated = Options { target: core_storage, emulate_storage: shader_rewrite::SmallStorage::missing_from(&core_storage), ..options(true) };
            let (_, stats) = lower_with(&text, ENV, &[options(true), options(false), emulated]);
            let n = 4 + with_whole as u32;
            assert_eq!((stats.physical_loads, stats.physical_stores), (n, n), "{name} {caps:?}: {stats:?}");
        }
    }
}

/// Matrices in both majorities and arrays inside a struct: whole loads/stores split into leaves
/// by MatrixStride/RowMajor/ArrayStride, and chains to a row-major column and to one element.
#[test]
fn matrices_and_arrays() {
    let text = module(
        &[],
        "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 0 ColMajor\nOpMemberDecorate %S 0 MatrixStride 16\n\
         OpMemberDecorate %S 1 Offset 64\nOpMemberDecorate %S 1 RowMajor\nOpMemberDecorate %S 1 MatrixStride 16\n\
         OpMemberDecorate %S 2 Offset 112\nOpDecorate %arr ArrayStride 16",
        &format!("%v3 = OpTypeVector %float 3\n%v4 = OpTypeVector %float 4\n%m4 = OpTypeMatrix %v4 4\n%m23 = OpTypeMatrix %v3 2\n\
         %arr = OpTypeArray %float %u4\n%S = OpTypeStruct %m4 %m23 %arr\n%pS = OpTypePointer PhysicalStorageBuffer %S\n\
         %pm23 = OpTypePointer PhysicalStorageBuffer %m23\n%pv3 = OpTypePointer PhysicalStorageBuffer %v3\n%pf = OpTypePointer PhysicalStorageBuffer %float\n\
         {MAIN_X}%p = OpConvertUToPtr %pS %x\n\
         %s = OpLoad %S %p Aligned 16\nOpStore %p %s Aligned 16\n\
         %m = OpAccessChain %pm23 %p %i1\n%mv = OpLoad %m23 %m Aligned 16\nOpStore %m %mv Aligned 16\n\
         %col = OpAccessChain %pv3 %p %i1 %i1\n%c = OpLoad %v3 %col Aligned 4\nOpStore %col %c Aligned 4\n\
         %el = OpAccessChain %pf %p %i1 %i1 %i2\n%f = OpLoad %float %el Aligned 4\n%ae = OpAccessChain %pf %p %i2 %i3\nOpStore %ae %f Aligned 4\n\
         OpReturn\nOpFunctionEnd\n"),
    );
    let (_, stats) = lower(&text);
    assert_eq!((stats.physical_loads, stats.physical_stores), (4, 4), "{stats:?}");
}

/// A matrix's layout (MatrixStride, RowMajor) decorates the struct member that holds it, so
/// the lowering follows it along access chains; where no chain from a struct leads to the
/// matrix (a pointer to the matrix made from an integer) or a chained pointer into a matrix
/// leaves as a value (here through a function called twice: one called once is inlined, and
/// its chains then start at the caller's root) it refuses, rather than guess a stride.
/// (That the accesses along chains use the member's layout is run and compared with the
/// driver's in the e2e test `buffer_device_address::matrices_through_chains`.)
#[test]
fn matrices_without_a_known_layout_are_an_error() {
    let decorations = "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 0 ColMajor\nOpMemberDecorate %S 0 MatrixStride 16";
    let types = "%v4 = OpTypeVector %float 4\n%m4 = OpTypeMatrix %v4 4\n%S = OpTypeStruct %m4\n\
                 %pS = OpTypePointer PhysicalStorageBuffer %S\n%pm4 = OpTypePointer PhysicalStorageBuffer %m4\n";
    let from_integer = module(&[], decorations, &format!("{types}{MAIN_X}%m = OpConvertUToPtr %pm4 %x\n%v = OpLoad %m4 %m Aligned 16\nOpReturn\nOpFunctionEnd\n"));
    let e = error(&from_integer);
    assert!(matches!(&e, RewriteError::Unsupported { reason, .. } if reason.contains("MatrixStride")), "{e}");
    let through_a_call = module(
        &[],
        decorations,
        &format!(
            "{types}%fm = OpTypeFunction %void %pm4\n\
             %use = OpFunction %void None %fm\n%q = OpFunctionParameter %pm4\n%ul = OpLabel\n%w = OpLoad %m4 %q Aligned 16\nOpReturn\nOpFunctionEnd\n\
             {MAIN_X}%p = OpConvertUToPtr %pS %x\n%m = OpAccessChain %pm4 %p %i0\n%r = OpFunctionCall %void %use %m\n\
             %r2 = OpFunctionCall %void %use %m\nOpReturn\nOpFunctionEnd\n"
        ),
    );
    let e = error(&through_a_call);
    assert!(matches!(&e, RewriteError::Unsupported { reason, .. } if reason.contains("MatrixStride")), "{e}");
}

/// A function of one block that takes or returns physical pointers and is called once is
/// inlined before the lowering, its variables moved to the caller's entry block; a select of two
/// pointers of one root and a pointer made again from a pointer's 64 bits are that root plus an
/// offset: one address decode serves every access. A function called
/// twice stays a function (its parameter decoded in it).
#[test]
fn pointers_through_functions_selects_and_bits_share_one_decode() {
    let types = "%pu = OpTypePointer PhysicalStorageBuffer %uint\n%v2 = OpTypeVector %uint 2\n%fvar = OpTypePointer Function %uint\n\
                 %fstep = OpTypeFunction %pu %pu %uint\n%fput = OpTypeFunction %void %pu\n";
    let step = "%step = OpFunction %pu None %fstep\n%sp = OpFunctionParameter %pu\n%si = OpFunctionParameter %uint\n%sl = OpLabel\n\
                %tmp = OpVariable %fvar Function\nOpStore %tmp %si\n%sj = OpLoad %uint %tmp\n%sq = OpPtrAccessChain %pu %sp %sj\n\
                OpReturnValue %sq\nOpFunctionEnd\n";
    let put = "%put = OpFunction %void None %fput\n%pp = OpFunctionParameter %pu\n%pl = OpLabel\nOpStore %pp %u1 Aligned 4\nOpReturn\nOpFunctionEnd\n";
    let main = |second_put: &str| {
        format!(
            "{MAIN_X}%p = OpConvertUToPtr %pu %x\n%n = OpLoad %uint %p Aligned 4\n%q = OpFunctionCall %pu %step %p %n\n\
             %c = OpINotEqual %bool %n %u0\n%s = OpSelect %pu %c %p %q\n%old = OpAtomicIAdd %uint %s %u1 %u0 %u1\n\
             %bits = OpBitcast %v2 %p\n%back = OpBitcast %pu %bits\nOpStore %back %old Aligned 4\n%r = OpFunctionCall %void %put %q\n\
             {second_put}OpReturn\nOpFunctionEnd\n"
        )
    };
    let decorations = "OpDecorate %pu ArrayStride 4";
    let once = module(&[], decorations, &format!("{types}{step}{put}{}", main("")));
    for o in [options(true), robust_options(true), robust_options(false)] {
        let (dis, stats) = lower_with(&once, ENV, &[o]);
        assert_eq!(stats.physical_inlined_functions, 2, "{dis}");
        if o.target.robust_buffer_access2 {
            // (Where the lowering checks bounds, `locate` and the atomic are helpers.)
            assert!(!dis.contains("OpFunctionCall"), "not inlined:\n{dis}");
            // The decode's XOR undoing the offset's bias (`bda::OFFSET_LIMIT`): the only one there.
            assert_eq!(dis.matches("OpBitwiseXor").count(), 1, "one address decode:\n{dis}");
        }
    }
    let twice = module(&[], decorations, &format!("{types}{step}{put}{}", main("%r2 = OpFunctionCall %void %put %p\n")));
    let (dis, stats) = lower_with(&twice, ENV, &[robust_options(true)]);
    assert_eq!(stats.physical_inlined_functions, 1, "{dis}");
    assert_eq!(dis.matches("OpFunctionCall").count(), 2, "{dis}");
    // Debug info naming `step` (NonSemantic.Shader.DebugInfo.100's DebugFunctionDefinition in
    // its body, as glslang -gVS and DXC emit it): `step` stays a function, so that operand
    // still names one (inlined, the output did not validate); `put` is inlined.
    let debug = "%u100 = OpConstant %uint 100\n%u5 = OpConstant %uint 5\n%u2 = OpConstant %uint 2\n\
                 %dsrc = OpExtInst %void %dbg DebugSource %file\n%dcu = OpExtInst %void %dbg DebugCompilationUnit %u100 %u5 %dsrc %u2\n\
                 %dtf = OpExtInst %void %dbg DebugTypeFunction %u0 %void\n\
                 %dfn = OpExtInst %void %dbg DebugFunction %file %dtf %dsrc %u1 %u1 %dcu %file %u0 %u1\n\
                 %dtb = OpExtInst %void %dbg DebugTypeBasic %file %u100 %u2 %u0\n\
                 %dlv = OpExtInst %void %dbg DebugLocalVariable %file %dtb %dsrc %u1 %u1 %dcu %u0\n%dexpr = OpExtInst %void %dbg DebugExpression\n";
    let named = module(&[], decorations, &format!("{types}{debug}{}{put}{}", step.replace("%tmp = OpVariable %fvar Function\n", "%tmp = OpVariable %fvar Function\n%ddef = OpExtInst %void %dbg DebugFunctionDefinition %dfn %step\n"), main("")))
        .replace("OpMemoryModel", "OpExtension \"SPV_KHR_non_semantic_info\"\n%dbg = OpExtInstImport \"NonSemantic.Shader.DebugInfo.100\"\nOpMemoryModel")
        .replace("OpDecorate %PC Block", "%file = OpString \"a.comp\"\nOpDecorate %PC Block");
    // (And a DebugValue of a pointer the lowering makes an offset of a root: its address is
    // made for it.)
    let named = named.replace("%s = OpSelect %pu %c %p %q\n", "%s = OpSelect %pu %c %p %q\n%dv = OpExtInst %void %dbg DebugValue %dlv %s %dexpr\n");
    let (dis, stats) = lower_with(&named, ENV, &[robust_options(true), options(false)]);
    assert_eq!(stats.physical_inlined_functions, 1, "{dis}");
    assert!(dis.contains("DebugFunctionDefinition") && dis.contains("DebugValue") && dis.matches("OpFunction ").count() == 2, "{dis}");
}

/// A 16-bit float loaded through a pointer in a module with Float16 is made from the loaded bits
/// and comes back from the helper as itself: no f32 round trip (UnpackHalf2x16 and OpFConvert
/// may quiet or canonicalize NaN payloads), with the lowering's checks and without.
#[test]
fn f16_loads_keep_their_bits_with_float16() {
    let text = module(
        &["Float16", "StorageBuffer16BitAccess"],
        "OpDecorate %arr ArrayStride 8\nOpMemberDecorate %S 0 Offset 0\nOpDecorate %S Block",
        &format!(
            "%half = OpTypeFloat 16\n%v4h = OpTypeVector %half 4\n%arr = OpTypeRuntimeArray %v4h\n%S = OpTypeStruct %arr\n\
             %pS = OpTypePointer PhysicalStorageBuffer %S\n%pv = OpTypePointer PhysicalStorageBuffer %v4h\n\
             {MAIN_X}%p = OpConvertUToPtr %pS %x\n%e = OpAccessChain %pv %p %i0 %i1\n%v = OpLoad %v4h %e Aligned 8\n\
             %s = OpFAdd %v4h %v %v\n%q = OpAccessChain %pv %p %i0 %i2\nOpStore %q %s Aligned 8\nOpReturn\nOpFunctionEnd\n"
        ),
    );
    let words = assemble(&text, ENV);
    for o in [options(true), robust_options(true)] {
        let out = rewrite(&words, &o).unwrap_or_else(|e| panic!("{e}"));
        let dis = disassemble(&out.words);
        validate(&out.words, ENV).unwrap_or_else(|e| panic!("{e}\n{dis}"));
        assert!(!dis.contains("UnpackHalf2x16"), "an f16 load through f32 ({o:?}):\n{dis}");
    }
}

/// Raw access chains on physical bases: the raw-chain pass turns them into address arithmetic
/// and an OpBitcast from uvec2, which this pass then lowers; also for a target that has raw
/// chains itself (addresses forced on NVIDIA), since this pass cannot follow a raw chain.
#[test]
fn raw_chains_on_physical_bases() {
    let text = module(
        &["RawAccessChainsNV"],
        "",
        "%v2u = OpTypeVector %uint 2\n%v4f = OpTypeVector %float 4\n%c16 = OpConstant %uint 16\n\
         %pscalar = OpTypePointer PhysicalStorageBuffer %uint\n%pvec = OpTypePointer PhysicalStorageBuffer %v4f\n\
         %main = OpFunction %void None %fn\n%entry = OpLabel\n\
         %ap = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %ap\n%base = OpConvertUToPtr %pscalar %x\n\
         %i = OpLoad %uint %base Aligned 4\n\
         %p = OpRawAccessChainNV %pvec %base %c16 %i %u4\n%v = OpLoad %v4f %p Aligned 4\n\
         %q = OpRawAccessChainNV %pvec %base %u0 %u0 %u0\nOpStore %q %v Aligned 16\n\
         OpReturn\nOpFunctionEnd\n",
    );
    let (dis, stats) = lower(&text);
    assert_eq!((stats.raw_chains_physical, stats.physical_loads, stats.physical_stores), (2, 2, 1), "{stats:?}");
    assert!(!dis.contains("RawAccessChain"), "{dis}");
    let native_raw_chains: Vec<Options> = [options(true), robust_options(false)].into_iter().map(|o| Options { emulate_raw_access_chains: false, ..o }).collect();
    let (dis, stats) = lower_with(&text, ENV, &native_raw_chains);
    assert_eq!((stats.raw_chains_physical, stats.physical_loads, stats.physical_stores), (2, 2, 1), "{stats:?}");
    assert!(!dis.contains("RawAccessChain"), "{dis}");
}

/// SPV_NV_bindless_texture handles in physical memory: the bindless pass turns them into
/// integers, then this pass lowers the buffer reference (spirv-val cannot check the input).
#[test]
fn bindless_handles_in_physical_memory() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/bindless/physical-buffer-member.spvasm");
    let words = assemble(&std::fs::read_to_string(path).unwrap(), "vulkan1.3");
    let options = Options { bindless: Some(shader_rewrite::BindlessTable::with_defaults(5)), ..options(true) };
    let out = rewrite(&words, &options).unwrap_or_else(|e| panic!("{e}"));
    let dis = disassemble(&out.words);
    validate(&out.words, "vulkan1.3").unwrap_or_else(|e| panic!("{e}\n{dis}"));
    assert!(!dis.contains("PhysicalStorageBuffer") && !dis.contains("BindlessTextureNV"), "{dis}");
    assert!(out.stats.physical_loads > 0 && out.stats.bindless_descriptor_loads > 0, "{:?}", out.stats);
}

/// OpCopyMemory between physical memory and a storage buffer, both ways, and between two
/// physical pointers; a Private variable holding a struct with a pointer member.
#[test]
fn copy_memory_and_pointers_in_private_structs() {
    let text = module(
        &[],
        "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 8\nOpDecorate %S Block\n\
         OpDecorate %sb DescriptorSet 0\nOpDecorate %sb Binding 0",
        &format!("%pu = OpTypePointer PhysicalStorageBuffer %uint\n%S = OpTypeStruct %pu %uint\n%pS = OpTypePointer PhysicalStorageBuffer %S\n\
         %l16 = OpConstant %ulong 16\n%sbS = OpTypePointer StorageBuffer %S\n%sb = OpVariable %sbS StorageBuffer\n\
         %H = OpTypeStruct %pu %uint\n%prH = OpTypePointer Private %H\n%prpu = OpTypePointer Private %pu\n%priv = OpVariable %prH Private\n\
         {MAIN_X}%p = OpConvertUToPtr %pS %x\n%xq = OpIAdd %ulong %x %l16\n%q = OpConvertUToPtr %pS %xq\n\
         OpCopyMemory %sb %p Aligned 8 Aligned 8\nOpCopyMemory %q %sb Aligned 8\nOpCopyMemory %q %p Aligned 8 Aligned 16\n\
         %m = OpAccessChain %pu %p %i1\n%held = OpAccessChain %prpu %priv %i0\nOpStore %held %m\n%back = OpLoad %pu %held\n\
         %v = OpLoad %uint %back Aligned 4\nOpStore %back %v Aligned 4\nOpReturn\nOpFunctionEnd\n"),
    );
    let (_, stats) = lower(&text);
    assert_eq!((stats.physical_loads, stats.physical_stores), (3, 3), "{stats:?}");
}

/// OpPtrEqual, OpPtrNotEqual and OpPtrDiff on physical pointers (spirv-val refuses them on
/// that storage class, so only the output is checked): integer comparisons and an offset
/// difference in elements of the pointer type's ArrayStride.
#[test]
fn pointer_comparisons() {
    let text = module(
        &["VariablePointers"],
        "OpDecorate %pu ArrayStride 4",
        &format!("%pu = OpTypePointer PhysicalStorageBuffer %uint\n\
         {MAIN_X}%p = OpConvertUToPtr %pu %x\n%q = OpPtrAccessChain %pu %p %i3\n\
         %eq = OpPtrEqual %bool %p %q\n%ne = OpPtrNotEqual %bool %p %q\n%d = OpPtrDiff %int %q %p\n\
         %both = OpLogicalAnd %bool %eq %ne\n%du = OpBitcast %uint %d\n%v = OpSelect %uint %both %du %u0\nOpStore %p %v Aligned 4\n\
         OpReturn\nOpFunctionEnd\n"),
    );
    let words = assemble(&text, ENV);
    for int64 in [true, false] {
        let out = rewrite(&words, &options(int64)).unwrap_or_else(|e| panic!("{e}"));
        let dis = disassemble(&out.words);
        validate(&out.words, ENV).unwrap_or_else(|e| panic!("{e}\n{dis}"));
        assert!(dis.contains("OpSDiv") && !dis.contains("OpPtr"), "{dis}");
    }
}

/// Float atomics (add, min/max, exchange, load, store) through a view of the float type.
#[test]
fn float_atomics() {
    let text = module(
        &["AtomicFloat32AddEXT", "AtomicFloat32MinMaxEXT", "AtomicFloat64AddEXT", "Float64"],
        "",
        &format!("%double = OpTypeFloat 64\n%pf = OpTypePointer PhysicalStorageBuffer %float\n%pd = OpTypePointer PhysicalStorageBuffer %double\n\
         %f1 = OpConstant %float 1\n%d1 = OpConstant %double 1\n%l8 = OpConstant %ulong 8\n\
         {MAIN_X}%p = OpConvertUToPtr %pf %x\n%x8 = OpIAdd %ulong %x %l8\n%q = OpConvertUToPtr %pd %x8\n\
         %r0 = OpAtomicFAddEXT %float %p %u1 %u0 %f1\n%r1 = OpAtomicFMaxEXT %float %p %u1 %u0 %r0\n%r2 = OpAtomicExchange %float %p %u1 %u0 %r1\n\
         %r3 = OpAtomicLoad %float %p %u1 %u0\nOpAtomicStore %p %u1 %u0 %r3\n%r4 = OpAtomicFAddEXT %double %q %u1 %u0 %d1\n\
         OpReturn\nOpFunctionEnd\n"),
    )
    .replace("OpMemoryModel", "OpExtension \"SPV_EXT_shader_atomic_float_add\"\nOpExtension \"SPV_EXT_shader_atomic_float_min_max\"\nOpMemoryModel");
    let (dis, stats) = lower(&text);
    assert_eq!(stats.physical_atomics, 6, "{stats:?}");
    assert!(dis.contains("OpAtomicFAddEXT") && dis.contains("OpAtomicFMaxEXT"), "{dis}");
}

/// What the lowering cannot do is refused, naming the instruction: a 16-bit float atomic.
#[test]
fn half_float_atomics_are_an_error() {
    let text = module(
        &["AtomicFloat16AddEXT", "StorageBuffer16BitAccess", "Float16"],
        "",
        &format!("%half = OpTypeFloat 16\n%ph = OpTypePointer PhysicalStorageBuffer %half\n%h1 = OpConstant %half 1\n\
         {MAIN_X}%p = OpConvertUToPtr %ph %x\n\
         %r = OpAtomicFAddEXT %half %p %u1 %u0 %h1\nOpReturn\nOpFunctionEnd\n"),
    )
    .replace("OpMemoryModel", "OpExtension \"SPV_EXT_shader_atomic_float16_add\"\nOpMemoryModel");
    let e = error(&text);
    assert!(matches!(&e, RewriteError::Unsupported { instruction, .. } if instruction.contains("6035")), "{e}");
}

/// The corpus modules (tests/corpus/physical-storage-buffer, also the fuzzers' seeds), SPIR-V 1.3.
#[test]
fn corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/physical-storage-buffer");
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "spvasm")).collect();
    names.sort();
    assert!(names.len() >= 2);
    for path in names {
        let (_, stats) = lower_in(&std::fs::read_to_string(&path).unwrap(), "vulkan1.1", &[true, false]);
        assert!(stats.physical_loads > 0 && stats.physical_stores > 0, "{}: {stats:?}", path.display());
    }
}

/// Issues 24/25's size target on the target the layer finds on lavapipe (robustBufferAccess2:
/// the driver checks bounds): no corpus module's rewrite is more than twice its input's words.
/// (The Vulkan 1.0 core profile, which checks bounds itself, is above it: README, "Where it
/// stands".)
#[test]
fn corpus_output_at_most_twice_the_input_on_lavapipe() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/physical-storage-buffer");
    let options = Options { target: Target::lavapipe(), bda: Some(TABLE), ..Options::default() };
    for path in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "spvasm")) {
        let input = assemble(&std::fs::read_to_string(&path).unwrap(), "vulkan1.1");
        let out = rewrite(&input, &options).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        validate(&out.words, "vulkan1.1").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(out.words.len() <= 2 * input.len(), "{}: {} -> {} words", path.display(), input.len(), out.words.len());
    }
}

/// Drivers that take one OpArrayLength per subgroup for a non-uniform descriptor index
/// (Target::nonuniform_array_length_broken, lavapipe): the buffer length comes from a
/// waterfall loop over the subgroup's slots, in the stages where that driver has subgroups.
#[test]
fn array_length_quirk_takes_lengths_in_a_waterfall_loop() {
    let words = assemble(&linked_list_text(), "vulkan1.1");
    for int64 in [true, false] {
        let mut options = options(int64);
        options.target.nonuniform_array_length_broken = true;
        let out = rewrite(&words, &options).unwrap_or_else(|e| panic!("{e}"));
        let dis = disassemble(&out.words);
        validate(&out.words, "vulkan1.1").unwrap_or_else(|e| panic!("{e}\n{dis}"));
        assert!(dis.contains("OpGroupNonUniformBroadcastFirst") && dis.contains("OpLoopMerge"), "{dis}");
        // The loop phi's class is located once, in the loop header: its waterfall loop is
        // inlined there (the header cut after its OpLoopMerge), no helper function is left.
        assert_eq!(dis.matches("OpFunction ").count(), 1, "{dis}");
        // Every table access is one chain from the table variable (no chain from a chain).
        let chains: Vec<Vec<&str>> = dis.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()).filter(|w| w.get(2) == Some(&"OpAccessChain")).collect();
        for c in &chains {
            assert!(!chains.iter().any(|d| d[0] == c[4]), "{} chains from a chain\n{dis}", c[0]);
        }
    }
    // Not in a vertex shader: lavapipe has no subgroup operations there.
    let text = linked_list_text().replace("OpEntryPoint GLCompute", "OpEntryPoint Vertex").replace("OpExecutionMode %main LocalSize 1 1 1", "");
    let mut options = options(true);
    options.target.nonuniform_array_length_broken = true;
    let (dis, _) = lower_with(&text, "vulkan1.1", &[options]);
    assert!(!dis.contains("OpGroupNonUniform"), "{dis}");
}

/// Alignments × views: 32/64-bit scalars and vectors accessed with every Aligned value from
/// their component's size (the least Vulkan allows) up to their size, on targets with and without 8/16-bit storage (byte/short views, or word parts
/// with atomic sub-word stores) and with and without Int64.
#[test]
fn alignments_and_views() {
    let mut targets = vec![];
    for int64 in [true, false] {
        for small_views in [true, false] {
            let target = Target { int64, storage_buffer_8bit: small_views, storage_buffer_16bit: small_views, ..Target::all() };
            targets.push(Options { target, ..options(int64) });
        }
    }
    for (ty, decl, comp, size) in [("%uint", "", 4, 4), ("%v3f", "%v3f = OpTypeVector %float 3\n", 4, 12), ("%ulong", "", 8, 8), ("%v2l", "%v2l = OpTypeVector %ulong 2\n", 8, 16)] {
        let mut body = format!("{decl}%pt = OpTypePointer PhysicalStorageBuffer {ty}\n%main = OpFunction %void None %fn\n%l = OpLabel\n%a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n%p = OpConvertUToPtr %pt %x\n");
        let mut align = comp;
        while align <= size {
            body += &format!("%v{align} = OpLoad {ty} %p Aligned {align}\nOpStore %p %v{align} Aligned {align}\n");
            align *= 2;
        }
        body += "OpReturn\nOpFunctionEnd\n";
        let (_, stats) = lower_with(&module(&[], "", &body), ENV, &targets);
        assert!(stats.physical_loads > 0 && stats.physical_loads == stats.physical_stores, "{ty}: {stats:?}");
    }
}

/// 8/16-bit values in physical memory on a target that lacks 8/16-bit storage and has it
/// emulated (the layer's setting): the widths lowering runs first, then this pass.
#[test]
fn small_types_with_emulated_storage() {
    let text = module(
        &["StorageBuffer16BitAccess"],
        "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 2\nOpMemberDecorate %S 2 Offset 4",
        &format!("%u16 = OpTypeInt 16 0\n%f16 = OpTypeFloat 16\n%S = OpTypeStruct %u16 %u16 %f16\n%pS = OpTypePointer PhysicalStorageBuffer %S\n\
         %p16 = OpTypePointer PhysicalStorageBuffer %u16\n\
         {MAIN_X}%p = OpConvertUToPtr %pS %x\n\
         %m0 = OpAccessChain %p16 %p %i0\n%m1 = OpAccessChain %p16 %p %i1\n%v = OpLoad %u16 %m0 Aligned 2\nOpStore %m1 %v Aligned 2\n\
         OpReturn\nOpFunctionEnd\n"),
    );
    // Without 16-bit storage the 16-bit members are moved through the byte view; without 8-bit
    // storage either, through word parts (stores as atomic and/or pairs).
    for (no_8bit, atomics) in [(false, false), (true, true)] {
        let mut target = Target { storage_buffer_16bit: false, uniform_and_storage_buffer_16bit: false, ..Target::all() };
        if no_8bit {
            target = Target { storage_buffer_8bit: false, uniform_and_storage_buffer_8bit: false, ..target };
        }
        let emulated = Options { target, emulate_storage: shader_rewrite::SmallStorage::missing_from(&target), ..options(true) };
        let (dis, stats) = lower_with(&text, ENV, &[emulated]);
        assert!(!dis.contains("16BitAccess") && !dis.contains("OpTypeInt 16"), "{dis}");
        assert_eq!(dis.contains("OpAtomicOr"), atomics, "{dis}");
        assert_eq!((stats.physical_loads, stats.physical_stores, stats.atomic_subword_stores), (1, 1, atomics as u32), "{stats:?}");
    }
}

/// The buffer lengths the rewrite takes: one per located class when each is located by an
/// inlined copy of the `locate` helper (one class), one in the helper otherwise.
fn lengths(dis: &str) -> usize {
    dis.matches("OpArrayLength").count()
}

const NODE: &str = "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 4\nOpMemberDecorate %S 2 Offset 16";
const NODE_TYPES: &str = "%v4f = OpTypeVector %float 4\n%S = OpTypeStruct %uint %uint %v4f\n\
     %pS = OpTypePointer PhysicalStorageBuffer %S\n%pu = OpTypePointer PhysicalStorageBuffer %uint\n\
     %pv4 = OpTypePointer PhysicalStorageBuffer %v4f\n";

/// One pointer accessed in both arms of a selection and after it: located once, before the
/// selection (the arms' common dominator), for all five accesses.
#[test]
fn pointer_accessed_in_several_blocks_is_located_once() {
    let body = format!(
        "{NODE_TYPES}{MAIN_X}%p = OpConvertUToPtr %pS %x\n\
         %c = OpAccessChain %pu %p %i0\n%v = OpLoad %uint %c Aligned 16\n%z = OpIEqual %bool %v %u0\n\
         OpSelectionMerge %m None\nOpBranchConditional %z %t %e\n\
         %t = OpLabel\n%q = OpAccessChain %pu %p %i1\nOpStore %q %u1 Aligned 4\nOpBranch %m\n\
         %e = OpLabel\n%w = OpAccessChain %pv4 %p %i2\n%wv = OpLoad %v4f %w Aligned 16\nOpStore %w %wv Aligned 16\nOpBranch %m\n\
         %m = OpLabel\nOpStore %c %u4 Aligned 16\nOpReturn\nOpFunctionEnd\n"
    );
    let (dis, stats) = lower(&module(&[], NODE, &body));
    assert_eq!((stats.physical_loads, stats.physical_stores, stats.physical_located), (2, 3, 1), "{stats:?}");
    assert_eq!(lengths(&dis), 1, "{dis}");
    // The address's pointer chains were never needed as values: no address arithmetic (the
    // high word kept by an OpBitwiseAnd; OpBitwiseOr also probes a whole-unit bounds check).
    assert!(!dis.contains("OpBitwiseAnd"), "{dis}");
}

/// A pointer from a push constant accessed inside a loop is located before the loop (its
/// value is the same in every iteration); a pointer that changes per iteration (a phi) is
/// located in the loop, once per iteration for both of its accesses.
#[test]
fn located_outside_the_loops_it_does_not_change_in() {
    let body = format!(
        "{NODE_TYPES}%pp = OpTypePointer PhysicalStorageBuffer %pS\n%main = OpFunction %void None %fn\n%entry = OpLabel\n\
         OpBranch %header\n\
         %header = OpLabel\n%k = OpPhi %uint %u0 %entry %k2 %body\n%more = OpULessThan %bool %k %u4\nOpLoopMerge %exit %body None\nOpBranchConditional %more %body %exit\n\
         %body = OpLabel\n%a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n%p = OpConvertUToPtr %pS %x\n\
         %e = OpAccessChain %pu %p %i1\n%v = OpLoad %uint %e Aligned 4\n%v2 = OpIAdd %uint %v %k\nOpStore %e %v2 Aligned 4\n\
         %k2 = OpIAdd %uint %k %u1\nOpBranch %header\n\
         %exit = OpLabel\nOpReturn\nOpFunctionEnd\n"
    );
    let (dis, stats) = lower(&module(&[], NODE, &body));
    assert_eq!((stats.physical_loads, stats.physical_stores, stats.physical_located), (1, 1, 1), "{stats:?}");
    // Located in the entry block: before the loop header's OpLoopMerge.
    let located = dis.find("OpArrayLength").expect("a length");
    let loop_merge = dis.find("OpLoopMerge").expect("the loop");
    assert!(located < loop_merge, "{dis}");
}

/// Loads of what an earlier load read, with no write between on any path, reuse its value
/// (glslang reloads a pointer chain at each use); a store, a barrier or a call in between
/// keeps the later load.
#[test]
fn loads_reuse_earlier_loads_until_a_write() {
    let types = format!("{NODE_TYPES}%pp = OpTypePointer PhysicalStorageBuffer %pS\n%Q = OpTypeStruct %pS\n%pQ = OpTypePointer PhysicalStorageBuffer %Q\n%u2 = OpConstant %uint 2\n%acq_rel = OpConstant %uint 72\n");
    let decorations = format!("{NODE}\nOpMemberDecorate %Q 0 Offset 0");
    let body = |between: &str| {
        format!(
            "{types}{MAIN_X}%q = OpConvertUToPtr %pQ %x\n\
             %f1 = OpAccessChain %pp %q %i0\n%p1 = OpLoad %pS %f1 Aligned 8\n%c1 = OpAccessChain %pu %p1 %i0\n%v1 = OpLoad %uint %c1 Aligned 16\n\
             {between}\
             %a2 = OpAccessChain %pcu %pc %i0\n%x2 = OpLoad %ulong %a2\n%q2 = OpConvertUToPtr %pQ %x2\n\
             %f2 = OpAccessChain %pp %q2 %i0\n%p2 = OpLoad %pS %f2 Aligned 8\n%c2 = OpAccessChain %pu %p2 %i1\n%v2 = OpLoad %uint %c2 Aligned 4\n\
             %s = OpIAdd %uint %v1 %v2\n%o = OpAccessChain %pu %p2 %i1\nOpStore %o %s Aligned 4\nOpReturn\nOpFunctionEnd\n"
        )
    };
    // No write between: the second pointer load is the first's value (same class, located once).
    let (_, stats) = lower(&module(&[], &decorations, &body("")));
    assert_eq!((stats.physical_loads, stats.physical_reused_loads, stats.physical_located), (3, 1, 2), "{stats:?}");
    // A store through a physical pointer between: the pointer is loaded (and located) again.
    let (_, stats) = lower(&module(&[], &decorations, &body("OpStore %c1 %u1 Aligned 16\n")));
    assert_eq!((stats.physical_loads, stats.physical_reused_loads, stats.physical_located), (4, 0, 3), "{stats:?}");
    // A barrier between (other invocations' writes become visible): loaded again.
    let (_, stats) = lower(&module(&[], &decorations, &body("OpControlBarrier %u2 %u2 %acq_rel\n")));
    assert_eq!((stats.physical_loads, stats.physical_reused_loads), (4, 0), "{stats:?}");
}
