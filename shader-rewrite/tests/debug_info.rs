//! Debug info (NonSemantic.Shader.DebugInfo.100, as glslang -gVS and DXC emit it) in modules
//! the rewrite lowers: a non-semantic instruction naming what a lowering took away (a raw
//! access chain) is dropped and counted, the rest of the debug info stays, and the output
//! validates. Generated over the dxil-spirv corpus: each module gets a compilation unit, a
//! local variable and a DebugValue of its first raw chain.
mod common;
use common::debug_info::with_debug_info;
use shader_rewrite::{rewrite, Options, Target};

#[test]
fn debug_values_of_lowered_raw_chains_go_and_the_rest_stays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/dxil-spirv-raw-access");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "spvasm")).collect();
    paths.sort();
    assert_eq!(paths.len(), 23);
    let mut dropped = 0;
    for path in paths {
        let text = with_debug_info(&std::fs::read_to_string(&path).unwrap(), "= OpRawAccessChainNV");
        let input = common::assemble(&text, "vulkan1.1");
        common::validate(&input, "vulkan1.1").unwrap_or_else(|e| panic!("{}: input: {e}", path.display()));
        for target in [Target::all(), Target::lavapipe(), Target::core()] {
            let out = rewrite(&input, &Options { target, ..Options::default() }).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let dis = common::disassemble(&out.words);
            common::validate(&out.words, "vulkan1.1").unwrap_or_else(|e| panic!("{} ({target:?}): {e}\n{dis}", path.display()));
            // Dropped where the chain's id is gone; kept where the lowering still defines it
            // (an access chain of the same id).
            assert_eq!(out.stats.non_semantic_dropped, !dis.contains("DebugValue") as u32, "{}: {dis}", path.display());
            assert!(dis.contains("DebugLocalVariable") && dis.contains("DebugCompilationUnit"), "{}: {dis}", path.display());
            dropped += out.stats.non_semantic_dropped;
        }
    }
    // (Most of them: before this pass every such output named an undefined id.)
    assert!(dropped >= 23, "{dropped}");
}

/// A module with debug info that names only what stays keeps all of it (the physical-pointer
/// lowering makes an address for a pointer a DebugValue names: tests/physical_storage_buffer.rs).
#[test]
fn debug_info_naming_what_stays_is_kept() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/dxil-spirv-raw-access/structured-float4.raw-access-chains.noglsl.ssbo.comp.spvasm");
    // The DebugValue names the first OpLoad's result: a value the lowering keeps.
    let text = with_debug_info(&std::fs::read_to_string(&path).unwrap(), "= OpLoad ");
    let out = rewrite(&common::assemble(&text, "vulkan1.1"), &Options::default()).unwrap();
    common::validate(&out.words, "vulkan1.1").unwrap();
    assert_eq!(out.stats.non_semantic_dropped, 0);
    assert!(common::disassemble(&out.words).contains("DebugValue"));
}
