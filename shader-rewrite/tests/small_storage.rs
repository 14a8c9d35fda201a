//! 8/16-bit storage lowering, checked as SPIR-V in/out: the output validates without the
//! emulated capabilities, is deterministic, and has the expected shape. (Execution on lavapipe
//! against native 16-bit storage is in tests/tests/small_storage_*.rs of polyfill-e2e.)
mod common;
use common::{assemble, disassemble, validate};
use shader_rewrite::{rewrite, Options, SmallStorage, Target};

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

const SSBO_F16_NO_ARITH: &str = r#"
OpCapability Shader
OpCapability StorageBuffer16BitAccess
OpExtension "SPV_KHR_16bit_storage"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid
OpExecutionMode %main LocalSize 1 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %rt_h ArrayStride 2
OpMemberDecorate %In 0 Offset 0
OpMemberDecorate %In 1 Offset 2
OpMemberDecorate %In 2 Offset 4
OpMemberDecorate %In 3 Offset 8
OpMemberDecorate %In 4 Offset 16
OpDecorate %In Block
OpDecorate %rt_f ArrayStride 4
OpMemberDecorate %Out 0 Offset 0
OpDecorate %Out Block
OpDecorate %in DescriptorSet 0
OpDecorate %in Binding 0
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%i32 = OpTypeInt 32 1
%f32 = OpTypeFloat 32
%h = OpTypeFloat 16
%s16 = OpTypeInt 16 1
%v2h = OpTypeVector %h 2
%v4h = OpTypeVector %h 4
%v3u = OpTypeVector %u32 3
%v2f = OpTypeVector %f32 2
%v4f = OpTypeVector %f32 4
%rt_h = OpTypeRuntimeArray %h
%In = OpTypeStruct %h %s16 %v2h %v4h %rt_h
%rt_f = OpTypeRuntimeArray %f32
%Out = OpTypeStruct %rt_f
%pIn = OpTypePointer StorageBuffer %In
%pOut = OpTypePointer StorageBuffer %Out
%ph = OpTypePointer StorageBuffer %h
%ps16 = OpTypePointer StorageBuffer %s16
%pv2h = OpTypePointer StorageBuffer %v2h
%pv4h = OpTypePointer StorageBuffer %v4h
%pf = OpTypePointer StorageBuffer %f32
%pgid = OpTypePointer Input %v3u
%in = OpVariable %pIn StorageBuffer
%out = OpVariable %pOut StorageBuffer
%gid = OpVariable %pgid Input
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%c2 = OpConstant %u32 2
%c3 = OpConstant %u32 3
%c4 = OpConstant %u32 4
%main = OpFunction %void None %fn
%l = OpLabel
%g = OpLoad %v3u %gid
%x = OpCompositeExtract %u32 %g 0
%p0 = OpAccessChain %ph %in %c0
%a = OpLoad %h %p0
%af = OpFConvert %f32 %a
%o0 = OpAccessChain %pf %out %c0 %c0
OpStore %o0 %af
%p1 = OpAccessChain %ps16 %in %c1
%s = OpLoad %s16 %p1
%si = OpSConvert %i32 %s
%sf = OpConvertSToF %f32 %si
%o1 = OpAccessChain %pf %out %c0 %c1
OpStore %o1 %sf
%p2 = OpAccessChain %pv2h %in %c2
%v = OpLoad %v2h %p2
%vf = OpFConvert %v2f %v
%v1 = OpCompositeExtract %f32 %vf 1
%o2 = OpAccessChain %pf %out %c0 %c2
OpStore %o2 %v1
%p3 = OpAccessChain %pv4h %in %c3
%w = OpLoad %v4h %p3
%wf = OpFConvert %v4f %w
%w3 = OpCompositeExtract %f32 %wf 3
%o3 = OpAccessChain %pf %out %c0 %c3
OpStore %o3 %w3
%p4 = OpAccessChain %ph %in %c4 %x
%e = OpLoad %h %p4
%ef = OpFConvert %f32 %e
%e2 = OpFMul %f32 %ef %ef
%eh = OpFConvert %h %e2
OpStore %p4 %eh
%n = OpArrayLength %u32 %in 4
%nf = OpConvertUToF %f32 %n
%o4 = OpAccessChain %pf %out %c0 %c4
OpStore %o4 %nf
OpReturn
OpFunctionEnd
"#;

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
const UBO_WITH_ARITH: &str = r#"
OpCapability Shader
OpCapability Float16
OpCapability Int16
OpCapability Int8
OpCapability UniformAndStorageBuffer16BitAccess
OpCapability UniformAndStorageBuffer8BitAccess
OpExtension "SPV_KHR_16bit_storage"
OpExtension "SPV_KHR_8bit_storage"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 1 1 1
OpDecorate %arr ArrayStride 16
OpMemberDecorate %S 0 Offset 0
OpMemberDecorate %S 1 Offset 1
OpMemberDecorate %S 2 Offset 2
OpMemberDecorate %U 0 Offset 0
OpMemberDecorate %U 1 Offset 16
OpMemberDecorate %U 2 Offset 64
OpMemberDecorate %U 2 RowMajor
OpMemberDecorate %U 2 MatrixStride 16
OpMemberDecorate %U 3 Offset 96
OpDecorate %U Block
OpDecorate %ubo DescriptorSet 0
OpDecorate %ubo Binding 0
OpDecorate %rt ArrayStride 4
OpMemberDecorate %Out 0 Offset 0
OpDecorate %Out Block
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%f32 = OpTypeFloat 32
%h = OpTypeFloat 16
%u8 = OpTypeInt 8 0
%i16 = OpTypeInt 16 1
%v2h = OpTypeVector %h 2
%m2h = OpTypeMatrix %v2h 2
%c3 = OpConstant %u32 3
%S = OpTypeStruct %u8 %u8 %i16
%arr = OpTypeArray %S %c3
%U = OpTypeStruct %h %arr %m2h %f32
%pU = OpTypePointer Uniform %U
%pS = OpTypePointer Uniform %S
%pm = OpTypePointer Uniform %m2h
%ph = OpTypePointer Uniform %h
%pf = OpTypePointer Uniform %f32
%rt = OpTypeRuntimeArray %u32
%Out = OpTypeStruct %rt
%pOut = OpTypePointer StorageBuffer %Out
%po = OpTypePointer StorageBuffer %u32
%ubo = OpVariable %pU Uniform
%out = OpVariable %pOut StorageBuffer
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%c2 = OpConstant %u32 2
%main = OpFunction %void None %fn
%l = OpLabel
%p0 = OpAccessChain %ph %ubo %c0
%a = OpLoad %h %p0
%ps = OpAccessChain %pS %ubo %c1 %c2
%s = OpLoad %S %ps
%s1 = OpCompositeExtract %u8 %s 1
%s2 = OpCompositeExtract %i16 %s 2
%pm0 = OpAccessChain %pm %ubo %c2
%m = OpLoad %m2h %pm0
%m01 = OpCompositeExtract %h %m 0 1
%sum = OpFAdd %h %a %m01
%sumf = OpFConvert %f32 %sum
%sumu = OpBitcast %u32 %sumf
%o0 = OpAccessChain %po %out %c0 %c0
OpStore %o0 %sumu
%s1u = OpUConvert %u32 %s1
%o1 = OpAccessChain %po %out %c0 %c1
OpStore %o1 %s1u
%s2u = OpSConvert %u32 %s2
%o2 = OpAccessChain %po %out %c0 %c2
OpStore %o2 %s2u
%pf3 = OpAccessChain %pf %ubo %c3
%f = OpLoad %f32 %pf3
%fu = OpBitcast %u32 %f
%o3 = OpAccessChain %po %out %c0 %c3
OpStore %o3 %fu
OpReturn
OpFunctionEnd
"#;

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

