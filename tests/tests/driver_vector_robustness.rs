//! What the raw-chain lowering assumes of lavapipe's own bounds checks
//! (`Target::robust_vector_components`), checked on the driver without the layer: a vector
//! load or store of a storage buffer is checked component by component, to the byte, against
//! the descriptor's range (a component whose bytes are all inside is accessed, one with any byte
//! outside reads 0 or is not written), whether the offset is uniform or varies per invocation,
//! for 32-bit vectors (`uvec2`, `uvec4`) and 64-bit ones (`u64vec2`). The layer relies on it
//! for the Mesa releases up to `LAVAPIPE_VECTOR_CHECKS_UP_TO`: on those this test fails if the
//! driver does otherwise; on a later release it only reports what the driver does (whether
//! the range can grow).

use polyfill_e2e::bytes;
use polyfill_e2e::vk::{lavapipe_with_vector_checks, BufferSpec, ComputeJob, Context, ContextOptions};
use spvasm::{Module, GID_X_CHAIN};

/// One probe: vectors of `n` components of `width` bits at stride `n * width / 8`; invocation
/// `i` loads element `i` (or element `uniform` for every invocation) of `in` (range `range`)
/// into `out` (whole), and stores a marker into element `i` of `st` (range `range`).
fn probe(ctx: &Context, width: u32, n: u32, range: u64, uniform: Option<u32>) -> Result<(), String> {
    let comp = width / 8;
    let stride = comp * n;
    let elems = 8u32;
    let (scalar, vec) = if width == 64 { ("%u64", "%v_u64") } else { ("%u32", "%v_u32") };
    let mut m = Module::compute(elems);
    if width == 64 {
        m = m.cap("Int64");
    }
    let index = match uniform {
        Some(k) => format!("%c{k}"),
        None => "%i".into(),
    };
    let marker: Vec<String> = (0..n).map(|c| format!("%k{c}")).collect();
    let consts: String = (0..n).map(|c| format!("%k{c} = OpConstant {scalar} {}\n", 0xA0 + c)).collect();
    let source = m
        .gid()
        .globals(&format!("{vec} = OpTypeVector {scalar} {n}\n{consts}%marker = OpConstantComposite {vec} {}", marker.join(" ")))
        .block("vblk", vec, stride)
        .buffer("in", "vblk", 0, 0)
        .buffer("out", "vblk", 0, 1)
        .buffer("st", "vblk", 0, 2)
        .globals(&format!("%ps_vec = OpTypePointer StorageBuffer {vec}"))
        .main(&format!(
            "{GID_X_CHAIN}
%pi = OpAccessChain %ps_vec %in %c0 {index}
%v = OpLoad {vec} %pi
%po = OpAccessChain %ps_vec %out %c0 %i
OpStore %po %v
%ps = OpAccessChain %ps_vec %st %c0 %i
OpStore %ps %marker"
        ))
        .text();
    let words = polyfill_e2e::tools::spirv_as(&source, "vulkan1.1")?;
    let size = (elems * stride) as usize;
    let input = bytes::pattern(size, 7);
    let job = ComputeJob {
        buffers: vec![
            BufferSpec::storage(0, input.clone()).window(0, Some(range)),
            BufferSpec::storage(1, vec![0; size]),
            BufferSpec::storage(2, vec![0x55; size]).window(0, Some(range)),
        ],
        ..Default::default()
    };
    let out = ctx.run_compute(&words, &job)?;
    let inside = |byte: u32| byte as u64 + comp as u64 <= range;
    let mut want_out = vec![0u8; size];
    let mut want_st = vec![0x55u8; size];
    for i in 0..elems {
        let src = uniform.unwrap_or(i);
        for c in 0..n {
            let (from, to) = ((src * stride + c * comp) as usize, (i * stride + c * comp) as usize);
            if inside(from as u32) {
                want_out[to..to + comp as usize].copy_from_slice(&input[from..from + comp as usize]);
            }
            if inside(to as u32) {
                let v = (0xA0 + c) as u64;
                want_st[to..to + comp as usize].copy_from_slice(&v.to_le_bytes()[..comp as usize]);
            }
        }
    }
    let what = format!("{n} x {width}-bit, range {range}, {}", uniform.map_or("varying offset".into(), |k| format!("uniform element {k}")));
    if let Some(b) = bytes::first_difference(&out[1], &want_out) {
        return Err(format!("{what}: load differs at byte {b}: got {:02x?} want {:02x?}", &out[1][b / 4 * 4..b / 4 * 4 + 4], &want_out[b / 4 * 4..b / 4 * 4 + 4]));
    }
    if let Some(b) = bytes::first_difference(&out[2], &want_st) {
        return Err(format!("{what}: store differs at byte {b}: got {:02x?} want {:02x?}", &out[2][b / 4 * 4..b / 4 * 4 + 4], &want_st[b / 4 * 4..b / 4 * 4 + 4]));
    }
    Ok(())
}

#[test]
fn lavapipe_checks_each_component_of_a_vector_access() {
    let ctx = Context::new(&ContextOptions::native()).unwrap();
    if !ctx.device_name().starts_with("llvmpipe") {
        eprintln!("not lavapipe ({}): the layer does not assume this there; skipped", ctx.device_name());
        return;
    }
    let mut failures = vec![];
    let mut cases = 0;
    for (width, n) in [(32, 2), (32, 4), (64, 2)] {
        if width == 64 && !ctx.features().shader_int64 {
            continue;
        }
        let stride = (width / 8 * n) as u64;
        // Every byte position of the range's end inside element 3, and ends on element bounds.
        for range in (3 * stride..=4 * stride).chain([stride, 8 * stride]) {
            for uniform in [None, Some(3)] {
                cases += 1;
                if let Err(e) = probe(&ctx, width, n, range, uniform) {
                    failures.push(e);
                }
            }
        }
    }
    let what = format!("{} of {cases} probes differ from per-component checks:\n{}", failures.len(), failures.join("\n"));
    if !lavapipe_with_vector_checks(&ctx) {
        eprintln!("a lavapipe release the layer does not rely on (Mesa {:?}): {what}", polyfill_e2e::vk::lavapipe_mesa_major(&ctx));
        return;
    }
    assert!(failures.is_empty(), "{what}");
    eprintln!("{cases} probes: every component checked on its own");
}
