//! Running matrix cases: assemble + validate the input, check the rewriter's output validates,
//! execute through the layer on lavapipe, and compare every buffer byte for byte with the model.

use super::case::*;
use super::gen::{InvAccess, Plan, Role};
use crate::tools;
use crate::vk::{ComputeJob, Context, ContextOptions};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Layer setting key of the out-of-bounds poison debug aid
/// (env `VK_POLYFILL_EXTENSIONS_DEBUG_OOB_POISON`).
pub const POISON_SETTING: &str = "debug_oob_poison";
/// Layer setting key of the rewrite target (env `VK_POLYFILL_EXTENSIONS_DEBUG_TARGET`).
pub const TARGET_SETTING: &str = "debug_target";

/// Which device features the layer's rewrite may use (the layer setting `debug_target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteTarget {
    /// The device's features (lavapipe: 8/16-bit storage): exact byte bounds, 8/16-bit views.
    Device,
    /// `debug_target=core` (`Target::core()`): word-granular bounds, sub-word stores as atomics.
    Core,
    /// The device's features with buffer device addresses emulated (`buffer_device_address=force`):
    /// raw chains on physical bases reach their buffers through the descriptor table.
    EmulatedAddresses,
}

impl RewriteTarget {
    /// Bounds checks use the range rounded down to a multiple of 4.
    pub fn word_granular(self) -> bool {
        self == RewriteTarget::Core
    }
    /// The rewriter target matching the layer's choice (lavapipe has every optional feature).
    pub fn target(self) -> shader_rewrite::Target {
        match self {
            RewriteTarget::Device | RewriteTarget::EmulatedAddresses => shader_rewrite::Target::all(),
            RewriteTarget::Core => shader_rewrite::Target::core(),
        }
    }
}

/// Assembles the plan's shader and runs spirv-val on it.
pub fn assemble_and_validate(plan: &Plan) -> Result<Vec<u32>, String> {
    let words = tools::spirv_as(&plan.asm, plan.target_env)?;
    tools::spirv_val(&words, plan.target_env)
        .map_err(|e| format!("generated module fails spirv-val: {e}"))?;
    Ok(words)
}

/// Outcome of rewriting with the library.
pub enum RewriteCheck {
    /// Rewritten and the output passes spirv-val.
    Valid,
    /// The rewriter returned an error (e.g. lowering not built yet).
    RewriteError(String),
    /// The output fails spirv-val (message holds the disassembly).
    Invalid(String),
}

/// Rewrites `words` with `shader_rewrite::rewrite` (the layer's options for this case) and
/// validates the output.
pub fn check_rewrite(words: &[u32], case: &Case) -> RewriteCheck {
    check_rewrite_for(words, case, RewriteTarget::Device)
}

/// [`check_rewrite`] for the given rewrite target.
pub fn check_rewrite_for(words: &[u32], case: &Case, target: RewriteTarget) -> RewriteCheck {
    let mut opts = shader_rewrite::Options {
        target: target.target(),
        ..Default::default()
    };
    if case.poison {
        opts.oob_poison = Some(POISON);
    }
    match shader_rewrite::rewrite(words, &opts) {
        Err(e) => RewriteCheck::RewriteError(format!("{e}")),
        Ok(r) => {
            if tools::has_capability(&r.words, tools::CAP_RAW_ACCESS_CHAINS_NV) {
                return RewriteCheck::Invalid(
                    "rewritten module still declares RawAccessChainsNV".into(),
                );
            }
            match tools::spirv_val(&r.words, case.version.target_env()) {
                Ok(()) => RewriteCheck::Valid,
                Err(e) => RewriteCheck::Invalid(e),
            }
        }
    }
}

/// Options of the context a case runs in.
pub fn context_options(poison: bool) -> ContextOptions {
    context_options_for(poison, RewriteTarget::Device)
}

/// [`context_options`] with the layer's `debug_target` set for `target`.
pub fn context_options_for(poison: bool, target: RewriteTarget) -> ContextOptions {
    let mut o = ContextOptions::raw_access_chains();
    match target {
        RewriteTarget::Core => o = o.setting(TARGET_SETTING, "core"),
        RewriteTarget::EmulatedAddresses => o = o.setting("buffer_device_address", "force"),
        RewriteTarget::Device => {}
    }
    if poison {
        o = o.setting(POISON_SETTING, &format!("{POISON:#x}"));
    }
    if std::env::var("POLYFILL_MATRIX_VALIDATION").is_ok_and(|v| v == "1") {
        o = o.validation(true);
    }
    o
}

/// The compute job of a plan.
pub fn job(plan: &Plan) -> ComputeJob {
    ComputeJob {
        heap: None,
        buffers: plan
            .buffers
            .iter()
            .map(|b| b.spec.clone())
            .collect(),
        push_constants: plan.push_constants.clone(),
        groups: plan.groups,
        entry: "main",
    }
}

