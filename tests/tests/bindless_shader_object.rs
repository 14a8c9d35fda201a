//! Bindless shaders as shader objects (VK_EXT_shader_object) through the layer on lavapipe: a
//! compute shader object created from an SPV_NV_bindless_texture module, bound with
//! vkCmdBindShadersEXT next to the application's own set (bound with its padded pipeline
//! layout), sampling textures by per-invocation handles; checked against the CPU reference.
//! Also with VK_LAYER_KHRONOS_validation below the layer: ignored, the installed validation
//! layer (1.3.239) predates VK_EXT_shader_object (1.3.246) and the process crashes (SIGSEGV)
//! in it; run with `--ignored` against a newer validation layer.

use polyfill_e2e::bindless::shader_object;
use polyfill_e2e::small_storage::run as ss_run;
use polyfill_e2e::{Context, ContextOptions};

fn options() -> ContextOptions {
    ContextOptions::bindless().shader_object(true)
}

fn context(o: &ContextOptions) -> Option<Context> {
    let c = Context::new(o).unwrap_or_else(|e| panic!("context with VK_EXT_shader_object + VK_NVX_image_view_handle: {e}"));
    Some(c)
}

#[test]
fn compute_shader_object_samples_by_handle() {
    let Some(c) = context(&options()) else { return };
    shader_object::sample_many(&c, 12, false).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn compute_shader_object_unbind_rebind() {
    let Some(c) = context(&options()) else { return };
    shader_object::sample_many(&c, 12, true).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
#[ignore = "validation layer 1.3.239 predates VK_EXT_shader_object and crashes (SIGSEGV)"]
fn compute_shader_object_with_validation() {
    let Some(c) = context(&options().validation(true)) else { return };
    shader_object::sample_many(&c, 12, true).unwrap_or_else(|e| panic!("{e}"));
    let v = ss_run::relevant_validation_errors(&c);
    assert!(v.is_empty(), "{} validation errors:\n  {}", v.len(), v.join("\n  "));
}
