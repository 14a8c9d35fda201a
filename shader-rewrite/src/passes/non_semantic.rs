//! Non-semantic instructions (debug info: NonSemantic.Shader.DebugInfo.100 from glslang -gVS,
//! DXC's -fspv-debug=vulkan-with-source) that name an id a lowering took away: a raw access
//! chain, a physical pointer's access chain, a handle. Such an instruction "has no semantic
//! impact, and can be safely removed from the module" (SPV_KHR_non_semantic_info, Terms), and
//! left in place it names an undefined id: invalid SPIR-V, which a driver may choke on. So it
//! goes, with whatever non-semantic instruction then names it in turn. Every operand of a
//! non-semantic instruction after its set and number is an id (the extension's rule; literals
//! are OpConstants there), so the check needs no grammar.
use crate::module::{op, Inst, Module};

/// OpExtInstWithForwardRefsKHR (SPV_KHR_relaxed_extended_instruction): a non-semantic
/// instruction that may name ids defined after it.
pub(crate) const EXT_INST_WITH_FORWARD_REFS: u32 = 4433;

/// Removes the non-semantic instructions naming undefined ids; returns how many went. A module
/// importing no non-semantic set costs a look at its imports.
pub(crate) fn drop_dangling(m: &mut Module) -> usize {
    let sets: Vec<u32> = m.ext_inst_imports.iter().filter(|i| is_non_semantic(&i.ops)).map(|i| i.id).collect();
    if sets.is_empty() {
        return 0;
    }
    let mut defined = vec![false; m.header[3] as usize];
    let mut define = |id: u32| {
        if let Some(d) = defined.get_mut(id as usize) {
            *d = true;
        }
    };
    let functions = m.functions.iter().flat_map(|f| std::iter::once(&f.def).chain(f.params.iter()));
    let bodies = m.functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|b| b.insts.iter());
    for i in m.ext_inst_imports.iter().chain(m.debug.iter()).chain(m.globals.iter()).chain(functions).chain(bodies) {
        define(i.id);
    }
    for b in m.functions.iter().flat_map(|f| f.blocks.iter()) {
        define(b.label);
    }
    let mut dropped = 0;
    // Rounds: a dropped instruction's own id is undefined then (one round in practice).
    loop {
        let dangling = |i: &Inst| {
            matches!(i.op, op::EXT_INST | EXT_INST_WITH_FORWARD_REFS)
                && i.ops.first().is_some_and(|s| sets.contains(s))
                && i.ops.iter().skip(2).any(|&w| !defined.get(w as usize).copied().unwrap_or(false))
        };
        let mut gone: Vec<u32> = vec![];
        let mut sweep = |insts: &mut Vec<Inst>| {
            insts.retain(|i| {
                let keep = !dangling(i);
                if !keep {
                    gone.push(i.id);
                }
                keep
            })
        };
        sweep(&mut m.globals);
        for b in m.functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
            sweep(&mut b.insts);
        }
        if gone.is_empty() {
            return dropped;
        }
        dropped += gone.len();
        for id in gone {
            if let Some(d) = defined.get_mut(id as usize) {
                *d = false;
            }
        }
    }
}

/// Is an OpExtInstImport's name (its operands) a non-semantic set's? "NonSemantic." first
/// (SPV_KHR_non_semantic_info, OpExtInstImport).
fn is_non_semantic(name: &[u32]) -> bool {
    let prefix = b"NonSemantic.";
    name.iter().flat_map(|w| w.to_le_bytes()).take(prefix.len()).eq(prefix.iter().copied())
}
