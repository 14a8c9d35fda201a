//! Bindless textures (SPV_NV_bindless_texture shaders + VK_NVX_image_view_handle handles)
//! through the layer: resources with known contents, handles from the layer, spvasm shader
//! generators, CPU references, and the end-to-end cases that `tests/tests/bindless.rs` runs
//! (each case is a function over a [`Context`], so the validation run can replay them all).
//!
//! - [`gpu`]: a [`gpu::Scope`] owning buffers, images, views, samplers, layouts, pipelines.
//! - [`shaders`]: spvasm text of the test shaders.
//! - [`atomics`]: image atomics through handles (OpImageTexelPointer) against a CPU model.
//! - [`checks`]: what the test binaries check alike (offline rewrites, validation, dumps).
//! - [`cases`]: the cases (compute sampling with many textures, storage writes, sampler-only
//!   handles, phi/select/variables/BDA, the Slang shape, fragment shading, lifetime, rebinding).
//!
//! Handle contract (shader-rewrite `BindlessTable`): image slot in bits 0..20, sampler slot in
//! bits 20..32; under addressing mode 64 handles are u64 or uvec2 and only the low 32 bits
//! matter. VK_NVX_image_view_handle only takes image views (descriptorType SAMPLED_IMAGE,
//! STORAGE_IMAGE or COMBINED_IMAGE_SAMPLER, VUID-VkImageViewHandleInfoNVX-descriptorType-02654),
//! so there is no sampler-only query: a shader's OpConvertUToSamplerNV takes the sampler slot
//! of a COMBINED_IMAGE_SAMPLER handle (its bits 20..32, as on NVK).

pub mod atomics;
pub mod cases;
pub mod checks;
pub mod gpu;
pub mod shaders;
pub mod shader_object;

use crate::vk::Context;
use ash::vk;
use gpu::{Img, Scope};

/// `vkGetImageViewHandle64NVX` (VK_NVX_image_view_handle revision 3; not in ash 0.38).
pub type PfnGetImageViewHandle64 = unsafe extern "system" fn(vk::Device, *const vk::ImageViewHandleInfoNVX<'_>) -> u64;

/// The handle queries as the application sees them (through the layer).
#[derive(Clone, Copy)]
pub struct HandleApi {
    device: vk::Device,
    get32: Option<vk::PFN_vkGetImageViewHandleNVX>,
    get64: Option<PfnGetImageViewHandle64>,
}

impl HandleApi {
    /// Looks both entry points up with `vkGetDeviceProcAddr`.
    pub fn new(ctx: &Context) -> HandleApi {
        let get32 = ctx.get_device_proc_addr("vkGetImageViewHandleNVX").map(|f| unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkGetImageViewHandleNVX>(f) });
        let get64 = ctx.get_device_proc_addr("vkGetImageViewHandle64NVX").map(|f| unsafe { std::mem::transmute::<unsafe extern "system" fn(), PfnGetImageViewHandle64>(f) });
        HandleApi { device: ctx.device().handle(), get32, get64 }
    }
    pub fn has32(&self) -> bool {
        self.get32.is_some()
    }
    pub fn has64(&self) -> bool {
        self.get64.is_some()
    }
    fn info(view: vk::ImageView, ty: vk::DescriptorType, sampler: vk::Sampler) -> vk::ImageViewHandleInfoNVX<'static> {
        vk::ImageViewHandleInfoNVX::default().image_view(view).descriptor_type(ty).sampler(sampler)
    }
    /// `vkGetImageViewHandleNVX`.
    pub fn get32(&self, view: vk::ImageView, ty: vk::DescriptorType, sampler: vk::Sampler) -> Result<u32, String> {
        let f = self.get32.ok_or("vkGetDeviceProcAddr(vkGetImageViewHandleNVX) returned NULL (is VK_NVX_image_view_handle advertised and enabled?)")?;
        let info = Self::info(view, ty, sampler);
        Ok(unsafe { f(self.device, &info) })
    }
    /// `vkGetImageViewHandle64NVX`.
    pub fn get64(&self, view: vk::ImageView, ty: vk::DescriptorType, sampler: vk::Sampler) -> Result<u64, String> {
        let f = self.get64.ok_or("vkGetDeviceProcAddr(vkGetImageViewHandle64NVX) returned NULL")?;
        let info = Self::info(view, ty, sampler);
        Ok(unsafe { f(self.device, &info) })
    }
    pub fn sampled(&self, view: vk::ImageView) -> Result<u32, String> {
        self.get32(view, vk::DescriptorType::SAMPLED_IMAGE, vk::Sampler::null())
    }
    pub fn storage(&self, view: vk::ImageView) -> Result<u32, String> {
        self.get32(view, vk::DescriptorType::STORAGE_IMAGE, vk::Sampler::null())
    }
    pub fn combined(&self, view: vk::ImageView, sampler: vk::Sampler) -> Result<u32, String> {
        self.get32(view, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, sampler)
    }
    pub fn combined64(&self, view: vk::ImageView, sampler: vk::Sampler) -> Result<u64, String> {
        self.get64(view, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, sampler)
    }
}

