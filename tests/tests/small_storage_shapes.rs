//! Shapes of 8/16-bit storage the generated differential matrix (`small_storage_diff`) does not
//! make, with `StorageBuffer16BitAccess` emulated:
//! - 16-bit float matrices: a matrix's layout (MatrixStride, RowMajor) decorates the struct
//!   member that holds it, so the lowering must carry it along the access chains into the
//!   matrix, to whole-matrix accesses, columns (a row-major matrix's are MatrixStride apart) and
//!   single components;
//! - descriptor arrays of blocks with 16-bit members, indexed by a constant and non-uniformly;
//! - `OpCopyMemory` of a struct with 16-bit members, and a pointer through `OpCopyObject`;
//! - width conversions of 8/16-bit values to and from 64 bits, and of constants;
//! - f64 → f16 conversions where the target lacks shaderFloat16 (the lowering rounds the
//!   double to odd f32 first, so rounding twice cannot differ from rounding once), against
//!   the correctly rounded CPU result;
//! - generated cases (`random_layouts_*`, [`polyfill_e2e::bda_layouts`] in storage buffers):
//!   random nested layouts with 8/16-bit members among 32/64-bit ones, padded strides, both
//!   matrix majorities, and random chains into them (constant and dynamic indices, chains on
//!   chains), 8- and 16-bit storage both forced.
//!
//! Each shape runs natively on lavapipe (which has 16-bit storage) and through the layer with
//! the feature forced (on the device's features, and on `debug_target=core`: word views only),
//! byte for byte.

use polyfill_e2e::vk::{BufferSpec, ComputeJob, Context, ContextOptions};
use polyfill_e2e::{rewritten, tools};
use spvasm::Module;

/// `S = { column-major f16mat3 cm; row-major f16mat3 rm @24; }` (MatrixStride 8, 48 bytes).
const ELEMENT: usize = 48;

/// (name, value type, chain after `%c0 %gx`): `%d3 = i % 3`, `%e3 = i / 3 % 3`.
const SHAPES: &[(&str, &str, &str)] = &[
    ("whole column-major matrix", "%mat", "%c0"),
    ("whole row-major matrix", "%mat", "%c1"),
    ("column-major column, dynamic", "%v3h", "%c0 %d3"),
    ("row-major column, dynamic", "%v3h", "%c1 %d3"),
    ("column-major element, dynamic", "%f16", "%c0 %d3 %e3"),
    ("row-major element, dynamic", "%f16", "%c1 %d3 %e3"),
];

/// Invocation `i` copies the shape's value from `src[i]` to `dst[i]` through the same chain.
fn shader(ty: &str, chain: &str) -> Vec<u32> {
    let ptr = match ty {
        "%mat" => "%ps_mat".to_string(),
        _ => format!("%ps_{}", &ty[1..]),
    };
    let m = Module::compute(64)
        .spirv(3)
        .cap("StorageBuffer16BitAccess")
        .ext("SPV_KHR_16bit_storage")
        .gid()
        .decorate(
            "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 0 ColMajor\nOpMemberDecorate %S 0 MatrixStride 8\n\
             OpMemberDecorate %S 1 Offset 24\nOpMemberDecorate %S 1 RowMajor\nOpMemberDecorate %S 1 MatrixStride 8",
        )
        .globals("%mat = OpTypeMatrix %v3h 3\n%S = OpTypeStruct %mat %mat\n%ps_mat = OpTypePointer StorageBuffer %mat")
        .buffers("buf", "%S", ELEMENT as u32, &["src", "dst"])
        .main(&format!(
            "%gx_p = OpAccessChain %pin_u32 %gid %c0\n%gx = OpLoad %u32 %gx_p\n\
             %d3 = OpUMod %u32 %gx %c3\n%q3 = OpUDiv %u32 %gx %c3\n%e3 = OpUMod %u32 %q3 %c3\n\
             %sp = OpAccessChain {ptr} %src %c0 %gx {chain}\n%v = OpLoad {ty} %sp\n\
             %dp = OpAccessChain {ptr} %dst %c0 %gx {chain}\nOpStore %dp %v"
        ));
    assemble(&m, "f16 matrix shape")
}

