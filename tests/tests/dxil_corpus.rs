//! The 23 real dxil-spirv (vkd3d-proton) raw-access-chain modules in
//! `tests/corpus/dxil-spirv-raw-access/` (MIT, copied from `shared/corpus/`): each must assemble,
//! pass spirv-val, rewrite, pass spirv-val after rewriting, and execute through the layer on
//! lavapipe with the results a CPU interpreter over the reference model predicts — with whole
//! buffers and with ranges cut inside elements (length not a multiple of 4, also at a descriptor
//! offset), where the per-element / per-component robustness checks decide what is written.
//!
//! `POLYFILL_MATRIX_VALIDATION=1` runs with Khronos validation below the layer. The corpus is
//! found in the repository; `corpus_copy_matches_shared` checks it against
//! `$POLYFILL_SHARED_DIR` or `<repo>/../shared` when present.

use polyfill_e2e::matrix::corpus::{self, Config};
use polyfill_e2e::tools;

fn name(p: &std::path::Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// The in-repo copy is byte-identical to `shared/corpus/` where that is present.
#[test]
fn corpus_copy_matches_shared() {
    let Some(shared) = corpus::shared_dir() else {
        println!("shared/ not found (set POLYFILL_SHARED_DIR): skipped");
        return;
    };
    let src = shared.join("corpus").join("dxil-spirv-raw-access");
    if !src.is_dir() {
        println!("{} not found: skipped", src.display());
        return;
    }
    let mut n = 0;
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let ours = corpus::corpus_dir().join(p.file_name().unwrap());
        let a = std::fs::read(&p).unwrap();
        let b = std::fs::read(&ours)
            .unwrap_or_else(|e| panic!("{}: {e} (copy it from {})", ours.display(), p.display()));
        assert_eq!(a, b, "{} differs from {}", ours.display(), p.display());
        n += 1;
    }
    assert_eq!(
        n,
        corpus::MODULES + 2,
        "23 modules + LICENSE.MIT + README.md"
    );
}

#[test]
fn corpus_assembles_validates_and_rewrites() {
    let mods = corpus::modules().unwrap();
    assert_eq!(
        mods.len(),
        corpus::MODULES,
        "modules in {}",
        corpus::corpus_dir().display()
    );
    let mut failures = Vec::new();
    let mut chains = 0;
    for (p, text) in &mods {
        chains += text.matches("OpRawAccessChainNV").count();
        let words = match tools::spirv_as(text, "vulkan1.1")
            .and_then(|w| tools::spirv_val(&w, "vulkan1.1").map(|_| w))
        {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{}: input: {e}", name(p)));
                continue;
            }
        };
        match shader_rewrite::rewrite(&words, &shader_rewrite::Options::default()) {
            Err(e) => failures.push(format!("{}: rewrite failed: {e}", name(p))),
            Ok(r) => {
                if tools::has_capability(&r.words, tools::CAP_RAW_ACCESS_CHAINS_NV) {
                    failures.push(format!(
                        "{}: rewritten module still declares RawAccessChainsNV",
                        name(p)
                    ));
                } else if let Err(e) = tools::spirv_val(&r.words, "vulkan1.1") {
                    failures.push(format!("{}: rewritten module invalid: {e}", name(p)));
                }
            }
        }
    }
    println!(
        "{} modules ({chains} raw access chains): {} passed",
        mods.len(),
        mods.len() - failures.len()
    );
    assert_no_failures(&failures, mods.len(), "corpus modules");
}

