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
use polyfill_e2e::bindless::checks::{check_dumped_rewrites, ctx, dump_dir, offline_rewrite_errors, ok, record, validated_context};
use polyfill_e2e::bindless::HandleKind;

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
    let errs = offline_rewrite_errors(&atomics::all_shaders().unwrap_or_else(|e| panic!("{e}")));
    assert!(errs.is_empty(), "{}", errs.join("\n\n"));
}

#[test]
fn validation_layer_and_dumps_clean() {
    let dir = dump_dir("bindless-atomics");
    let c = validated_context(&dir);
    let mut errs = Vec::new();
    for shape in Shape::ALL {
        record(&c, &shape.name(), atomics::run(&c, shape), &mut errs);
    }
    let seen = check_dumped_rewrites(&dir, &atomics::all_shaders().unwrap(), true, &mut errs);
    println!("{seen} rewritten modules dumped by the layer and validated");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(errs.is_empty(), "{}", errs.join("\n\n"));
}