/// Runs `spirv` natively and through the layer with 16-bit storage forced on `target`; the
/// outputs (`job`'s buffers) must be the same bytes. Returns a difference's description.
fn compare(native: &Context, name: &str, target: &str, spirv: &[u32], job: &ComputeJob, element: usize) -> Option<String> {
    let want = native.run_compute(spirv, job).unwrap_or_else(|e| panic!("{name} native: {e}"));
    let out = want.len() - 1;
    assert!(want[out].iter().any(|b| *b != 0), "{name}: the native shader wrote");
    let o = ContextOptions::with_layer().setting("storage_buffer_16bit_access", "force").setting("debug_target", target);
    let (got, after) = rewritten::run_rewritten(&format!("polyfill-16bit-shape-{}-{target}", name.replace(' ', "-")), spirv, job, o);
    // OpCapability StorageBuffer16BitAccess (4433): gone, the accesses were lowered.
    assert!(!after.windows(2).any(|w| w == [(2 << 16) | 17, 4433]), "{name}: the layer lowered the 16-bit accesses");
    (0..want[out].len()).find(|&k| got[out][k] != want[out][k]).map(|at| format!("{name}: first difference at byte {} of element {}", at % element, at / element))
}

fn shapes_match_native(target: &str) {
    let n = 64 * ELEMENT;
    // Small exponents: no NaN or infinity whose bits a conversion might change.
    let input: Vec<u8> = (0..n).map(|i| ((i * 37 + 11) % 251) as u8 & 0x3f).collect();
    let job = ComputeJob { buffers: vec![BufferSpec::storage(0, input), BufferSpec::storage(1, vec![0; n])], ..Default::default() };
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let mut failed = vec![];
    for &(name, ty, chain) in SHAPES {
        failed.extend(compare(&native, name, target, &shader(ty, chain), &job, ELEMENT));
    }
    // Descriptor arrays: `out[i] = bufs[k].data[i]` (u16, 2 blocks), k = 1 and k = i % 2
    // (NonUniform).
    let words = |k: usize| -> Vec<u8> { (0..128).map(|b| ((b * 13 + 7 * k + 1) % 251) as u8).collect() };
    let job = ComputeJob {
        buffers: vec![BufferSpec::storage(0, words(0)), BufferSpec::storage(0, words(1)).element(1), BufferSpec::storage(1, vec![0; 128])],
        ..Default::default()
    };
    for (name, index) in [("descriptor array, constant index", None), ("descriptor array, non-uniform index", Some("%k = OpUMod %u32 %gx %c2"))] {
        failed.extend(compare(&native, name, target, &descriptor_array_shader(index), &job, 2));
    }
    // OpCopyMemory of `S2 = { u16 a; u16 b; u32 c; u16vec2 d @8 }` elements, and `dst[i].b =
    // src[i].b` through a copied pointer.
    let n = 64 * 12;
    let input: Vec<u8> = (0..n).map(|b| ((b * 29 + 3) % 251) as u8).collect();
    let job = ComputeJob { buffers: vec![BufferSpec::storage(0, input), BufferSpec::storage(1, vec![0; n])], ..Default::default() };
    for (name, code) in [
        ("OpCopyMemory of a struct", "OpCopyMemory %d %s"),
        ("OpCopyObject of a pointer", "%s2 = OpCopyObject %ps_S2 %s\n%sb = OpAccessChain %ps_u16 %s2 %c1\n%v = OpLoad %u16 %sb\n%db = OpAccessChain %ps_u16 %d %c1\nOpStore %db %v"),
    ] {
        failed.extend(compare(&native, name, target, &struct_copy_shader(code), &job, 12));
    }
    assert!(failed.is_empty(), "emulated vs native ({target}):\n{}", failed.join("\n"));
}

/// `code` on `%s` and `%d`, pointers to element `i` of `src` and `dst` (binding 0 and 1), arrays
/// of `S2 = { u16 a; u16 b; u32 c; u16vec2 d @8 }` (12 bytes).
fn struct_copy_shader(code: &str) -> Vec<u32> {
    // Int16: spirv-val allows OpCopyMemory of 16-bit composites only with it.
    let m = Module::compute(64)
        .spirv(5)
        .cap("StorageBuffer16BitAccess")
        .cap("Int16")
        .gid()
        .decorate("OpMemberDecorate %S2 0 Offset 0\nOpMemberDecorate %S2 1 Offset 2\nOpMemberDecorate %S2 2 Offset 4\nOpMemberDecorate %S2 3 Offset 8")
        .globals("%u16v2 = OpTypeVector %u16 2\n%S2 = OpTypeStruct %u16 %u16 %u32 %u16v2\n%ps_S2 = OpTypePointer StorageBuffer %S2")
        .buffers("buf", "%S2", 12, &["src", "dst"])
        .main(&format!(
            "%gx_p = OpAccessChain %pin_u32 %gid %c0\n%gx = OpLoad %u32 %gx_p\n\
             %s = OpAccessChain %ps_S2 %src %c0 %gx\n%d = OpAccessChain %ps_S2 %dst %c0 %gx\n{code}"
        ));
    assemble(&m, "descriptor array")
}

