//! The rounding the 16-bit storage lowering emits in integer code, executed on lavapipe:
//! f32 → f16 conversions (undecorated, FPRoundingMode RTE, FPRoundingMode RTZ) stored to a
//! 16-bit storage buffer. The module runs natively (lavapipe has storageBuffer16BitAccess) and
//! rewritten for a target without any 8/16-bit storage (its 16-bit types are gone: rounding,
//! packing and the atomic half-word stores are all emulated), and both are compared bit for bit
//! with a CPU reference over every f16 value, every rounding midpoint and its neighbours,
//! overflow, f32 subnormals, infinities and NaNs.
use polyfill_e2e::vk::shared_native_context;
use polyfill_e2e::{bytes, spirv_as, spirv_val, BufferSpec, ComputeJob};
use shader_rewrite::{rewrite, Options, SmallStorage, Target};

const SHADER: &str = r#"
OpCapability Shader
OpCapability StorageBuffer16BitAccess
OpExtension "SPV_KHR_16bit_storage"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %rte FPRoundingMode RTE
OpDecorate %rtz FPRoundingMode RTZ
OpDecorate %rt_f ArrayStride 4
OpMemberDecorate %In 0 Offset 0
OpDecorate %In Block
OpDecorate %rt_h ArrayStride 2
OpMemberDecorate %Out 0 Offset 0
OpDecorate %Out Block
OpDecorate %in DescriptorSet 0
OpDecorate %in Binding 0
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%f32 = OpTypeFloat 32
%h = OpTypeFloat 16
%v3u = OpTypeVector %u32 3
%rt_f = OpTypeRuntimeArray %f32
%In = OpTypeStruct %rt_f
%rt_h = OpTypeRuntimeArray %h
%Out = OpTypeStruct %rt_h
%pIn = OpTypePointer StorageBuffer %In
%pOut = OpTypePointer StorageBuffer %Out
%pf = OpTypePointer StorageBuffer %f32
%ph = OpTypePointer StorageBuffer %h
%pgid = OpTypePointer Input %v3u
%in = OpVariable %pIn StorageBuffer
%out = OpVariable %pOut StorageBuffer
%gid = OpVariable %pgid Input
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%c2 = OpConstant %u32 2
%c3 = OpConstant %u32 3
%main = OpFunction %void None %fn
%l = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
%pi = OpAccessChain %pf %in %c0 %i
%x = OpLoad %f32 %pi
%base = OpIMul %u32 %i %c3
%def = OpFConvert %h %x
%p0 = OpAccessChain %ph %out %c0 %base
OpStore %p0 %def
%rte = OpFConvert %h %x
%i1 = OpIAdd %u32 %base %c1
%p1 = OpAccessChain %ph %out %c0 %i1
OpStore %p1 %rte
%rtz = OpFConvert %h %x
%i2 = OpIAdd %u32 %base %c2
%p2 = OpAccessChain %ph %out %c0 %i2
OpStore %p2 %rtz
OpReturn
OpFunctionEnd
"#;

/// binary16 of `x` rounded toward zero (IEEE 754; overflow saturates at the largest finite value).
fn f16_rtz(x: f32) -> u16 {
    let h = half::f16::from_f32(x);
    if x.is_nan() || x.is_infinite() {
        return h.to_bits();
    }
    let mut bits = h.to_bits();
    // Round-to-nearest may have gone up in magnitude: step back toward zero.
    if h.to_f32().abs() > x.abs() {
        bits -= 1;
    }
    if bits & 0x7fff == 0x7c00 {
        bits -= 1; // finite input never truncates to infinity
    }
    bits
}

fn inputs() -> Vec<f32> {
    let mut v = vec![];
    for h in 0..=u16::MAX {
        let x = half::f16::from_bits(h).to_f32();
        if x.is_nan() {
            continue;
        }
        let next = half::f16::from_bits(h.wrapping_add(1)).to_f32();
        v.push(x);
        if next.is_finite() && (h & 0x7fff) < 0x7bff {
            let mid = (x as f64 + next as f64) / 2.0; // a tie, exactly representable in f32
            let mid = mid as f32;
            v.extend([mid, f32::from_bits(mid.to_bits() - 1), f32::from_bits(mid.to_bits() + 1)]);
        }
    }
    v.extend([65504.0, 65519.99, 65520.0, 65536.0, 1e10, f32::MAX, -65520.0, f32::MIN_POSITIVE, 1e-40, -1e-45, 2.98e-8, 2.99e-8]);
    v.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::from_bits(0x7f80_0001), f32::from_bits(0xffc0_1234)]);
    while v.len() % 64 != 0 {
        v.push(0.5);
    }
    v
}

fn run(words: &[u32], xs: &[f32]) -> Vec<u16> {
    let ctx = shared_native_context();
    let job = ComputeJob {
        buffers: vec![BufferSpec::storage(0, bytes::from_f32s(xs)), BufferSpec::storage(1, vec![0xCC; xs.len() * 6])],
        groups: [xs.len() as u32 / 64, 1, 1],
        ..ComputeJob::default()
    };
    let out = ctx.run_compute(words, &job).unwrap_or_else(|e| panic!("dispatch: {e}"));
    out[1].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

fn same(a: u16, b: u16) -> bool {
    a == b || ((a & 0x7c00 == 0x7c00 && a & 0x3ff != 0) && (b & 0x7c00 == 0x7c00 && b & 0x3ff != 0))
}

#[test]
fn emulated_rounding_matches_native_and_ieee() {
    let xs = inputs();
    let input = spirv_as(SHADER, "vulkan1.1").unwrap();
    let target = Target::core();
    let options = Options { target, emulate_storage: SmallStorage::missing_from(&target), ..Options::default() };
    let rewritten = rewrite(&input, &options).unwrap();
    spirv_val(&rewritten.words, "vulkan1.1").unwrap_or_else(|e| panic!("rewritten module fails spirv-val: {e}"));
    assert!(rewritten.stats.rounded_conversions == 3, "{}", rewritten.stats);
    let native = run(&input, &xs);
    let emulated = run(&rewritten.words, &xs);
    let mut nan_payload_differs = 0;
    for (i, &x) in xs.iter().enumerate() {
        let rne = half::f16::from_f32(x).to_bits();
        let want = [rne, rne, f16_rtz(x)];
        for k in 0..3 {
            let (n, e) = (native[3 * i + k], emulated[3 * i + k]);
            assert!(same(e, want[k]), "emulated x = {x:e} ({:#010x}) conversion {k}: {e:#06x}, IEEE {:#06x}", x.to_bits(), want[k]);
            assert!(same(n, want[k]), "native x = {x:e} ({:#010x}) conversion {k}: {n:#06x}, IEEE {:#06x}", x.to_bits(), want[k]);
            nan_payload_differs += (n != e) as u32;
        }
    }
    eprintln!("{} values × 3 conversions: emulated = native = IEEE ({} NaN payloads differ)", xs.len(), nan_payload_differs);
}
