//! The application's own functions that pass physical pointers around, called once and of one
//! block, are inlined before the lowering: a pointer handed to a function (or returned by one)
//! is a root the lowering cannot see through ([`super::roots`]), so each side decodes the
//! address again; inlined, the callee's access chains are offsets from the caller's root and
//! one decode serves both. (The drivers inline every call anyway, Mesa's NIR before it
//! optimizes; a function called once costs words and driver work for nothing.)
//!
//! The body moves as it is, ids and decorations kept: each parameter becomes an OpCopyObject
//! of its argument and the call's result one of the returned value (copies `passes::tidy`
//! removes), the callee's variables (without initializers: one would run once instead of at
//! every call) go to the front of the caller's entry block (SPIR-V spec 2.4: all OpVariable of
//! a function come first in its first block).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::sc;
use crate::module::{leading_id_operands, op, Function, Inst, Module};
use crate::ops;

/// Inlines the functions described above; returns the ids that are gone (each function's own
/// and its block's label), whose names and decorations must go too.
pub(super) fn inline_pointer_functions(m: &mut Module) -> HashSet<u32> {
    let mut gone = HashSet::default();
    if m.functions.len() < 2 {
        return gone;
    }
    let holds = pointer_holding_types(m);
    let entry_points: HashSet<u32> = m.entry_points.iter().filter_map(|ep| ep.ops.get(1).copied()).collect();
    let decorated: HashSet<u32> = m.annotations.iter().filter_map(|a| a.ops.first().copied()).collect();
    let mut calls: HashMap<u32, u32> = HashMap::default();
    for i in m.functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|b| b.insts.iter()).filter(|i| i.op == op::FUNCTION_CALL) {
        *calls.entry(i.ops[0]).or_default() += 1;
    }
    let fits = |f: &Function| {
        let id = f.def.id;
        let signature = std::iter::once(f.def.ty).chain(f.params.iter().map(|p| p.ty));
        let [blk] = f.blocks.as_slice() else { return false };
        calls.get(&id) == Some(&1)
            && !entry_points.contains(&id)
            // (LinkageAttributes and the like: the function is more than this module's.)
            && !decorated.contains(&id)
            && signature.into_iter().any(|t| holds.contains(&t))
            && blk.insts.last().is_some_and(|t| matches!(t.op, op::RETURN | op::RETURN_VALUE))
            && !blk.insts.iter().any(|i| i.op == op::VARIABLE && i.ops.len() > 1)
    };
    // Rounds: a body holding a call to another candidate waits until that one is inlined into
    // it (so nothing is inlined twice); a call cycle is invalid SPIR-V (spec 2.16.1).
    let mut candidates: HashSet<u32> = m.functions.iter().filter(|f| fits(f)).map(|f| f.def.id).collect();
    // A function named by anything but its call stays (debug info's DebugFunctionDefinition in
    // its body, NonSemantic.Shader.DebugInfo.100; OpenCL.DebugInfo.100's DebugFunction among the
    // globals): that operand would name an id no longer defined. The operands looked at: an
    // extended instruction's after its set and number (every one, a literal too: it only keeps
    // a function), a call's arguments, the leading ids of the rest (their literals, a
    // constant's value, would keep functions for nothing).
    if !candidates.is_empty() {
        let bodies = m.functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|b| b.insts.iter());
        for i in m.globals.iter().chain(bodies) {
            let ops = match i.op {
                op::EXT_INST | crate::passes::non_semantic::EXT_INST_WITH_FORWARD_REFS => i.ops.get(2..).unwrap_or_default(),
                op::FUNCTION_CALL => &i.ops[1..],
                op::PHI => &i.ops[..],
                opcode => &i.ops[..leading_id_operands(opcode).min(i.ops.len())],
            };
            for w in ops {
                candidates.remove(w);
            }
        }
    }
    while !candidates.is_empty() {
        let calls_candidate = |f: &Function| f.blocks[0].insts.iter().any(|i| i.op == op::FUNCTION_CALL && candidates.contains(&i.ops[0]));
        let ready: HashSet<u32> = m.functions.iter().filter(|f| candidates.contains(&f.def.id) && !calls_candidate(f)).map(|f| f.def.id).collect();
        if ready.is_empty() {
            break;
        }
        candidates.retain(|id| !ready.contains(id));
        let mut bodies: HashMap<u32, Function> = HashMap::default();
        for f in std::mem::take(&mut m.functions) {
            if ready.contains(&f.def.id) {
                gone.insert(f.def.id);
                gone.insert(f.blocks[0].label);
                bodies.insert(f.def.id, f);
            } else {
                m.functions.push(f);
            }
        }
        for f in m.functions.iter_mut() {
            inline_calls(f, &mut bodies);
        }
    }
    gone
}

/// Replaces the calls in `f` of the functions in `bodies` by their bodies (each called once).
fn inline_calls(f: &mut Function, bodies: &mut HashMap<u32, Function>) {
    let mut variables: Vec<Inst> = vec![];
    for blk in f.blocks.iter_mut() {
        if !blk.insts.iter().any(|i| i.op == op::FUNCTION_CALL && bodies.contains_key(&i.ops[0])) {
            continue;
        }
        let mut out = Vec::with_capacity(blk.insts.len() * 2);
        for call in std::mem::take(&mut blk.insts) {
            let Some(callee) = (call.op == op::FUNCTION_CALL).then(|| bodies.remove(&call.ops[0])).flatten() else {
                out.push(call);
                continue;
            };
            for (p, &arg) in callee.params.iter().zip(call.ops[1..].iter()) {
                out.push(Inst::new(op::COPY_OBJECT, p.ty, p.id, ops![arg]));
            }
            let mut body = callee.blocks.into_iter().next().expect("one block").insts;
            let ret = body.pop().expect("a return");
            for i in body {
                if i.op == op::VARIABLE {
                    variables.push(i);
                } else {
                    out.push(i);
                }
            }
            if ret.op == op::RETURN_VALUE {
                out.push(Inst::new(op::COPY_OBJECT, call.ty, call.id, ops![ret.ops[0]]));
            }
        }
        blk.insts = out;
    }
    if !variables.is_empty() {
        let entry = &mut f.blocks[0].insts;
        let at = entry.iter().position(|i| i.op != op::VARIABLE && i.op != op::LINE && i.op != op::NO_LINE).unwrap_or(entry.len());
        entry.splice(at..at, variables);
    }
}

/// Types that are, or hold, a PhysicalStorageBuffer pointer: the pointers themselves, pointers
/// (of any storage class) to such types, and structs and arrays with such members.
fn pointer_holding_types(m: &Module) -> HashSet<u32> {
    // Types are declared before use, but for forward pointers (only physical pointers, known
    // from the start).
    let mut holds: HashSet<u32> = m.globals.iter().filter(|g| g.op == op::TYPE_POINTER && g.ops[0] == sc::PHYSICAL_STORAGE_BUFFER).map(|g| g.id).collect();
    for g in &m.globals {
        let yes = match g.op {
            op::TYPE_POINTER => holds.contains(&g.ops[1]),
            op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => holds.contains(&g.ops[0]),
            op::TYPE_STRUCT => g.ops.iter().any(|t| holds.contains(t)),
            _ => false,
        };
        if yes {
            holds.insert(g.id);
        }
    }
    holds
}
