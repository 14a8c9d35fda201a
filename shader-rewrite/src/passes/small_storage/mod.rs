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

use crate::builder::{deco, model, sc, Builder, Emitter};
use crate::byte_address::{AccessShape, AliasKind, AliasViews, Backend, Robustness};
use crate::error::RewriteError;
use crate::module::{decode_string, encode_string, op, Function, Inst, Module};
use crate::ops;
use crate::stats::Stats;
use crate::target::{Options, SmallStorage};

use super::layout::Layouts;
use super::util::{forget_ids, pointer_operands, remove_from_interfaces, sweep_dead_globals, without_aligned};

mod blocks;
mod io;
mod legalize;
mod round;

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

    if let Some(ptr) = physical_small_scalar(m, &plan.storage) {
        return Err(RewriteError::unsupported(
            format!("OpTypePointer PhysicalStorageBuffer %{ptr}"),
            "8/16-bit storage emulation of physical memory: its explicit layout would change (the physical-storage-buffer lowering handles it where the layer emulates buffer device addresses)",
        ));
    }
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

    let first_new = m.header[3];
    let layouts = Layouts::read(m);
    let lowered_before = (stats.small_storage_blocks, stats.widened_io_variables);
    let mut functions = std::mem::take(&mut m.functions);
    let result = (|| {
        // Only variables of these storage classes can be blocks to lower.
        let any_block = m.globals.iter().any(|g| g.op == op::VARIABLE && matches!(g.ops.first(), Some(&(sc::STORAGE_BUFFER | sc::UNIFORM | sc::PUSH_CONSTANT))));
        let mut blocks = if any_block {
            let mut b = Builder::new(m);
            blocks::lower(&mut b, &mut functions, &layouts, &plan, options, stats)?
        } else {
            blocks::Lowered::default()
        };
        if lowered.storage_input_output_16 {
            let mut b = Builder::new(m);
            blocks.exact.extend(io::widen(&mut b, &mut functions, &layouts, stats)?);
        }
        Ok::<_, RewriteError>(blocks)
    })();
    m.functions = functions;
    let blocks = result?;
    for (ext, caps) in [("SPV_KHR_16bit_storage", &[4433, 4434, 4435, 4436][..]), ("SPV_KHR_8bit_storage", &[4448, 4449, 4450][..])] {
        if !caps.iter().any(|&c| m.has_capability(c)) {
            m.remove_extension(ext);
        }
    }
    // Only a lowered block or a widened variable leaves types behind (or a variable before its
    // new type); folding leaves constants only folded code used, dropped alias views their
    // types. One sweep at the end: legalization works the same with dead types around.
    let lowered_any = (stats.small_storage_blocks, stats.widened_io_variables) != lowered_before;
    if lowered_any {
        order_globals(m);
    }
    legalize::legalize(m, &blocks.exact, options.target.float16, stats)?;
    // The lowering's copies and repeats, and its u32 offset arithmetic of constants.
    let folded = super::tidy::tidy(m, super::tidy::Options { first_new, constants: true });
    forget_ids(m, &folded);
    // Alias views no access uses go too (taken out of the interfaces with them). The raw-chain
    // lowering leaves its chains' result types, which may be pointers to 8/16-bit data nothing
    // uses any more: they go too, or the module would still need the storage capability.
    if lowered_any || !folded.is_empty() || stats.raw_chains > 0 {
        let is_alias = |g: &Inst| g.op == op::VARIABLE && blocks.alias_vars.contains(&g.id);
        let aliases = |m: &Module| m.globals.iter().filter(|g| is_alias(g)).count() as u32;
        let before = aliases(m);
        sweep_dead_globals(m, is_alias);
        stats.alias_variables -= before - aliases(m);
    }
    Ok(())
}

/// A PhysicalStorageBuffer pointer type whose pointee holds a scalar of one of `widths`. This
/// pass lowers descriptor-bound blocks only; widening such a scalar would move the members of
/// physical memory, whose layout is the explicit one the shader and the host agree on
/// (SPV_KHR_physical_storage_buffer), so the module is refused instead. Pointers inside the
/// pointee are not followed: their own pointer types are checked on their own.
fn physical_small_scalar(m: &Module, widths: &[u32]) -> Option<u32> {
    if widths.is_empty() {
        return None;
    }
    let index = m.global_index();
    let holds_small = |root: u32| {
        let mut stack = vec![root];
        let mut seen = HashSet::default();
        while let Some(id) = stack.pop() {
            let Some(t) = index.get(&id).map(|&i| &m.globals[i]) else { continue };
            if !seen.insert(id) {
                continue;
            }
            match t.op {
                op::TYPE_INT | op::TYPE_FLOAT if t.ops.first().is_some_and(|w| widths.contains(w)) => return true,
                op::TYPE_VECTOR | op::TYPE_MATRIX | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => stack.extend(t.ops.first()),
                op::TYPE_STRUCT => stack.extend(t.ops.iter().copied()),
                _ => {}
            }
        }
        false
    };
    m.globals
        .iter()
        .find(|g| g.op == op::TYPE_POINTER && g.ops.first() == Some(&sc::PHYSICAL_STORAGE_BUFFER) && g.ops.get(1).is_some_and(|&p| holds_small(p)))
        .map(|g| g.id)
}

fn add_cap(b: &mut Builder, cap: u32, extension: &str) {
    b.m.add_capability(cap);
    b.m.add_extension(extension);
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
