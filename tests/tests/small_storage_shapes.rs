//! Shapes of 8/16-bit storage the generated differential matrix (`small_storage_diff`) does not
//! make, with `StorageBuffer16BitAccess` emulated:
//! - 16-bit float matrices: a matrix's layout (MatrixStride, RowMajor) decorates the struct
//!   member that holds it, so the lowering must carry it along the access chains into the
//!   matrix, to whole-matrix accesses, columns (a row-major matrix's are MatrixStride apart) and
//!   single components;
//! - descriptor arrays of blocks with 16-bit members, indexed by a constant and non-uniformly;
//! - `OpCopyMemory` of a struct with 16-bit members, and a pointer through `OpCopyObject`.
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
    let text = m.text();
    let words = tools::spirv_as(&text, "vulkan1.1").unwrap_or_else(|e| panic!("{e}\n{text}"));
    tools::spirv_val(&words, "vulkan1.1").unwrap_or_else(|e| panic!("test shader invalid: {e}\n{text}"));
    words
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
    let text = m.text();
    let words = tools::spirv_as(&text, "vulkan1.2").unwrap_or_else(|e| panic!("{e}\n{text}"));
    tools::spirv_val(&words, "vulkan1.2").unwrap_or_else(|e| panic!("test shader invalid: {e}\n{text}"));
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
    let text = m.text();
    let words = tools::spirv_as(&text, "vulkan1.2").unwrap_or_else(|e| panic!("{e}\n{text}"));
    tools::spirv_val(&words, "vulkan1.2").unwrap_or_else(|e| panic!("test shader invalid: {e}\n{text}"));
    words
}

#[test]
fn shapes_match_native_device_target() {
    shapes_match_native("device");
}

#[test]
fn shapes_match_native_core_target() {
    shapes_match_native("core");
}
