//! The end-to-end cases. Each takes a [`Context`] created with [`ContextOptions::bindless`]
//! (our layer + VK_NVX_image_view_handle), runs on the GPU, compares with the CPU reference and
//! returns `Err(description)` on the first kind of mismatch.
//!
//! [`ContextOptions::bindless`]: crate::vk::ContextOptions::bindless

use super::gpu::{Buf, Img, Scope, Write};
use super::shaders;
use super::*;
use crate::tools::{self, Assemble};
use spvasm::Module;
use ash::vk;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

const SSBO: vk::DescriptorType = vk::DescriptorType::STORAGE_BUFFER;

/// A shader the cases use: (name, assembled words, spirv-val target env).
pub type NamedShader = (String, Vec<u32>, &'static str);

/// Every shader the cases use.
pub fn all_shaders() -> Result<Vec<NamedShader>, String> {
    let mut v: Vec<(String, Module)> = Vec::new();
    for k in HandleKind::ALL {
        v.push((format!("sample_many_{}", k.name()), shaders::sample_many(k, false, 6)));
        v.push((format!("sample_many_uniform_{}", k.name()), shaders::sample_many(k, true, 6)));
        v.push((format!("storage_write_{}", k.name()), shaders::storage_write(k)));
        v.push((format!("storage_read_{}", k.name()), shaders::storage_read(k)));
        v.push((format!("flow_{}", k.name()), shaders::flow(k)));
        v.push((format!("flow_calls_{}", k.name()), shaders::flow_calls(k)));
        v.push((format!("psb_table_{}", k.name()), shaders::psb_table(k)));
        v.push((format!("per_pixel_fs_{}", k.name()), shaders::per_pixel_fs(k, 32)));
    }
    v.push(("sample_many_u32_spv13".into(), shaders::sample_many(HandleKind::U32, false, 3)));
    v.push(("sample_many_u64_spv13".into(), shaders::sample_many(HandleKind::U64, false, 3)));
    v.push(("sampler_handles".into(), shaders::sampler_handles()));
    v.push(("block_member_images".into(), shaders::block_member_images(false)));
    v.push(("block_member_images_psb".into(), shaders::block_member_images(true)));
    v.push(("slang_shape_u64".into(), shaders::slang_shape(HandleKind::U64)));
    v.push(("slang_shape_uvec2".into(), shaders::slang_shape(HandleKind::UVec2)));
    let mut out = Vec::new();
    for (name, a) in v {
        let w = a.assemble().map_err(|e| format!("{name}: {e}"))?;
        out.push((name, w, a.target_env()));
    }
    for set in [0, 1, 6] {
        let text = shaders::rebind_compute(set, true);
        out.push((format!("rebind_compute_set{set}"), tools::spirv_as(&text, "vulkan1.3")?, "vulkan1.3"));
    }
    out.push(("draw_fs".into(), tools::spirv_as(&shaders::draw_fs(true), "vulkan1.3")?, "vulkan1.3"));
    Ok(out)
}

/// Handles of a kind for (view, type, sampler): u32 from vkGetImageViewHandleNVX; u64/uvec2
/// from vkGetImageViewHandle64NVX (whose low word must equal the 32-bit handle).
fn handle(api: &HandleApi, kind: HandleKind, view: vk::ImageView, ty: vk::DescriptorType, sampler: vk::Sampler) -> Result<(u32, u64), String> {
    let h32 = api.get32(view, ty, sampler)?;
    if kind == HandleKind::U32 {
        return Ok((h32, h32 as u64));
    }
    let h64 = api.get64(view, ty, sampler)?;
    if h64 as u32 != h32 {
        return Err(format!("vkGetImageViewHandle64NVX = {h64:#x} but vkGetImageViewHandleNVX = {h32:#x} for the same view ({ty:?}): low words differ"));
    }
    Ok((h32, h64))
}

/// Encodes handles for a shader: u64 keeps the 64-bit query's value, uvec2 gets a garbage high
/// word (the contract says it is ignored).
fn encode(kind: HandleKind, hs: &[(u32, u64)]) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, &(lo, full)) in hs.iter().enumerate() {
        match kind {
            HandleKind::U32 => v.extend_from_slice(&lo.to_le_bytes()),
            HandleKind::U64 => v.extend_from_slice(&full.to_le_bytes()),
            HandleKind::UVec2 => {
                v.extend_from_slice(&lo.to_le_bytes());
                v.extend_from_slice(&(0xA5A5_0000u32 | i as u32).to_le_bytes());
            }
        }
    }
    v
}

/// One compute dispatch with one set (set 0) made of `writes`.
pub fn dispatch(scope: &mut Scope, words: &[u32], writes: &[Write], push: &[u8], groups: [u32; 3]) -> Result<(), String> {
    let bindings: Vec<(u32, vk::DescriptorType, u32)> = writes
        .iter()
        .map(|w| match *w {
            Write::Buffer { binding, ty, .. } => (binding, ty, 1),
            Write::Image { binding, ty, .. } => (binding, ty, 1),
        })
        .collect();
    let sl = scope.set_layout(&bindings)?;
    let pl = scope.pipeline_layout(&[sl], push.len().div_ceil(4) as u32 * 4)?;
    let pipe = scope.compute_pipeline(words, pl)?;
    let set = scope.descriptor_set(sl, writes)?;
    let mut pc = push.to_vec();
    pc.resize(push.len().div_ceil(4) * 4, 0);
    scope.submit(|d, cmd| unsafe {
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipe);
        d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, pl, 0, &[set], &[]);
        if !pc.is_empty() {
            d.cmd_push_constants(cmd, pl, gpu::ALL_STAGES, 0, &pc);
        }
        d.cmd_dispatch(cmd, groups[0], groups[1], groups[2]);
    })
}

/// What most cases start from: the handle queries, a scope, `n_tex` textures and a nearest,
/// clamping sampler.
fn textured(ctx: &Context, n_tex: u32) -> Result<(HandleApi, Scope<'_>, Vec<Img>, vk::Sampler), String> {
    let api = HandleApi::new(ctx);
    let mut scope = Scope::new(ctx)?;
    let texs = textures(&mut scope, n_tex)?;
    let nearest = scope.sampler(vk::Filter::NEAREST, vk::SamplerAddressMode::CLAMP_TO_EDGE)?;
    Ok((api, scope, texs, nearest))
}

/// Combined image sampler handles of `kind` for textures `which` with `sampler`.
fn combined_handles(api: &HandleApi, kind: HandleKind, texs: &[Img], sampler: vk::Sampler, which: impl Iterator<Item = u32>) -> Result<Vec<(u32, u64)>, String> {
    which.map(|t| handle(api, kind, texs[t as usize].view, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, sampler)).collect()
}

fn expect_texels(tex_of: impl Fn(usize) -> u32, n: usize) -> Vec<[f32; 4]> {
    (0..n).map(|i| texel(tex_of(i), i as u32 % TEX, (i as u32 / TEX) % TEX)).collect()
}

const TOL: f32 = 2e-6;

