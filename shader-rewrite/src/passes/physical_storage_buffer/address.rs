//! Addresses as values: `ADDRESS_TAG << 56 | slot << 32 | offset ^ 2^31` in a uvec2 (`.x` = the
//! offset word, `.y` = tag and slot: the little-endian word order OpBitcast between a pointer and
//! a uvec2 gives, SPV_KHR_physical_storage_buffer), whatever the target's Int64: lavapipe
//! creates every kernel of the bda bench 3-9 % faster from it than from a u64 taken apart by an
//! OpBitcast at each decode, and the module needs no Int64 of its own.
use crate::bda::{ADDRESS_TAG, OFFSET_LIMIT, SLOT_BITS};
use crate::builder::{Builder, Emitter};
use crate::module::{op, Inst};
use crate::ops;

const ANY: u32 = 154;
const ALL: u32 = 155;
const S_DIV: u32 = 135;

/// The address type (a uvec2) and how to take it apart.
#[derive(Debug, Clone, Copy)]
pub(super) struct Addr {
    pub ty: u32,
}

/// An address taken apart: the buffer's slot (clamped to 0 when out of the table), the byte
/// offset in it, and whether the address names a slot of the table at all.
pub(super) struct Decoded {
    pub slot: u32,
    pub offset: u32,
    pub in_table: u32,
}

