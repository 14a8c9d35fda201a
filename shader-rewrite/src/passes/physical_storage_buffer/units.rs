//! The leaves of one composite access (split where it is accessed) that lie side by side, moved
//! as one 8- or 16-byte unit: a row-major matrix's row (a component of each column), struct
//! members in a row. The same rule as [`super::combine`] (where the driver checks bounds and
//! checks vectors per component): a unit starts at a leaf aligned to it and spans exactly 8 or
//! 16 bytes; a load may read padding between its leaves (SPIR-V lets an access of a whole
//! aggregate touch the padding between members, the Vulkan memory model), a store covers every
//! byte of its unit with its leaves, so it writes nothing the program does not.
use crate::builder::{Builder, Emitter};
use crate::module::op;
use crate::ops;
use crate::passes::leaves::{Cursor, Splitter};

use super::fold::Folder;

/// A unit: how many leaves it holds, its size in bytes (its first leaf is aligned to that).
#[derive(Clone, Copy)]
pub(super) struct Unit {
    pub leaves: usize,
    pub size: u32,
}

/// The units of an access, and per leaf (by index in split order) its unit and byte offset
/// from the unit's start (None: not in a unit).
pub(super) type Plan = (Vec<Unit>, Vec<Option<(usize, u32)>>);

/// A unit's leaves gathered for its store: (byte in the unit, value, type, words) each, and
/// the offset id of the unit's start.
pub(super) type Gathered = (Vec<(u32, u32, u32, u32)>, u32);

/// The [`Plan`] of the access at `cur`, from a dry run of the split (`store`: the units a store
/// may use).
pub(super) fn plan(splitter: &mut Splitter, b: &mut Builder, cur: &Cursor, inst: &crate::module::Inst, store: bool) -> Option<Plan> {
    // Offsets from the access's start: the split run on offset 0, its arithmetic folded.
    let mut at0 = cur.clone();
    at0.off = b.c_u32(0);
    let mut scratch = Emitter::new(0);
    let mut leaves: Vec<(u32, u32, u32, bool)> = vec![]; // (offset id, size, align, wide enough)
    splitter
        .load(&mut scratch, b, &at0, inst, &mut |_, b, leaf| {
            leaves.push((leaf.off, leaf.sv.n * leaf.sv.width / 8, leaf.align, leaf.sv.width >= 32));
            b.id()
        })
        .ok()?;
    let mut folder = Folder::default();
    for i in scratch.take_insts() {
        folder.visit(b, i);
    }
    let offs: Vec<Option<u32>> = leaves
        .iter()
        .map(|&(off, ..)| {
            let c = folder.resolve(b, off);
            b.const_value(c).and_then(|v| u32::try_from(v).ok())
        })
        .collect();
    // Leaves by offset; units grow from an aligned leaf over the leaves that follow it.
    let mut order: Vec<usize> = (0..leaves.len()).filter(|&k| offs[k].is_some() && leaves[k].3 && leaves[k].1.is_multiple_of(4)).collect();
    order.sort_by_key(|&k| offs[k]);
    let mut units = vec![];
    let mut member: Vec<Option<(usize, u32)>> = vec![None; leaves.len()];
    let mut k = 0;
    while k < order.len() {
        let first = order[k];
        let start = offs[first].unwrap_or(0);
        let mut best: Option<(usize, u32)> = None;
        let (mut end, mut covered) = (start, 0);
        for (j, &l) in order.iter().enumerate().skip(k) {
            let (o, size) = (offs[l].unwrap_or(0), leaves[l].1);
            if o < end {
                break; // overlapping leaves (none in a valid layout): not merged
            }
            covered += size;
            end = o + size;
            let span = end - start;
            if span > 16 {
                break;
            }
            if matches!(span, 8 | 16) && leaves[first].2 >= span && (!store || covered == span) && j > k {
                best = Some((j, span));
            }
        }
        match best {
            Some((last, size)) => {
                for &l in &order[k..=last] {
                    member[l] = Some((units.len(), offs[l].unwrap_or(0) - start));
                }
                units.push(Unit { leaves: last + 1 - k, size });
                k = last + 1;
            }
            None => k += 1,
        }
    }
    (!units.is_empty()).then_some((units, member))
}

/// The part of unit value `wide` (of `words` u32 words) that a value of type `ty`, `n` words
/// at byte `byte` of the unit, is (a component or a shuffle, bitcast to `ty`). Shared with
/// [`super::combine`].
pub(super) fn part(e: &mut Emitter, b: &mut Builder, wide: u32, words: u32, ty: u32, n: u32, byte: u32) -> u32 {
    let u32t = b.t_u32();
    let first = byte / 4;
    let part_ty = b.t_vec(u32t, n);
    let part = if n == words {
        wide
    } else if n == 1 {
        e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![wide, first])
    } else {
        let mut o = ops![wide, wide];
        o.extend(first..first + n);
        e.op(b, OP_VECTOR_SHUFFLE, part_ty, o)
    };
    if part_ty == ty {
        part
    } else {
        e.op(b, op::BITCAST, ty, ops![part])
    }
}

/// A unit's value of `words` words from its leaves' values and types, in offset order,
/// covering it.
pub(super) fn whole(e: &mut Emitter, b: &mut Builder, words: u32, values: &[(u32, u32, u32)]) -> u32 {
    let u32t = b.t_u32();
    let mut parts = ops![];
    for &(v, ty, n) in values {
        let as_words = b.t_vec(u32t, n);
        parts.push(if as_words == ty { v } else { e.op(b, op::BITCAST, as_words, ops![v]) });
    }
    let unit_ty = b.t_vec(u32t, words);
    if parts.len() == 1 {
        parts[0]
    } else {
        e.op(b, op::COMPOSITE_CONSTRUCT, unit_ty, parts)
    }
}

const OP_VECTOR_SHUFFLE: u32 = 79;