/// Case 1: `n_tex` textures sampled and fetched with per-invocation (non-uniform) handles read
/// from a storage buffer, or with a uniform handle from push constants (4 dispatches in one
/// command buffer, one texture each). `minor`: SPIR-V version of the module.
pub fn sample_many(ctx: &Context, kind: HandleKind, uniform: bool, minor: u32, n_tex: u32) -> Result<(), String> {
    let what = format!("sample_many({}, {}, SPIR-V 1.{minor})", kind.name(), if uniform { "uniform push-constant handle" } else { "per-invocation handles" });
    let (api, mut scope, texs, nearest) = textured(ctx, n_tex)?;
    let hs: Vec<(u32, u64)> = texs.iter().map(|t| handle(&api, kind, t.view, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, nearest)).collect::<Result<_, _>>()?;
    let words = shaders::sample_many(kind, uniform, minor).assemble()?;
    if !uniform {
        let n = (n_tex * 16) as usize;
        let tex_of = |i: usize| ((i * 7 + i / 16) % n_tex as usize) as u32;
        let per: Vec<(u32, u64)> = (0..n).map(|i| hs[tex_of(i) as usize]).collect();
        let hbuf = scope.buffer_with(&encode(kind, &per))?;
        let out = scope.buffer(n * 32)?;
        out.fill(0xCD);
        dispatch(&mut scope, &words, &[hbuf.whole(0, SSBO), out.whole(1, SSBO)], &[], [(n / 16) as u32, 1, 1])?;
        let got = vec4s(&out.read());
        let want: Vec<[f32; 4]> = expect_texels(tex_of, n).into_iter().flat_map(|t| [t, t]).collect();
        return compare_vec4(&format!("{what}: out[2i] = sample, out[2i+1] = fetch"), &got, &want, TOL);
    }
    // Uniform: 4 dispatches, push constants { H h; u32 base } (base at offset 8).
    let picks = [0u32, 5, 17.min(n_tex - 1), n_tex - 1];
    let out = scope.buffer(picks.len() * 16 * 32)?;
    out.fill(0xCD);
    let sl = scope.set_layout(&[(1, SSBO, 1)])?;
    let pl = scope.pipeline_layout(&[sl], 16)?;
    let pipe = scope.compute_pipeline(&words, pl)?;
    let set = scope.descriptor_set(sl, &[out.whole(1, SSBO)])?;
    let pcs: Vec<Vec<u8>> = picks
        .iter()
        .enumerate()
        .map(|(d, &t)| {
            let mut pc = encode(kind, &[hs[t as usize]]);
            pc.resize(8, 0);
            pc.extend_from_slice(&((d * 16) as u32).to_le_bytes());
            pc.resize(16, 0);
            pc
        })
        .collect();
    scope.submit(|d, cmd| unsafe {
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipe);
        d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, pl, 0, &[set], &[]);
        for pc in &pcs {
            d.cmd_push_constants(cmd, pl, gpu::ALL_STAGES, 0, pc);
            d.cmd_dispatch(cmd, 1, 1, 1);
        }
    })?;
    let got = vec4s(&out.read());
    let want: Vec<[f32; 4]> = expect_texels(|i| picks[i / 16], picks.len() * 16).into_iter().flat_map(|t| [t, t]).collect();
    compare_vec4(&format!("{what}: textures {picks:?}"), &got, &want, TOL)
}

/// Storage images (RGBA8, `TEX`×`TEX`, GENERAL) cleared to zero, or with contents of texture
/// `3k` when `filled`.
fn storage_images(scope: &mut Scope, k: u32, filled: bool) -> Result<Vec<Img>, String> {
    (0..k)
        .map(|i| {
            let data = filled.then(|| tex_bytes(3 * i));
            scope.image(vk::Format::R8G8B8A8_UNORM, TEX, TEX, vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::SAMPLED, data.as_deref(), vk::ImageLayout::GENERAL)
        })
        .collect()
}

/// What the storage-writing shaders write into image `k` at (x, y).
pub fn written(k: u32, x: u32, y: u32) -> [u8; 4] {
    [(16 * x + k) as u8, (16 * y + k) as u8, (8 * k) as u8, 255]
}

fn check_written(scope: &mut Scope, imgs: &[Img], what: &str) -> Result<(), String> {
    let mut errs = Vec::new();
    for (k, img) in imgs.iter().enumerate() {
        let got = scope.read_image(img, 4)?;
        for y in 0..TEX {
            for x in 0..TEX {
                let o = ((y * TEX + x) * 4) as usize;
                let want = written(k as u32, x, y);
                if got[o..o + 4] != want && errs.len() < 8 {
                    errs.push(format!("  image {k} texel ({x},{y}): got {:?} want {want:?}", &got[o..o + 4]));
                }
            }
        }
    }
    no_errors(&format!("{what}: storage image contents differ"), &errs)
}

/// Case 2: OpConvertUToImageNV + OpImageWrite into 8 storage images (handles from a storage
/// buffer), read back by copy; then OpImageRead through the same handles into a buffer.
pub fn storage_write(ctx: &Context, kind: HandleKind) -> Result<(), String> {
    let what = format!("storage_write({})", kind.name());
    let api = HandleApi::new(ctx);
    let mut scope = Scope::new(ctx)?;
    const K: u32 = 8;
    let imgs = storage_images(&mut scope, K, false)?;
    let hs: Vec<(u32, u64)> = imgs.iter().map(|i| handle(&api, kind, i.view, vk::DescriptorType::STORAGE_IMAGE, vk::Sampler::null())).collect::<Result<_, _>>()?;
    let hbuf = scope.buffer_with(&encode(kind, &hs))?;
    let w = shaders::storage_write(kind).assemble()?;
    dispatch(&mut scope, &w, &[hbuf.whole(0, SSBO)], &[], [1, 1, K])?;
    check_written(&mut scope, &imgs, &what)?;
    let r = shaders::storage_read(kind).assemble()?;
    let out = scope.buffer((K * 16 * 16) as usize)?;
    out.fill(0xCD);
    dispatch(&mut scope, &r, &[hbuf.whole(0, SSBO), out.whole(1, SSBO)], &[], [1, 1, K])?;
    let want: Vec<[f32; 4]> = (0..K * 16).map(|i| written(i / 16, i % 4, (i / 4) % 4).map(|b| b as f32 / 255.0)).collect();
    compare_vec4(&format!("{what}: OpImageRead through handles"), &vec4s(&out.read()), &want, TOL)
}

/// The samplers of the sampler cases: nearest and linear filtering, clamp / repeat / mirrored
/// repeat.
const SAMPLER_MODES: [(vk::Filter, vk::SamplerAddressMode); 5] = [
    (vk::Filter::NEAREST, vk::SamplerAddressMode::CLAMP_TO_EDGE),
    (vk::Filter::NEAREST, vk::SamplerAddressMode::REPEAT),
    (vk::Filter::NEAREST, vk::SamplerAddressMode::MIRRORED_REPEAT),
    (vk::Filter::LINEAR, vk::SamplerAddressMode::CLAMP_TO_EDGE),
    (vk::Filter::LINEAR, vk::SamplerAddressMode::REPEAT),
];

/// Where the sampler cases sample: out of range and between texels.
const SAMPLER_UVS: [(f32, f32); 4] = [(1.375, 0.375), (-0.375, 0.625), (0.625, 1.875), (0.3, 0.45)];

/// The CPU reference of sampling texture `t` at (`u`, `v`) with `filter` and `mode`, and its
/// tolerance (llvmpipe's linear filtering weights are 8-bit fixed point).
fn reference(t: u32, u: f32, v: f32, (filter, mode): (vk::Filter, vk::SamplerAddressMode)) -> ([f32; 4], f32) {
    if filter == vk::Filter::NEAREST {
        (sample_nearest(t, u, v, mode), TOL)
    } else {
        (sample_linear(t, u, v, mode), 0.01)
    }
}

