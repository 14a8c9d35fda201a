//! StorageInputOutput16 emulation, by rendering. lavapipe lacks `storageInputOutput16`; with the
//! layer (auto mode) an application may enable it and use 16-bit vertex inputs, varyings and
//! fragment outputs, which the layer widens to 32 bits. The shaders (see
//! `polyfill_e2e::small_storage::io16`) draw four constant-attribute quads into a 32×32 target
//! with seven attachments; the read-back texels are compared with a CPU reference.
//!
//! - `io16_shaders_validate`: every variant's vertex and fragment shader passes spirv-val.
//! - `native_32bit_variant_matches_reference`: the same shaders with 32-bit interface types,
//!   natively (no layer; once with the validation layer): proves the rendering path and the
//!   reference before any emulation is involved.
//! - `offline_rewrite_validates`: `shader_rewrite::rewrite` (emulating StorageInputOutput16 on a
//!   lavapipe-like target) of the 16-bit shaders validates and drops the capability.
//! - `layer_emulates_storage_input_output_16`: through the layer (auto), with
//!   `VK_LAYER_KHRONOS_validation` below it: the feature is reported, the device is created
//!   with it, the 16-bit shaders (SPIR-V 1.3 and 1.6, with and without Float16/Int16
//!   arithmetic) render the reference image, the dumped rewritten modules validate and no longer
//!   declare StorageInputOutput16, and validation reports nothing.
//! - `layer_leaves_32bit_shaders_alone`: the 32-bit variant through the layer is not rewritten.

use polyfill_e2e::graphics;
use polyfill_e2e::small_storage::io16::{self, Variant};
use polyfill_e2e::small_storage::run;
use polyfill_e2e::tools::{self, has_capability};
use polyfill_e2e::{Context, ContextOptions};
use std::path::PathBuf;

const CAP_STORAGE_INPUT_OUTPUT_16: u32 = 4436;
const CAP_FLOAT16: u32 = 9;

fn variants(bits16: bool) -> Vec<Variant> {
    let mut v = Vec::new();
    for minor in [3, 6] {
        for arith in [false, true] {
            v.push(Variant { bits16, minor, arith });
        }
    }
    v
}

fn assemble(v: &Variant) -> (Vec<u32>, Vec<u32>) {
    let vs = tools::spirv_as(&io16::vertex_shader(v), v.target_env()).unwrap_or_else(|e| panic!("{}: vertex shader: {e}", v.name()));
    let fs = tools::spirv_as(&io16::fragment_shader(v), v.target_env()).unwrap_or_else(|e| panic!("{}: fragment shader: {e}", v.name()));
    (vs, fs)
}

fn render(ctx: &Context, v: &Variant) -> Result<Vec<Vec<u8>>, String> {
    let (vs, fs) = assemble(v);
    graphics::draw(ctx, &vs, &fs, &io16::job())
}

/// Validation errors other than the installed validation layer not knowing
/// VkLayerSettingsCreateInfoEXT.
/// Renders `v` on `ctx`: what differs from the CPU reference, and the validation errors.
fn render_checked(ctx: &Context, v: &Variant) -> Vec<String> {
    ctx.clear_validation_messages();
    let mut errs = match render(ctx, v) {
        Err(e) => vec![format!("{}: {e}", v.name())],
        Ok(out) => io16::check(v, &out).into_iter().map(|e| format!("{}: {e}", v.name())).collect(),
    };
    errs.extend(validation_errors(ctx).into_iter().map(|e| format!("{}: validation error: {e}", v.name())));
    errs
}

fn validation_errors(ctx: &Context) -> Vec<String> {
    run::relevant_validation_errors(ctx)
}

