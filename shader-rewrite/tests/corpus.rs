//! The 23 dxil-spirv raw-access modules (vkd3d-proton's producer) rewrite and validate, on a
//! target with every optional feature and on a Vulkan 1.0 core target.
mod common;
use shader_rewrite::{Options, Target};

fn corpus() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/dxil-spirv-raw-access");
    let dir = if dir.exists() { dir } else { std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/dxil-spirv-raw-access") };
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "spvasm"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    v.sort();
    assert_eq!(v.len(), 23, "expected the 23 dxil-spirv modules in {}", dir.display());
    v
}

#[test]
fn corpus_rewrites_and_validates_on_all_targets() {
    for target in [Target::all(), Target::lavapipe(), Target::core()] {
        let options = Options { target, ..Options::default() };
        for (name, text) in corpus() {
            let (_, stats) = std::panic::catch_unwind(|| common::rewrite_valid(&text, "vulkan1.1", &options))
                .unwrap_or_else(|_| panic!("{name} with {target:?}"));
            assert!(stats.raw_chains > 0, "{name}: nothing lowered");
            // Word-granular bounds only where 8/16-bit elements are checked without 8-bit storage
            // (checks of whole words are exact on the word view's length).
            // (checks of whole words are exact on the word view's length): structured-half1's
            // 2-byte elements.
            assert_eq!(stats.word_granular_bounds, !target.storage_buffer_8bit && name.contains("half1"), "{name}");
        }
    }
}

/// No pointer the lowering leaves behind is unread: a shadow into a view no access through it
/// uses, or the module's own chain to a buffer that only raw chains read (the kernels' inputs
/// declare no unused access chain; before this clean-up bab-double4's output held more than a
/// dozen).
#[test]
fn no_unread_access_chains() {
    for target in [Target::all(), Target::lavapipe(), Target { robust_storage_byte_exact: false, ..Target::all() }, Target::core()] {
        let options = Options { target, ..Options::default() };
        for (name, text) in corpus() {
            let (words, _) = common::rewrite_valid(&text, "vulkan1.1", &options);
            let dis = common::disassemble(&words);
            let chains: Vec<&str> = dis.lines().filter(|l| l.contains("= OpAccessChain")).filter_map(|l| l.split_whitespace().next()).collect();
            for c in chains {
                let reads = dis.lines().filter(|l| l.split_whitespace().skip(1).any(|w| w == c)).count();
                assert!(reads > 0, "{name}: {c} is never read ({target:?})\n{dis}");
            }
        }
    }
}

/// Issue 24's size target on the target the layer finds on lavapipe: no rewritten module of the
/// corpus is more than twice its input's words (the per-component vectors, the largest, leave
/// their checks to the driver there: `Target::robust_vector_components`).
#[test]
fn output_at_most_twice_the_input_on_lavapipe() {
    let options = Options { target: Target::lavapipe(), ..Options::default() };
    for (name, text) in corpus() {
        let input = common::assemble(&text, "vulkan1.1");
        let (words, _) = common::rewrite_valid(&text, "vulkan1.1", &options);
        assert!(words.len() <= 2 * input.len(), "{name}: {} -> {} words", input.len(), words.len());
    }
}

/// An f16 loaded from a word view of a module with Float16 is made from its bits (the word
/// bitcast to an f16vec2, its first component), not through f32 (UnpackHalf2x16 and
/// OpFConvert): exact for numbers either way, but NVIDIA's driver turns every NaN that goes
/// through f32 into 0x7fff (the conformance matrix on an H100, 2026-11-26), which a native load
/// never does.
#[test]
fn half_loads_keep_their_bits() {
    let (_, text) = corpus().into_iter().find(|(n, _)| n.starts_with("structured-half1")).expect("structured-half1");
    assert!(text.contains("OpCapability Float16"));
    for target in [Target::all(), Target::core()] {
        let options = Options { target, ..Options::default() };
        let (words, _) = common::rewrite_valid(&text, "vulkan1.1", &options);
        let dis = common::disassemble(&words);
        assert!(dis.contains("OpBitcast") && !dis.contains("UnpackHalf2x16"), "{target:?}:\n{dis}");
    }
}
