//! Lowers the 8/16-bit storage capabilities (SPV_KHR_16bit_storage, SPV_KHR_8bit_storage) the
//! target lacks:
//!
//! 1. `blocks`: storage buffers, uniform buffers and push-constant blocks holding 8/16-bit
//!    members of an emulated class are accessed through 32-bit word views (the shared
//!    byte-address backend).
//! 2. `io`: 16-bit Input/Output variables widen to 32 bits (StorageInputOutput16).
//! 3. The emulated capabilities are removed (a removed UniformAndStorageBuffer*BitAccess leaves
//!    the StorageBuffer*BitAccess it implies when that one is kept).
//! 4. Types nothing uses any more go (the old blocks' types would still need the capabilities).
//! 5. `legalize`: 8/16-bit types that no remaining capability allows become 32-bit types, and
//!    width conversions become explicit rounding / extension code.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::{deco, sc, Builder, Emitter, ScalarVec};
use crate::byte_address::{AccessShape, AliasKind, AliasViews, Backend, Robustness};
use crate::error::RewriteError;
use crate::module::{decode_string, encode_string, op, Function, Inst, Module};
use crate::ops;
use crate::stats::Stats;
use crate::target::{Options, SmallStorage};

use super::util::{pointer_operands, split_memory_operands, MEM_ALIGNED};

mod blocks;
mod io;
mod layout;
mod legalize;
mod round;

const MEMORY_MODEL_VULKAN: u32 = 3;
const CAP_SB16: u32 = 4433;
const CAP_UBO16: u32 = 4434;
const CAP_SB8: u32 = 4448;
const CAP_UBO8: u32 = 4449;

pub fn run(m: &mut Module, options: &Options, stats: &mut Stats) -> Result<(), RewriteError> {
    let mut declared = SmallStorage::default();
    for c in SmallStorage::CAPS {
        declared.set(c, m.has_capability(c));
    }
    let emulate = options.emulate_storage;
    let lowered = declared.and(&emulate);
    if !lowered.any() {
        return Ok(());
    }
    // UniformAndStorageBuffer*BitAccess implicitly declares StorageBuffer*BitAccess.
    let storage16 = emulate.storage_buffer_16bit && (declared.storage_buffer_16bit || declared.uniform_and_storage_buffer_16bit);
    let storage8 = emulate.storage_buffer_8bit && (declared.storage_buffer_8bit || declared.uniform_and_storage_buffer_8bit);
    let widths = |w16: bool, w8: bool| -> Vec<u32> { [(16, w16), (8, w8)].iter().filter(|(_, on)| *on).map(|(w, _)| *w).collect() };
    let plan = blocks::Plan {
        storage: widths(storage16, storage8),
        uniform: widths(lowered.uniform_and_storage_buffer_16bit, lowered.uniform_and_storage_buffer_8bit),
        push_constant: widths(lowered.storage_push_constant_16, lowered.storage_push_constant_8),
    };

    // 3 first, so the capabilities the lowering itself adds (8/16-bit views the target has)
    // survive.
    for c in SmallStorage::CAPS {
        if lowered.get(c) {
            m.remove_capability(c);
        }
    }
    for (uniform, storage) in [(CAP_UBO16, CAP_SB16), (CAP_UBO8, CAP_SB8)] {
        if lowered.get(uniform) && !emulate.get(storage) {
            m.add_capability(storage);
        }
    }

    let layouts = layout::Layouts::read(m);
    let mut functions = std::mem::take(&mut m.functions);
    let result = (|| {
        let exact = {
            let mut b = Builder::new(m);
            blocks::lower(&mut b, &mut functions, &layouts, &plan, options, stats)?
        };
        if lowered.storage_input_output_16 {
            let mut b = Builder::new(m);
            io::widen(&mut b, &mut functions, &layouts, stats)?;
        }
        Ok::<_, RewriteError>(exact)
    })();
    m.functions = functions;
    let exact = result?;
    for (ext, caps) in [("SPV_KHR_16bit_storage", &[4433, 4434, 4435, 4436][..]), ("SPV_KHR_8bit_storage", &[4448, 4449, 4450][..])] {
        if !caps.iter().any(|&c| m.has_capability(c)) {
            m.remove_extension(ext);
        }
    }
    order_globals(m);
    sweep_dead_globals(m);
    legalize::legalize(m, &exact, stats)?;
    Ok(())
}