/// Image slot of a handle (bits 0..20).
pub fn image_slot(h: u32) -> u32 {
    h & 0xF_FFFF
}
/// Sampler slot of a handle (bits 20..32).
pub fn sampler_slot(h: u32) -> u32 {
    h >> 20
}

/// How a shader receives handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandleKind {
    /// OpSamplerImageAddressingModeNV 32 (or none), u32 handles.
    U32,
    /// Addressing mode 64, u64 handles.
    U64,
    /// Addressing mode 64, uvec2 handles (`.x` = low word).
    UVec2,
}

impl HandleKind {
    pub const ALL: [HandleKind; 3] = [HandleKind::U32, HandleKind::U64, HandleKind::UVec2];
    pub fn bytes(self) -> usize {
        match self {
            HandleKind::U32 => 4,
            _ => 8,
        }
    }
    /// Serializes handles; `high` is put into the high word under mode 64 (ignored by contract).
    pub fn encode(self, handles: &[u32], high: impl Fn(usize) -> u32) -> Vec<u8> {
        let mut v = Vec::new();
        for (i, &h) in handles.iter().enumerate() {
            v.extend_from_slice(&h.to_le_bytes());
            if self != HandleKind::U32 {
                v.extend_from_slice(&high(i).to_le_bytes());
            }
        }
        v
    }
    pub fn name(self) -> &'static str {
        match self {
            HandleKind::U32 => "u32",
            HandleKind::U64 => "u64",
            HandleKind::UVec2 => "uvec2",
        }
    }
}

// ---- textures with known contents -----------------------------------------------------------

/// Edge of the small test textures.
pub const TEX: u32 = 4;

/// Texture `t`'s format: every third one R32_SFLOAT, the rest R8G8B8A8_UNORM.
pub fn tex_format(t: u32) -> vk::Format {
    if t % 3 == 2 {
        vk::Format::R32_SFLOAT
    } else {
        vk::Format::R8G8B8A8_UNORM
    }
}

/// RGBA8 bytes of texture `t` at texel (x, y) (distinct per texture).
pub fn rgba8_texel(t: u32, x: u32, y: u32) -> [u8; 4] {
    [(t * 5 + x) as u8, (t * 3 + y * 16) as u8, ((x * 64 + y * 8 + t * 11) & 255) as u8, (255 - t) as u8]
}

/// R32F value of texture `t` at (x, y).
pub fn r32f_texel(t: u32, x: u32, y: u32) -> f32 {
    t as f32 * 100.0 + (y * TEX + x) as f32 + 0.25
}

/// What sampling / fetching texel (x, y) of texture `t` returns.
pub fn texel(t: u32, x: u32, y: u32) -> [f32; 4] {
    if tex_format(t) == vk::Format::R32_SFLOAT {
        [r32f_texel(t, x, y), 0.0, 0.0, 1.0]
    } else {
        rgba8_texel(t, x, y).map(|b| b as f32 / 255.0)
    }
}

/// Upload bytes of texture `t` (TEX × TEX).
pub fn tex_bytes(t: u32) -> Vec<u8> {
    let mut v = Vec::new();
    for y in 0..TEX {
        for x in 0..TEX {
            if tex_format(t) == vk::Format::R32_SFLOAT {
                v.extend_from_slice(&r32f_texel(t, x, y).to_le_bytes());
            } else {
                v.extend_from_slice(&rgba8_texel(t, x, y));
            }
        }
    }
    v
}

/// `n` sampled textures (texture `t` = [`texel`]), in SHADER_READ_ONLY_OPTIMAL.
pub fn textures(scope: &mut Scope, n: u32) -> Result<Vec<Img>, String> {
    (0..n)
        .map(|t| {
            scope.image(
                tex_format(t),
                TEX,
                TEX,
                vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::STORAGE,
                Some(&tex_bytes(t)),
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            )
        })
        .collect()
}