/// Compares results with the plan's expectations; returns a description of every mismatch
/// (empty if all match). Bytes whose expected value is undefined
/// ([`Plan::undefined_bytes`]) are not compared.
pub fn compare(plan: &Plan, got: &[Vec<u8>]) -> Vec<String> {
    let mut out = Vec::new();
    let esize = plan.case.elem_bytes() as usize;
    let undefined = plan.undefined_bytes();
    for (bi, (b, g)) in plan.buffers.iter().zip(got).enumerate() {
        if b.expected.len() != g.len() {
            out.push(format!(
                "buffer {bi} ({:?}): size {} expected {}",
                b.role,
                g.len(),
                b.expected.len()
            ));
            continue;
        }
        let undefined = &undefined[bi];
        let bad: Vec<usize> = (0..g.len())
            .filter(|&i| g[i] != b.expected[i] && !undefined.get(i).copied().unwrap_or(false))
            .collect();
        if bad.is_empty() {
            continue;
        }
        let mut s = format!(
            "buffer {bi} ({:?}, binding {} element {}, descriptor offset {}, range {:?}): {} bytes differ",
            b.role,
            b.spec.binding,
            b.spec.array_element,
            b.spec.descriptor_offset,
            b.spec.range,
            bad.len()
        );
        // Group into runs and explain the first few.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &i in &bad {
            match runs.last_mut() {
                Some((_, e)) if *e == i => *e = i + 1,
                _ => runs.push((i, i + 1)),
            }
        }
        for &(s0, e0) in runs.iter().take(12) {
            let _ = write!(
                s,
                "\n    bytes {s0}..{e0}: expected {:02x?} got {:02x?}",
                &b.expected[s0..e0.min(s0 + 32)],
                &g[s0..e0.min(s0 + 32)]
            );
            match b.role {
                Role::Output => {
                    for gid in (s0 / esize)..=((e0 - 1) / esize) {
                        if let Some(ia) = plan.accesses.iter().find(|a| a.gid as usize == gid) {
                            let len = plan.checked_len(ia.buffer);
                            let checked = if plan.word_granular { format!(", checked as {len}") } else { String::new() };
                            let bound = format!(", bound range {}{checked}", plan.buffers[ia.buffer].bound_len());
                            s += &describe_access(ia, &format!("target {} ", ia.buffer), &bound, len);
                        }
                    }
                }
                Role::Target(_) => {
                    let rel_s = s0 as i64 - b.spec.descriptor_offset as i64;
                    let rel_e = e0 as i64 - b.spec.descriptor_offset as i64;
                    let _ = write!(s, " (range-relative {rel_s}..{rel_e})");
                    let len = plan.checked_len(bi);
                    let bound = b.bound_len();
                    let mut shown = 0;
                    for ia in plan.accesses.iter().filter(|a| a.buffer == bi) {
                        let nominal = ia.access.address() as i64;
                        let touches =
                            ia.access
                                .component_addresses(len)
                                .iter()
                                .flatten()
                                .any(|&a| {
                                    (a as i64) < rel_e
                                        && a as i64 + ia.access.comp_bytes as i64 > rel_s
                                });
                        let near = nominal < rel_e && nominal + esize as i64 > rel_s;
                        if (touches || near) && shown < 4 {
                            shown += 1;
                            s += &describe_access(ia, "", "", len);
                        }
                    }
                    if rel_e <= 0 || rel_s >= bound as i64 {
                        let _ = write!(s, "\n      (outside the bound range: a stray write)");
                    }
                }
                _ => {}
            }
        }
        if runs.len() > 12 {
            let _ = write!(s, "\n    ... {} more runs", runs.len() - 12);
        }
        out.push(s);
    }
    out
}

/// Writes the case's assembly to a temp file; returns its path.
pub fn dump_asm(plan: &Plan) -> Option<PathBuf> {
    let dir = std::env::temp_dir().join("polyfill-matrix-failures");
    std::fs::create_dir_all(&dir).ok()?;
    let p = dir.join(format!("{}.spvasm", plan.case.slug()));
    std::fs::write(&p, &plan.asm).ok()?;
    Some(p)
}

/// Result of one executed case.
pub struct CaseResult {
    pub case: Case,
    /// None = passed.
    pub failure: Option<String>,
    /// Bytes left uncompared because their expected value is undefined
    /// ([`super::gen::Plan::undefined_bytes`]; only with word-granular bounds).
    pub undefined_bytes: usize,
}

/// Runs one case: validate, check the rewrite, execute through the layer, compare.
pub fn run_case(ctx: &Context, case: &Case) -> CaseResult {
    run_case_for(ctx, case, RewriteTarget::Device)
}

