//! What the bindless test binaries check the same way: the shared context, offline rewrites of
//! every shader, cases replayed with the validation layer below ours, and the layer's dumped
//! rewrites.

use crate::small_storage::run as ss_run;
use crate::tools::{self, has_capability};
use crate::vk::{Context, ContextOptions, IMAGE_VIEW_HANDLE_EXT};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `OpCapability BindlessTextureNV`.
pub const CAP_BINDLESS_TEXTURE_NV: u32 = 5390;

/// A shader to check: (name, words, spirv-val target environment).
pub type Shader = (String, Vec<u32>, &'static str);

/// The test binary's shared context: layer + VK_NVX_image_view_handle, no app-enabled indexing
/// features.
pub fn ctx() -> &'static Context {
    static CTX: OnceLock<Result<Context, String>> = OnceLock::new();
    CTX.get_or_init(|| Context::new(&ContextOptions::bindless()))
        .as_ref()
        .unwrap_or_else(|e| panic!("context with {IMAGE_VIEW_HANDLE_EXT} through the layer: {e}"))
}

/// Panics with the case's error.
pub fn ok(r: Result<(), String>) {
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// `shader_rewrite::rewrite` of every shader with the default bindless table at set 7: the
/// failures, the outputs that fail spirv-val or still declare BindlessTextureNV.
pub fn offline_rewrite_errors(shaders: &[Shader]) -> Vec<String> {
    let options = shader_rewrite::Options { bindless: Some(shader_rewrite::BindlessTable::with_defaults(7)), ..Default::default() };
    let mut errs = Vec::new();
    for (name, w, env) in shaders {
        match shader_rewrite::rewrite(w, &options) {
            Err(e) => errs.push(format!("{name}: rewrite failed: {e}")),
            Ok(out) => {
                if let Err(e) = tools::spirv_val(&out.words, env) {
                    errs.push(format!("{name}: rewritten module fails spirv-val: {e}"));
                }
                if has_capability(&out.words, CAP_BINDLESS_TEXTURE_NV) {
                    errs.push(format!("{name}: rewritten module still declares BindlessTextureNV"));
                }
            }
        }
    }
    errs
}

/// A fresh directory for the layer's shader dumps (stale ones of earlier runs removed).
pub fn dump_dir(tag: &str) -> PathBuf {
    ss_run::remove_stale_dumps();
    let d = std::env::temp_dir().join(format!("polyfill-small-storage-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A context with VK_LAYER_KHRONOS_validation below the layer and its rewrites dumped in `dir`.
pub fn validated_context(dir: &Path) -> Context {
    Context::new(&ContextOptions::bindless().validation(true).setting("dump_shaders_dir", dir.to_str().unwrap())).unwrap_or_else(|e| panic!("{e}"))
}

/// Records `r`'s error and the validation errors the case left on `c` (then cleared) in `errs`.
pub fn record(c: &Context, name: &str, r: Result<(), String>, errs: &mut Vec<String>) {
    if let Err(e) = r {
        errs.push(format!("{name}: {e}"));
    }
    let v = ss_run::relevant_validation_errors(c);
    if !v.is_empty() {
        errs.push(format!("{name}: {} validation errors:\n  {}", v.len(), v.join("\n  ")));
    }
    c.clear_validation_messages();
}

/// The `--target-env` of a module's SPIR-V version.
fn env_of(words: &[u32]) -> &'static str {
    match (words.get(1).copied().unwrap_or(0) >> 8) & 0xff {
        0..=3 => "vulkan1.1",
        4 => "spv1.4",
        5 => "vulkan1.2",
        _ => "vulkan1.3",
    }
}

/// The layer's rewrites of `shaders` dumped in `dir` checked into `errs` (spirv-val, no
/// BindlessTextureNV left); a shader without a dump is an error where `every_one`. Returns how
/// many were dumped.
pub fn check_dumped_rewrites(dir: &Path, shaders: &[Shader], every_one: bool, errs: &mut Vec<String>) -> usize {
    let mut seen = 0;
    for (name, w, _) in shaders {
        let Ok(bytes) = std::fs::read(dir.join(format!("{}.after.spv", ss_run::module_hash(w)))) else {
            if every_one {
                errs.push(format!("{name}: the layer dumped no rewrite of it"));
            }
            continue;
        };
        seen += 1;
        let words = tools::bytes_to_words(&bytes);
        if let Err(e) = tools::spirv_val(&words, env_of(&words)) {
            errs.push(format!("{name}: the layer's rewrite fails spirv-val: {e}"));
        }
        if has_capability(&words, CAP_BINDLESS_TEXTURE_NV) {
            errs.push(format!("{name}: the layer's rewrite still declares BindlessTextureNV"));
        }
    }
    // Any other dumped module (e.g. shaders assembled inside the cases).
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.to_string_lossy().ends_with(".after.spv") {
            let words = tools::bytes_to_words(&std::fs::read(&p).unwrap());
            if let Err(e) = tools::spirv_val(&words, env_of(&words)) {
                errs.push(format!("{}: the layer's rewrite fails spirv-val: {e}", p.display()));
            }
        }
    }
    seen
}