const PUSH_CONSTANT_16: &str = r#"
OpCapability Shader
OpCapability StoragePushConstant16
OpCapability StorageBuffer16BitAccess
OpExtension "SPV_KHR_16bit_storage"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %pc %out
OpExecutionMode %main LocalSize 1 1 1
OpMemberDecorate %P 0 Offset 16
OpMemberDecorate %P 1 Offset 18
OpMemberDecorate %P 2 Offset 20
OpDecorate %P Block
OpDecorate %rt ArrayStride 4
OpMemberDecorate %Out 0 Offset 0
OpDecorate %Out Block
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%u16 = OpTypeInt 16 0
%f32 = OpTypeFloat 32
%h = OpTypeFloat 16
%P = OpTypeStruct %u16 %h %u32
%pP = OpTypePointer PushConstant %P
%pu16 = OpTypePointer PushConstant %u16
%ph = OpTypePointer PushConstant %h
%pu = OpTypePointer PushConstant %u32
%rt = OpTypeRuntimeArray %u32
%Out = OpTypeStruct %rt
%pOut = OpTypePointer StorageBuffer %Out
%po = OpTypePointer StorageBuffer %u32
%pc = OpVariable %pP PushConstant
%out = OpVariable %pOut StorageBuffer
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%c2 = OpConstant %u32 2
%main = OpFunction %void None %fn
%l = OpLabel
%p0 = OpAccessChain %pu16 %pc %c0
%a = OpLoad %u16 %p0
%au = OpUConvert %u32 %a
%o0 = OpAccessChain %po %out %c0 %c0
OpStore %o0 %au
%p1 = OpAccessChain %ph %pc %c1
%b = OpLoad %h %p1
%bf = OpFConvert %f32 %b
%bu = OpBitcast %u32 %bf
%o1 = OpAccessChain %po %out %c0 %c1
OpStore %o1 %bu
%p2 = OpAccessChain %pu %pc %c2
%c = OpLoad %u32 %p2
%o2 = OpAccessChain %po %out %c0 %c2
OpStore %o2 %c
OpReturn
OpFunctionEnd
"#;

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