/// The bytes of per-invocation parameters `{ u32; u32; f32 u; f32 v }`.
fn param_bytes(params: &[(u32, u32, f32, f32)]) -> Vec<u8> {
    params.iter().flat_map(|&(a, b, u, v)| [a.to_le_bytes(), b.to_le_bytes(), u.to_le_bytes(), v.to_le_bytes()]).flatten().collect()
}

/// Case 3: sampler-only handles (OpConvertUToSamplerNV; the sampler slot of a
/// COMBINED_IMAGE_SAMPLER handle) with a bound image and with a handle image, for samplers
/// that differ (clamp / repeat / mirrored repeat, nearest / linear) at out-of-range and
/// in-between coordinates.
pub fn sampler_handles(ctx: &Context) -> Result<(), String> {
    let api = HandleApi::new(ctx);
    let mut scope = Scope::new(ctx)?;
    let texs = textures(&mut scope, 5)?;
    let modes = SAMPLER_MODES;
    let samplers: Vec<vk::Sampler> = modes.iter().map(|&(f, m)| scope.sampler(f, m)).collect::<Result<_, _>>()?;
    // Sampler handles: combined handles of an unrelated view (texture 4) with each sampler.
    let shs: Vec<u32> = samplers.iter().map(|&s| api.combined(texs[4].view, s)).collect::<Result<_, _>>()?;
    let slots: HashSet<u32> = shs.iter().map(|&h| sampler_slot(h)).collect();
    if slots.len() != shs.len() {
        return Err(format!("sampler_handles: distinct samplers got sampler slots {:?} (handles {shs:x?})", shs.iter().map(|&h| sampler_slot(h)).collect::<Vec<_>>()));
    }
    let image_texs = [1u32, 3, 2]; // RGBA8, RGBA8, R32F
    let ihs: Vec<u32> = image_texs.iter().map(|&t| api.sampled(texs[t as usize].view)).collect::<Result<_, _>>()?;
    let mut params = Vec::new();
    // Per output: (expected, tolerance, label).
    let mut want: Vec<([f32; 4], f32, String)> = Vec::new();
    for (si, &(filter, mode)) in modes.iter().enumerate() {
        for &(u, v) in &SAMPLER_UVS {
            for (ii, &t) in image_texs.iter().enumerate() {
                params.push((shs[si], ihs[ii], u, v));
                let ((bound, tol), (image, _)) = (reference(0, u, v, (filter, mode)), reference(t, u, v, (filter, mode)));
                want.push((bound, tol, format!("bound image (texture 0), sampler {filter:?}/{mode:?}, uv ({u}, {v})")));
                want.push((image, tol, format!("handle image (texture {t}), sampler {filter:?}/{mode:?}, uv ({u}, {v})")));
            }
        }
    }
    while params.len() % 16 != 0 {
        params.push(*params.last().unwrap());
        let l = want.len();
        want.push(want[l - 2].clone());
        want.push(want[l - 1].clone());
    }
    // Sanity of the reference: clamp and repeat differ at the out-of-range coordinate.
    assert_ne!(sample_nearest(1, 1.375, 0.375, modes[0].1), sample_nearest(1, 1.375, 0.375, modes[1].1));
    let pbuf = scope.buffer_with(&param_bytes(&params))?;
    let out = scope.buffer(params.len() * 32)?;
    out.fill(0xCD);
    let w = shaders::sampler_handles().assemble()?;
    let bound = Write::Image {
        binding: 2,
        element: 0,
        ty: vk::DescriptorType::SAMPLED_IMAGE,
        view: texs[0].view,
        layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
        sampler: vk::Sampler::null(),
    };
    dispatch(&mut scope, &w, &[pbuf.whole(0, SSBO), out.whole(1, SSBO), bound], &[], [(params.len() / 16) as u32, 1, 1])?;
    let got = vec4s(&out.read());
    let mut errs = Vec::new();
    for (i, (g, (w, tol, label))) in got.iter().zip(&want).enumerate() {
        if compare_vec4("", &[*g], &[*w], *tol).is_err() && errs.len() < 10 {
            errs.push(format!("  [{i}] {label}: got {g:?} want {w:?}"));
        }
    }
    no_errors("sampler_handles: sampling with OpConvertUToSamplerNV samplers differs", &errs)
}

/// Case 4: handles through OpPhi, OpSelect (sampled images and images), a Function variable,
/// and back to integers (OpConvertSampledImageToUNV).
/// The flow cases' resources ([`flow_setup`]).
struct FlowSetup<'a> {
    scope: Scope<'a>,
    /// The handles, `hs[i]` naming texture [`flow_tex`]`(i)`, for `i` in 0..=64.
    hs: Vec<(u32, u64)>,
    /// A storage buffer holding them.
    hbuf: Buf,
    /// The output buffer, filled with 0xCD.
    out: Buf,
}

/// The flow cases' textures (48), their handles and an output buffer of `out_bytes`.
fn flow_setup(ctx: &Context, kind: HandleKind, out_bytes: usize) -> Result<FlowSetup<'_>, String> {
    let (api, mut scope, texs, nearest) = textured(ctx, FLOW_TEXTURES)?;
    let hs = combined_handles(&api, kind, &texs, nearest, (0..=64).map(flow_tex))?;
    let hbuf = scope.buffer_with(&encode(kind, &hs))?;
    let out = scope.buffer(out_bytes)?;
    out.fill(0xCD);
    Ok(FlowSetup { scope, hs, hbuf, out })
}

const FLOW_TEXTURES: u32 = 48;

/// The texture of handle `i` in the flow cases.
fn flow_tex(i: usize) -> u32 {
    ((i * 5 + 3) % FLOW_TEXTURES as usize) as u32
}

pub fn flow(ctx: &Context, kind: HandleKind) -> Result<(), String> {
    let what = format!("flow({})", kind.name());
    let n = 64usize;
    let tex_of = flow_tex;
    let FlowSetup { mut scope, hs, hbuf, out } = flow_setup(ctx, kind, n * 64)?;
    let back = scope.buffer(n * kind.bytes())?;
    let w = shaders::flow(kind).assemble()?;
    dispatch(&mut scope, &w, &[hbuf.whole(0, SSBO), out.whole(1, SSBO), back.whole(2, SSBO)], &[], [(n / 16) as u32, 1, 1])?;
    let mut want = Vec::new();
    for i in 0..n {
        let (a, b) = (tex_of(i), tex_of(i + 1));
        let (x, y) = (i as u32 % 4, (i as u32 / 4) % 4);
        let pick = |c: bool| texel(if c { a } else { b }, x, y);
        want.push(pick(i % 2 == 1));
        want.push(pick(i % 3 == 0));
        want.push(pick(i % 4 == 1));
        want.push(pick(i % 3 == 1));
    }
    let got = vec4s(&out.read());
    let labels = ["OpPhi", "OpSelect", "Function variable", "OpSelect of images + fetch"];
    let mut errs = Vec::new();
    for (j, label) in labels.iter().enumerate() {
        let g: Vec<[f32; 4]> = got.iter().skip(j).step_by(4).copied().collect();
        let w: Vec<[f32; 4]> = want.iter().skip(j).step_by(4).copied().collect();
        if let Err(e) = compare_vec4(&format!("{what}: {label}"), &g, &w, TOL) {
            errs.push(e);
        }
    }
    let backs = back.read();
    let mut bad = Vec::new();
    for i in 0..n {
        let lo = u32::from_le_bytes(backs[i * kind.bytes()..i * kind.bytes() + 4].try_into().unwrap());
        let want = hs[if i % 2 == 1 { i } else { i + 1 }].0;
        if lo != want && bad.len() < 6 {
            bad.push(format!("  [{i}] got {lo:#x} want {want:#x}"));
        }
    }
    if !bad.is_empty() {
        errs.push(format!("{what}: OpConvertSampledImageToUNV(phi) does not give the handle back:\n{}", bad.join("\n")));
    }
    no_errors("", &errs)
}

