//! Bounded mutation fuzzing of the rewriter (runs in the default test command; the open-ended
//! variant is the cargo-fuzz target in fuzz/). Seeds: the dxil-spirv corpus. Mutations: bit
//! flips, word overwrites with interesting values, truncation, word insertion/deletion,
//! instruction-header corruption. Seeds: the dxil-spirv corpus, the 8/16-bit storage modules
//! (tests/corpus/small-storage), the SPV_NV_bindless_texture modules (tests/corpus/bindless,
//! lowered under the third and fourth option sets) and the SPV_KHR_physical_storage_buffer ones
//! (tests/corpus/physical-storage-buffer, lowered under the fourth: bindless + buffer addresses).
//! Properties: no panic (and no hang: every call is bounded by the input size), and when a
//! mutated input is valid SPIR-V and the rewrite succeeds, the output is valid too (checked on a
//! sample, since spirv-val is a process per module). Mutations that keep modules valid are
//! tests/fuzz_valid.rs.
//! `POLYFILL_FUZZ_ITERS` sets the number of mutations (default 1 000 000, about 10 s: 20 000 missed
//! a hang at 715 568);
//! `POLYFILL_FUZZ_VALIDATE_EVERY=N` runs spirv-val on every N-th one (default 50; 1: all);
//! `POLYFILL_FUZZ_TRACE=FILE` writes each input to FILE before rewriting it (to catch one that
//! aborts the process).
mod common;
use shader_rewrite::rewrite;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn seeds() -> Vec<Vec<u32>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut v: Vec<_> = ["dxil-spirv-raw-access", "small-storage", "bindless", "physical-storage-buffer"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "spvasm"))
        .collect();
    v.sort();
    v.iter().map(|p| common::assemble(&std::fs::read_to_string(p).unwrap(), "vulkan1.1")).collect()
}

fn mutate(rng: &mut Rng, words: &mut Vec<u32>) {
    const INTERESTING: [u32; 10] = [0, 1, 2, 3, 4, 0xffff_ffff, 0x8000_0000, 5398, 0x0004_0000, 0x0001_0000];
    for _ in 0..1 + rng.below(4) {
        if words.is_empty() {
            return;
        }
        let at = rng.below(words.len());
        match rng.below(7) {
            0 => words[at] ^= 1 << rng.below(32),
            1 => words[at] = INTERESTING[rng.below(INTERESTING.len())],
            2 => words.truncate(at),
            3 => words.insert(at, rng.next() as u32),
            4 => {
                words.remove(at);
            }
            5 => words[at] = (words[at] & 0xffff_0000) | (rng.below(400) as u32), // opcode swap
            _ => words[at] = words[rng.below(words.len())], // id shuffle
        }
    }
}

#[test]
fn mutated_modules_never_panic_and_valid_inputs_give_valid_outputs() {
    let iters: usize = std::env::var("POLYFILL_FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let every: usize = std::env::var("POLYFILL_FUZZ_VALIDATE_EVERY").ok().and_then(|s| s.parse().ok()).unwrap_or(50).max(1);
    let seeds = seeds();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let options = common::fuzz_options::option_sets();
    let (mut ok, mut err, mut checked) = (0, 0, 0);
    // POLYFILL_FUZZ_TRACE=FILE: write each input there before rewriting it.
    let trace = std::env::var_os("POLYFILL_FUZZ_TRACE");
    for i in 0..iters {
        let mut words = seeds[i % seeds.len()].clone();
        mutate(&mut rng, &mut words);
        let o = &options[i % options.len()];
        if let Some(path) = &trace {
            // Aborts (stack overflow, out of memory) cannot be caught: keep the input at hand.
            std::fs::write(path, words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        }
        let result = std::panic::catch_unwind(|| rewrite(&words, o));
        let result = result.unwrap_or_else(|_| {
            let path = std::env::temp_dir().join(format!("polyfill-fuzz-crash-{i}.spv"));
            std::fs::write(&path, words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
            panic!("rewrite panicked on mutation {i}; input saved to {}", path.display())
        });
        match result {
            Ok(out) => {
                ok += 1;
                // Sample: a mutated input that still validates must give a valid output.
                if i % every == 0 && out.words != words && common::validate(&words, "vulkan1.1").is_ok() {
                    checked += 1;
                    if let Err(e) = common::validate(&out.words, "vulkan1.1") {
                        let path = std::env::temp_dir().join(format!("polyfill-fuzz-invalid-{i}.spv"));
                        std::fs::write(&path, words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
                        panic!("valid input {} gave an invalid output: {e}", path.display());
                    }
                }
            }
            Err(_) => err += 1,
        }
    }
    println!("{iters} mutations: {ok} rewritten, {err} rejected with an error, {checked} valid inputs re-validated");
}