/// `m` assembled for its SPIR-V version's environment and checked with spirv-val (`what` names
/// the shader in the error).
fn assemble(m: &Module, what: &str) -> Vec<u32> {
    let text = m.text();
    let words = tools::spirv_as(&text, m.target_env()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    tools::spirv_val(&words, m.target_env()).unwrap_or_else(|e| panic!("{what}: test shader invalid: {e}\n{text}"));
    words
}

/// `out[i] = bufs[k].data[i]` for 64 invocations, `bufs` an array of 2 blocks `{ u16 data[]; }`
/// at binding 0, `out` a `u16[]` at binding 1; `index` defines `%k` (NonUniform), else k = 1.
fn descriptor_array_shader(index: Option<&str>) -> Vec<u32> {
    let (k, decorate) = match index {
        Some(_) => ("%k", "OpDecorate %k NonUniform\nOpDecorate %bp NonUniform\n"),
        None => ("%c1", ""),
    };
    let mut m = Module::compute(64).spirv(5).cap("StorageBuffer16BitAccess").gid();
    if index.is_some() {
        m = m.cap("ShaderNonUniform").cap("StorageBufferArrayNonUniformIndexing");
    }
    let m = m
        .decorate(&format!("{decorate}OpDecorate %u16rta ArrayStride 2\nOpMemberDecorate %B 0 Offset 0\nOpDecorate %B Block"))
        .globals("%u16rta = OpTypeRuntimeArray %u16\n%B = OpTypeStruct %u16rta\n%arrB = OpTypeArray %B %c2\n%ps_arrB = OpTypePointer StorageBuffer %arrB")
        .decorate("OpDecorate %bufs DescriptorSet 0\nOpDecorate %bufs Binding 0")
        .globals("%bufs = OpVariable %ps_arrB StorageBuffer")
        .buffer("out", "B", 0, 1)
        .main(&format!(
            "%gx_p = OpAccessChain %pin_u32 %gid %c0\n%gx = OpLoad %u32 %gx_p\n{}\n\
             %bp = OpAccessChain %ps_u16 %bufs {k} %c0 %gx\n%v = OpLoad %u16 %bp\n%op = OpAccessChain %ps_u16 %out %c0 %gx\nOpStore %op %v",
            index.unwrap_or("")
        ));
    assemble(&m, "struct copy")
}

/// `out[i] = f16(in[i])` (f64 → f16 by OpFConvert, undecorated and `FPRoundingMode RTZ`;
/// Float64, no Float16) for 64 doubles
/// around binary16 rounding boundaries, with 16-bit storage forced and `debug_target=core` (no
/// shaderFloat16: the conversion becomes the lowering's integer rounding), against
/// `half::f16::from_f64`. Each boundary `m` (a midpoint between two binary16 values, or the
/// overflow threshold) is tried exactly and moved by far less than an f32 ulp either way —
/// where rounding to f32 first, then to f16, would land on the midpoint and round to even.
#[test]
fn f64_to_f16_rounds_once() {
    for rtz in [false, true] {
        f64_to_f16(rtz);
    }
}

fn f64_to_f16(rtz: bool) {
    let mut values: Vec<f64> = vec![];
    for bits in [0x3c00u16, 0x3c01, 0x4000, 0x5bff, 0x0001, 0x03ff, 0x7bfe] {
        let lo = half::f16::from_bits(bits).to_f64();
        let hi = half::f16::from_bits(bits + 1).to_f64();
        let m = (lo + hi) / 2.0;
        for x in [m, m * (1.0 + 1e-12), m * (1.0 - 1e-12)] {
            values.extend([x, -x]);
        }
    }
    values.extend([65519.99, 65520.0, 65520.000001, 1e-9, 3.0e-8, 1.0 / 3.0, 1e300, -0.0, 0.1, 2049.0001]);
    values.resize(64, 1.5);
    let input: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let want: Vec<u8> = values.iter().flat_map(|&v| f64_to_f16_bits(v, rtz).to_le_bytes()).collect();
    let job = ComputeJob { buffers: vec![BufferSpec::storage(0, input), BufferSpec::storage(1, vec![0; 128])], ..Default::default() };
    // 16-bit storage without Float16: the f16 value exists only to be stored, and the lowering
    // carries it as f32, rounded as binary16 would be.
    let m = Module::compute(64)
        .spirv(5)
        .cap("StorageBuffer16BitAccess")
        .cap("Float64")
        .gid()
        .decorate(if rtz { "OpDecorate %h FPRoundingMode RTZ" } else { "" })
        .block("din", "%f64", 8)
        .buffer("src", "din", 0, 0)
        .block("hout", "%f16", 2)
        .buffer("dst", "hout", 0, 1)
        .main(
            "%gx_p = OpAccessChain %pin_u32 %gid %c0\n%gx = OpLoad %u32 %gx_p\n%sp = OpAccessChain %ps_f64 %src %c0 %gx\n%d = OpLoad %f64 %sp\n\
             %h = OpFConvert %f16 %d\n%dp = OpAccessChain %ps_f16 %dst %c0 %gx\nOpStore %dp %h",
        );
    let words = assemble(&m, "f64 → f16");
    let o = ContextOptions::with_layer().setting("storage_buffer_16bit_access", "force").setting("debug_target", "core");
    let (got, _) = rewritten::run_rewritten(&format!("polyfill-f64-to-f16-core-{rtz}"), &words, &job, o);
    let wrong: Vec<String> = (0..64)
        .filter(|&k| got[1][2 * k..2 * k + 2] != want[2 * k..2 * k + 2])
        .map(|k| format!("{:e}: got {:#06x} want {:#06x}", values[k], u16::from_le_bytes([got[1][2 * k], got[1][2 * k + 1]]), u16::from_le_bytes([want[2 * k], want[2 * k + 1]])))
        .collect();
    assert!(wrong.is_empty(), "f64 → f16 ({}) through the layer's rounding:\n{}", if rtz { "RTZ" } else { "to nearest even" }, wrong.join("\n"));
}

/// Conversions between 8/16-bit storage values and 64-bit ones, and of a constant, in modules
/// with only the storage capabilities (the lowering carries the small values as 32-bit ones):
/// `dst[i] = convert(src[i])`, native vs forced on the core target (no 8/16-bit storage, no
/// Int8/Int16: every small value widened), byte for byte.
#[test]
fn width_conversions_match_native() {
    // (name, capabilities, source type and stride, result type and stride, conversion of `%x`)
    type Case<'a> = (&'a str, &'a [&'a str], (&'a str, usize), (&'a str, usize), &'a str);
    let cases: &[Case] = &[
        ("u16 → u64", &["StorageBuffer16BitAccess"], ("%u16", 2), ("%u64", 8), "%y = OpUConvert %u64 %x"),
        ("i16 → i64", &["StorageBuffer16BitAccess"], ("%i16", 2), ("%i64", 8), "%y = OpSConvert %i64 %x"),
        ("i8 → i64", &["StorageBuffer8BitAccess"], ("%i8", 1), ("%i64", 8), "%y = OpSConvert %i64 %x"),
        ("u64 → u16", &["StorageBuffer16BitAccess"], ("%u64", 8), ("%u16", 2), "%y = OpUConvert %u16 %x"),
        ("i64 → i8", &["StorageBuffer8BitAccess"], ("%i64", 8), ("%i8", 1), "%y = OpSConvert %i8 %x"),
        ("f16 → f64", &["StorageBuffer16BitAccess", "Float64"], ("%f16", 2), ("%f64", 8), "%y = OpFConvert %f64 %x"),
        ("a constant f32 → f16", &["StorageBuffer16BitAccess"], ("%f32", 4), ("%f16", 2), "%k = OpFConvert %f16 %f_tenth\n%y = OpCopyObject %f16 %k"),
    ];
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let mut failed = vec![];
    for &(name, caps, (in_ty, in_size), (out_ty, out_size), code) in cases {
        // Bytes with small exponents and both signs: no NaN, no infinity.
        let input: Vec<u8> = (0..64 * in_size).map(|b| ((b * 83 + 5) % 251) as u8 & if in_ty == "%f16" && b % 2 == 1 { 0xbf } else { 0xff }).collect();
        let job = ComputeJob { buffers: vec![BufferSpec::storage(0, input), BufferSpec::storage(1, vec![0; 64 * out_size])], ..Default::default() };
        let m = caps.iter().fold(Module::compute(64).spirv(5).cap("Int64"), |m, c| m.cap(c));
        let m = m
            .gid()
            .globals("%f_tenth = OpConstant %f32 0.1")
            .block("bin", in_ty, in_size as u32)
            .buffer("src", "bin", 0, 0)
            .block("bout", out_ty, out_size as u32)
            .buffer("dst", "bout", 0, 1)
            .main(&format!(
                "%gx_p = OpAccessChain %pin_u32 %gid %c0\n%gx = OpLoad %u32 %gx_p\n%sp = OpAccessChain %ps_{} %src %c0 %gx\n%x = OpLoad {in_ty} %sp\n\
                 {code}\n%dp = OpAccessChain %ps_{} %dst %c0 %gx\nOpStore %dp %y",
                &in_ty[1..],
                &out_ty[1..]
            ));
        let words = assemble(&m, name);
        let want = native.run_compute(&words, &job).unwrap_or_else(|e| panic!("{name} native: {e}"));
        assert!(want[1].iter().any(|b| *b != 0), "{name}: the native shader wrote");
        let o = ContextOptions::with_layer()
            .setting("storage_buffer_16bit_access", "force")
            .setting("storage_buffer_8bit_access", "force")
            .setting("debug_target", "core");
        let (got, _) = rewritten::run_rewritten(&format!("polyfill-width-{}", name.replace([' ', '→'], "-")), &words, &job, o);
        if let Some(at) = (0..want[1].len()).find(|&k| got[1][k] != want[1][k]) {
            let e = at / out_size * out_size;
            failed.push(format!("{name}: first difference at element {}: got {:02x?} want {:02x?}", at / out_size, &got[1][e..e + out_size], &want[1][e..e + out_size]));
        }
    }
    assert!(failed.is_empty(), "emulated vs native:\n{}", failed.join("\n"));
}

