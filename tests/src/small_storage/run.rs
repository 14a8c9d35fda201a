//! Running small-storage plans: assemble + validate, the native run (no layer) checked against
//! the CPU reference, forced-emulation runs through the layer checked byte for byte against the
//! native run, proof that the layer rewrote the module (its `dump_shaders_dir` dump, validated
//! with spirv-val and free of the emulated capabilities), and the same rewrite offline through
//! `shader_rewrite` (no Vulkan).

use super::gen::{Plan, Run, FEATURES};
use crate::tools;
use crate::vk::{Context, ContextOptions};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// A set of emulated storage features (bit i = `FEATURES[i]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Force(pub u8);

impl Force {
    pub const NONE: Force = Force(0);
    pub const ALL: Force = Force(0x7f);

    pub fn of_caps(caps: &[u32]) -> Force {
        Force(FEATURES.iter().enumerate().filter(|(_, f)| caps.contains(&f.0)).fold(0, |m, (i, _)| m | (1 << i)))
    }
    pub fn has(self, cap: u32) -> bool {
        FEATURES.iter().position(|f| f.0 == cap).is_some_and(|i| self.0 & (1 << i) != 0)
    }
    pub fn union(self, o: Force) -> Force {
        Force(self.0 | o.0)
    }
    /// Layer setting keys set to `force`.
    pub fn keys(self) -> Vec<&'static str> {
        FEATURES.iter().enumerate().filter(|(i, _)| self.0 & (1 << i) != 0).map(|(_, f)| f.2).collect()
    }
    pub fn label(self) -> String {
        if self == Force::ALL {
            return "all".into();
        }
        if self == Force::NONE {
            return "none".into();
        }
        self.keys().join("+")
    }
    /// The rewrite options the layer uses on lavapipe with these features forced: the device
    /// features minus the forced ones (and minus storageInputOutput16, which lavapipe lacks),
    /// emulating the forced ones.
    pub fn rewrite_options(self) -> shader_rewrite::Options {
        let mut target = shader_rewrite::Target { storage_input_output_16: false, nonuniform_array_length_broken: true, ..shader_rewrite::Target::all() };
        let mut emulate = shader_rewrite::SmallStorage::default();
        for (cap, _, _) in FEATURES {
            if self.has(cap) || cap == 4436 {
                emulate.set(cap, true);
            }
        }
        let t = &mut target;
        let forced_off = [
            (4433, &mut t.storage_buffer_16bit),
            (4434, &mut t.uniform_and_storage_buffer_16bit),
            (4435, &mut t.storage_push_constant_16),
            (4448, &mut t.storage_buffer_8bit),
            (4449, &mut t.uniform_and_storage_buffer_8bit),
            (4450, &mut t.storage_push_constant_8),
        ];
        for (cap, bit) in forced_off {
            if self.has(cap) {
                *bit = false;
            }
        }
        shader_rewrite::Options { target, emulate_storage: emulate, ..Default::default() }
    }
}

/// The forced-emulation configurations a case runs under: the feature of its block kind alone
/// (the other storage features stay native, so the lowering may use e.g. 8-bit views), that
/// plus every other storage capability the module declares, and everything forced (no 8/16-bit
/// storage at all: pure 32-bit words, atomic sub-word stores).
pub fn configs(plan: &Plan) -> Vec<Force> {
    let c = &plan.case;
    let primary = Force::of_caps(&[super::gen::cap_number(super::gen::storage_cap(c.kind, c.ty.s.bits()))]);
    let declared = Force::of_caps(&plan.storage_caps);
    let mut v = vec![primary];
    if declared != primary {
        v.push(declared);
    }
    v.push(Force::ALL);
    v
}

/// Assembles the plan's shader and validates it (with its layout flags).
pub fn assemble(plan: &Plan) -> Result<Vec<u32>, String> {
    let words = tools::spirv_as(&plan.asm, plan.target_env)?;
    tools::spirv_val_with(&words, plan.target_env, &plan.val_flags).map_err(|e| format!("generated module fails spirv-val: {e}"))?;
    Ok(words)
}

/// The name the layer gives a module's dumps (`<hash>.before.spv` / `<hash>.after.spv`).
pub use shader_rewrite::module_hash;

/// A layer context with some features forced (or none: auto) and its dump directory.
pub struct LayerCtx {
    pub ctx: Context,
    pub force: Force,
    pub dump_dir: PathBuf,
}

fn dump_root() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        remove_stale_dumps();
        std::env::temp_dir().join(format!("polyfill-small-storage-{}", std::process::id()))
    })
    .clone()
}