const IO16_FRAGMENT: &str = r#"
OpCapability Shader
OpCapability StorageInputOutput16
OpExtension "SPV_KHR_16bit_storage"
OpMemoryModel Logical GLSL450
OpEntryPoint Fragment %main "main" %vin %iin %o %oi %pos
OpExecutionMode %main OriginUpperLeft
OpDecorate %vin Location 0
OpDecorate %iin Location 1
OpDecorate %iin Flat
OpDecorate %o Location 0
OpDecorate %oi Location 1
OpDecorate %pos BuiltIn FragCoord
%void = OpTypeVoid
%fn = OpTypeFunction %void
%f32 = OpTypeFloat 32
%h = OpTypeFloat 16
%i16 = OpTypeInt 16 1
%v4h = OpTypeVector %h 4
%v4f = OpTypeVector %f32 4
%pvin = OpTypePointer Input %v4h
%piin = OpTypePointer Input %i16
%po = OpTypePointer Output %v4h
%poi = OpTypePointer Output %i16
%ppos = OpTypePointer Input %v4f
%vin = OpVariable %pvin Input
%iin = OpVariable %piin Input
%o = OpVariable %po Output
%oi = OpVariable %poi Output
%pos = OpVariable %ppos Input
%main = OpFunction %void None %fn
%l = OpLabel
%v = OpLoad %v4h %vin
%vf = OpFConvert %v4f %v
%p = OpLoad %v4f %pos
%s = OpFAdd %v4f %vf %p
%sh = OpFConvert %v4h %s
OpStore %o %sh
%i = OpLoad %i16 %iin
OpStore %oi %i
OpReturn
OpFunctionEnd
"#;

#[test]
fn input_output_16bit_widens_and_rounds_at_the_boundary() {
    for env in ["vulkan1.1", "vulkan1.3"] {
        // Only StorageInputOutput16 in the module: the 16-bit types go entirely.
        let (dis, stats) = lower(IO16_FRAGMENT, env, &no_io16());
        assert_eq!(stats.widened_io_variables, 4, "{stats}");
        assert!(!dis.contains("OpTypeFloat 16") && !dis.contains("OpTypeInt 16"), "{dis}");
        assert!(!dis.contains("StorageInputOutput16"), "{dis}");
        // The input narrows (rounds) and so does the f32 → f16 conversion.
        assert_eq!(stats.rounded_conversions, 2, "{stats}");
        assert!(dis.contains("Location 0") && dis.contains("Flat"), "{dis}");
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
    let text = r#"
OpCapability Shader
OpCapability Float16
OpCapability StorageBuffer16BitAccess
OpExtension "SPV_KHR_16bit_storage"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 1 1 1
OpDecorate %cv FPRoundingMode RTZ
OpDecorate %rt ArrayStride 2
OpMemberDecorate %B 0 Offset 0
OpDecorate %B Block
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%f32 = OpTypeFloat 32
%h = OpTypeFloat 16
%rt = OpTypeRuntimeArray %h
%B = OpTypeStruct %rt
%pB = OpTypePointer StorageBuffer %B
%ph = OpTypePointer StorageBuffer %h
%buf = OpVariable %pB StorageBuffer
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%x = OpConstant %f32 1.0009765625
%main = OpFunction %void None %fn
%l = OpLabel
%cv = OpFConvert %h %x
%p = OpAccessChain %ph %buf %c0 %c1
OpStore %p %cv
OpReturn
OpFunctionEnd
"#;
    let (dis, stats) = lower(text, "vulkan1.1", &core());
    assert!(!dis.contains("FPRoundingMode"), "{dis}");
    assert_eq!(stats.rounded_conversions, 1);
}
