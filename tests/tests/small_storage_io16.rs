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
//! - `layer_emulates_io16_with_debug_info`: the same through the layer with a
//!   NonSemantic.Shader.DebugInfo.100 `DebugGlobalVariable` naming every interface variable (as
//!   glslang `-gVS` emits): the widened re-declarations come before the debug instructions that
//!   name them, the dumped modules validate and keep every debug instruction, the image matches,
//!   and the validation layer below reports nothing.

use polyfill_e2e::graphics;
use polyfill_e2e::small_storage::io16::{self, Variant};
use polyfill_e2e::small_storage::run;
use polyfill_e2e::tools::{self, has_capability};
use polyfill_e2e::{Context, ContextOptions};
use std::path::PathBuf;

const CAP_STORAGE_INPUT_OUTPUT_16: u32 = 4436;
const CAP_FLOAT16: u32 = 9;
/// NonSemantic.Shader.DebugInfo.100 instruction number.
const DEBUG_GLOBAL_VARIABLE: u32 = 18;

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

/// `text` with debug info as glslang `-gVS` writes it for interface variables: a
/// DebugGlobalVariable right after each Input/Output variable (NonSemantic.Shader.DebugInfo.100),
/// and OpModuleProcessed ending the debug section. The void and 32-bit uint types the debug
/// info needs move up to the first type (they depend on nothing, so the module stays valid).
fn with_interface_debug_info(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let find = |what: &str| lines.iter().position(|l| l.contains(what));
    let id = |k: usize| lines[k].split_whitespace().next().unwrap().to_string();
    let (uint_line, void_line) = (find("= OpTypeInt 32 0"), find("= OpTypeVoid").expect("a void type"));
    let uint = uint_line.map_or("%dbg_u32".to_string(), id);
    let void = id(void_line);
    let first_type = find("= OpType").unwrap();
    let mut out = String::new();
    let (mut imported, mut string, mut prelude, mut n) = (false, false, false, 0);
    for (k, line) in lines.iter().enumerate() {
        let l = line.trim_start();
        if Some(k) == uint_line || k == void_line {
            continue;
        }
        if k == first_type {
            out += &format!("{uint} = OpTypeInt 32 0\n{}\n", lines[void_line]);
        }
        if !imported && l.starts_with("OpMemoryModel") {
            out += "OpExtension \"SPV_KHR_non_semantic_info\"\n%dbg = OpExtInstImport \"NonSemantic.Shader.DebugInfo.100\"\n";
            imported = true;
        }
        if !string && (l.starts_with("OpDecorate") || l.starts_with("OpMemberDecorate") || l.starts_with("OpName")) {
            out += "%dbg_file = OpString \"io16.glsl\"\nOpModuleProcessed \"client vulkan100\"\n";
            string = true;
        }
        let var = l.contains("= OpVariable ") && (l.ends_with(" Input") || l.ends_with(" Output"));
        if var && !prelude {
            out += &format!(
                "%dbg_100 = OpConstant {uint} 100\n%dbg_2 = OpConstant {uint} 2\n%dbg_1 = OpConstant {uint} 1\n%dbg_0 = OpConstant {uint} 0\n\
                 %dbg_src = OpExtInst {void} %dbg DebugSource %dbg_file\n%dbg_cu = OpExtInst {void} %dbg DebugCompilationUnit %dbg_100 %dbg_2 %dbg_src %dbg_2\n\
                 %dbg_ty = OpExtInst {void} %dbg DebugTypeBasic %dbg_file %dbg_100 %dbg_2 %dbg_0\n"
            );
            prelude = true;
        }
        out += line;
        out += "\n";
        if var {
            let id = l.split_whitespace().next().unwrap();
            out += &format!("%dbg_gv{n} = OpExtInst {void} %dbg DebugGlobalVariable %dbg_file %dbg_ty %dbg_src %dbg_1 %dbg_1 %dbg_cu %dbg_file {id} %dbg_0\n");
            n += 1;
        }
    }
    assert!(imported && string && prelude && n > 0, "debug info not placed:\n{out}");
    out
}

/// The 16-bit shaders with debug info naming their interface variables, through the layer: the
/// variables the emulation declares again (widened) keep their DebugGlobalVariable, the
/// rewritten modules validate (before, each named a variable declared after it), and they
/// render the reference image.
#[test]
fn layer_emulates_io16_with_debug_info() {
    let driver_has_it = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}")).query_storage_input_output_16_feature();
    let dir = dump_dir("debug-info");
    let opts = ContextOptions::with_layer()
        .storage_input_output_16(true)
        .validation(true)
        .setting("dump_shaders_dir", dir.to_str().unwrap());
    let ctx = Context::new(&opts).unwrap_or_else(|e| panic!("{e}"));
    let mut errs = Vec::new();
    for v in variants(true) {
        let env = v.target_env();
        let vs = tools::spirv_as(&with_interface_debug_info(&io16::vertex_shader(&v)), env).unwrap_or_else(|e| panic!("{}: {e}", v.name()));
        let fs = tools::spirv_as(&with_interface_debug_info(&io16::fragment_shader(&v)), env).unwrap_or_else(|e| panic!("{}: {e}", v.name()));
        for (w, what) in [(&vs, "vertex"), (&fs, "fragment")] {
            tools::spirv_val(w, env).unwrap_or_else(|e| panic!("{} {what}: input: {e}", v.name()));
        }
        ctx.clear_validation_messages();
        match graphics::draw(&ctx, &vs, &fs, &io16::job()) {
            Err(e) => errs.push(format!("{}: {e}", v.name())),
            Ok(out) => errs.extend(io16::check(&v, &out).into_iter().map(|e| format!("{}: {e}", v.name()))),
        }
        errs.extend(validation_errors(&ctx).into_iter().map(|e| format!("{}: validation error: {e}", v.name())));
        for (w, what) in [(&vs, "vertex"), (&fs, "fragment")] {
            let after = dir.join(format!("{}.after.spv", run::module_hash(w)));
            let bytes = match std::fs::read(&after) {
                Ok(bytes) => bytes,
                Err(_) if driver_has_it => continue, // passed through
                Err(e) => {
                    errs.push(format!("{} {what}: the layer did not rewrite it (no {}: {e})", v.name(), after.display()));
                    continue;
                }
            };
            let words = tools::bytes_to_words(&bytes);
            if let Err(e) = tools::spirv_val(&words, env) {
                errs.push(format!("{} {what}: the layer's rewrite fails spirv-val: {e}", v.name()));
            }
            // One DebugGlobalVariable per variable in, and none dropped.
            let (kept, given) = (count_ext_inst(&words, DEBUG_GLOBAL_VARIABLE), count_ext_inst(w, DEBUG_GLOBAL_VARIABLE));
            if kept != given {
                errs.push(format!("{} {what}: {given} DebugGlobalVariables in, {kept} out", v.name()));
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

/// How many OpExtInst instructions of number `number` a module holds (any set: the tests'
/// modules import only one).
fn count_ext_inst(words: &[u32], number: u32) -> usize {
    let mut k = 5;
    let mut n = 0;
    while k < words.len() {
        let count = (words[k] >> 16) as usize;
        if words[k] & 0xffff == 12 && words.get(k + 4) == Some(&number) {
            n += 1;
        }
        k += count.max(1);
    }
    n
}