/// `x` rounded to binary16 — to the nearest, ties to even (IEEE 754's default), or toward zero
/// (`rtz`) — from the double itself: its multiple of the binary16 quantum at its binade, by
/// exact f64 arithmetic (`half` converts through f32, rounding twice).
fn f64_to_f16_bits(x: f64, rtz: bool) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if rtz && a >= 65536.0 {
        return sign | 0x7bff; // toward zero never reaches infinity: the largest finite value
    }
    if !rtz && a >= 65520.0 {
        return sign | 0x7c00; // at or past the midpoint between 65504 and 2^16: infinity
    }
    // The binade's quantum: 2^(e − 10) for normal binary16 values, 2^-24 below 2^-14.
    let e = if a < f64::powi(2.0, -14) { -14 } else { ((a.to_bits() >> 52) as i32) - 1023 };
    let q = f64::powi(2.0, e - 10);
    let n = a / q; // exact: q is a power of two
    let (fl, frac) = (n.floor(), n - n.floor());
    let r = if !rtz && (frac > 0.5 || (frac == 0.5 && fl % 2.0 == 1.0)) { fl + 1.0 } else { fl };
    // r · q is a binary16 value (or 2^16 / the next binade's first), so this conversion is exact.
    sign | half::f16::from_f64(r * q).to_bits()
}