/// [`run_case`] in a context whose layer rewrites for `target` (expectations to match).
pub fn run_case_for(ctx: &Context, case: &Case, target: RewriteTarget) -> CaseResult {
    let plan = super::gen::plan_with(case, target.word_granular());
    let fail = |msg: String| {
        let dumped = dump_asm(&plan)
            .map(|p| format!("\n  asm: {}", p.display()))
            .unwrap_or_default();
        CaseResult {
            case: *case,
            undefined_bytes: 0,
            failure: Some(format!(
                "FAIL {case}{}\n  notes: {}{dumped}\n  {msg}",
                match target {
                    RewriteTarget::Core => " debug_target=core",
                    RewriteTarget::EmulatedAddresses => " buffer_device_address=force",
                    RewriteTarget::Device => "",
                },
                plan.notes.join("; ")
            )),
        }
    };
    let words = match assemble_and_validate(&plan) {
        Ok(w) => w,
        Err(e) => return fail(format!("generator bug: {e}")),
    };
    match check_rewrite_for(&words, case, target) {
        RewriteCheck::Valid => {}
        RewriteCheck::RewriteError(e) => {
            return fail(format!("shader_rewrite::rewrite failed: {e}"))
        }
        RewriteCheck::Invalid(e) => return fail(format!("rewritten module is invalid: {e}")),
    }
    ctx.clear_validation_messages();
    let got = match ctx.run_compute(&words, &job(&plan)) {
        Ok(g) => g,
        Err(e) => return fail(format!("execution failed: {e}")),
    };
    let mut problems = compare(&plan, &got);
    if ctx.options().validation {
        for e in ctx.validation_errors() {
            problems.push(format!("validation error: {e}"));
        }
    }
    if problems.is_empty() {
        CaseResult {
            case: *case,
            failure: None,
            undefined_bytes: plan
                .undefined_bytes()
                .iter()
                .flatten()
                .filter(|&&u| u)
                .count(),
        }
    } else {
        fail(problems.join("\n  "))
    }
}

/// `invocation G: {target}index I offset O (byte address A{bound}) → components C` on a line of
/// its own: an access and the components it reaches under bound range `len`.
fn describe_access(ia: &InvAccess, target: &str, bound: &str, len: u64) -> String {
    let a = &ia.access;
    format!(
        "\n      invocation {}: {target}index {:#x} offset {:#x} (byte address {:#x}{bound}) → components {:?}",
        ia.gid,
        a.index,
        a.offset,
        a.address(),
        a.component_addresses(len)
    )
}

/// Summary of a batch.
pub struct Summary {
    pub run: usize,
    pub passed: usize,
    pub failures: Vec<String>,
    pub seconds: f64,
    /// Passed cases with bytes left uncompared (undefined: [`CaseResult::undefined_bytes`]),
    /// and those bytes in total.
    pub cases_with_undefined: usize,
    pub undefined_bytes: usize,
}

/// Runs `cases` on `threads` worker threads, in two contexts (with and without the poison
/// setting) created on demand. Prints progress to stderr every 100 cases.
pub fn run_cases(cases: &[Case], threads: usize) -> Result<Summary, String> {
    run_cases_for(cases, threads, RewriteTarget::Device)
}

/// [`run_cases`] with the layer rewriting for `target`.
pub fn run_cases_for(
    cases: &[Case],
    threads: usize,
    target: RewriteTarget,
) -> Result<Summary, String> {
    let start = Instant::now();
    let need_plain = cases.iter().any(|c| !c.poison);
    let need_poison = cases.iter().any(|c| c.poison);
    let plain = if need_plain {
        Some(Context::new(&context_options_for(false, target))?)
    } else {
        None
    };
    let poisoned = if need_poison {
        Some(Context::new(&context_options_for(true, target))?)
    } else {
        None
    };
    let done = AtomicUsize::new(0);
    let results = crate::sweep::par_map(cases, threads, |c| {
        let ctx = if c.poison {
            poisoned.as_ref().unwrap()
        } else {
            plain.as_ref().unwrap()
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_case_for(ctx, c, target)
        }))
        .unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            CaseResult {
                case: *c,
                failure: Some(format!("FAIL {c}\n  panic: {msg}")),
                undefined_bytes: 0,
            }
        });
        let d = done.fetch_add(1, Ordering::SeqCst) + 1;
        if d.is_multiple_of(100) {
            eprintln!(
                "[matrix] {d}/{} cases, {:.0} s",
                cases.len(),
                start.elapsed().as_secs_f64()
            );
        }
        r
    });
    let passed = results.iter().filter(|r| r.failure.is_none()).count();
    let cases_with_undefined = results
        .iter()
        .filter(|r| r.failure.is_none() && r.undefined_bytes > 0)
        .count();
    let undefined_bytes = results.iter().map(|r| r.undefined_bytes).sum();
    let mut failures: Vec<(Case, String)> = results
        .into_iter()
        .filter_map(|r| r.failure.map(|f| (r.case, f)))
        .collect();
    failures.sort_by_key(|a| a.0);
    Ok(Summary {
        run: cases.len(),
        passed,
        failures: failures.into_iter().map(|(_, f)| f).collect(),
        seconds: start.elapsed().as_secs_f64(),
        cases_with_undefined,
        undefined_bytes,
    })
}