/// Case 3b: handles through function calls ([`shaders::flow_calls`]).
pub fn flow_calls(ctx: &Context, kind: HandleKind) -> Result<(), String> {
    let what = format!("flow_calls({})", kind.name());
    let n = 64usize;
    let tex_of = flow_tex;
    let FlowSetup { mut scope, hbuf, out, .. } = flow_setup(ctx, kind, n * 32)?;
    let w = shaders::flow_calls(kind).assemble()?;
    dispatch(&mut scope, &w, &[hbuf.whole(0, SSBO), out.whole(1, SSBO)], &[], [(n / 16) as u32, 1, 1])?;
    let mut want = Vec::new();
    for i in 0..n {
        let (x, y) = (i as u32 % 4, (i as u32 / 4) % 4);
        want.push(texel(if i % 3 == 2 { tex_of(i + 1) } else { tex_of(i) }, x, y));
        want.push(texel(tex_of(i), x, y));
    }
    let got = vec4s(&out.read());
    let mut errs = Vec::new();
    for (j, label) in ["a sampled image returned by a function", "an image passed to a function"].iter().enumerate() {
        let g: Vec<[f32; 4]> = got.iter().skip(j).step_by(2).copied().collect();
        let w: Vec<[f32; 4]> = want.iter().skip(j).step_by(2).copied().collect();
        if let Err(e) = compare_vec4(&format!("{what}: {label}"), &g, &w, TOL) {
            errs.push(e);
        }
    }
    no_errors("", &errs)
}

/// An `OpRawAccessChainNV` load between an `OpSampledImage` and its use: invocation `i` makes
/// a sampled image of texture 0 (an ordinary SAMPLED_IMAGE at binding 0 and SAMPLER at binding
/// 3), then loads its coordinates `coords[i]` (a vec2, RobustnessPerComponentNV, byte address
/// `8i`, binding 1; the window ends inside invocation 60's pair, so out-of-range components
/// read 0) and writes the sample to `out[i]` (binding 2). Where the lowering checks bounds
/// itself (`ctx` with `debug_target=core`) the check splits the block, and the sampled image must
/// be made again where it is used (SPIR-V: an OpSampledImage result is used in its block only).
pub fn raw_chain_between_sampled_image_and_use(ctx: &Context) -> Result<(), String> {
    let (_, mut scope, texs, nearest) = textured(ctx, 1)?;
    let n = 64usize;
    let uv = |i: usize| [((i % 4) as f32 + 0.5) / 4.0, ((i / 4 % 4) as f32 + 0.5) / 4.0];
    let coords: Vec<u8> = (0..n).flat_map(|i| uv(i).into_iter().flat_map(f32::to_le_bytes)).collect();
    let window = 8 * 60 + 4;
    let cbuf = scope.buffer_with(&coords)?;
    let out = scope.buffer(n * 16)?;
    out.fill(0xCD);
    let words = Module::compute(16)
        .raw_access_chains()
        .gid()
        .image_types()
        .ssbo("coords", "%u32", 4, 0, 1)
        .ssbo("out", "%v4f", 16, 0, 2)
        .decorate("OpDecorate %img_var DescriptorSet 0\nOpDecorate %img_var Binding 0\nOpDecorate %smp_var DescriptorSet 0\nOpDecorate %smp_var Binding 3")
        .globals("%puc_img = OpTypePointer UniformConstant %img\n%puc_smp = OpTypePointer UniformConstant %smp\n%img_var = OpVariable %puc_img UniformConstant\n%smp_var = OpVariable %puc_smp UniformConstant")
        .main(
            "%px = OpAccessChain %pin_u32 %gid %c0\n%i = OpLoad %u32 %px\n%im = OpLoad %img %img_var\n%sm = OpLoad %smp %smp_var\n\
             %si = OpSampledImage %simg %im %sm\n%off = OpShiftLeftLogical %u32 %i %c3\n\
             %p = OpRawAccessChainNV %ps_v2f %coords %c0 %c0 %off RobustnessPerComponentNV\n%uv = OpLoad %v2f %p Aligned 4\n\
             %r = OpImageSampleExplicitLod %v4f %si %uv Lod %f0\n%po = OpAccessChain %ps_v4f %out %c0 %i\nOpStore %po %r",
        )
        .assemble()?;
    let writes = [
        Write::Image { binding: 0, element: 0, ty: vk::DescriptorType::SAMPLED_IMAGE, view: texs[0].view, layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL, sampler: vk::Sampler::null() },
        Write::Buffer { binding: 1, ty: SSBO, buffer: cbuf.buffer, offset: 0, range: window as u64 },
        out.whole(2, SSBO),
        Write::Image { binding: 3, element: 0, ty: vk::DescriptorType::SAMPLER, view: vk::ImageView::null(), layout: vk::ImageLayout::UNDEFINED, sampler: nearest },
    ];
    dispatch(&mut scope, &words, &writes, &[], [(n / 16) as u32, 1, 1])?;
    // Out-of-range components read 0: texel 0 of that axis (nearest, clamped).
    let want: Vec<[f32; 4]> = (0..n)
        .map(|i| {
            let (x, y) = ((i % 4) as u32, (i / 4 % 4) as u32);
            let (x_in, y_in) = (8 * i + 4 <= window, 8 * i + 8 <= window);
            texel(0, if x_in { x } else { 0 }, if y_in { y } else { 0 })
        })
        .collect();
    compare_vec4("raw chain between OpSampledImage and its use", &vec4s(&out.read()), &want, TOL)
}

/// Case 4b: the handle table read through a PhysicalStorageBuffer pointer.
pub fn psb_table(ctx: &Context, kind: HandleKind) -> Result<(), String> {
    if !ctx.features().buffer_device_address {
        return Err("psb_table: the device has no bufferDeviceAddress".into());
    }
    let n_tex = 24u32;
    let (api, mut scope, texs, nearest) = textured(ctx, n_tex)?;
    let n = 64usize;
    let tex_of = |i: usize| ((i * 11 + 1) % n_tex as usize) as u32;
    let hs = combined_handles(&api, kind, &texs, nearest, (0..n).map(tex_of))?;
    let table = scope.buffer_with(&encode(kind, &hs))?;
    let out = scope.buffer(n * 16)?;
    out.fill(0xCD);
    let w = shaders::psb_table(kind).assemble()?;
    dispatch(&mut scope, &w, &[out.whole(1, SSBO)], &table.address.to_le_bytes(), [(n / 16) as u32, 1, 1])?;
    compare_vec4(&format!("psb_table({}): handles read through a PhysicalStorageBuffer pointer", kind.name()), &vec4s(&out.read()), &expect_texels(tex_of, n), TOL)
}

