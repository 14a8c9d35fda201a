//! Non-semantic instructions (debug info: NonSemantic.Shader.DebugInfo.100 from glslang -gVS,
//! DXC's -fspv-debug=vulkan-with-source) that name an id a lowering took away: a raw access
//! chain, a physical pointer's access chain, a handle. Such an instruction "has no semantic
//! impact, and can be safely removed from the module" (SPV_KHR_non_semantic_info, Terms), and
//! left in place it names an undefined id: invalid SPIR-V, which a driver may choke on. So it
//! goes, with whatever non-semantic instruction then names it in turn. Every operand of a
//! non-semantic instruction after its set and number is an id (the extension's rule; literals
//! are OpConstants there), so the check needs no grammar.
//!
//! A lowering may also move a definition past the debug info naming it (the 16-bit I/O
//! lowering declares an interface variable again, at the end of the globals, after the
//! DebugGlobalVariable naming it). Without OpExtInstWithForwardRefsKHR a non-semantic
//! instruction may not name an id defined after it (SPIR-V spec 2.4: only a few named opcodes
//! refer forward), so [`place_after_operands`] moves such an instruction down to where what it
//! names is defined, in its own section or block, and drops it where that lies in a later block
//! (a block does not dominate the blocks before it, SPIR-V spec 2.16.1) or inside a function
//! while it is global.
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

/// Moves each non-semantic instruction (not OpExtInstWithForwardRefsKHR) naming an id defined
/// after it in its own list (the globals, or its block) to just after that definition (in a
/// block, not among its leading OpPhi / OpVariable instructions), and drops it where it names
/// an id defined only in a later list (see the module comment); returns how many it dropped.
/// Call after [`drop_dangling`]: every named id is defined somewhere.
pub(crate) fn place_after_operands(m: &mut Module) -> usize {
    let sets: Vec<u32> = m.ext_inst_imports.iter().filter(|i| is_non_semantic(&i.ops)).map(|i| i.id).collect();
    if sets.is_empty() {
        return 0;
    }
    const NONE: u32 = u32::MAX;
    let bound = m.header[3] as usize;
    // seen: defined in a list already placed (or where every list may name it); at: the index
    // in the current list of a definition not placed yet.
    let mut seen = vec![false; bound];
    let mut at = vec![NONE; bound];
    let everywhere = m.ext_inst_imports.iter().chain(m.debug.iter()).map(|i| i.id);
    let function_ids = m.functions.iter().flat_map(|f| std::iter::once(f.def.id).chain(f.params.iter().map(|p| p.id)).chain(f.blocks.iter().map(|b| b.label)));
    for id in everywhere.chain(function_ids) {
        if let Some(s) = seen.get_mut(id as usize) {
            *s = true;
        }
    }
    let moves = |i: &Inst| i.op == op::EXT_INST && i.ops.first().is_some_and(|s| sets.contains(s));
    let mut dropped = 0;
    let mut place = |insts: &mut Vec<Inst>, block: bool| {
        for (k, i) in insts.iter().enumerate() {
            if let Some(a) = at.get_mut(i.id as usize).filter(|_| i.id != 0) {
                *a = k as u32;
            }
        }
        // Ready (true), waiting (None) or to drop (false): what its operands' definitions say.
        let status = |i: &Inst, seen: &[bool], at: &[u32]| -> Option<bool> {
            let mut ready = Some(true);
            for &w in i.ops.iter().skip(2) {
                let w = w as usize;
                if seen.get(w).copied().unwrap_or(false) {
                    continue;
                }
                if at.get(w).is_some_and(|&a| a != NONE) {
                    ready = None;
                } else {
                    return Some(false);
                }
            }
            ready
        };
        if !insts.iter().any(|i| moves(i) && status(i, &seen, &at) != Some(true)) {
            for i in insts.iter() {
                if let Some(s) = seen.get_mut(i.id as usize).filter(|_| i.id != 0) {
                    *s = true;
                }
                if let Some(a) = at.get_mut(i.id as usize) {
                    *a = NONE;
                }
            }
            return;
        }
        let mut out = Vec::with_capacity(insts.len());
        let mut pending: Vec<Inst> = vec![];
        let emit = |out: &mut Vec<Inst>, i: Inst, seen: &mut [bool], at: &mut [u32]| {
            if i.id != 0 {
                seen[i.id as usize] = true;
                at[i.id as usize] = NONE;
            }
            out.push(i);
        };
        // Places (or drops) the waiting instructions whose operands are now all placed.
        let flush = |out: &mut Vec<Inst>, pending: &mut Vec<Inst>, seen: &mut [bool], at: &mut [u32], dropped: &mut usize| loop {
            let Some(k) = pending.iter().position(|i| status(i, seen, at).is_some()) else { return };
            let i = pending.remove(k);
            if status(&i, seen, at) == Some(true) {
                emit(out, i, seen, at);
            } else {
                *dropped += 1;
                if i.id != 0 {
                    at[i.id as usize] = NONE;
                }
            }
        };
        for i in std::mem::take(insts) {
            if !block || !matches!(i.op, op::PHI | op::VARIABLE) {
                flush(&mut out, &mut pending, &mut seen, &mut at, &mut dropped);
            }
            match (moves(&i), status(&i, &seen, &at)) {
                (false, _) | (true, Some(true)) => emit(&mut out, i, &mut seen, &mut at),
                (true, None) => pending.push(i),
                (true, Some(false)) => {
                    dropped += 1;
                    if i.id != 0 {
                        at[i.id as usize] = NONE;
                    }
                }
            }
        }
        flush(&mut out, &mut pending, &mut seen, &mut at, &mut dropped);
        // Still waiting: on one another (not in a valid module) or on what a dropped one defined.
        dropped += pending.len();
        for i in pending.iter().filter(|i| i.id != 0) {
            at[i.id as usize] = NONE;
        }
        *insts = out;
    };
    place(&mut m.globals, false);
    for b in m.functions.iter_mut().flat_map(|f| f.blocks.iter_mut()) {
        place(&mut b.insts, true);
    }
    dropped
}

