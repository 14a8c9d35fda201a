//! Mutation fuzzing that keeps modules valid (tests/common/valid_mutations.rs): every corpus
//! module (tests/corpus/*) gets 1 to 4 shape-changing mutations (access-chain forms, copies,
//! split blocks, one-entry phis, selects, identity calls, reordered instructions, functions and
//! globals, changed constants, repeated loads, swapped operands) and is rewritten under each fuzz option set (tests/common/fuzz_options.rs: default, core
//! target with every 8/16-bit feature emulated, bindless, bindless + buffer addresses) that
//! rewrites its seed into a valid module. Every `Ok` output must pass spirv-val (the Vulkan
//! environment of the module's SPIR-V version); a `Malformed` error on a well-formed mutation
//! and a panic are bugs too. `Unsupported` errors are counted by reason (shapes the lowering
//! refuses by name).
//!
//! `POLYFILL_FUZZ_VALID_ITERS` (default 300) sets the number of mutated modules;
//! `POLYFILL_FUZZ_VALID_SEED` the random seed. A failure leaves the input and output in the
//! temporary directory and names them.
mod common;
use common::valid_mutations::{fuzz, Seed};

/// Vulkan environment for a module's SPIR-V version.
fn env_of(words: &[u32]) -> &'static str {
    match (words[1] >> 8) & 0xff {
        0..=3 => "vulkan1.1",
        4 | 5 => "vulkan1.2",
        _ => "vulkan1.3",
    }
}

/// Every corpus module, assembled for the environment its header comment names (else its
/// directory's).
fn seeds() -> Vec<Seed> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut v = vec![];
    for (dir, env) in [("dxil-spirv-raw-access", "vulkan1.1"), ("small-storage", "vulkan1.1"), ("bindless", "vulkan1.3"), ("physical-storage-buffer", "vulkan1.3")] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir)).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "spvasm")).collect();
        files.sort();
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            let env = ["vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3"].into_iter().find(|e| text.lines().take(12).any(|l| l.starts_with(';') && l.contains(e))).unwrap_or(env);
            let words = common::assemble(&text, env);
            v.push(Seed { name: format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()), env: env_of(&words), words, flags: vec![] });
        }
    }
    v
}

#[test]
fn valid_mutations_rewrite_to_valid_modules() {
    let iters: usize = std::env::var("POLYFILL_FUZZ_VALID_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    let seed: u64 = std::env::var("POLYFILL_FUZZ_VALID_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_1234_abcd_0001);
    let report = fuzz(&seeds(), &common::fuzz_options::option_sets(), iters, seed, &|words, s| common::validate(words, s.env));
    println!("{report}");
    assert!(report.pairs >= 40, "{} seed/option pairs", report.pairs);
    assert!(report.failures.is_empty(), "{} failures:\n{}", report.failures.len(), report.failures.join("\n"));
}