/// Case 4c: images as 8-byte block members (a storage buffer `{ simg tex[]; }` or the same
/// through a PhysicalStorageBuffer pointer), holding 64-bit handles.
pub fn block_member_images(ctx: &Context, psb: bool) -> Result<(), String> {
    let n_tex = 24u32;
    let (api, mut scope, texs, nearest) = textured(ctx, n_tex)?;
    let n = 64usize;
    let tex_of = |i: usize| ((i * 13 + 2) % n_tex as usize) as u32;
    let hs = combined_handles(&api, HandleKind::U64, &texs, nearest, (0..n).map(tex_of))?;
    let table = scope.buffer_with(&encode(HandleKind::U64, &hs))?;
    let out = scope.buffer(n * 16)?;
    out.fill(0xCD);
    let w = shaders::block_member_images(psb).assemble()?;
    if psb {
        dispatch(&mut scope, &w, &[out.whole(1, SSBO)], &table.address.to_le_bytes(), [(n / 16) as u32, 1, 1])?;
    } else {
        dispatch(&mut scope, &w, &[table.whole(0, SSBO), out.whole(1, SSBO)], &[], [(n / 16) as u32, 1, 1])?;
    }
    compare_vec4(&format!("block_member_images({}): sampled images as 8-byte block members", if psb { "PhysicalStorageBuffer" } else { "storage buffer" }), &vec4s(&out.read()), &expect_texels(tex_of, n), TOL)
}

/// Case 5: the Slang shape (see [`shaders::slang_shape`]).
pub fn slang_shape(ctx: &Context, kind: HandleKind) -> Result<(), String> {
    let what = format!("slang_shape({})", kind.name());
    let api = HandleApi::new(ctx);
    let mut scope = Scope::new(ctx)?;
    let n_tex = 48u32;
    let texs = textures(&mut scope, n_tex)?;
    let repeat = scope.sampler(vk::Filter::NEAREST, vk::SamplerAddressMode::REPEAT)?;
    const K: u32 = 4;
    let stor = storage_images(&mut scope, K, true)?;
    let n = (K * 16) as usize;
    let tex_of = |i: usize| ((i * 7 + 5) % n_tex as usize) as u32;
    let samp = handle(&api, kind, texs[0].view, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, repeat)?;
    let mut slots = Vec::new();
    for i in 0..n {
        let t = handle(&api, kind, texs[tex_of(i) as usize].view, vk::DescriptorType::SAMPLED_IMAGE, vk::Sampler::null())?;
        let s = handle(&api, kind, stor[i / 16].view, vk::DescriptorType::STORAGE_IMAGE, vk::Sampler::null())?;
        slots.extend([t, samp, s, (0, 0)]);
    }
    let sbuf = scope.buffer_with(&encode(kind, &slots))?;
    let out = scope.buffer(n * 48)?;
    out.fill(0xCD);
    let w = shaders::slang_shape(kind).assemble()?;
    dispatch(&mut scope, &w, &[sbuf.whole(0, SSBO), out.whole(1, SSBO)], &[], [(n / 16) as u32, 1, 1])?;
    let got = vec4s(&out.read());
    let mut errs = Vec::new();
    let tex_want = expect_texels(tex_of, n);
    let stor_want: Vec<[f32; 4]> = (0..n).map(|i| texel(3 * (i as u32 / 16), i as u32 % 4, (i as u32 / 4) % 4)).collect();
    for (j, (label, want)) in [("fetch of OpImage(OpConvertUToSampledImageNV)", &tex_want), ("sample with OpConvertUToSamplerNV", &tex_want), ("OpImageRead of a storage image from OpConvertUToSampledImageNV", &stor_want)].iter().enumerate() {
        let g: Vec<[f32; 4]> = got.iter().skip(j).step_by(3).copied().collect();
        if let Err(e) = compare_vec4(&format!("{what}: {label}"), &g, want, TOL) {
            errs.push(e);
        }
    }
    if let Err(e) = check_written(&mut scope, &stor, &format!("{what}: OpImageWrite of a storage image from OpConvertUToSampledImageNV")) {
        errs.push(e);
    }
    no_errors("", &errs)
}

/// Case 6: fullscreen draw, 32×32; each 4×4 pixel block takes a handle from a storage buffer
/// (by pixel position) and shows its RGBA8 texture.
pub fn fragment_per_pixel(ctx: &Context, kind: HandleKind) -> Result<(), String> {
    let what = format!("fragment_per_pixel({})", kind.name());
    const W: u32 = 32;
    let n_tex = 48u32;
    let (api, mut scope, texs, nearest) = textured(ctx, n_tex)?;
    let rgba: Vec<u32> = (0..n_tex).filter(|&t| tex_format(t) == vk::Format::R8G8B8A8_UNORM).collect();
    let blocks = ((W / 4) * (W / 4)) as usize;
    let tex_of = |b: usize| rgba[(b * 7 + b / 8) % rgba.len()];
    let hs = combined_handles(&api, kind, &texs, nearest, (0..blocks).map(tex_of))?;
    let hbuf = scope.buffer_with(&encode(kind, &hs))?;
    let target = scope.color_target(W, W)?;
    let sl = scope.set_layout(&[(0, SSBO, 1)])?;
    let pl = scope.pipeline_layout(&[sl], 0)?;
    let vs = tools::spirv_as(&shaders::fullscreen_vs(), "vulkan1.3")?;
    let fs = shaders::per_pixel_fs(kind, W).assemble()?;
    let pipe = scope.graphics_pipeline(&vs, &fs, pl, target.render_pass, W, W)?;
    let set = scope.descriptor_set(sl, &[hbuf.whole(0, SSBO)])?;
    scope.submit(|d, cmd| unsafe {
        target.begin(d, cmd);
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, pipe);
        d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::GRAPHICS, pl, 0, &[set], &[]);
        d.cmd_draw(cmd, 3, 1, 0, 0);
        d.cmd_end_render_pass(cmd);
    })?;
    let got = scope.read_image(&target.image, 4)?;
    let mut errs = Vec::new();
    let mut bad = 0;
    for py in 0..W {
        for px in 0..W {
            let b = ((py / 4) * (W / 4) + px / 4) as usize;
            let want = rgba8_texel(tex_of(b), px % 4, py % 4);
            let o = ((py * W + px) * 4) as usize;
            if got[o..o + 4] != want {
                bad += 1;
                if errs.len() < 8 {
                    errs.push(format!("  pixel ({px},{py}) block {b} texture {}: got {:?} want {want:?}", tex_of(b), &got[o..o + 4]));
                }
            }
        }
    }
    if bad == 0 {
        Ok(())
    } else {
        Err(format!("{what}: {bad} of {} pixels differ:\n{}", W * W, errs.join("\n")))
    }
}