/// Removes `$TMPDIR/polyfill-small-storage-<pid>` and `polyfill-io16-<pid>-*` dump directories
/// of processes that no longer run.
pub fn remove_stale_dumps() {
    let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("polyfill-small-storage-").or_else(|| name.strip_prefix("polyfill-io16-")) else { continue };
        let pid: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !pid.is_empty() && pid != std::process::id().to_string() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Options of a layer context forcing `force` (every other setting default).
pub fn layer_options(force: Force, dump_dir: &std::path::Path, validation: bool) -> ContextOptions {
    let mut o = ContextOptions::with_layer().validation(validation).setting("dump_shaders_dir", dump_dir.to_str().unwrap());
    for k in force.keys() {
        o = o.setting(k, "force");
    }
    o
}

type Cache<K, V> = OnceLock<Mutex<HashMap<K, Result<&'static V, String>>>>;

/// The process-wide layer context for (`force`, `validation`); never dropped.
pub fn layer_context(force: Force, validation: bool) -> Result<&'static LayerCtx, String> {
    static CACHE: Cache<(Force, bool), LayerCtx> = OnceLock::new();
    let m = CACHE.get_or_init(Default::default);
    let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
    m.entry((force, validation))
        .or_insert_with(|| {
            let dump_dir = dump_root().join(format!("{}{}", force.label(), if validation { "-validation" } else { "" }));
            let _ = std::fs::remove_dir_all(&dump_dir);
            std::fs::create_dir_all(&dump_dir).map_err(|e| format!("{}: {e}", dump_dir.display()))?;
            let ctx = Context::new(&layer_options(force, &dump_dir, validation)).map_err(|e| format!("layer context ({}): {e}", force.label()))?;
            Ok(&*Box::leak(Box::new(LayerCtx { ctx, force, dump_dir })))
        })
        .clone()
}

/// The process-wide native context (no layer), optionally with validation; never dropped.
pub fn native_context(validation: bool) -> Result<&'static Context, String> {
    static CACHE: Cache<bool, Context> = OnceLock::new();
    let m = CACHE.get_or_init(Default::default);
    let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
    m.entry(validation)
        .or_insert_with(|| Ok(&*Box::leak(Box::new(Context::new(&ContextOptions::native().validation(validation))?))))
        .clone()
}

/// Validation messages that are not about what the layer sends: the installed validation layer
/// (1.3.239) does not know `VkLayerSettingsCreateInfoEXT`, which our contexts chain to
/// `VkInstanceCreateInfo` for the layer's settings.
pub fn relevant_validation_errors(ctx: &Context) -> Vec<String> {
    ctx.validation_errors()
        .into_iter()
        .filter(|e| !(e.contains("VkLayerSettingsCreateInfoEXT") || e.contains("1000496000") || e.contains("LAYER_SETTINGS_CREATE_INFO")))
        .collect()
}

/// Outputs of every run of a plan.
pub type Outputs = Vec<Vec<Vec<u8>>>;

/// Runs every dispatch of the plan in `ctx`.
pub fn execute(ctx: &Context, words: &[u32], runs: &[&Run]) -> Result<Outputs, String> {
    runs.iter().map(|r| ctx.run_compute(words, &r.job).map_err(|e| format!("{}: {e}", r.label))).collect()
}

/// Byte-wise comparison of one run's buffers; `None` if equal. `what`: e.g. "native vs CPU".
pub fn compare(run: &Run, got: &[Vec<u8>], want: &[Vec<u8>], what: &str) -> Option<String> {
    let mut msgs = Vec::new();
    for (b, (g, w)) in got.iter().zip(want).enumerate() {
        if g == w {
            continue;
        }
        if g.len() != w.len() {
            msgs.push(format!("buffer {b}: length {} != {}", g.len(), w.len()));
            continue;
        }
        let diffs: Vec<usize> = (0..g.len()).filter(|&i| g[i] != w[i]).collect();
        let mut m = format!("{what}: {}: buffer {b} ({} of {} bytes differ):", run.label, diffs.len(), g.len());
        for &i in diffs.iter().take(6) {
            m += &format!("\n      byte {i}: got {:#04x} want {:#04x} — {}", g[i], w[i], run.describe(b, i));
        }
        msgs.push(m);
    }
    (!msgs.is_empty()).then(|| msgs.join("\n    "))
}

/// Native outputs, computed once per plan per process (several tests share them).
pub fn native_outputs(plan: &Plan, words: &[u32]) -> Result<Arc<Outputs>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Outputs>>>> = OnceLock::new();
    let m = CACHE.get_or_init(Default::default);
    let key = plan.case.slug();
    if let Some(o) = m.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(o.clone());
    }
    let ctx = native_context(false)?;
    let runs: Vec<&Run> = plan.runs.iter().collect();
    let out = Arc::new(execute(ctx, words, &runs)?);
    m.lock().unwrap_or_else(|e| e.into_inner()).insert(key, out.clone());
    Ok(out)
}