/// Is an OpExtInstImport's name (its operands) a non-semantic set's? "NonSemantic." first
/// (SPV_KHR_non_semantic_info, OpExtInstImport).
fn is_non_semantic(name: &[u32]) -> bool {
    let prefix = b"NonSemantic.";
    name.iter().flat_map(|w| w.to_le_bytes()).take(prefix.len()).eq(prefix.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rspirv::binary::Assemble;
    use rspirv::dr::{Builder, Operand};
    use rspirv::spirv::{AddressingModel, Capability, ExecutionModel, FunctionControl, MemoryModel};

    /// Instruction number of the debug instructions the tests make (any: the pass reads only
    /// that every operand after it is an id).
    const DEBUG_VALUE: u32 = 29;

    /// `main` with blocks `first` and `second`: in `first` a debug instruction naming `%x`
    /// before `%x = OpIAdd` (a lowering's order), and one naming `%y`, defined in `second`.
    fn module() -> (Vec<u32>, [u32; 4]) {
        let mut b = Builder::new();
        b.set_version(1, 3);
        b.capability(Capability::Shader);
        b.extension("SPV_KHR_non_semantic_info");
        let set = b.ext_inst_import("NonSemantic.Shader.DebugInfo.100");
        b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
        let void = b.type_void();
        let u32t = b.type_int(32, 0);
        let fn_ty = b.type_function(void, vec![]);
        let one = b.constant_bit32(u32t, 1);
        let main = b.begin_function(void, None, FunctionControl::NONE, fn_ty).unwrap();
        b.begin_block(None).unwrap();
        let (x, y, second) = (b.id(), b.id(), b.id());
        let names_x = b.ext_inst(void, None, set, DEBUG_VALUE, vec![Operand::IdRef(x)]).unwrap();
        let names_y = b.ext_inst(void, None, set, DEBUG_VALUE, vec![Operand::IdRef(y)]).unwrap();
        b.i_add(u32t, Some(x), one, one).unwrap();
        b.branch(second).unwrap();
        b.begin_block(Some(second)).unwrap();
        b.i_add(u32t, Some(y), x, one).unwrap();
        b.ret().unwrap();
        b.end_function().unwrap();
        b.entry_point(ExecutionModel::GLCompute, main, "main", vec![]);
        (b.module().assemble(), [x, y, names_x, names_y])
    }

    /// In its own block, a debug instruction naming a later definition moves just after it; one
    /// naming a definition in a later block goes (the earlier block does not see it).
    #[test]
    fn a_debug_instruction_moves_after_what_it_names_in_its_block() {
        let (words, [x, _, names_x, names_y]) = module();
        let mut m = Module::parse(&words).unwrap();
        assert_eq!(drop_dangling(&mut m), 0, "every named id is defined");
        assert_eq!(place_after_operands(&mut m), 1, "the one naming %y (a later block) goes");
        let first: Vec<u32> = m.functions[0].blocks[0].insts.iter().map(|i| i.id).collect();
        let at = |id: u32| first.iter().position(|&i| i == id);
        assert_eq!(at(names_x), at(x).map(|k| k + 1), "after %x, nowhere else: {first:?}");
        assert_eq!(at(names_y), None, "{first:?}");
        let again = m.assemble();
        let mut twice = Module::parse(&again).unwrap();
        assert_eq!(place_after_operands(&mut twice), 0, "already in place");
        assert_eq!(twice.assemble(), again);
    }
}