/// Case 7: handle lifetime under concurrency. `threads` threads each run `rounds` rounds of:
/// create two views of a shared image and one sampler, query handles (sampled ×2, storage,
/// combined ×2, repeated queries, 64-bit queries), check them against every other live handle,
/// destroy. Afterwards the slots must have been reused and a dispatch still samples correctly.
/// Returns a summary line.
pub fn lifetime(ctx: &Context, threads: usize, rounds: usize) -> Result<String, String> {
    let api = HandleApi::new(ctx);
    let mut scope = Scope::new(ctx)?;
    let base = scope.image(vk::Format::R8G8B8A8_UNORM, TEX, TEX, vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::STORAGE, Some(&tex_bytes(0)), vk::ImageLayout::GENERAL)?;
    // Live (namespace, slot) → owner description.
    let live: Mutex<HashMap<(u8, u32), String>> = Mutex::new(HashMap::new());
    let stats: Mutex<(u32, u32, u32)> = Mutex::new((0, 0, 0)); // max sampled slot, max storage slot, max sampler slot
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let d = ctx.device();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (live, stats, errors, api) = (&live, &stats, &errors, &api);
            s.spawn(move || {
                let fail = |m: String| {
                    let mut e = errors.lock().unwrap();
                    if e.len() < 20 {
                        e.push(format!("thread {t}: {m}"));
                    }
                };
                for r in 0..rounds {
                    if errors.lock().unwrap().len() >= 20 {
                        return;
                    }
                    let (v1, v2, smp) = match (gpu::create_view(d, base.image, base.format), gpu::create_view(d, base.image, base.format), gpu::create_sampler(d, vk::Filter::NEAREST, vk::SamplerAddressMode::REPEAT)) {
                        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
                        (a, b, c) => {
                            fail(format!("round {r}: create failed: {:?} {:?} {:?}", a.err(), b.err(), c.err()));
                            return;
                        }
                    };
                    let q = || -> Result<[u32; 5], String> {
                        Ok([api.sampled(v1)?, api.sampled(v2)?, api.storage(v1)?, api.combined(v1, smp)?, api.combined(v2, smp)?])
                    };
                    match (q(), q()) {
                        (Ok(h), Ok(h2)) => {
                            if h != h2 {
                                fail(format!("round {r}: repeated queries differ: {h:x?} then {h2:x?}"));
                            }
                            if api.has64() {
                                match api.get64(v1, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, smp) {
                                    Ok(h64) if h64 as u32 == h[3] => {}
                                    other => fail(format!("round {r}: 64-bit combined handle {other:x?} vs 32-bit {:#x}", h[3])),
                                }
                            }
                            if image_slot(h[3]) != image_slot(h[0]) || image_slot(h[4]) != image_slot(h[1]) {
                                fail(format!("round {r}: combined handles {:#x}/{:#x} do not carry the sampled image slots of {:#x}/{:#x}", h[3], h[4], h[0], h[1]));
                            }
                            if sampler_slot(h[3]) != sampler_slot(h[4]) {
                                fail(format!("round {r}: one sampler, two sampler slots: {:#x} / {:#x}", h[3], h[4]));
                            }
                            let keys = [(0u8, image_slot(h[0])), (0, image_slot(h[1])), (1, image_slot(h[2])), (2, sampler_slot(h[3]))];
                            {
                                let mut l = live.lock().unwrap();
                                for (j, k) in keys.iter().enumerate() {
                                    if let Some(owner) = l.get(k) {
                                        fail(format!("round {r}: handle slot {k:?} (query {j}) is also held by live {owner}"));
                                    }
                                    l.insert(*k, format!("thread {t} round {r} query {j}"));
                                }
                                let mut st = stats.lock().unwrap();
                                st.0 = st.0.max(keys[0].1).max(keys[1].1);
                                st.1 = st.1.max(keys[2].1);
                                st.2 = st.2.max(keys[3].1);
                            }
                            let mut l = live.lock().unwrap();
                            for k in &keys {
                                l.remove(k);
                            }
                        }
                        (Err(e), _) | (_, Err(e)) => fail(format!("round {r}: {e}")),
                    }
                    unsafe {
                        d.destroy_image_view(v1, None);
                        d.destroy_image_view(v2, None);
                        d.destroy_sampler(smp, None);
                    }
                }
            });
        }
    });
    let errs = errors.into_inner().unwrap();
    if !errs.is_empty() {
        return Err(format!("lifetime: {}", errs.join("\n  ")));
    }
    let (ms, mst, msm) = stats.into_inner().unwrap();
    let created = threads * rounds;
    let summary = format!("{threads} threads × {rounds} rounds: {} views, {created} samplers created; max slots: sampled {ms}, storage {mst}, sampler {msm}", 2 * created);
    // Reuse: with at most 2·threads views and `threads` samplers alive at a time, slots must be
    // recycled (a sampler slot has 12 bits: 4096 samplers without reuse would run out).
    let bound = 256u32.max(8 * threads as u32);
    if ms as usize >= bound as usize || msm as usize >= bound as usize {
        return Err(format!("lifetime: slots are not reused after destroy ({summary}; expected below {bound})"));
    }
    drop(scope);
    // A dispatch after the churn still samples correctly.
    sample_many(ctx, HandleKind::U32, false, 6, 16).map_err(|e| format!("lifetime: after {summary}: {e}"))?;
    Ok(summary)
}

/// Case 8: the application binds its own sets at various indices (and with incompatible
/// layouts) between dispatches; the layer's table must stay bound. Also checks that
/// `maxBoundDescriptorSets` through the layer is the driver's less the table's set, and that a
/// bindless pipeline may use every set it reports.
pub fn rebinding(ctx: &Context, native_max_sets: u32) -> Result<(), String> {
    let max_sets = ctx.limits().max_bound_descriptor_sets;
    if max_sets != native_max_sets - 1 {
        return Err(format!("maxBoundDescriptorSets through the layer is {max_sets}, the driver's is {native_max_sets} (want one less: the table's set)"));
    }
    let api = HandleApi::new(ctx);
    let mut scope = Scope::new(ctx)?;
    let texs = textures(&mut scope, 8)?;
    let hs: Vec<u32> = texs.iter().map(|t| api.sampled(t.view)).collect::<Result<_, _>>()?;
    let out = scope.buffer(16 * 16 * 16)?;
    out.fill(0xCD);
    let dummy = scope.buffer(256)?;
    let sl_out = scope.set_layout(&[(0, SSBO, 1)])?;
    let sl_empty = scope.set_layout(&[])?;
    let sl_other = scope.set_layout(&[(0, SSBO, 1), (1, vk::DescriptorType::UNIFORM_BUFFER, 1)])?;
    let last = max_sets - 1;
    let pl_a = scope.pipeline_layout(&[sl_out], 8)?;
    let pl_b = scope.pipeline_layout(&[sl_other, sl_out], 8)?;
    let mut c_sets = vec![sl_empty; last as usize];
    c_sets.push(sl_out);
    let pl_c = scope.pipeline_layout(&c_sets, 8)?;
    let p_a = scope.compute_pipeline(&tools::spirv_as(&shaders::rebind_compute(0, true), "vulkan1.3")?, pl_a)?;
    let p_b = scope.compute_pipeline(&tools::spirv_as(&shaders::rebind_compute(1, true), "vulkan1.3")?, pl_b)?;
    let p_c = scope.compute_pipeline(&tools::spirv_as(&shaders::rebind_compute(last, true), "vulkan1.3")?, pl_c)?;
    let p_n = scope.compute_pipeline(&tools::spirv_as(&shaders::rebind_compute(0, false), "vulkan1.3")?, pl_a)?;
    let s_a = scope.descriptor_set(sl_out, &[out.whole(0, SSBO)])?;
    let s_b = scope.descriptor_set(sl_out, &[out.whole(0, SSBO)])?;
    let s_b2 = scope.descriptor_set(sl_out, &[out.whole(0, SSBO)])?;
    let s_c = scope.descriptor_set(sl_out, &[out.whole(0, SSBO)])?;
    let s_other = scope.descriptor_set(sl_other, &[dummy.whole(0, SSBO), dummy.whole(1, vk::DescriptorType::UNIFORM_BUFFER)])?;
    let s_empty = scope.descriptor_set(sl_empty, &[])?;
    let pc = |h: u32, slot: u32| -> Vec<u8> { [h.to_le_bytes(), (slot * 16).to_le_bytes()].concat() };
    // (slot → texture, or None for the non-bindless pipeline's 7s)
    let mut want_tex: Vec<Option<u32>> = Vec::new();
    let cp = vk::PipelineBindPoint::COMPUTE;
    scope.submit(|d, cmd| unsafe {
        let mut go = |pl: vk::PipelineLayout, t: Option<u32>| {
            let slot = want_tex.len() as u32;
            d.cmd_push_constants(cmd, pl, gpu::ALL_STAGES, 0, &pc(t.map(|t| hs[t as usize]).unwrap_or(0), slot));
            d.cmd_dispatch(cmd, 1, 1, 1);
            want_tex.push(t);
        };
        // 0: set 0.
        d.cmd_bind_pipeline(cmd, cp, p_a);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_a, 0, &[s_a], &[]);
        go(pl_a, Some(0));
        // 1: sets 0..1 with a layout incompatible at set 0.
        d.cmd_bind_pipeline(cmd, cp, p_b);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_b, 0, &[s_other, s_b], &[]);
        go(pl_b, Some(1));
        // 2: rebind set 1 only.
        d.cmd_bind_descriptor_sets(cmd, cp, pl_b, 1, &[s_b2], &[]);
        go(pl_b, Some(2));
        // 3: the highest set the reported limit allows (sets below: empty layouts, some bound).
        d.cmd_bind_pipeline(cmd, cp, p_c);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_c, 0, &[s_empty, s_empty], &[]);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_c, last, &[s_c], &[]);
        go(pl_c, Some(3));
        // 4: a pipeline without bindless (module left alone), set 0 rebound with layout A.
        d.cmd_bind_pipeline(cmd, cp, p_n);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_a, 0, &[s_a], &[]);
        go(pl_a, None);
        // 5: back to bindless with no set rebinding at all.
        d.cmd_bind_pipeline(cmd, cp, p_a);
        go(pl_a, Some(4));
        // 6: bind set 0 with the incompatible layout B (disturbs all higher sets), then
        //    back to A's layout.
        d.cmd_bind_descriptor_sets(cmd, cp, pl_b, 0, &[s_other], &[]);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_a, 0, &[s_a], &[]);
        go(pl_a, Some(5));
        // 7: pipeline C again; its set `last` was disturbed by the rebinds → bind again.
        d.cmd_bind_pipeline(cmd, cp, p_c);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_c, last, &[s_c], &[]);
        go(pl_c, Some(6));
        // 8: B again after C, rebinding both sets in two calls.
        d.cmd_bind_pipeline(cmd, cp, p_b);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_b, 0, &[s_other], &[]);
        d.cmd_bind_descriptor_sets(cmd, cp, pl_b, 1, &[s_b], &[]);
        go(pl_b, Some(7));
    })?;
    let got = vec4s(&out.read());
    let mut errs = Vec::new();
    for (slot, t) in want_tex.iter().enumerate() {
        let want: Vec<[f32; 4]> = match t {
            Some(t) => expect_texels(|_| *t, 16),
            None => vec![[7.0; 4]; 16],
        };
        if let Err(e) = compare_vec4(&format!("dispatch {slot} (texture {t:?})"), &got[slot * 16..slot * 16 + 16], &want, TOL) {
            errs.push(e);
        }
    }
    no_errors("rebinding (compute)", &errs)
}


