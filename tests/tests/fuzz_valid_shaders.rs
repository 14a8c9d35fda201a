//! The valid-mutation fuzzer of shader-rewrite (`shader-rewrite/tests/common/valid_mutations.rs`)
//! on the modules the end-to-end tests generate, a wider set than the corpus: every bindless
//! shader (sampling, storage images, flows through phis/selects/variables/calls, handle tables in
//! physical memory, the Slang shapes, image atomics), every buffer-device-address shader (the
//! chain shapes and pointer flows included), a
//! slice of the raw-access-chain conformance matrix and of the 8/16-bit storage cases. Each
//! mutated module is rewritten under the fuzzers' option sets (default, core target with the
//! 8/16-bit features emulated, bindless, bindless + buffer addresses); every `Ok` output must
//! pass spirv-val with the seed's environment and layout flags. No Vulkan device is needed.
//!
//! `POLYFILL_FUZZ_VALID_ITERS` (default 300) mutated modules; `POLYFILL_FUZZ_VALID_SEED`.

#[path = "../../shader-rewrite/tests/common/valid_mutations.rs"]
mod valid_mutations;
#[path = "../../shader-rewrite/tests/common/fuzz_options.rs"]
mod fuzz_options;

use polyfill_e2e::bindless::{atomics, cases};
use polyfill_e2e::{bda, matrix, small_storage, tools};
use valid_mutations::{fuzz, Seed};

fn seed(name: impl Into<String>, words: Vec<u32>, env: &'static str, flags: &[&str]) -> Seed {
    Seed { name: name.into(), words, env, flags: flags.iter().map(|f| f.to_string()).collect() }
}

fn seeds() -> Vec<Seed> {
    let mut v = vec![];
    for (name, words, env) in cases::all_shaders().unwrap().into_iter().chain(atomics::all_shaders().unwrap()) {
        v.push(seed(name, words, env, &[]));
    }
    let mut psb = vec![
        ("copy_scale", bda::copy_scale()),
        ("linked_list", bda::linked_list()),
        ("struct_of_pointers", bda::struct_of_pointers()),
        ("chase_init", bda::chase_init()),
        ("chase", bda::chase()),
        ("chase_ring", bda::chase_ring()),
        ("reloaded_pointers", bda::reloaded_pointers()),
        ("atomics_and_ptr_chains", bda::atomics_and_ptr_chains()),
        ("raw_chain_on_pointer", bda::raw_chain_on_pointer()),
        ("graphics_vs", bda::graphics_vs()),
        ("graphics_fs", bda::graphics_fs(16)),
    ];
    psb.extend(bda::ELEMENTS.iter().map(|e| ("copy_elements", bda::copy_elements(e))));
    psb.extend(bda::chain_paths().into_iter().chain(bda::pointer_flows()).chain(bda::pointer_flows_spirv13()).chain(bda::small_chain_paths()));
    psb.extend([(false, 32), (true, 16)].map(|(row_major, bits)| ("matrix_chains", bda::matrix_chains(row_major, bits))));
    for (name, words) in psb {
        v.push(seed(format!("bda/{name}"), words, "vulkan1.2", &[]));
    }
    for (n, case) in matrix::cases::slice().iter().enumerate().filter(|(n, _)| n % 8 == 0) {
        let plan = matrix::gen::plan(case);
        let words = tools::spirv_as(&plan.asm, plan.target_env).unwrap();
        v.push(seed(format!("matrix/{n}"), words, plan.target_env, &[]));
    }
    for (n, case) in small_storage::case::slice().iter().enumerate().filter(|(n, _)| n % 6 == 0) {
        let plan = small_storage::gen::plan(case);
        let words = tools::spirv_as(&plan.asm, plan.target_env).unwrap();
        v.push(seed(format!("small_storage/{n}"), words, plan.target_env, &plan.val_flags));
    }
    v
}

#[test]
fn valid_mutations_of_generated_shaders_rewrite_to_valid_modules() {
    let iters: usize = std::env::var("POLYFILL_FUZZ_VALID_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    let rng_seed: u64 = std::env::var("POLYFILL_FUZZ_VALID_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0e2e_5eed_0000_0001);
    let seeds = seeds();
    let validate = |words: &[u32], s: &Seed| {
        let flags: Vec<&str> = s.flags.iter().map(String::as_str).collect();
        tools::spirv_val_with(words, s.env, &flags)
    };
    let report = fuzz(&seeds, &fuzz_options::option_sets(), iters, rng_seed, &validate);
    println!("{} seeds; {report}", seeds.len());
    assert!(report.pairs >= 100, "{} seed/option pairs", report.pairs);
    assert!(report.failures.is_empty(), "{} failures:\n{}", report.failures.len(), report.failures.join("\n"));
}
