//! Every module the layer rewrites for a [`Context`](crate::vk::Context) passes spirv-val.
//!
//! A context with the layer gets a private `dump_shaders_dir` (unless its test set one and
//! checks the dumps itself): the layer writes `<hash>.after.spv` for each module it rewrote, and
//! [`RewrittenModules::check`] validates the ones not yet seen, with the flags of the features
//! the device was created with (a module valid only under a feature the device lacks is
//! invalid there). The context checks after each `run_compute` and when it is dropped, so a
//! test fails on an invalid rewrite even where the driver happened to accept it.

use crate::child::{temp_dir, TempDir};
use crate::tools;
use crate::vk::{ComputeJob, Context, ContextOptions};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;

/// The setting the layer dumps through.
pub const DUMP_SETTING: &str = "dump_shaders_dir";

pub struct RewrittenModules {
    dir: TempDir,
    checked: Mutex<HashSet<PathBuf>>,
}

impl Default for RewrittenModules {
    fn default() -> Self {
        RewrittenModules { dir: temp_dir("rewritten-modules"), checked: Mutex::new(HashSet::new()) }
    }
}

impl RewrittenModules {

    /// The directory to pass as [`DUMP_SETTING`].
    pub fn dir(&self) -> String {
        self.dir.display().to_string()
    }

    /// Validates every dumped rewrite not checked before for `target_env` with `flags`; the
    /// error names each invalid one.
    pub fn check(&self, target_env: &str, flags: &[&str]) -> Result<(), String> {
        let Ok(entries) = std::fs::read_dir(&*self.dir) else { return Ok(()) };
        let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        let mut failures = Vec::new();
        for path in entries.flatten().map(|e| e.path()) {
            if !path.to_string_lossy().ends_with(".after.spv") || checked.contains(&path) {
                continue;
            }
            let words = tools::bytes_to_words(&std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?);
            if let Err(e) = tools::spirv_val_with(&words, target_env, flags) {
                failures.push(format!("the layer's rewrite {} fails spirv-val ({target_env} {flags:?}): {e}", path.display()));
            }
            checked.insert(path);
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("\n"))
        }
    }
}

/// Runs `spirv` with `job` in a new context made from `o`, the layer dumping its rewrites in a
/// directory of its own: returns the outputs and the one rewritten module (checked with
/// spirv-val; the context's validation layer must have reported nothing).
pub fn run_rewritten(name: &str, spirv: &[u32], job: &ComputeJob, o: ContextOptions) -> (Vec<Vec<u8>>, Vec<u32>) {
    let dir = temp_dir(name);
    let o = o.setting(DUMP_SETTING, &dir.display().to_string());
    let ctx = Context::new(&o).unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = ctx.run_compute(spirv, job).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(ctx.validation_errors(), Vec::<String>::new(), "{name}");
    let mut rewritten = vec![];
    for e in std::fs::read_dir(&*dir).unwrap_or_else(|e| panic!("{name}: no dumps in {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(".after.spv") {
            let words = tools::bytes_to_words(&std::fs::read(&p).unwrap());
            tools::spirv_val(&words, "vulkan1.2").unwrap_or_else(|e| panic!("{name}: {} fails spirv-val: {e}", p.display()));
            rewritten.push(words);
        }
    }
    assert_eq!(rewritten.len(), 1, "{name}: the module was rewritten once");
    (got, rewritten.remove(0))
}
