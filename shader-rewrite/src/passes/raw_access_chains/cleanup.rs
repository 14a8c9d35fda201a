//! After the lowering: the application's buffer variables that nothing reaches any more (every
//! access now goes through the layer's alias views, e.g. the `uint[]` block of `Aligned 16`
//! vec4 chains, read through a `uvec4[]` view), and the types and constants left unused, are
//! removed: the driver parses every declaration at every pipeline creation (the kernels bench's
//! unchecked vec4 kernel: 277 → 217 words). Run only when the lowering made new views (without
//! them nothing became dead), and only when a buffer variable is unused: a walk that stops once
//! it has met them all (a whole sweep where nothing is dead cost ~10 % of a rewrite).
use crate::builder::sc;
use crate::module::{op, Inst, Module};
use crate::passes::util::{forget_ids, refs, sweep_dead_globals};
use rustc_hash::FxHashSet as HashSet;

/// What may go when nothing refers to it: StorageBuffer and Uniform variables, and the types
/// and constants [`sweep_dead_globals`] removes.
fn removable(g: &Inst) -> bool {
    match g.op {
        op::VARIABLE => matches!(g.ops.first(), Some(&(sc::STORAGE_BUFFER | sc::UNIFORM))),
        op::TYPE_STRUCT | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY | op::TYPE_POINTER | op::TYPE_VECTOR | op::TYPE_INT | op::TYPE_FLOAT | op::TYPE_MATRIX => true,
        op::CONSTANT | op::CONSTANT_COMPOSITE | op::CONSTANT_NULL | op::CONSTANT_TRUE | op::CONSTANT_FALSE => true,
        _ => false,
    }
}

/// [`sweep`], when some StorageBuffer or Uniform variable is not referred to by any function.
pub fn sweep_if_unused(m: &mut Module) {
    let mut pending = vec![false; m.header[3] as usize];
    let mut left = 0;
    for g in m.globals.iter().filter(|g| removable(g) && g.op == op::VARIABLE) {
        if let Some(p) = pending.get_mut(g.id as usize).filter(|p| !**p) {
            *p = true;
            left += 1;
        }
    }
    if left == 0 {
        return;
    }
    for f in &m.functions {
        for i in f.blocks.iter().flat_map(|b| &b.insts) {
            for &w in &i.ops {
                if let Some(p) = pending.get_mut(w as usize).filter(|p| **p) {
                    *p = false;
                    left -= 1;
                    if left == 0 {
                        return;
                    }
                }
            }
        }
    }
    sweep(m);
}

fn mark(live: &mut [bool], w: u32) {
    if let Some(l) = live.get_mut(w as usize) {
        *l = true;
    }
}

/// Removes what [`removable`] allows and nothing refers to: from the entry points' interfaces
/// too (a SPIR-V 1.4+ interface lists every global its entry point references), with their
/// names and decorations. One walk over the functions, one backwards over the globals (which
/// refer only to earlier ones, SPIR-V spec 2.4, but through OpTypeForwardPointer: a module
/// with one takes the general sweep, which keeps the variables).
pub fn sweep(m: &mut Module) {
    if m.globals.iter().any(|g| g.op == op::TYPE_FORWARD_POINTER) {
        sweep_dead_globals(m, &[]);
        return;
    }
    let mut live = vec![false; m.header[3] as usize];
    // Every operand word of every function instruction: a literal that happens to equal an
    // id only keeps it alive.
    for f in &m.functions {
        for i in std::iter::once(&f.def).chain(&f.params).chain(f.blocks.iter().flat_map(|b| &b.insts)) {
            mark(&mut live, i.ty);
            for &w in &i.ops {
                mark(&mut live, w);
            }
        }
    }
    for ep in &m.entry_points {
        // Execution model, function, name (a nul-terminated string), then the interface: the
        // Input/Output variables there stay (they are not removable).
        mark(&mut live, ep.ops.get(1).copied().unwrap_or(0));
    }
    for em in &m.execution_modes {
        // The entry point, and OpExecutionModeId's operands (not OpExecutionMode's literals).
        let ids = if em.op == op::EXECUTION_MODE_ID { em.ops.len() } else { 1 };
        for (n, &w) in em.ops.iter().enumerate().take(ids) {
            if n != 1 {
                mark(&mut live, w);
            }
        }
    }
    for a in m.annotations.iter().filter(|a| matches!(a.op, op::GROUP_DECORATE | op::GROUP_MEMBER_DECORATE | op::DECORATE_ID)) {
        for (n, &w) in a.ops.iter().enumerate() {
            // OpDecorateId's target does not keep it alive; its id operands do.
            if a.op != op::DECORATE_ID || n >= 2 {
                mark(&mut live, w);
            }
        }
    }
    for g in m.globals.iter().rev() {
        if live.get(g.id as usize).copied().unwrap_or(true) || !removable(g) {
            for r in refs(g) {
                mark(&mut live, r);
            }
        }
    }
    let dead: HashSet<u32> = m.globals.iter().filter(|g| removable(g) && !live.get(g.id as usize).copied().unwrap_or(true)).map(|g| g.id).collect();
    if dead.is_empty() {
        return;
    }
    for ep in &mut m.entry_points {
        let interface = crate::module::interface_start(&ep.ops);
        if ep.ops[interface..].iter().any(|id| dead.contains(id)) {
            let kept: Vec<u32> = ep.ops[..interface].iter().copied().chain(ep.ops[interface..].iter().copied().filter(|id| !dead.contains(id))).collect();
            ep.ops = kept.into();
        }
    }
    m.globals.retain(|g| !dead.contains(&g.id));
    forget_ids(m, &dead);
}
