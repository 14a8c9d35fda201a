//! 8/16-bit storage lowering, checked as SPIR-V in/out: the output validates without the
//! emulated capabilities, is deterministic, and has the expected shape. (Execution on lavapipe
//! against native 16-bit storage is in tests/tests/small_storage_*.rs of polyfill-e2e.)
mod common;
use common::{assemble, disassemble, validate};
use shader_rewrite::{rewrite, Options, SmallStorage, Target};
use spvasm::Module;

/// Options emulating every 8/16-bit storage capability on a target that has none of them.
fn core() -> Options {
    let target = Target::core();
    Options { target, emulate_storage: SmallStorage::missing_from(&target), ..Options::default() }
}

/// lavapipe-like: everything native except StorageInputOutput16.
fn no_io16() -> Options {
    let target = Target { storage_input_output_16: false, ..Target::all() };
    Options { target, emulate_storage: SmallStorage::missing_from(&target), ..Options::default() }
}

fn lower(text: &str, env: &str, options: &Options) -> (String, shader_rewrite::Stats) {
    let input = assemble(text, env);
    validate(&input, env).unwrap_or_else(|e| panic!("test input does not validate: {e}\n{text}"));
    let out = rewrite(&input, options).unwrap_or_else(|e| panic!("rewrite failed: {e}"));
    let dis = disassemble(&out.words);
    if let Err(e) = validate(&out.words, env) {
        panic!("rewritten module fails spirv-val: {e}\n{dis}");
    }
    assert_eq!(rewrite(&input, options).unwrap().words, out.words, "not deterministic");
    (dis, out.stats)
}

fn caps_of(dis: &str) -> Vec<String> {
    dis.lines().filter_map(|l| l.trim().strip_prefix("OpCapability ")).map(str::to_string).collect()
}

const SSBO_F16_NO_ARITH: &str = include_str!("../../tests/corpus/small-storage/ssbo-f16-no-arith.spvasm");