#[test]
fn corpus_executes_through_layer() {
    let mods = corpus::modules().unwrap();
    assert_eq!(mods.len(), corpus::MODULES);
    // POLYFILL_MATRIX_VALIDATION=1 adds Khronos validation below the layer.
    let ctx = polyfill_e2e::Context::new(&polyfill_e2e::matrix::run::context_options(false))
        .unwrap_or_else(|e| panic!("cannot create the Vulkan context with the layer: {e}"));
    let mut runs = 0;
    let mut failures = Vec::new();
    for (mi, (p, text)) in mods.iter().enumerate() {
        let words =
            tools::spirv_as(text, "vulkan1.1").unwrap_or_else(|e| panic!("{}: {e}", name(p)));
        for (ci, &config) in Config::ALL.iter().enumerate() {
            runs += 1;
            let plan = match corpus::plan(text, config, 0xC0_0000 + (mi * 16 + ci) as u64) {
                Ok(pl) => pl,
                Err(e) => {
                    failures.push(format!("{} [{config:?}]: model: {e}", name(p)));
                    continue;
                }
            };
            let desc = format!(
                "{} [{config:?}: {} invocations, {} component accesses in bounds, {} dropped by robustness, {} overlapped components]",
                name(p),
                plan.invocations,
                plan.stats.0,
                plan.stats.1,
                plan.overlapped.len()
            );
            ctx.clear_validation_messages();
            match ctx.run_compute(&words, &plan.job()) {
                Err(e) => failures.push(format!("{desc}: execution failed: {e}")),
                Ok(got) => {
                    let mut problems = plan.compare(&got);
                    if ctx.options().validation {
                        // Six corpus modules declare DenormPreserve 16/64 (float controls), which
                        // lavapipe does not offer (shaderDenormPreserveFloat16/64 = false): a
                        // mismatch between the input and the driver that the layer passes on.
                        problems.extend(
                            ctx.validation_errors()
                                .into_iter()
                                .filter(|e| !e.contains("DenormPreserve"))
                                .map(|e| format!("validation error: {e}")),
                        );
                    }
                    if problems.is_empty() {
                        println!("ok   {desc}");
                    } else {
                        failures.push(format!("{desc}:\n    {}", problems.join("\n    ")));
                    }
                }
            }
        }
    }
    println!(
        "dxil-spirv corpus: {runs} runs ({} modules × {} configurations), {} passed",
        mods.len(),
        Config::ALL.len(),
        runs - failures.len()
    );
    assert_no_failures(&failures, runs, "corpus runs");
}

#[path = "../../shader-rewrite/tests/common/debug_info.rs"]
mod debug_info;

/// The corpus with debug info (NonSemantic.Shader.DebugInfo.100, a DebugValue of each
/// module's first raw chain, which the lowering takes away): the layer drops what names the
/// chain, and the module runs on lavapipe with the results the model predicts for the module
/// without debug info. (Before that, every rewrite named an undefined id.)
#[test]
fn corpus_with_debug_info_executes_through_layer() {
    let mods = corpus::modules().unwrap();
    let ctx = polyfill_e2e::Context::new(&polyfill_e2e::matrix::run::context_options(false))
        .unwrap_or_else(|e| panic!("cannot create the Vulkan context with the layer: {e}"));
    let config = Config::ALL[0];
    let mut failures = Vec::new();
    for (mi, (p, text)) in mods.iter().enumerate() {
        let debug = debug_info::with_debug_info(text, "= OpRawAccessChainNV");
        let words = tools::spirv_as(&debug, "vulkan1.1").unwrap_or_else(|e| panic!("{}: {e}", name(p)));
        let plan = corpus::plan(text, config, 0xD0_0000 + mi as u64).unwrap_or_else(|e| panic!("{}: model: {e}", name(p)));
        match ctx.run_compute(&words, &plan.job()) {
            Err(e) => failures.push(format!("{} [{config:?}]: execution failed: {e}", name(p))),
            Ok(got) => {
                let problems = plan.compare(&got);
                if !problems.is_empty() {
                    failures.push(format!("{} [{config:?}]:\n    {}", name(p), problems.join("\n    ")));
                }
            }
        }
    }
    assert_no_failures(&failures, mods.len(), "corpus runs with debug info");
}

/// Prints every failure; fails the test where there is any.
fn assert_no_failures(failures: &[String], total: usize, what: &str) {
    for f in failures {
        println!("FAIL {f}\n");
    }
    assert!(failures.is_empty(), "{} of {total} {what} failed (see above)", failures.len());
}
