//! After the lowering: the application's buffer variables that nothing reaches any more (every
//! access now goes through the layer's alias views, e.g. the `uint[]` block of `Aligned 16`
//! vec4 chains, read through a `uvec4[]` view), and the types and constants left unused, are
//! removed: the driver parses every declaration at every pipeline creation (the kernels bench's
//! unchecked vec4 kernel: 277 → 217 words). Run only when the lowering made new views (without
//! them nothing became dead), and only when a buffer variable is unused: a walk that stops once
//! it has met them all (a whole sweep where nothing is dead cost ~10 % of a rewrite).
use crate::builder::sc;
use crate::module::{op, Inst, Module};
use crate::passes::util::sweep_dead_globals;

/// The application's buffer variables: StorageBuffer and Uniform.
fn buffer_variable(g: &Inst) -> bool {
    g.op == op::VARIABLE && matches!(g.ops.first(), Some(&(sc::STORAGE_BUFFER | sc::UNIFORM)))
}

/// Removes the buffer variables no function refers to, with the types and constants nothing
/// refers to ([`sweep_dead_globals`], which also takes them out of the entry points'
/// interfaces), when a walk that stops once it has met every buffer variable finds one unused.
pub fn sweep_if_unused(m: &mut Module) {
    let mut pending = vec![false; m.header[3] as usize];
    let mut left = 0;
    for g in m.globals.iter().filter(|g| buffer_variable(g)) {
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
    sweep_dead_globals(m, buffer_variable);
}
