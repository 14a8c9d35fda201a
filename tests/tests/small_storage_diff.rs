//! Differential tests of the 8/16-bit storage emulation (StorageBuffer16BitAccess,
//! UniformAndStorageBuffer16BitAccess, StoragePushConstant16, StorageBuffer8BitAccess,
//! UniformAndStorageBuffer8BitAccess, StoragePushConstant8): generated compute shaders (see
//! `polyfill_e2e::small_storage` for the dimensions) run natively on lavapipe, which has all of
//! these features, and again through the layer with the feature forced to emulation
//! (`<feature>=force`); outputs are compared byte for byte.
//!
//! - `generated_modules_validate`: every generated module assembles and passes spirv-val (no
//!   Vulkan).
//! - `slice_covers_all_pairs`: the default slice uses every pair of dimension values the full
//!   sweep has.
//! - `native_matches_reference`: the native run (no layer) equals the CPU reference — proves
//!   the generator and the harness.
//! - `layer_auto_passes_modules_through`: with the layer enabled and nothing forced, lavapipe's
//!   native features are used: the module is not rewritten (no dump) and the results match.
//! - `rewritten_modules_validate`: `shader_rewrite::rewrite` with the layer's options for each
//!   forced configuration succeeds and its output validates (no Vulkan).
//! - `forced_emulation_matches_native`: each case under each forced configuration (the block
//!   kind's feature alone; every storage capability the module declares; all seven) produces the
//!   native bytes, and the layer's dumped rewrite validates and no longer declares the forced
//!   capabilities.
//! - `validation_slice_is_clean`: a slice of cases natively and force-emulated with
//!   `VK_LAYER_KHRONOS_validation` below the layer: zero validation errors.
//!
//! Environment:
//! - `POLYFILL_FULL_SWEEP=1`: the full cartesian sweep instead of the default slice.
//! - `POLYFILL_SMALL_STORAGE_FILTER=<substring>`: only cases whose slug contains it (e.g.
//!   `ubo-f16vec3`, `-concurrent-`).
//! - `POLYFILL_SMALL_STORAGE_THREADS=<n>` (default 2).
//! - `POLYFILL_SMALL_STORAGE_VALIDATION_EVERY=<n>`: validation on every n-th case (default 12;
//!   1 = all).

use polyfill_e2e::small_storage::case::{self, Case};
use polyfill_e2e::small_storage::gen::{self, Plan};
use polyfill_e2e::small_storage::run::{self, Force};
use polyfill_e2e::spvasm::Module;
use polyfill_e2e::sweep;
use std::time::Instant;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn selected() -> Vec<Case> {
    sweep::select(case::full_sweep, case::slice, Case::slug, "POLYFILL_SMALL_STORAGE_FILTER")
}

/// A plan and its assembled module (or the generator's error).
type Assembled = (Plan, Result<Vec<u32>, String>);

/// Plans of the selected cases (generated once per test binary).
fn plans() -> &'static [Assembled] {
    static PLANS: std::sync::OnceLock<Vec<Assembled>> = std::sync::OnceLock::new();
    PLANS.get_or_init(|| {
        let cs = selected();
        let plans: Vec<Plan> = cs.iter().map(gen::plan).collect();
        let words = par_map_values(&plans, run::assemble);
        plans.into_iter().zip(words).collect()
    })
}

fn threads() -> usize {
    sweep::threads("POLYFILL_SMALL_STORAGE_THREADS")
}

fn par_map_values<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    sweep::par_map(items, threads(), f)
}

/// Runs `f` over the plans on a few threads; collects `(slug, problem)` strings.
fn par_check(items: &[&Assembled], f: impl Fn(&Plan, &[u32]) -> Vec<String> + Sync) -> Vec<String> {
    par_map_values(items, |(p, w)| match w {
        Err(e) => vec![format!("{}\n    generator: {e}", p.case)],
        Ok(w) => f(p, w).into_iter().map(|e| format!("{}\n    {e}", p.case)).collect::<Vec<_>>(),
    })
    .into_iter()
    .flatten()
    .collect()
}

/// Prints the first few problems in full and a one-line summary of each; the failure summary.
fn report(what: &str, total: usize, errs: &[String], started: Instant) {
    println!("{what} ({}): {total} checks, {} problems, {:.1} s", sweep::mode(), errs.len(), started.elapsed().as_secs_f64());
    sweep::print_errors(errs, 4);
    if !errs.is_empty() {
        let dir = std::env::temp_dir().join("polyfill-small-storage-failures");
        let _ = std::fs::create_dir_all(&dir);
        for (p, _) in plans() {
            if errs.iter().any(|e| e.starts_with(&p.case.slug())) {
                let _ = std::fs::write(dir.join(format!("{}.spvasm", p.case.slug())), &p.asm);
            }
        }
        println!("assembly of the failing cases: {}", dir.display());
    }
}