impl Addr {
    /// (offset, tag << 24 | slot): the low and high words.
    fn words(&self, e: &mut Emitter, b: &mut Builder, a: u32) -> (u32, u32) {
        let u32t = b.t_u32();
        (e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![a, 0]), e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![a, 1]))
    }

    /// (offset, high word) of `a`: the offset is the low word less [`OFFSET_LIMIT`] (the
    /// encoding's bias, `crate::bda`).
    fn offset_and_high(&self, e: &mut Emitter, b: &mut Builder, a: u32) -> (u32, u32) {
        let u32t = b.t_u32();
        let (lo, hi) = self.words(e, b, a);
        let bias = b.c_u32(OFFSET_LIMIT);
        (e.op(b, op::BITWISE_XOR, u32t, ops![lo, bias]), hi)
    }

    /// Decodes `a` for a table of `count` slots (at most 2^24): `hi - (TAG << 24)` is below
    /// `count` exactly when the tag matches and the slot lies in the table.
    pub fn decode(&self, e: &mut Emitter, b: &mut Builder, a: u32, count: u32) -> Decoded {
        let (u32t, bool_t) = (b.t_u32(), b.t_bool());
        let (offset, hi) = self.offset_and_high(e, b, a);
        let tag = b.c_u32((ADDRESS_TAG as u32) << SLOT_BITS);
        let rel = e.op(b, op::I_SUB, u32t, ops![hi, tag]);
        let n = b.c_u32(count);
        let in_table = e.op(b, op::U_LESS_THAN, bool_t, ops![rel, n]);
        let zero = b.c_u32(0);
        let slot = e.op(b, op::SELECT, u32t, ops![in_table, rel, zero]);
        Decoded { slot, offset, in_table }
    }

    /// The slot and offset of `a` where the driver checks bounds (nothing needs `in_table`): for
    /// a table of a power-of-two `count`, the slot is the high word's low bits, `hi & (count - 1)`
    /// (one instruction: every slot below `count` holds a valid or null descriptor, so an address
    /// the layer did not make, undefined behaviour natively, still names one; the null address
    /// names slot 0); else as [`Addr::decode`].
    pub fn slot_and_offset(&self, e: &mut Emitter, b: &mut Builder, a: u32, count: u32) -> (u32, u32) {
        if !count.is_power_of_two() {
            let d = self.decode(e, b, a, count);
            return (d.slot, d.offset);
        }
        let u32t = b.t_u32();
        let (offset, hi) = self.offset_and_high(e, b, a);
        let mask = b.c_u32(count - 1);
        (e.op(b, op::BITWISE_AND, u32t, ops![hi, mask]), offset)
    }

    /// `result = a` with `delta` added to the offset word (wrapping in 32 bits: the encoding has
    /// no room for a carry into the slot, and a wrapped offset lies outside the buffer).
    pub fn add(&self, e: &mut Emitter, b: &mut Builder, a: u32, delta: u32, result: u32) {
        let u32t = b.t_u32();
        let (lo, hi) = self.words(e, b, a);
        let sum = e.op(b, op::I_ADD, u32t, ops![lo, delta]);
        e.push(Inst::new(op::COMPOSITE_CONSTRUCT, self.ty, result, ops![sum, hi]));
    }

    /// `result` = the address held by `x` of type `x_ty` (OpConvertUToPtr: an integer,
    /// zero-extended; OpBitcast: a 64-bit integer or a 2-vector of 32-bit integers).
    pub fn value_to_address(self, e: &mut Emitter, b: &mut Builder, x: u32, x_ty: u32, result: u32) {
        let sv = b.scalar_vec(x_ty);
        let inst = if x_ty == self.ty {
            Inst::new(op::COPY_OBJECT, self.ty, result, ops![x])
        } else if sv.is_some_and(|v| v.width == 32 && v.n == 1) {
            let u32t = b.t_u32();
            let x = if x_ty == u32t { x } else { e.op(b, op::BITCAST, u32t, ops![x]) };
            let zero = b.c_u32(0);
            Inst::new(op::COMPOSITE_CONSTRUCT, self.ty, result, ops![x, zero])
        } else {
            Inst::new(op::BITCAST, self.ty, result, ops![x])
        };
        e.push(inst);
    }

    /// `result` of type `to` = address `a` (OpConvertPtrToU: truncated to a 32-bit result;
    /// OpBitcast: a 64-bit integer or a 2-vector of 32-bit integers).
    pub fn address_to_value(self, e: &mut Emitter, b: &mut Builder, a: u32, to: u32, result: u32) {
        let sv = b.scalar_vec(to);
        let inst = if to == self.ty {
            Inst::new(op::COPY_OBJECT, to, result, ops![a])
        } else if sv.is_some_and(|v| v.width == 32 && v.n == 1) {
            let u32t = b.t_u32();
            let lo = e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![a, 0]);
            Inst::new(if to == u32t { op::COPY_OBJECT } else { op::BITCAST }, to, result, ops![lo])
        } else {
            Inst::new(op::BITCAST, to, result, ops![a])
        };
        e.push(inst);
    }

    /// OpPtrEqual / OpPtrNotEqual: the addresses compared as integers.
    #[allow(clippy::too_many_arguments)]
    pub fn compare(&self, e: &mut Emitter, b: &mut Builder, x: u32, y: u32, equal: bool, result_ty: u32, result: u32) {
        let opcode = if equal { op::I_EQUAL } else { op::I_NOT_EQUAL };
        let bool_t = b.t_bool();
        let bv2 = b.t_vec(bool_t, 2);
        let each = e.op(b, opcode, bv2, ops![x, y]);
        e.push(Inst::new(if equal { ALL } else { ANY }, result_ty, result, ops![each]));
    }

    /// OpPtrDiff: (x − y) / `stride` elements, from the offset words (signed 32-bit), as
    /// `result_ty` (a 32- or 64-bit integer).
    #[allow(clippy::too_many_arguments)]
    pub fn diff(&self, e: &mut Emitter, b: &mut Builder, x: u32, y: u32, stride: u32, result_ty: u32, result: u32) {
        let i32t = b.t_int(32, true);
        let (lx, _) = self.words(e, b, x);
        let (ly, _) = self.words(e, b, y);
        let u32t = b.t_u32();
        let bytes = e.op(b, op::I_SUB, u32t, ops![lx, ly]);
        let signed = e.op(b, op::BITCAST, i32t, ops![bytes]);
        let s = b.constant(i32t, &[stride]);
        let n = e.op(b, S_DIV, i32t, ops![signed, s]);
        let inst = match b.scalar_vec(result_ty) {
            Some(v) if v.width == 64 => Inst::new(op::S_CONVERT, result_ty, result, ops![n]),
            _ if result_ty == i32t => Inst::new(op::COPY_OBJECT, result_ty, result, ops![n]),
            _ => Inst::new(op::BITCAST, result_ty, result, ops![n]),
        };
        e.push(inst);
    }
}