/// Native run vs the CPU reference. Problems, one string each.
pub fn check_native(plan: &Plan, words: &[u32]) -> Vec<String> {
    match native_outputs(plan, words) {
        Err(e) => vec![format!("native execution failed: {e}")],
        Ok(out) => plan.runs.iter().zip(out.iter()).filter_map(|(r, got)| compare(r, got, &r.expected, "native vs CPU reference")).collect(),
    }
}

/// The rewritten module the layer dumped for `words` (`<hash>.after.spv`), validated, and free
/// of the forced capabilities the module declared.
pub fn check_dump(lc: &LayerCtx, plan: &Plan, words: &[u32]) -> Result<(), String> {
    let hash = module_hash(words);
    let after = lc.dump_dir.join(format!("{hash}.after.spv"));
    let bytes = std::fs::read(&after).map_err(|e| {
        format!(
            "the layer did not rewrite the module (no dump {}: {e}); is the setting {:?}=force implemented?",
            after.display(),
            lc.force.keys()
        )
    })?;
    let w = tools::bytes_to_words(&bytes);
    tools::spirv_val_with(&w, plan.target_env, &plan.val_flags).map_err(|e| format!("the layer's rewritten module {} fails spirv-val: {e}", after.display()))?;
    for &cap in &plan.storage_caps {
        if lc.force.has(cap) && tools::has_capability(&w, cap) {
            let name = FEATURES.iter().find(|f| f.0 == cap).unwrap().1;
            return Err(format!("the layer's rewritten module {} still declares {name}, which is forced to emulation", after.display()));
        }
    }
    Ok(())
}

/// Which runs of a plan a forced configuration executes: ranges that are not a multiple of 4
/// need an 8-bit view of the storage buffer to see the exact end, so they are skipped where
/// 8-bit storage buffer access is forced too (`POLYFILL_SMALL_STORAGE_ALL_RANGES=1` runs them
/// anyway, to see the word-granular limitation).
pub fn runs_for(plan: &Plan, force: Force) -> Vec<&Run> {
    let all = std::env::var("POLYFILL_SMALL_STORAGE_ALL_RANGES").is_ok_and(|v| v == "1");
    plan.runs.iter().filter(|r| all || !(r.needs_exact_range && force.has(4448))).collect()
}

/// One forced configuration of a plan: output vs native (byte for byte) and the dump check.
pub fn check_forced(plan: &Plan, words: &[u32], force: Force, validation: bool) -> Vec<String> {
    let native = match native_outputs(plan, words) {
        Ok(n) => n,
        Err(e) => return vec![format!("native execution failed: {e}")],
    };
    let lc = match layer_context(force, validation) {
        Ok(l) => l,
        Err(e) => return vec![e],
    };
    let runs = runs_for(plan, force);
    if runs.is_empty() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    if validation {
        lc.ctx.clear_validation_messages();
    }
    match execute(&lc.ctx, words, &runs) {
        Err(e) => problems.push(format!("[force {}] execution through the layer failed: {e}", force.label())),
        Ok(out) => {
            for (r, got) in runs.iter().zip(&out) {
                let i = plan.runs.iter().position(|x| std::ptr::eq(x, *r)).unwrap();
                if let Some(m) = compare(r, got, &native[i], &format!("[force {}] emulated vs native", force.label())) {
                    problems.push(m);
                }
            }
            if let Err(e) = check_dump(lc, plan, words) {
                problems.push(format!("[force {}] {e}", force.label()));
            }
        }
    }
    if validation {
        for e in relevant_validation_errors(&lc.ctx) {
            problems.push(format!("[force {}] validation error: {e}", force.label()));
        }
    }
    problems
}

/// `shader_rewrite::rewrite` with the options the layer would use for `force`; the output must
/// validate and be free of the forced capabilities the module declared.
pub fn check_offline_rewrite(plan: &Plan, words: &[u32], force: Force) -> Result<(), String> {
    let out = shader_rewrite::rewrite(words, &force.rewrite_options()).map_err(|e| format!("[force {}] shader_rewrite::rewrite failed: {e}", force.label()))?;
    tools::spirv_val_with(&out.words, plan.target_env, &plan.val_flags).map_err(|e| format!("[force {}] rewritten module fails spirv-val: {e}", force.label()))?;
    for &cap in &plan.storage_caps {
        if force.has(cap) && tools::has_capability(&out.words, cap) {
            return Err(format!("[force {}] rewritten module still declares capability {cap}", force.label()));
        }
    }
    if out.words == words {
        return Err(format!("[force {}] the rewrite left the module unchanged", force.label()));
    }
    Ok(())
}
