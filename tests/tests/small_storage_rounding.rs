//! The rounding the 16-bit storage lowering emits in integer code, executed on lavapipe:
//! f32 → f16 conversions (undecorated, FPRoundingMode RTE, FPRoundingMode RTZ) stored to a
//! 16-bit storage buffer. The module runs natively (lavapipe has storageBuffer16BitAccess) and
//! rewritten for a target without any 8/16-bit storage (its 16-bit types are gone: rounding,
//! packing and the atomic half-word stores are all emulated), and both are compared bit for bit
//! with a CPU reference over every f16 value, every rounding midpoint and its neighbours,
//! overflow, f32 subnormals, infinities and NaNs.
use polyfill_e2e::spvasm::{Module, GID_X};
use polyfill_e2e::vk::shared_native_context;
use polyfill_e2e::{bytes, spirv_as, spirv_val, BufferSpec, ComputeJob};
use shader_rewrite::{rewrite, Options, SmallStorage, Target};

fn shader() -> String {
    Module::compute(64)
        .cap("StorageBuffer16BitAccess")
        .ext("SPV_KHR_16bit_storage")
        .gid()
        .decorate("OpDecorate %rte FPRoundingMode RTE\nOpDecorate %rtz FPRoundingMode RTZ")
        .buffers("In", "%f32", 4, &["in"])
        .block("Out", "%f16", 2)
        .buffer("out", "Out", 0, 1)
        .main(&format!(
            "{GID_X}
%pi = OpAccessChain %ps_f32 %in %c0 %i
%x = OpLoad %f32 %pi
%base = OpIMul %u32 %i %c3
%def = OpFConvert %f16 %x
%p0 = OpAccessChain %ps_f16 %out %c0 %base
OpStore %p0 %def
%rte = OpFConvert %f16 %x
%i1 = OpIAdd %u32 %base %c1
%p1 = OpAccessChain %ps_f16 %out %c0 %i1
OpStore %p1 %rte
%rtz = OpFConvert %f16 %x
%i2 = OpIAdd %u32 %base %c2
%p2 = OpAccessChain %ps_f16 %out %c0 %i2
OpStore %p2 %rtz"
        ))
        .text()
}

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
    let input = spirv_as(&shader(), "vulkan1.1").unwrap();
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