/// Case 8b: 16 draws into the cells of a 32×32 target, alternating a bindless pipeline (handle in
/// push constants) and a non-bindless one (combined image sampler at set 0), with the
/// application's sets rebound (also with an incompatible layout) between draws.
pub fn draw_rebinds(ctx: &Context) -> Result<(), String> {
    draw_rebinds_with(ctx, true)
}

/// [`draw_rebinds`]; `with_bindless == false`: only the bound-texture pipeline (a control that
/// needs no layer).
pub fn draw_rebinds_with(ctx: &Context, with_bindless: bool) -> Result<(), String> {
    const W: u32 = 32;
    let n_tex = 16u32;
    let (api, mut scope, texs, nearest) = textured(ctx, n_tex)?;
    let rgba: Vec<u32> = (0..n_tex).filter(|&t| tex_format(t) == vk::Format::R8G8B8A8_UNORM).collect();
    let hs: Vec<u32> = if with_bindless { texs.iter().map(|t| api.sampled(t.view)).collect::<Result<_, _>>()? } else { vec![0; texs.len()] };
    let target = scope.color_target(W, W)?;
    let sl_tex = scope.set_layout(&[(0, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, 1)])?;
    let sl_other = scope.set_layout(&[(0, SSBO, 1)])?;
    let pl_bl = scope.pipeline_layout(&[sl_tex], 8)?;
    let pl_other = scope.pipeline_layout(&[sl_other], 8)?;
    let vs = tools::spirv_as(&shaders::cell_vs(), "vulkan1.3")?;
    let p_plain = scope.graphics_pipeline(&vs, &tools::spirv_as(&shaders::draw_fs(false), "vulkan1.3")?, pl_bl, target.render_pass, W, W)?;
    let p_bl = if with_bindless { scope.graphics_pipeline(&vs, &tools::spirv_as(&shaders::draw_fs(true), "vulkan1.3")?, pl_bl, target.render_pass, W, W)? } else { p_plain };
    let tex_sets: Vec<vk::DescriptorSet> = rgba
        .iter()
        .map(|&t| {
            scope.descriptor_set(
                sl_tex,
                &[Write::Image { binding: 0, element: 0, ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER, view: texs[t as usize].view, layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL, sampler: nearest }],
            )
        })
        .collect::<Result<_, _>>()?;
    let dummy = scope.buffer(64)?;
    let s_other = scope.descriptor_set(sl_other, &[dummy.whole(0, SSBO)])?;
    let gp = vk::PipelineBindPoint::GRAPHICS;
    let mut want = [0u32; 16];
    scope.submit(|d, cmd| unsafe {
        target.begin(d, cmd);
        for cell in 0..16u32 {
            let k = (cell as usize * 5) % rgba.len();
            let t = rgba[k];
            want[cell as usize] = t;
            let bindless = with_bindless && cell % 3 != 1;
            if cell % 4 == 2 {
                // Incompatible layout at set 0 (disturbs everything above).
                d.cmd_bind_descriptor_sets(cmd, gp, pl_other, 0, &[s_other], &[]);
            }
            d.cmd_bind_pipeline(cmd, gp, if bindless { p_bl } else { p_plain });
            if !bindless || cell % 2 == 0 {
                d.cmd_bind_descriptor_sets(cmd, gp, pl_bl, 0, &[tex_sets[k]], &[]);
            }
            let pc = [hs[t as usize].to_le_bytes(), cell.to_le_bytes()].concat();
            d.cmd_push_constants(cmd, pl_bl, gpu::ALL_STAGES, 0, &pc);
            d.cmd_draw(cmd, 6, 1, 0, 0);
        }
        d.cmd_end_render_pass(cmd);
    })?;
    let got = scope.read_image(&target.image, 4)?;
    let mut errs = Vec::new();
    for cell in 0..16u32 {
        let (cx, cy) = (cell % 4, cell / 4);
        let px = cx * 8 + 4;
        let py = cy * 8 + 4;
        let o = ((py * W + px) * 4) as usize;
        let wv = rgba8_texel(want[cell as usize], 1, 2);
        if got[o..o + 4] != wv {
            errs.push(format!("  cell {cell} ({}): got {:?} want texture {} texel (1,2) = {wv:?}", if with_bindless && cell % 3 != 1 { "bindless" } else { "bound" }, &got[o..o + 4], want[cell as usize]));
        }
    }
    no_errors("draw_rebinds", &errs)
}

