//! 16-bit float matrices in storage buffers with `StorageBuffer16BitAccess` emulated: a matrix's
//! layout (MatrixStride, RowMajor) decorates the struct member that holds it, so the 8/16-bit
//! lowering must carry it along the access chains into the matrix, to whole-matrix accesses,
//! columns (a row-major matrix's are MatrixStride apart) and single components. Each shape runs
//! natively on lavapipe (which has 16-bit storage) and through the layer with the feature
//! forced (on the device's features, and on `debug_target=core`: word views only), byte for byte.

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

fn shapes_match_native(target: &str) {
    let n = 64 * ELEMENT;
    // Small exponents: no NaN or infinity whose bits a conversion might change.
    let input: Vec<u8> = (0..n).map(|i| ((i * 37 + 11) % 251) as u8 & 0x3f).collect();
    let job = ComputeJob { buffers: vec![BufferSpec::storage(0, input), BufferSpec::storage(1, vec![0; n])], ..Default::default() };
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let mut failed = vec![];
    for &(name, ty, chain) in SHAPES {
        let spirv = shader(ty, chain);
        let want = native.run_compute(&spirv, &job).unwrap_or_else(|e| panic!("{name} native: {e}"));
        assert!(want[1].iter().any(|b| *b != 0), "{name}: the native shader wrote");
        let o = ContextOptions::with_layer().setting("storage_buffer_16bit_access", "force").setting("debug_target", target);
        let (got, after) = rewritten::run_rewritten(&format!("polyfill-f16-matrix-{}-{target}", name.replace(' ', "-")), &spirv, &job, o);
        // OpCapability StorageBuffer16BitAccess (4433): gone, the accesses were lowered.
        assert!(!after.windows(2).any(|w| w == [(2 << 16) | 17, 4433]), "{name}: the layer lowered the 16-bit accesses");
        if let Some(at) = (0..n).find(|&k| got[1][k] != want[1][k]) {
            failed.push(format!("{name}: first difference at byte {} of element {}", at % ELEMENT, at / ELEMENT));
        }
    }
    assert!(failed.is_empty(), "emulated vs native ({target}):\n{}", failed.join("\n"));
}

#[test]
fn f16_matrices_match_native_device_target() {
    shapes_match_native("device");
}

#[test]
fn f16_matrices_match_native_core_target() {
    shapes_match_native("core");
}
