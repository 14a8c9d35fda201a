//! Debug info (NonSemantic.Shader.DebugInfo.100) added to a module's text, for the tests of
//! what the rewrite does with it (shader-rewrite/tests/debug_info.rs, and through the layer
//! tests/tests/dxil_corpus.rs, which includes this file by path).
#![allow(dead_code)]

/// The first id defined by a line of `text` holding `what` (`%id = what...`).
fn id_of(text: &str, what: &str) -> String {
    let line = text.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no {what}"));
    line.split_whitespace().next().unwrap().to_string()
}

/// `text` with debug info, and a DebugValue of the result of its first line holding `value`.
pub fn with_debug_info(text: &str, value: &str) -> String {
    let (uint, void) = (id_of(text, "= OpTypeInt 32 0"), id_of(text, "= OpTypeVoid"));
    let chain = id_of(text, value);
    let mut out = String::new();
    let (mut imported, mut string, mut globals, mut valued) = (false, false, false, false);
    for line in text.lines() {
        let l = line.trim_start();
        if !imported && l.starts_with("OpMemoryModel") {
            out += "OpExtension \"SPV_KHR_non_semantic_info\"\n%dbg = OpExtInstImport \"NonSemantic.Shader.DebugInfo.100\"\n";
            imported = true;
        }
        if !string && ["OpSource", "OpName", "OpMemberName", "OpDecorate", "OpMemberDecorate"].iter().any(|p| l.starts_with(p)) {
            out += "%file = OpString \"shader.hlsl\"\n";
            string = true;
        }
        if !globals && l.contains("OpFunction ") {
            out += &format!(
                "%d100 = OpConstant {uint} 100\n%d2 = OpConstant {uint} 2\n%d1 = OpConstant {uint} 1\n%d0 = OpConstant {uint} 0\n\
                 %dsrc = OpExtInst {void} %dbg DebugSource %file\n%dcu = OpExtInst {void} %dbg DebugCompilationUnit %d100 %d2 %dsrc %d2\n\
                 %dtb = OpExtInst {void} %dbg DebugTypeBasic %file %d100 %d2 %d0\n\
                 %dlv = OpExtInst {void} %dbg DebugLocalVariable %file %dtb %dsrc %d1 %d1 %dcu %d0\n%dexpr = OpExtInst {void} %dbg DebugExpression\n"
            );
            globals = true;
        }
        out += line;
        out += "\n";
        if !valued && l.starts_with(&format!("{chain} ")) {
            out += &format!("%dval = OpExtInst {void} %dbg DebugValue %dlv {chain} %dexpr\n");
            valued = true;
        }
    }
    assert!(imported && string && globals && valued, "debug info not placed:\n{out}");
    out
}