#[test]
fn generated_modules_validate() {
    let t = Instant::now();
    let errs: Vec<String> = plans().iter().filter_map(|(p, w)| w.as_ref().err().map(|e| format!("{}\n    {e}", p.case))).collect();
    let runs: usize = plans().iter().map(|(p, _)| p.runs.len()).sum();
    println!("{} cases, {runs} dispatches", plans().len());
    report("generated modules", plans().len(), &errs, t);
    assert!(errs.is_empty(), "{} generated modules fail assembly/validation", errs.len());
}

#[test]
fn slice_covers_all_pairs() {
    let s = case::slice();
    let f = case::full_sweep();
    for c in s.iter().chain(&f) {
        assert!(c.is_valid(), "{c}");
    }
    let missing = case::uncovered_pairs(&s);
    println!("default slice: {} cases; full sweep: {} cases; uncovered pairs: {}", s.len(), f.len(), missing.len());
    assert!(missing.is_empty(), "pairs never used by the slice: {missing:?}");
    // Every (kind, scalar, components, operation) that exists is in the slice.
    let key = |c: &Case| (c.kind, c.ty, c.op, c.shape, c.mapping);
    let want: std::collections::BTreeSet<_> = f.iter().map(key).collect();
    let have: std::collections::BTreeSet<_> = s.iter().map(key).collect();
    assert_eq!(want, have);
    let mut slugs = std::collections::HashSet::new();
    for c in &f {
        assert!(slugs.insert(c.slug()), "duplicate slug {c}");
    }
}

#[test]
fn native_matches_reference() {
    let t = Instant::now();
    let items: Vec<_> = plans().iter().collect();
    let errs = par_check(&items, run::check_native);
    report("native vs CPU reference", items.len(), &errs, t);
    assert!(errs.is_empty(), "{} native runs differ from the CPU reference (first shown above)", errs.len());
}

#[test]
fn layer_auto_passes_modules_through() {
    let t = Instant::now();
    let lc = run::layer_context(Force::NONE, false).unwrap_or_else(|e| panic!("{e}"));
    // Every 4th case: enough to see the pass-through, cheap.
    let items: Vec<_> = plans().iter().step_by(4).collect();
    let errs = par_check(&items, |p, w| {
        let mut problems = Vec::new();
        let runs: Vec<_> = p.runs.iter().collect();
        match run::execute(&lc.ctx, w, &runs) {
            Err(e) => problems.push(format!("execution through the layer failed: {e}")),
            Ok(out) => {
                for (r, got) in p.runs.iter().zip(&out) {
                    if let Some(m) = run::compare(r, got, &r.expected, "layer (auto) vs CPU reference") {
                        problems.push(m);
                    }
                }
            }
        }
        let dumped = lc.dump_dir.join(format!("{}.after.spv", run::module_hash(w)));
        if dumped.exists() {
            problems.push(format!("the layer rewrote the module although lavapipe has the feature ({})", dumped.display()));
        }
        problems
    });
    report("layer auto mode pass-through", items.len(), &errs, t);
    assert!(errs.is_empty(), "{} problems (first shown above)", errs.len());
}

#[test]
fn rewritten_modules_validate() {
    let t = Instant::now();
    let items: Vec<_> = plans().iter().collect();
    let errs = par_check(&items, |p, w| run::configs(p).into_iter().filter_map(|f| run::check_offline_rewrite(p, w, f).err()).collect());
    let total: usize = items.iter().map(|(p, _)| run::configs(p).len()).sum();
    report("offline rewrites (shader_rewrite::rewrite + spirv-val)", total, &errs, t);
    assert!(errs.is_empty(), "{} rewrites fail (first shown above)", errs.len());
}

#[test]
fn forced_emulation_matches_native() {
    let t = Instant::now();
    let items: Vec<_> = plans().iter().collect();
    let total: usize = items.iter().map(|(p, _)| run::configs(p).len()).sum();
    let errs = par_check(&items, |p, w| run::configs(p).into_iter().flat_map(|f| run::check_forced(p, w, f, false)).collect());
    let skipped: usize = items.iter().map(|(p, _)| p.runs.iter().filter(|r| r.needs_exact_range).count()).sum();
    println!("({skipped} dispatches with a descriptor range that is not a multiple of 4 are skipped where 8-bit storage buffer access is forced as well)");
    report("forced emulation vs native", total, &errs, t);
    assert!(errs.is_empty(), "{} forced-emulation problems (first shown above)", errs.len());
}