/// `BDA_RANDOM_CASES` cases (default 24; 1000 under `POLYFILL_FULL_SWEEP=1`) from seed
/// `BDA_RANDOM_SEED` (default 1) on: each chain's value copied from `src[i]` to `dst[i]`,
/// native vs with 8- and 16-bit storage forced on `target`, byte for byte.
fn random_layouts(target: &str) {
    use polyfill_e2e::bda_layouts::{element_stride, input, seeds, Case};
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let mut failed = vec![];
    for seed in seeds() {
        let case = Case::in_storage_buffers(seed);
        eprintln!("seed {seed}: {}", case.describe()); // shown if the shader does not validate
        let spirv = case.shader();
        let element = element_stride(&case) as usize;
        let n = 64 * element;
        let job = ComputeJob { buffers: vec![BufferSpec::storage(0, input(&case)), BufferSpec::storage(1, vec![0; n])], ..Default::default() };
        let want = native.run_compute(&spirv, &job).unwrap_or_else(|e| panic!("seed {seed} native: {e}"));
        assert!(want[1].iter().any(|b| *b != 0), "seed {seed}: the native shader wrote ({})", case.describe());
        let o = ContextOptions::with_layer()
            .setting("storage_buffer_16bit_access", "force")
            .setting("storage_buffer_8bit_access", "force")
            .setting("debug_target", target);
        let (got, _) = rewritten::run_rewritten(&format!("polyfill-small-random-{seed}-{target}"), &spirv, &job, o);
        if let Some(at) = (0..n).find(|&k| got[1][k] != want[1][k]) {
            failed.push(format!("seed {seed}: first difference at byte {} of element {}: {}", at % element, at / element, case.describe()));
        }
    }
    assert!(failed.is_empty(), "emulated vs native ({target}):\n{}", failed.join("\n"));
}

#[test]
fn random_layouts_device_target() {
    random_layouts("device");
}

#[test]
fn random_layouts_core_target() {
    random_layouts("core");
}

#[test]
fn shapes_match_native_device_target() {
    shapes_match_native("device");
}

#[test]
fn shapes_match_native_core_target() {
    shapes_match_native("core");
}