fn add_cap(b: &mut Builder, cap: u32, extension: &str) {
    b.m.add_capability(cap);
    b.m.add_extension(extension);
}

/// Drops names and decorations that target ids no longer defined.
pub(super) fn forget_ids(m: &mut Module, gone: &HashSet<u32>) {
    if gone.is_empty() {
        return;
    }
    m.debug.retain(|d| !(matches!(d.op, op::NAME | op::MEMBER_NAME) && d.ops.first().is_some_and(|id| gone.contains(id))));
    m.annotations.retain(|a| {
        !(matches!(a.op, op::DECORATE | op::MEMBER_DECORATE | op::DECORATE_ID | op::DECORATE_STRING | op::MEMBER_DECORATE_STRING)
            && a.ops.first().is_some_and(|id| gone.contains(id)))
    });
}

/// Moves each variable that was retyped to a type declared after it to just after that type.
fn order_globals(m: &mut Module) {
    let mut i = 0;
    while i < m.globals.len() {
        let g = &m.globals[i];
        if g.op == op::VARIABLE {
            if let Some(t) = m.globals[i + 1..].iter().position(|x| x.id == g.ty) {
                let v = m.globals.remove(i);
                m.globals.insert(i + t + 1, v);
                continue; // the global now at `i` is unvisited
            }
        }
        i += 1;
    }
}

/// Ids a global refers to: its type and every operand word that names a global (literals may
/// alias ids; that only keeps more alive or waits longer, never breaks order).
fn refs(g: &Inst) -> impl Iterator<Item = u32> + '_ {
    std::iter::once(g.ty).chain(g.ops.iter().copied()).filter(|&r| r != 0)
}

/// Removes types and constants nothing refers to (the lowered blocks' types would still need
/// the removed capabilities).
fn sweep_dead_globals(m: &mut Module) {
    let is_removable = |g: &Inst| {
        matches!(g.op, op::TYPE_STRUCT | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY | op::TYPE_POINTER | op::TYPE_VECTOR | op::TYPE_INT | op::TYPE_FLOAT | 24)
            || matches!(g.op, op::CONSTANT | op::CONSTANT_COMPOSITE | op::CONSTANT_NULL | op::CONSTANT_TRUE | op::CONSTANT_FALSE)
    };
    let mut live: HashSet<u32> = HashSet::default();
    let mut work: Vec<u32> = vec![];
    let mut mark = |id: u32, work: &mut Vec<u32>| {
        if live.insert(id) {
            work.push(id);
        }
    };
    for f in &m.functions {
        for i in std::iter::once(&f.def).chain(f.params.iter()).chain(f.blocks.iter().flat_map(|b| b.insts.iter())) {
            for r in refs(i) {
                mark(r, &mut work);
            }
        }
    }
    for i in m.entry_points.iter().chain(m.execution_modes.iter()) {
        for &r in &i.ops {
            mark(r, &mut work);
        }
    }
    for a in m.annotations.iter().filter(|a| a.op == op::DECORATE_ID) {
        for &r in a.ops.iter().skip(2) {
            mark(r, &mut work);
        }
    }
    for g in m.globals.iter().filter(|g| !is_removable(g)) {
        mark(g.id, &mut work);
    }
    let index = m.global_index();
    while let Some(id) = work.pop() {
        if let Some(&n) = index.get(&id) {
            let g = &m.globals[n];
            for r in refs(g) {
                if live.insert(r) {
                    work.push(r);
                }
            }
        }
    }
    let dead: HashSet<u32> = m.globals.iter().filter(|g| is_removable(g) && !live.contains(&g.id)).map(|g| g.id).collect();
    m.globals.retain(|g| !dead.contains(&g.id));
    forget_ids(m, &dead);
}