#[test]
fn validation_slice_is_clean() {
    let t = Instant::now();
    let every = env_usize("POLYFILL_SMALL_STORAGE_VALIDATION_EVERY", 12).max(1);
    let items: Vec<_> = plans().iter().step_by(every).collect();
    // Sequential: the validation contexts collect messages per context, so one case at a time
    // attributes every message to its case.
    let mut errs = Vec::new();
    let native = run::native_context(true).unwrap_or_else(|e| panic!("{e}"));
    for (p, w) in &items {
        let Ok(w) = w else { continue };
        let mut problems = Vec::new();
        native.clear_validation_messages();
        let runs: Vec<_> = p.runs.iter().collect();
        if let Err(e) = run::execute(native, w, &runs) {
            problems.push(format!("native (validation) execution failed: {e}"));
        }
        for e in run::relevant_validation_errors(native) {
            problems.push(format!("native: validation error: {e}"));
        }
        for f in [run::configs(p)[0], Force::ALL] {
            problems.extend(run::check_forced(p, w, f, true));
        }
        errs.extend(problems.into_iter().map(|e| format!("{}\n    {e}", p.case)));
    }
    report("validation slice (native and forced, VK_LAYER_KHRONOS_validation)", items.len(), &errs, t);
    assert!(errs.is_empty(), "{} problems (first shown above)", errs.len());
}

/// Control: the concurrent-store cases can see a lowering that is not atomic. A hand-written
/// "emulation" of `ssbo-u8-packed-concurrent-...` that updates each byte with a plain
/// read-modify-write of its word loses neighbouring bytes on lavapipe (the SIMD lanes of one
/// workgroup load, merge and store the same word), so the comparison fails.
#[test]
fn naive_subword_store_is_caught() {
    use polyfill_e2e::small_storage::case::*;
    let case = Case {
        kind: Kind::Ssbo,
        ty: VecTy { s: Scalar::U8, n: 1 },
        shape: Shape::Packed,
        op: Op::Concurrent,
        layout: Layout::Std,
        caps: Caps::StorageOnly,
        access: Access::Whole,
        version: Version::V13,
        rounding: F16Store::Exact,
        mapping: Mapping::Linear,
    };
    let plan = gen::plan(&case);
    let words = run::assemble(&plan).unwrap();
    let run0 = &plan.runs[0];
    let ctx = run::native_context(false).unwrap();
    let native = run::execute(ctx, &words, &[run0]).unwrap();
    assert_eq!(run::compare(run0, &native[0], &run0.expected, "native"), None);
    let naive = Module::compute(gen::CONC_LOCAL)
        .gid()
        .word_buffers(&["buf"])
        .globals(&format!("%cR = OpConstant %u32 {}\n%cff = OpConstant %u32 255\n%k1 = OpConstant %u32 {}\n%k2 = OpConstant %u32 {}", gen::CONC_ROUNDS, 0x9e37, 0x11))
        .main(
            "%g3 = OpLoad %v3u %gid
%e = OpCompositeExtract %u32 %g3 0
%e3 = OpUDiv %u32 %e %c3
%el = OpIAdd %u32 %e %e3
%wi = OpShiftRightLogical %u32 %el %c2
%bi = OpBitwiseAnd %u32 %el %c3
%sh = OpShiftLeftLogical %u32 %bi %c3
%mask = OpShiftLeftLogical %u32 %cff %sh
%nmask = OpNot %u32 %mask
%p = OpAccessChain %ps_u32 %buf %c0 %wi
%ek = OpIMul %u32 %e %k1
OpBranch %h
%h = OpLabel
%r = OpPhi %u32 %c0 %entry %rn %cont
%cond = OpULessThan %bool %r %cR
OpLoopMerge %m %cont None
OpBranchConditional %cond %body %m
%body = OpLabel
%old = OpLoad %u32 %p
%keep = OpBitwiseAnd %u32 %old %nmask
%rk = OpIMul %u32 %r %k2
%val = OpIAdd %u32 %ek %rk
%v8 = OpBitwiseAnd %u32 %val %cff
%vs = OpShiftLeftLogical %u32 %v8 %sh
%new = OpBitwiseOr %u32 %keep %vs
OpStore %p %new
OpBranch %cont
%cont = OpLabel
%rn = OpIAdd %u32 %r %c1
OpBranch %h
%m = OpLabel",
        )
        .text();
    let naive = polyfill_e2e::spirv_as(&naive, "vulkan1.1").unwrap();
    let got = run::execute(ctx, &naive, &[run0]).unwrap();
    let diff = run::compare(run0, &got[0], &run0.expected, "naive read-modify-write");
    println!("{}", diff.as_deref().unwrap_or("no difference"));
    assert!(diff.is_some(), "a non-atomic sub-word store went unnoticed: the concurrent cases have no teeth on this driver");
}
