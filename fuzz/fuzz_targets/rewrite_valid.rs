//! cargo-fuzz target: shape-changing mutations that keep a module valid
//! (shader-rewrite/tests/common/valid_mutations.rs), driven by the fuzzer's bytes, on the seed
//! modules in `fuzz/seeds/` (fuzz/seed.sh), rewritten under the four fuzz option sets (default;
//! core target with the 8/16-bit features emulated; bindless; bindless + buffer addresses).
//!
//! Input: 2 bytes choose the seed, 8 bytes seed the mutation's random choices, then up to 8
//! bytes each choose a mutation kind.
//!
//! Properties: no panic; no `Malformed` error for a well-formed module; and with
//! `FUZZ_SPIRV_VAL=/path/to/spirv-val` set, when the mutated input passes spirv-val (Vulkan
//! environment of its SPIR-V version), every changed `Ok` output passes too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shader_rewrite::module::Module;
use shader_rewrite::{rewrite, RewriteError};
use std::sync::OnceLock;

mod common;
#[path = "../../shader-rewrite/tests/common/fuzz_options.rs"]
mod fuzz_options;
#[path = "../../shader-rewrite/tests/common/valid_mutations.rs"]
mod valid_mutations;

use valid_mutations::{mutate, Rng, KINDS};

/// The seeds: every `.spv` in fuzz/seeds (sorted, so an input means the same seed each run).
fn seeds() -> &'static [Vec<u32>] {
    static SEEDS: OnceLock<Vec<Vec<u32>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (run fuzz/seed.sh)", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "spv"))
            .collect();
        files.sort();
        files.iter().map(|p| std::fs::read(p).unwrap().chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()).collect()
    })
}

/// Does `words` pass `spirv-val` in the Vulkan environment of its SPIR-V version?
fn spirv_val(tool: &std::ffi::OsStr, words: &[u32]) -> bool {
    let env = match (words[1] >> 8) & 0xff {
        0..=3 => "vulkan1.1",
        4 | 5 => "vulkan1.2",
        _ => "vulkan1.3",
    };
    common::spirv_val(tool, env, words)
}

fuzz_target!(|data: &[u8]| {
    let seeds = seeds();
    if data.len() < 11 || seeds.is_empty() {
        return;
    }
    let seed = &seeds[u16::from_le_bytes([data[0], data[1]]) as usize % seeds.len()];
    let mut rng = Rng(u64::from_le_bytes(data[2..10].try_into().unwrap()) | 1);
    let Ok(mut m) = Module::parse(seed) else { return };
    let mut changed = false;
    for &k in data[10..].iter().take(8) {
        changed |= mutate(&mut m, k as usize % KINDS.len(), &mut rng);
    }
    if !changed {
        return;
    }
    let input = m.assemble();
    let val = std::env::var_os("FUZZ_SPIRV_VAL");
    let mut input_valid = None;
    for options in fuzz_options::option_sets() {
        match rewrite(&input, &options) {
            Err(RewriteError::Malformed { word_offset, reason }) => panic!("a well-formed module called malformed at word {word_offset}: {reason}"),
            Err(RewriteError::Unsupported { .. }) => {}
            Ok(out) if out.words == input => {}
            Ok(out) => {
                if let Some(val) = &val {
                    if *input_valid.get_or_insert_with(|| spirv_val(val, &input)) {
                        assert!(spirv_val(val, &out.words), "the mutated input passes spirv-val, its rewrite does not");
                    }
                }
            }
        }
    }
});
