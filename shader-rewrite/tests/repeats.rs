//! Issue 24's "shared address arithmetic … no duplicates": every module of the corpora (the
//! benches' corpora and option profiles, `benches/common`), rewritten, computes no pure value
//! again where an equal computation dominates it, beyond the repeats its input already had
//! (dxil-spirv's own; the lowering passes the application's code through as it is). A repeat
//! is an instruction of the opcodes below with the same result type and operands as one in a
//! block that dominates its own (earlier in the same block, or in a dominating block).
//!
//! Found with it: the emitter's pure-instruction cache evicting live entries (the vector
//! modules' edge functions took a view's length again: issue 24's "one `OpArrayLength` per
//! descriptor and block"), and the bindless lowering converting, masking and clamping a handle
//! once per use in a block.
#[path = "../benches/common/mod.rs"]
mod corpus;

use shader_rewrite::module::{op, string_is, Function, Module};
use shader_rewrite::{Options, Target};
use std::collections::HashMap;

/// Opcodes without side effects or memory access the lowerings emit (GLSL.std.450 extended
/// instructions among them).
const PURE: &[u32] = &[
    op::I_ADD,
    op::I_SUB,
    op::I_MUL,
    op::SHIFT_RIGHT_LOGICAL,
    op::SHIFT_LEFT_LOGICAL,
    op::BITWISE_AND,
    op::BITWISE_OR,
    op::U_LESS_THAN,
    op::U_GREATER_THAN_EQUAL,
    op::I_EQUAL,
    op::I_NOT_EQUAL,
    op::LOGICAL_AND,
    op::SELECT,
    op::ACCESS_CHAIN,
    op::PTR_ACCESS_CHAIN,
    op::ARRAY_LENGTH,
    op::COMPOSITE_EXTRACT,
    op::COMPOSITE_CONSTRUCT,
    op::VECTOR_SHUFFLE,
    op::BITCAST,
    op::U_CONVERT,
    op::I_ADD_CARRY,
    op::EXT_INST,
];

/// Successor block indices of each block of `f` (its terminator's label operands).
fn successors(f: &Function) -> Vec<Vec<usize>> {
    let index: HashMap<u32, usize> = f.blocks.iter().enumerate().map(|(k, b)| (b.label, k)).collect();
    f.blocks
        .iter()
        .map(|b| {
            let Some(t) = b.insts.last() else { return vec![] };
            let labels: Vec<u32> = match t.op {
                op::BRANCH => vec![t.ops[0]],
                op::BRANCH_CONDITIONAL => vec![t.ops[1], t.ops[2]],
                // OpSwitch selector default (literal label)*: the labels are every other word from 1.
                251 => t.ops.iter().skip(1).step_by(2).copied().collect(),
                _ => vec![],
            };
            labels.iter().filter_map(|l| index.get(l).copied()).collect()
        })
        .collect()
}

/// dom[b][a]: block a dominates block b (iterative data flow over the blocks in order; the
/// first block is the entry).
fn dominators(f: &Function) -> Vec<Vec<bool>> {
    let n = f.blocks.len();
    let succ = successors(f);
    let mut preds = vec![vec![]; n];
    for (a, ss) in succ.iter().enumerate() {
        for &s in ss {
            preds[s].push(a);
        }
    }
    let mut dom = vec![vec![true; n]; n];
    if n > 0 {
        dom[0] = (0..n).map(|k| k == 0).collect();
    }
    let mut changed = true;
    while changed {
        changed = false;
        for b in 1..n {
            let mut d = vec![!preds[b].is_empty(); n];
            for &p in &preds[b] {
                for k in 0..n {
                    d[k] &= dom[p][k];
                }
            }
            d[b] = true;
            if d != dom[b] {
                dom[b] = d;
                changed = true;
            }
        }
    }
    dom
}

/// Pure instructions of `words` repeating an equal one that dominates them.
fn repeats(words: &[u32]) -> Vec<String> {
    let m = Module::parse(words).expect("parses");
    let glsl: Vec<u32> = m.ext_inst_imports.iter().filter(|i| string_is(&i.ops, "GLSL.std.450")).map(|i| i.id).collect();
    let mut out = vec![];
    for f in &m.functions {
        let dom = dominators(f);
        let mut defs: HashMap<(u32, u32, &[u32]), Vec<usize>> = HashMap::new();
        for (k, b) in f.blocks.iter().enumerate() {
            for i in &b.insts {
                if !PURE.contains(&i.op) || (i.op == op::EXT_INST && !glsl.contains(&i.ops[0])) {
                    continue;
                }
                let at = defs.entry((i.op, i.ty, i.ops.as_slice())).or_default();
                if at.iter().any(|&a| dom[k][a]) {
                    out.push(format!("%{} = op {} %{} {:?} in block %{}", i.id, i.op, i.ty, i.ops.as_slice(), b.label));
                }
                at.push(k);
            }
        }
    }
    out
}

#[test]
fn no_pure_value_computed_again_where_it_dominates() {
    let mut errs = vec![];
    let modules = corpus::corpus();
    assert!(modules.len() >= 40, "the corpora: {} modules", modules.len());
    // The benches' two profiles, and the device profile on a target with every feature, with and
    // without byte-exact robustness (the lowering's own checks of vectors and their edge paths).
    let [(_, device), core] = corpus::profiles();
    let all = Options { target: Target::all(), ..device };
    let not_byte_exact = Options { target: Target { robust_storage_byte_exact: false, ..Target::all() }, ..device };
    for (profile, options) in [("device", device), core, ("all", all), ("all, not byte-exact", not_byte_exact)] {
        for m in &modules {
            let Ok(r) = shader_rewrite::rewrite(&m.words, &options) else { continue }; // refused: corpus.rs and the benches say which
            let (before, after) = (repeats(&m.words).len(), repeats(&r.words));
            if after.len() > before {
                errs.push(format!("{} ({profile}): {} repeats, {before} in the input; first: {}", m.name, after.len(), after[0]));
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

/// The checker itself: a repeated `OpIAdd` in a block its first one dominates is found, one in
/// a sibling branch is not.
#[test]
fn repeats_are_found_only_where_dominated() {
    let text = r#"
OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 1 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%bool = OpTypeBool
%c1 = OpConstant %u32 1
%c2 = OpConstant %u32 2
%t = OpConstantTrue %bool
%main = OpFunction %void None %fn
%entry = OpLabel
%a = OpIAdd %u32 %c1 %c2
OpSelectionMerge %merge None
OpBranchConditional %t %then %else
%then = OpLabel
%b = OpIMul %u32 %c1 %c2
%a2 = OpIAdd %u32 %c1 %c2
OpBranch %merge
%else = OpLabel
%b2 = OpIMul %u32 %c1 %c2
OpBranch %merge
%merge = OpLabel
OpReturn
OpFunctionEnd
"#;
    let found = repeats(&corpus::assemble(text, "vulkan1.1"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("op 128"), "{found:?}");
}
