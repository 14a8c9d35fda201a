//! Debug info (NonSemantic.Shader.DebugInfo.100, as glslang -gVS and DXC emit it) in modules
//! the rewrite lowers: a non-semantic instruction naming what a lowering took away (a raw
//! access chain) is dropped and counted, the rest of the debug info stays, and the output
//! validates. Generated over the dxil-spirv corpus: each module gets a compilation unit, a
//! local variable and a DebugValue of its first raw chain.
mod common;
use common::debug_info::with_debug_info;
use shader_rewrite::{rewrite, Options, SmallStorage, Target};

/// `target`, with the 8/16-bit storage it lacks emulated (as the layer and the CLI do).
fn emulating(target: Target) -> Options {
    Options { target, emulate_storage: SmallStorage::missing_from(&target), ..Options::default() }
}

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

/// A lowering that declares a variable again (16-bit I/O widened: the new input is declared
/// after the old one's place) keeps the DebugGlobalVariable naming it, moved after the new
/// declaration: left where it was it would name an id defined after it, which only
/// OpExtInstWithForwardRefsKHR may (found with glslang -gVS output of a 16-bit fragment shader).
#[test]
fn debug_info_naming_a_redeclared_variable_moves_after_it() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/small-storage/io16-fragment.spvasm");
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.replacen("OpMemoryModel", "OpExtension \"SPV_KHR_non_semantic_info\"\n%dbg = OpExtInstImport \"NonSemantic.Shader.DebugInfo.100\"\nOpMemoryModel", 1);
    let text = text.replacen("OpDecorate %vin Location 0", "%file = OpString \"shader.frag\"\n%vname = OpString \"iin\"\nOpDecorate %vin Location 0", 1);
    let globals = "%d100 = OpConstant %u32d 100\n%d2 = OpConstant %u32d 2\n%d1 = OpConstant %u32d 1\n%d0 = OpConstant %u32d 0\n\
        %dsrc = OpExtInst %void %dbg DebugSource %file\n%dcu = OpExtInst %void %dbg DebugCompilationUnit %d100 %d2 %dsrc %d2\n\
        %dtb = OpExtInst %void %dbg DebugTypeBasic %vname %d100 %d2 %d0\n\
        %dgv = OpExtInst %void %dbg DebugGlobalVariable %vname %dtb %dsrc %d1 %d1 %dcu %vname %iin %d0\n";
    // Right after the variable, as glslang places it (the int16 input: no pointer to its
    // widened type is declared yet, so the new declaration goes after the new pointer type).
    let text = text.replacen("%iin = OpVariable %piin Input\n", &format!("%iin = OpVariable %piin Input\n%u32d = OpTypeInt 32 0\n{globals}"), 1);
    let input = common::assemble(&text, "vulkan1.1");
    common::validate(&input, "vulkan1.1").unwrap();
    for target in [Target::lavapipe(), Target::core()] {
        let out = rewrite(&input, &emulating(target)).unwrap();
        let dis = common::disassemble(&out.words);
        common::validate(&out.words, "vulkan1.1").unwrap_or_else(|e| panic!("{target:?}: {e}\n{dis}"));
        assert_eq!(out.stats.non_semantic_dropped, 0, "{dis}");
        let named = dis.find("DebugGlobalVariable").unwrap();
        // Its operands: name, type, source, line, column, scope, linkage name, variable, flags.
        let var = dis[named..].lines().next().unwrap().split_whitespace().rev().nth(1).unwrap();
        let var = dis.find(&format!("{var} = OpVariable")).unwrap();
        assert!(var < named, "{dis}");
    }
}

/// The OpNames a lowering adds (the 8/16-bit lowering names its views after the buffer) go
/// before OpModuleProcessed, which ends the debug section (SPIR-V spec 2.4: glslang -g writes
/// it after the names).
#[test]
fn added_names_go_before_module_processed() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/small-storage/ssbo-f16-no-arith.spvasm");
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.replacen("OpDecorate %gid BuiltIn", "OpName %in \"in\"\nOpModuleProcessed \"client vulkan100\"\nOpDecorate %gid BuiltIn", 1);
    let input = common::assemble(&text, "vulkan1.1");
    let out = rewrite(&input, &emulating(Target::core())).unwrap();
    let dis = common::disassemble(&out.words);
    common::validate(&out.words, "vulkan1.1").unwrap_or_else(|e| panic!("{e}\n{dis}"));
    let (name, processed) = (dis.find("\"in.u32\"").unwrap_or_else(|| panic!("the view is named: {dis}")), dis.find("OpModuleProcessed").unwrap());
    assert!(name < processed, "{dis}");
}