#[test]
fn storage_buffer_16bit_without_arithmetic_loses_every_16bit_type() {
    let v16 = SSBO_F16_NO_ARITH.replace(r#""main" %gid"#, r#""main" %gid %in %out"#);
    for (env, text) in [("vulkan1.1", SSBO_F16_NO_ARITH), ("vulkan1.3", v16.as_str())] {
        let (dis, stats) = lower(text, env, &core());
        assert!(!dis.contains("OpTypeFloat 16") && !dis.contains("OpTypeInt 16"), "{dis}");
        assert!(!caps_of(&dis).iter().any(|c| c.contains("16Bit")), "{dis}");
        assert!(!dis.contains("SPV_KHR_16bit_storage"), "{dis}");
        assert_eq!(stats.small_storage_blocks, 1);
        assert_eq!((stats.small_storage_loads, stats.small_storage_stores), (5, 1));
        assert!(stats.widened_types >= 2);
        // The f32 → f16 conversion rounds in integer code; the loads are exact (no rounding).
        assert_eq!(stats.rounded_conversions, 1, "{stats}");
        assert!(stats.atomic_subword_stores == 1, "{stats}");
    }
}

#[test]
fn storage_buffer_16bit_with_8bit_views_on_the_target() {
    // The target has 8-bit storage: sub-word stores use it instead of atomics.
    let target = Target { storage_buffer_16bit: false, uniform_and_storage_buffer_16bit: false, ..Target::all() };
    let o = Options { target, emulate_storage: SmallStorage::missing_from(&target), ..Options::default() };
    let (dis, stats) = lower(SSBO_F16_NO_ARITH, "vulkan1.1", &o);
    assert_eq!(stats.atomic_subword_stores, 0, "{stats}");
    assert!(caps_of(&dis).contains(&"StorageBuffer8BitAccess".to_string()), "{dis}");
}

#[test]
fn nothing_emulated_passes_through() {
    let input = assemble(SSBO_F16_NO_ARITH, "vulkan1.1");
    let out = rewrite(&input, &no_io16()).unwrap();
    assert_eq!(out.words, input);
}

/// std140 UBO with 8/16-bit members (and a row-major f16 matrix), Float16 + Int8 + Int16
/// arithmetic in the module: the types stay, only the storage goes.
const UBO_WITH_ARITH: &str = include_str!("../../tests/corpus/small-storage/ubo-8-16-with-arith.spvasm");

#[test]
fn uniform_buffer_8_16bit_with_arithmetic_keeps_types() {
    let (dis, stats) = lower(UBO_WITH_ARITH, "vulkan1.1", &core());
    assert!(dis.contains("OpTypeFloat 16") && dis.contains("OpTypeInt 8 0"), "{dis}");
    let caps = caps_of(&dis);
    assert!(!caps.iter().any(|c| c.contains("BitAccess")), "{caps:?}");
    assert_eq!(stats.small_storage_blocks, 1);
    assert_eq!(stats.widened_types, 0);
    // The one declared uniform view is uvec4 data[7] (112 bytes of block).
    assert!(dis.contains("ArrayStride 16"), "{dis}");
}

const PUSH_CONSTANT_16: &str = include_str!("../../tests/corpus/small-storage/push-constant-16.spvasm");

#[test]
fn push_constant_16bit_becomes_one_word_block_at_the_same_offset() {
    let o = Options { emulate_storage: SmallStorage { storage_push_constant_16: true, ..Default::default() }, target: Target { storage_push_constant_16: false, ..Target::all() }, ..Options::default() };
    let (dis, stats) = lower(PUSH_CONSTANT_16, "vulkan1.3", &o);
    assert_eq!(stats.small_storage_blocks, 1);
    let caps = caps_of(&dis);
    assert!(!caps.contains(&"StoragePushConstant16".to_string()) && caps.contains(&"StorageBuffer16BitAccess".to_string()), "{caps:?}");
    // One push-constant variable, its word array starting at byte 16.
    assert_eq!(dis.matches("PushConstant\n").count() + dis.matches("PushConstant\r\n").count(), 1, "{dis}");
    assert!(dis.contains("Offset 16"), "{dis}");
}

const IO16_FRAGMENT: &str = include_str!("../../tests/corpus/small-storage/io16-fragment.spvasm");

/// On a target with shaderFloat16 the roundings are the driver's conversions (to a 16-bit float
/// and back, NoContraction, Float16 added); without it, integer code and no 16-bit type at all.
#[test]
fn input_output_16bit_widens_and_rounds_at_the_boundary() {
    for (env, float16) in [("vulkan1.1", false), ("vulkan1.3", false), ("vulkan1.1", true), ("vulkan1.3", true)] {
        let mut o = no_io16();
        o.target.float16 = float16;
        // Only StorageInputOutput16 in the module: the 16-bit types go.
        let (dis, stats) = lower(IO16_FRAGMENT, env, &o);
        assert_eq!(stats.widened_io_variables, 4, "{stats}");
        assert!(!dis.contains("OpTypeInt 16"), "{dis}");
        assert!(!dis.contains("StorageInputOutput16"), "{dis}");
        // The input narrows (rounds) and so does the f32 → f16 conversion.
        assert_eq!(stats.rounded_conversions, 2, "{stats}");
        assert!(dis.contains("Location 0") && dis.contains("Flat"), "{dis}");
        let caps = caps_of(&dis);
        if float16 {
            assert!(caps.contains(&"Float16".to_string()) && dis.contains("OpTypeFloat 16"), "{dis}");
            assert_eq!((dis.matches("OpFConvert").count(), dis.matches("NoContraction").count()), (4, 2), "{dis}");
            assert!(!dis.contains("UnpackHalf2x16"), "{dis}");
        } else {
            assert!(!caps.contains(&"Float16".to_string()) && !dis.contains("OpTypeFloat 16"), "{dis}");
            assert!(dis.contains("UnpackHalf2x16"), "{dis}");
        }
    }
}

/// Issue 24's size target for the 16-bit I/O module on the target the layer finds on lavapipe
/// (storageInputOutput16 missing, shaderFloat16 present): its two roundings are the driver's
/// conversions, so the output stays within twice the input's words.
#[test]
fn input_output_16bit_at_most_twice_the_input_on_lavapipe() {
    let target = Target::lavapipe();
    let o = Options { target, emulate_storage: SmallStorage::missing_from(&target), ..Options::default() };
    let input = assemble(IO16_FRAGMENT, "vulkan1.1");
    let out = rewrite(&input, &o).unwrap();
    assert!(out.stats.widened_io_variables > 0);
    assert!(out.words.len() <= 2 * input.len(), "{} -> {} words", input.len(), out.words.len());
}

/// Issue 24's size target for the 16-bit storage module on a Vulkan 1.0 target (no 16-bit
/// storage, no shaderFloat16): its rounding is integer code, and the value it rounds is stored
/// as the bits it made (no UnpackHalf2x16 of them packed again), within twice the input.
#[test]
fn storage_16bit_at_most_twice_the_input_on_a_core_target() {
    let input = assemble(SSBO_F16_NO_ARITH, "vulkan1.1");
    let out = rewrite(&input, &core()).unwrap();
    assert_eq!(out.stats.rounded_conversions, 1);
    assert!(out.words.len() <= 2 * input.len(), "{} -> {} words", input.len(), out.words.len());
    let dis = disassemble(&out.words);
    // Four loads unpack their halves; the rounded value is never unpacked, nor packed.
    assert_eq!((dis.matches("UnpackHalf2x16").count(), dis.matches(" PackHalf2x16").count()), (4, 0), "{dis}");
}

/// A 16-bit value loaded and stored again keeps its bits (NaN payloads too): the stored word is
/// the loaded half, masked, not PackHalf2x16 of its f32 value.
#[test]
fn f16_copied_between_buffers_keeps_its_bits() {
    let text = SSBO_F16_NO_ARITH.replace(
        "%ef = OpFConvert %f32 %e\n%e2 = OpFMul %f32 %ef %ef\n%eh = OpFConvert %h %e2\nOpStore %p4 %eh",
        "OpStore %p0 %e",
    );
    assert_ne!(text, SSBO_F16_NO_ARITH);
    let (dis, stats) = lower(&text, "vulkan1.1", &core());
    assert_eq!(stats.rounded_conversions, 0, "{stats}");
    assert!(!dis.contains(" PackHalf2x16"), "{dis}");
    assert_eq!((dis.matches("OpAtomicAnd").count(), dis.matches("OpAtomicOr").count()), (1, 1), "{dis}");
}

/// An undecorated conversion under a 16-bit RoundingModeRTZ execution mode
/// (SPV_KHR_float_controls) rounds toward zero: the integer code saturates at 0x7bff, the
/// largest finite binary16, where rounding to nearest goes to infinity (0x7c00).
#[test]
fn float_controls_rounding_mode_rtz_rounds_toward_zero() {
    let text = SSBO_F16_NO_ARITH.replace(r#""main" %gid"#, r#""main" %gid %in %out"#);
    let rtz = text
        .replace("OpCapability StorageBuffer16BitAccess\n", "OpCapability StorageBuffer16BitAccess\nOpCapability RoundingModeRTZ\n")
        .replace("OpExecutionMode %main LocalSize 1 1 1\n", "OpExecutionMode %main LocalSize 1 1 1\nOpExecutionMode %main RoundingModeRTZ 16\n");
    for (text, toward_zero) in [(&text, false), (&rtz, true)] {
        let (dis, stats) = lower(text, "vulkan1.3", &core());
        assert_eq!(stats.rounded_conversions, 1, "{stats}");
        let saturates = dis.lines().any(|l| l.contains("OpConstant ") && l.trim_end().ends_with(" 31743"));
        assert_eq!(saturates, toward_zero, "{dis}");
    }
}

#[test]
fn input_output_16bit_keeps_types_when_another_16bit_capability_remains() {
    let text = IO16_FRAGMENT.replace("OpCapability StorageInputOutput16\n", "OpCapability StorageInputOutput16\nOpCapability StorageBuffer16BitAccess\n");
    let (dis, stats) = lower(&text, "vulkan1.3", &no_io16());
    assert!(dis.contains("OpTypeFloat 16"), "{dis}");
    assert_eq!(stats.widened_types, 0);
    assert_eq!(stats.rounded_conversions, 0);
}

#[test]
fn fp_rounding_mode_is_done_in_integer_code() {
    // RTZ on the conversion stored to a 16-bit SSBO; the module has Float16 (types stay).
    let text = include_str!("../../tests/corpus/small-storage/fp-rounding-rtz.spvasm");
    let (dis, stats) = lower(text, "vulkan1.1", &core());
    assert!(!dis.contains("FPRoundingMode"), "{dis}");
    assert_eq!(stats.rounded_conversions, 1);
}

/// Found by the bounded fuzzer (10⁶ mutations): a matrix member whose column count was mutated to
/// 2³⁰ made the whole-matrix load split into that many leaves (a 10 GiB allocation). Now a
/// precise error.
#[test]
fn damaged_matrix_column_count_is_an_error() {
    let text = Module::compute(1)
        .cap("Float16")
        .cap("StorageBuffer16BitAccess")
        .ext("SPV_KHR_16bit_storage")
        .decorate("OpDecorate %S Block\nOpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 0 ColMajor\nOpMemberDecorate %S 0 MatrixStride 8\nOpDecorate %buf DescriptorSet 0\nOpDecorate %buf Binding 0")
        .globals("%m = OpTypeMatrix %v4h 4\n%S = OpTypeStruct %m\n%pS = OpTypePointer StorageBuffer %S\n%pm = OpTypePointer StorageBuffer %m\n%buf = OpVariable %pS StorageBuffer")
        .main("%p = OpAccessChain %pm %buf %c0\n%v = OpLoad %m %p\nOpStore %p %v")
        .text();
    let mut words = assemble(&text, "vulkan1.1");
    validate(&words, "vulkan1.1").unwrap();
    rewrite(&words, &core()).expect("the intact module rewrites");
    // OpTypeMatrix %m %v4h 4 → column count 2²⁰ (2³⁰ would make the block span more than 4 GiB,
    // an error of its own: block_larger_than_4_gib_is_an_error in fuzz_regressions.rs).
    let at = (5..words.len()).find(|&i| words[i] == (4 << 16) | 24 && words[i + 3] == 4).expect("OpTypeMatrix");
    words[at + 3] = 1 << 20;
    let err = rewrite(&words, &core()).expect_err("a damaged column count must be an error");
    assert!(err.to_string().contains("columns"), "{err}");
}

/// `struct { float16_t h; uint u; }` in physical memory, read through a pointer from a push
/// constant, with StorageBuffer16BitAccess on the address's storage.
fn physical_f16() -> String {
    Module::compute(1)
        .spirv(5)
        .physical_addressing()
        .cap("StorageBuffer16BitAccess")
        .cap("Int64")
        .ext("SPV_KHR_physical_storage_buffer")
        .ext("SPV_KHR_16bit_storage")
        .decorate("OpDecorate %Rec Block\nOpMemberDecorate %Rec 0 Offset 0\nOpMemberDecorate %Rec 1 Offset 4")
        .globals("%Rec = OpTypeStruct %f16 %u32\n%pRec = OpTypePointer PhysicalStorageBuffer %Rec")
        .push_constants("pc", &[("%u64", 0)])
        .main(
            "%ap = OpAccessChain %pp_u64 %pc %c0
%a = OpLoad %u64 %ap
%r = OpConvertUToPtr %pRec %a
%hp = OpAccessChain %pg_f16 %r %c0
%h = OpLoad %f16 %hp Aligned 4
%f = OpFConvert %f32 %h
%bits = OpBitcast %u32 %f
%up = OpAccessChain %pg_u32 %r %c1
OpStore %up %bits Aligned 4",
        )
        .text()
}

/// Widening the f16 member would move `u` (physical memory keeps its explicit layout): without
/// the physical-storage-buffer lowering the module is refused, naming the pointer type; with it
/// (Options::bda) the member goes through the table's byte views and the output validates.
#[test]
fn physical_memory_with_small_members_is_refused_unless_lowered_as_physical() {
    let input = assemble(&physical_f16(), "vulkan1.2");
    validate(&input, "vulkan1.2").unwrap();
    let err = rewrite(&input, &core()).expect_err("physical f16 member widened in place");
    let text = err.to_string();
    assert!(text.contains("PhysicalStorageBuffer") && text.contains("explicit layout"), "{text}");
    let with_bda = Options { bda: Some(shader_rewrite::BdaTable { set: 7, binding: 3, count: 64 }), ..core() };
    let (dis, _) = lower(&physical_f16(), "vulkan1.2", &with_bda);
    assert!(!dis.contains("PhysicalStorageBuffer"), "{dis}");
}

/// Raw chains whose result points to 16-bit data, on a target with no 8/16-bit storage: the
/// raw-chain lowering reaches the words through word views and leaves the chains' result type
/// (a StorageBuffer pointer to u16) unused; it goes, so the module no longer needs
/// StorageBuffer16BitAccess (it was refused before: "pointer type ... still holds 16-bit data").
#[test]
fn raw_chains_to_16bit_data_leave_no_16bit_pointer_type() {
    let text = "OpCapability Shader\nOpCapability Int16\nOpCapability StorageBuffer16BitAccess\nOpCapability RawAccessChainsNV\n\
        OpExtension \"SPV_KHR_16bit_storage\"\nOpExtension \"SPV_NV_raw_access_chains\"\n\
        OpMemoryModel Logical GLSL450\nOpEntryPoint GLCompute %main \"main\" %gid\nOpExecutionMode %main LocalSize 1 1 1\n\
        OpDecorate %gid BuiltIn GlobalInvocationId\nOpDecorate %rta ArrayStride 4\nOpMemberDecorate %B 0 Offset 0\nOpDecorate %B Block\n\
        OpDecorate %buf DescriptorSet 0\nOpDecorate %buf Binding 0\n\
        %void = OpTypeVoid\n%fn = OpTypeFunction %void\n%u32 = OpTypeInt 32 0\n%u16 = OpTypeInt 16 0\n%v3 = OpTypeVector %u32 3\n\
        %pin = OpTypePointer Input %v3\n%gid = OpVariable %pin Input\n%rta = OpTypeRuntimeArray %u32\n%B = OpTypeStruct %rta\n\
        %pB = OpTypePointer StorageBuffer %B\n%buf = OpVariable %pB StorageBuffer\n%ps16 = OpTypePointer StorageBuffer %u16\n\
        %c0 = OpConstant %u32 0\n%c1 = OpConstant %u32 1\n%h1 = OpConstant %u16 1\n\
        %main = OpFunction %void None %fn\n%l = OpLabel\n%g = OpLoad %v3 %gid\n%i = OpCompositeExtract %u32 %g 0\n\
        %off = OpShiftLeftLogical %u32 %i %c1\n\
        %p = OpRawAccessChainNV %ps16 %buf %c0 %c0 %off RobustnessPerComponentNV\n%h = OpLoad %u16 %p Aligned 2\n\
        %h2 = OpIAdd %u16 %h %h1\nOpStore %p %h2 Aligned 2\nOpReturn\nOpFunctionEnd\n";
    let (dis, stats) = lower(text, "vulkan1.1", &core());
    assert_eq!(stats.raw_chains, 1, "{stats:?}");
    assert!(!caps_of(&dis).iter().any(|c| c.contains("16BitAccess")), "{dis}");
}
