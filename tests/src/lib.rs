//! `polyfill_e2e`: end-to-end test harness for `VK_LAYER_POLYFILL_extensions`.
//!
//! - [`tools`]: SPIRV-Tools ≥ 2024.2 (`spirv_as`, `spirv_val`, `spirv_dis`).
//! - [`layer`]: finds the built layer and writes a manifest for `VK_ADD_LAYER_PATH`.
//! - [`vk`]: [`vk::Context`] on lavapipe with/without the layer (and validation below it),
//!   [`vk::Context::run_compute`] for compute dispatches.
//! - [`child`]: run one test in a child process with its own env/cwd.
//! - [`rewritten`]: every module the layer rewrites for a context passes spirv-val.
//! - [`graphics`]: offscreen rendering (render pass, vertex buffer, attachments read back).
//! - [`samples`]: raw-access-chain compute shaders with CPU references (shared by tests and
//!   the demo).
//! - [`small_storage`]: generated 8/16-bit storage shaders, run natively and force-emulated.
//! - [`bindless`]: SPV_NV_bindless_texture shaders on VK_NVX_image_view_handle handles through
//!   the layer, with CPU references.

pub mod bda;
pub mod bda_layouts;
pub mod bindless;
pub mod child;
pub mod graphics;
pub mod layer;
pub mod matrix;
pub mod programs;
pub mod rewritten;
pub mod samples;
pub mod small_storage;
pub mod sweep;
pub mod tools;
pub mod vk;

pub use ash;
pub use spvasm;
pub use tools::{spirv_as, spirv_dis, spirv_val, Assemble};
pub use vk::{shared_layer_context, shared_native_context, BufferKind, BufferSpec, ComputeJob, Context, ContextOptions};

/// Little helpers for building buffer contents.
pub mod bytes {
    pub fn from_u32s(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
    pub fn to_u32s(b: &[u8]) -> Vec<u32> {
        b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }
    pub fn from_f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
    pub fn to_f32s(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }
    pub fn from_u16s(v: &[u16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
    /// Deterministic pseudo-random bytes (xorshift), for test inputs.
    pub fn pattern(len: usize, seed: u32) -> Vec<u8> {
        let mut s = seed.wrapping_mul(2654435761).max(1);
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s >> 11) as u8
            })
            .collect()
    }
    /// First differing byte, for messages.
    pub fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
        if a.len() != b.len() {
            return Some(a.len().min(b.len()));
        }
        a.iter().zip(b).position(|(x, y)| x != y)
    }
}