/// Texel-center coordinate of texel `i` on an axis of `n` texels.
pub fn center(i: u32, n: u32) -> f32 {
    (i as f32 + 0.5) / n as f32
}

/// Texel index an address mode gives for integer texel coordinate `i` (may be out of range).
pub fn wrap(i: i32, n: i32, mode: vk::SamplerAddressMode) -> Option<i32> {
    match mode {
        vk::SamplerAddressMode::CLAMP_TO_EDGE => Some(i.clamp(0, n - 1)),
        vk::SamplerAddressMode::REPEAT => Some(i.rem_euclid(n)),
        vk::SamplerAddressMode::MIRRORED_REPEAT => {
            let m = i.rem_euclid(2 * n);
            Some(if m < n { m } else { 2 * n - 1 - m })
        }
        _ => None, // border: transparent black
    }
}

/// CPU nearest sampling of texture `t` at normalized (u, v).
pub fn sample_nearest(t: u32, u: f32, v: f32, mode: vk::SamplerAddressMode) -> [f32; 4] {
    let n = TEX as i32;
    let (x, y) = ((u * n as f32).floor() as i32, (v * n as f32).floor() as i32);
    match (wrap(x, n, mode), wrap(y, n, mode)) {
        (Some(x), Some(y)) => texel(t, x as u32, y as u32),
        _ => [0.0; 4],
    }
}

/// CPU bilinear sampling of texture `t` at normalized (u, v).
pub fn sample_linear(t: u32, u: f32, v: f32, mode: vk::SamplerAddressMode) -> [f32; 4] {
    let n = TEX as i32;
    let (fu, fv) = (u * n as f32 - 0.5, v * n as f32 - 0.5);
    let (x0, y0) = (fu.floor() as i32, fv.floor() as i32);
    let (a, b) = (fu - x0 as f32, fv - y0 as f32);
    let at = |x: i32, y: i32| match (wrap(x, n, mode), wrap(y, n, mode)) {
        (Some(x), Some(y)) => texel(t, x as u32, y as u32),
        _ => [0.0; 4],
    };
    let (t00, t10, t01, t11) = (at(x0, y0), at(x0 + 1, y0), at(x0, y0 + 1), at(x0 + 1, y0 + 1));
    let mut out = [0.0; 4];
    for c in 0..4 {
        out[c] = (1.0 - a) * (1.0 - b) * t00[c] + a * (1.0 - b) * t10[c] + (1.0 - a) * b * t01[c] + a * b * t11[c];
    }
    out
}

/// Compares vec4s; `tol` absolute (relative for values above 1). Returns at most 8 messages.
pub fn compare_vec4(what: &str, got: &[[f32; 4]], want: &[[f32; 4]], tol: f32) -> Result<(), String> {
    let mut msgs = Vec::new();
    let mut bad = 0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = g.iter().zip(w).all(|(a, b)| (a - b).abs() <= tol * b.abs().max(1.0));
        if !ok {
            bad += 1;
            if msgs.len() < 8 {
                msgs.push(format!("  [{i}] got {g:?} want {w:?}"));
            }
        }
    }
    if got.len() != want.len() {
        msgs.push(format!("  length {} != {}", got.len(), want.len()));
        bad += 1;
    }
    if bad == 0 {
        Ok(())
    } else {
        Err(format!("{what}: {bad} of {} values differ:\n{}", want.len(), msgs.join("\n")))
    }
}

/// Bytes → vec4s.
/// `Ok` where `errs` is empty, else the error: `what` (when not empty) and the errors, one a line.
pub fn no_errors(what: &str, errs: &[String]) -> Result<(), String> {
    match (errs.is_empty(), what.is_empty()) {
        (true, _) => Ok(()),
        (false, true) => Err(errs.join("\n")),
        (false, false) => Err(format!("{what}:\n{}", errs.join("\n"))),
    }
}

pub fn vec4s(b: &[u8]) -> Vec<[f32; 4]> {
    b.chunks_exact(16)
        .map(|c| {
            let f = |k: usize| f32::from_le_bytes([c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]]);
            [f(0), f(1), f(2), f(3)]
        })
        .collect()
}

/// `VK_NVX_image_view_handle` as the layer (or driver) reports it in the device's extension list.
pub fn image_view_handle_listed(ctx: &Context) -> bool {
    ctx.has_device_extension(crate::vk::IMAGE_VIEW_HANDLE_EXT)
}