/// Garbage handles (slots past every array) must not crash or hang: the lowering clamps them.
/// Only completion is checked.
pub fn garbage_handles(ctx: &Context, pattern: Option<u32>) -> Result<(), String> {
    let mut scope = Scope::new(ctx)?;
    let _texs = textures(&mut scope, 2)?;
    let n = 64usize;
    let hs: Vec<(u32, u64)> = (0..n)
        .map(|i| {
            let h = pattern.unwrap_or_else(|| [0xFFFF_FFFFu32, 0x000F_FFFF, 0xFFF0_0000, 0x1234_5678][i % 4] ^ (i as u32));
            (h, h as u64)
        })
        .collect();
    let hbuf = scope.buffer_with(&encode(HandleKind::U32, &hs))?;
    let out = scope.buffer(n * 32)?;
    out.fill(0xCD);
    let w = shaders::sample_many(HandleKind::U32, false, 6).assemble()?;
    dispatch(&mut scope, &w, &[hbuf.whole(0, SSBO), out.whole(1, SSBO)], &[], [(n / 16) as u32, 1, 1])?;
    // No handle was taken: every slot holds the filler, a null descriptor (nullDescriptor, which
    // lavapipe has): sample and fetch read zero (alpha 0 or 1, VK_EXT_robustness2).
    let got = vec4s(&out.read());
    for (i, v) in got.iter().enumerate() {
        if v[0] != 0.0 || v[1] != 0.0 || v[2] != 0.0 || (v[3] != 0.0 && v[3] != 1.0) {
            return Err(format!("garbage handle {:#010x}: out[{i}] = {v:?}, expected zero (null descriptor)", hs[i / 2].0));
        }
    }
    Ok(())
}

/// A native (no layer, no bindless) shader sampling `textures[p.tex]` with `samplers[p.smp]`
/// (non-uniform indices from `params[i] = { u32 tex; u32 smp; f32 u; f32 v }`, binding 0) into
/// `out[i]` (binding 1); binding 2: 48 sampled images, binding 3: 5 samplers. What the
/// lowering produces, written by hand: validates the harness (uploads, samplers, references).
pub fn control_shader() -> String {
    let m = Module::compute(16)
        .spirv(6)
        .cap("SampledImageArrayNonUniformIndexing")
        .cap("ShaderNonUniform")
        .gid();
    shaders::params_and_out(m)
        .decorate(
            "OpDecorate %texs DescriptorSet 0
OpDecorate %texs Binding 2
OpDecorate %smps DescriptorSet 0
OpDecorate %smps Binding 3
OpDecorate %ti NonUniform
OpDecorate %sj NonUniform
OpDecorate %tp NonUniform
OpDecorate %sp NonUniform
OpDecorate %im NonUniform
OpDecorate %sm NonUniform
OpDecorate %si NonUniform",
        )
        .image_types()
        .globals(
            "%arr_img = OpTypeArray %img %c48
%arr_smp = OpTypeArray %smp %c5
%puc_arr_img = OpTypePointer UniformConstant %arr_img
%puc_arr_smp = OpTypePointer UniformConstant %arr_smp
%puc_img = OpTypePointer UniformConstant %img
%puc_smp = OpTypePointer UniformConstant %smp
%texs = OpVariable %puc_arr_img UniformConstant
%smps = OpVariable %puc_arr_smp UniformConstant",
        )
        .main(&format!(
            "{}
%tp = OpAccessChain %puc_img %texs %ti
%sp = OpAccessChain %puc_smp %smps %sj
%im = OpLoad %img %tp
%sm = OpLoad %smp %sp
%si = OpSampledImage %simg %im %sm
%r = OpImageSampleExplicitLod %v4f %si %uv Lod %f0
%po = OpAccessChain %ps_v4f %out %c0 %i
OpStore %po %r",
            shaders::load_params("%ti", "%sj")
        ))
        .text()
}

/// Control (no layer needed): [`control_shader`] on 48 textures × the 5 samplers of the
/// sampler case × the coordinates of the cases, compared with the same CPU references.
pub fn control_native(ctx: &Context) -> Result<(), String> {
    let mut scope = Scope::new(ctx)?;
    let texs = textures(&mut scope, 48)?;
    let modes = SAMPLER_MODES;
    let samplers: Vec<vk::Sampler> = modes.iter().map(|&(f, m)| scope.sampler(f, m)).collect::<Result<_, _>>()?;
    let mut params = Vec::new();
    let mut want = Vec::new();
    let mut tols = Vec::new();
    for i in 0..48 * 16u32 {
        let t = (i * 7 + i / 16) % 48;
        let (x, y) = (i % 4, (i / 4) % 4);
        params.push((t, 0u32, center(x, TEX), center(y, TEX)));
        want.push(texel(t, x, y));
        tols.push(TOL);
    }
    for (si, &sampler) in modes.iter().enumerate() {
        for &(u, v) in &SAMPLER_UVS {
            for t in [0u32, 1, 2, 3] {
                params.push((t, si as u32, u, v));
                let (w, tol) = reference(t, u, v, sampler);
                want.push(w);
                tols.push(tol);
            }
        }
    }
    while params.len() % 16 != 0 {
        params.push(params[0]);
        want.push(want[0]);
        tols.push(TOL);
    }
    let pbuf = scope.buffer_with(&param_bytes(&params))?;
    let out = scope.buffer(params.len() * 16)?;
    out.fill(0xCD);
    let words = tools::spirv_as(&control_shader(), "vulkan1.3")?;
    let sl = scope.set_layout(&[(0, SSBO, 1), (1, SSBO, 1), (2, vk::DescriptorType::SAMPLED_IMAGE, 48), (3, vk::DescriptorType::SAMPLER, 5)])?;
    let pl = scope.pipeline_layout(&[sl], 0)?;
    let pipe = scope.compute_pipeline(&words, pl)?;
    let mut writes = vec![pbuf.whole(0, SSBO), out.whole(1, SSBO)];
    for (k, t) in texs.iter().enumerate() {
        writes.push(Write::Image { binding: 2, element: k as u32, ty: vk::DescriptorType::SAMPLED_IMAGE, view: t.view, layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL, sampler: vk::Sampler::null() });
    }
    for (k, &s) in samplers.iter().enumerate() {
        writes.push(Write::Image { binding: 3, element: k as u32, ty: vk::DescriptorType::SAMPLER, view: vk::ImageView::null(), layout: vk::ImageLayout::UNDEFINED, sampler: s });
    }
    // One pool big enough: descriptor_set's pool has 16 per type, so build this one by hand.
    let d = ctx.device();
    let sizes = [
        vk::DescriptorPoolSize { ty: SSBO, descriptor_count: 2 },
        vk::DescriptorPoolSize { ty: vk::DescriptorType::SAMPLED_IMAGE, descriptor_count: 48 },
        vk::DescriptorPoolSize { ty: vk::DescriptorType::SAMPLER, descriptor_count: 5 },
    ];
    let pool = unsafe { d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None) }.map_err(|e| format!("{e:?}"))?;
    let l = [sl];
    let set = unsafe { d.allocate_descriptor_sets(&vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&l)) }.map_err(|e| format!("{e:?}"))?[0];
    scope.update(set, &writes);
    let n = params.len() as u32;
    let r = scope.submit(|d, cmd| unsafe {
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipe);
        d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, pl, 0, &[set], &[]);
        d.cmd_dispatch(cmd, n / 16, 1, 1);
    });
    unsafe { d.destroy_descriptor_pool(pool, None) };
    r?;
    let got = vec4s(&out.read());
    let mut errs = Vec::new();
    for (i, ((g, w), tol)) in got.iter().zip(&want).zip(&tols).enumerate() {
        if compare_vec4("", &[*g], &[*w], *tol).is_err() && errs.len() < 8 {
            errs.push(format!("  [{i}] params {:?}: got {g:?} want {w:?}", params[i]));
        }
    }
    no_errors("control (native, descriptor arrays): the harness's references disagree with lavapipe", &errs)
}