#[test]
fn io16_shaders_validate() {
    let mut errs = Vec::new();
    for v in variants(true).into_iter().chain(variants(false)) {
        let (vs, fs) = assemble(&v);
        for (w, what) in [(&vs, "vertex"), (&fs, "fragment")] {
            if let Err(e) = tools::spirv_val(w, v.target_env()) {
                errs.push(format!("{} {what}: {e}", v.name()));
            }
        }
        assert_eq!(has_capability(&vs, CAP_STORAGE_INPUT_OUTPUT_16), v.bits16);
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

#[test]
fn native_32bit_variant_matches_reference() {
    let mut errs = Vec::new();
    for (i, v) in variants(false).iter().enumerate() {
        // The first variant also with the validation layer.
        let ctx = Context::new(&ContextOptions::native().validation(i == 0)).unwrap_or_else(|e| panic!("{e}"));
        errs.extend(render_checked(&ctx, v));
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

#[test]
fn offline_rewrite_validates() {
    // lavapipe-like target: everything but storageInputOutput16.
    let target = shader_rewrite::Target { storage_input_output_16: false, ..shader_rewrite::Target::all() };
    let options = shader_rewrite::Options { target, emulate_storage: shader_rewrite::SmallStorage::missing_from(&target), ..Default::default() };
    let mut errs = Vec::new();
    for v in variants(true) {
        let (vs, fs) = assemble(&v);
        for (w, what) in [(&vs, "vertex"), (&fs, "fragment")] {
            match shader_rewrite::rewrite(w, &options) {
                Err(e) => errs.push(format!("{} {what}: rewrite failed: {e}", v.name())),
                Ok(out) => {
                    if let Err(e) = tools::spirv_val(&out.words, v.target_env()) {
                        errs.push(format!("{} {what}: rewritten module fails spirv-val: {e}", v.name()));
                    }
                    if has_capability(&out.words, CAP_STORAGE_INPUT_OUTPUT_16) {
                        errs.push(format!("{} {what}: rewritten module still declares StorageInputOutput16", v.name()));
                    }
                }
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

fn dump_dir(tag: &str) -> PathBuf {
    run::remove_stale_dumps();
    let d = std::env::temp_dir().join(format!("polyfill-io16-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn layer_emulates_storage_input_output_16() {
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    if native.query_storage_input_output_16_feature() {
        println!("note: the driver has storageInputOutput16 natively; the layer (auto) passes the shaders through");
    }
    let driver_has_it = native.query_storage_input_output_16_feature();
    drop(native);
    let dir = dump_dir("emulated");
    let opts = ContextOptions::with_layer()
        .storage_input_output_16(true)
        .validation(true)
        .setting("dump_shaders_dir", dir.to_str().unwrap());
    let ctx = Context::new(&opts).unwrap_or_else(|e| panic!("device with storageInputOutput16 through the layer: {e}"));
    assert!(ctx.query_storage_input_output_16_feature(), "the layer does not report storageInputOutput16");
    let mut errs = Vec::new();
    for v in variants(true) {
        errs.extend(render_checked(&ctx, &v));
        let (vs, fs) = assemble(&v);
        for (w, what) in [(&vs, "vertex"), (&fs, "fragment")] {
            let after = dir.join(format!("{}.after.spv", run::module_hash(w)));
            match std::fs::read(&after) {
                Err(_) if driver_has_it => {}
                Err(e) => errs.push(format!("{} {what}: the layer did not rewrite it (no {}: {e})", v.name(), after.display())),
                Ok(bytes) => {
                    let words = tools::bytes_to_words(&bytes);
                    if let Err(e) = tools::spirv_val(&words, v.target_env()) {
                        errs.push(format!("{} {what}: the layer's rewrite fails spirv-val: {e}", v.name()));
                    }
                    if has_capability(&words, CAP_STORAGE_INPUT_OUTPUT_16) {
                        errs.push(format!("{} {what}: the layer's rewrite still declares StorageInputOutput16", v.name()));
                    }
                }
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

/// An application that enables no optional feature but storageInputOutput16: the layer turns
/// shaderFloat16 on itself where the device has it, rounds with the driver's conversions
/// (Float16 in the rewrites), and the validation layer below reports nothing.
#[test]
fn layer_turns_on_shader_float16_for_its_roundings() {
    let dir = dump_dir("float16");
    let opts = ContextOptions { enable_optional_features: false, ..ContextOptions::with_layer() }
        .storage_input_output_16(true)
        .validation(true)
        .setting("dump_shaders_dir", dir.to_str().unwrap());
    let ctx = Context::new(&opts).unwrap_or_else(|e| panic!("device through the layer: {e}"));
    let mut errs = Vec::new();
    let mut float16 = 0;
    // Without arithmetic: the shaders need no Float16/Int16 of the application's own.
    for v in variants(true).into_iter().filter(|v| !v.arith) {
        errs.extend(render_checked(&ctx, &v));
        let (vs, fs) = assemble(&v);
        for w in [&vs, &fs] {
            if let Ok(bytes) = std::fs::read(dir.join(format!("{}.after.spv", run::module_hash(w)))) {
                float16 += has_capability(&tools::bytes_to_words(&bytes), CAP_FLOAT16) as usize;
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let has_float16 = native.features().shader_float16;
    let has_io16 = native.query_storage_input_output_16_feature();
    drop(native);
    if has_float16 && !has_io16 {
        assert!(float16 > 0, "no rewrite rounds with the driver's conversion (Float16)");
    }
}

#[test]
fn layer_leaves_32bit_shaders_alone() {
    let dir = dump_dir("passthrough");
    let opts = ContextOptions::with_layer().setting("dump_shaders_dir", dir.to_str().unwrap());
    let ctx = Context::new(&opts).unwrap_or_else(|e| panic!("{e}"));
    let v = Variant { bits16: false, minor: 6, arith: true };
    let out = render(&ctx, &v).unwrap_or_else(|e| panic!("{e}"));
    let errs = io16::check(&v, &out);
    assert!(errs.is_empty(), "{}", errs.join("\n"));
    let dumped: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(dumped.is_empty(), "the layer rewrote 32-bit shaders: {dumped:?}");
}
