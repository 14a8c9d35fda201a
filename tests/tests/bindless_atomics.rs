//! Image atomics through bindless handles, end to end: `InterlockedAdd` /
//! `InterlockedMax` / `InterlockedCompareExchange` (OpAtomicIAdd / OpAtomicSMax /
//! OpAtomicCompareExchange on an OpImageTexelPointer whose image comes from a
//! VK_NVX_image_view_handle handle) from 256 invocations, 16 on every texel, through the layer
//! on lavapipe, checked against a CPU model (`polyfill_e2e::bindless::atomics`).
//!
//! - `image_value_u32`, `slang_u64`, `slang_uvec2`: the texel pointer takes an image *value*
//!   (OpConvertUToImageNV; Slang's OpConvertUToSampledImageNV + OpImage), formats Unknown.
//! - `function_variable`, `block_member`: the extension's memory shape (a Function variable
//!   holding the image; images as storage-buffer members).
//! - `offline_rewrite_validates`: every shader rewritten offline passes spirv-val.
//! - `validation_layer_and_dumps_clean`: all shapes again with VK_LAYER_KHRONOS_validation below
//!   the layer (no error) and the layer's rewritten modules dumped and validated.

use polyfill_e2e::bindless::atomics::{self, Shape};
use polyfill_e2e::bindless::HandleKind;
use polyfill_e2e::small_storage::run as ss_run;
use polyfill_e2e::tools::{self, has_capability};
use polyfill_e2e::{Context, ContextOptions};
use std::sync::OnceLock;

const CAP_BINDLESS_TEXTURE_NV: u32 = 5390;

fn ctx() -> &'static Context {
    static CTX: OnceLock<Result<Context, String>> = OnceLock::new();
    CTX.get_or_init(|| Context::new(&ContextOptions::bindless())).as_ref().unwrap_or_else(|e| panic!("bindless context through the layer: {e}"))
}

fn ok(r: Result<(), String>) {
    if let Err(e) = r {
        panic!("{e}");
    }
}

#[test]
fn image_value_u32() {
    ok(atomics::run(ctx(), Shape::ImageValue));
}

#[test]
fn slang_u64() {
    ok(atomics::run(ctx(), Shape::Slang(HandleKind::U64)));
}

#[test]
fn slang_uvec2() {
    ok(atomics::run(ctx(), Shape::Slang(HandleKind::UVec2)));
}

#[test]
fn function_variable() {
    ok(atomics::run(ctx(), Shape::FunctionVariable));
}

#[test]
fn block_member() {
    ok(atomics::run(ctx(), Shape::BlockMember));
}

#[test]
fn offline_rewrite_validates() {
    let options = shader_rewrite::Options {
        bindless: Some(shader_rewrite::BindlessTable {
            set: 7,
            sampled_images_binding: 0,
            sampled_images_count: 65536,
            storage_images_binding: 1,
            storage_images_count: 65536,
            samplers_binding: 2,
            samplers_count: 4096,
        }),
        ..Default::default()
    };
    let mut errs = Vec::new();
    for (name, w, env) in atomics::all_shaders().unwrap_or_else(|e| panic!("{e}")) {
        match shader_rewrite::rewrite(&w, &options) {
            Err(e) => errs.push(format!("{name}: rewrite failed: {e}")),
            Ok(out) => {
                if let Err(e) = tools::spirv_val(&out.words, env) {
                    errs.push(format!("{name}: rewritten module fails spirv-val: {e}"));
                }
                if has_capability(&out.words, CAP_BINDLESS_TEXTURE_NV) {
                    errs.push(format!("{name}: still declares BindlessTextureNV"));
                }
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n\n"));
}

#[test]
fn validation_layer_and_dumps_clean() {
    ss_run::remove_stale_dumps();
    let dir = std::env::temp_dir().join(format!("polyfill-small-storage-{}-bindless-atomics", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let c = Context::new(&ContextOptions::bindless().validation(true).setting("dump_shaders_dir", dir.to_str().unwrap())).unwrap_or_else(|e| panic!("{e}"));
    let mut errs = Vec::new();
    for shape in Shape::ALL {
        if let Err(e) = atomics::run(&c, shape) {
            errs.push(e);
        }
        let v = ss_run::relevant_validation_errors(&c);
        if !v.is_empty() {
            errs.push(format!("{}: {} validation errors:\n  {}", shape.name(), v.len(), v.join("\n  ")));
        }
        c.clear_validation_messages();
    }
    let mut seen = 0;
    for (name, w, env) in atomics::all_shaders().unwrap() {
        let Ok(bytes) = std::fs::read(dir.join(format!("{}.after.spv", ss_run::module_hash(&w)))) else {
            errs.push(format!("{name}: the layer dumped no rewrite of it"));
            continue;
        };
        seen += 1;
        let words = tools::bytes_to_words(&bytes);
        if let Err(e) = tools::spirv_val(&words, env) {
            errs.push(format!("{name}: the layer's rewrite fails spirv-val: {e}"));
        }
    }
    println!("{seen} rewritten modules dumped by the layer and validated");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(errs.is_empty(), "{}", errs.join("\n\n"));
}
