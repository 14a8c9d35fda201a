//! Integer atomics through addresses: the same atomic on the buffer's u32 view (32-bit) or on a
//! `uint64_t` view (64-bit), when the whole value lies inside the buffer; otherwise nothing
//! happens and the result is 0.
use super::*;
use crate::builder::{deco, sc};
use crate::byte_address::AliasKind;
use crate::ops;

const ATOMIC_STORE: u32 = 228;
const ATOMIC_COMPARE_EXCHANGE: u32 = 230;
const ATOMIC_COMPARE_EXCHANGE_WEAK: u32 = 231;

impl Cx<'_, '_> {
    pub(super) fn atomic(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let p = self.phys(inst.ops[0]).expect("a physical pointer");
        let sv = self.b.scalar_vec(p.pointee).filter(|v| v.n == 1 && !v.float && matches!(v.width, 32 | 64) && matches!(inst.op, 227..=242));
        let sv = sv.ok_or_else(|| RewriteError::unsupported(describe(inst), "only 32- and 64-bit integer atomics (OpAtomicLoad..OpAtomicXor) on PhysicalStorageBuffer pointers are lowered"))?;
        let wide = sv.width == 64;
        if wide && !self.int64_target {
            return Err(RewriteError::unsupported(describe(inst), "a 64-bit atomic needs shaderInt64 on the target"));
        }
        let uty = self.b.t_int(sv.width, false);
        // Value operands follow pointer, scope and semantics (two semantics for compare-exchange).
        let first_value = if matches!(inst.op, ATOMIC_COMPARE_EXCHANGE | ATOMIC_COMPARE_EXCHANGE_WEAK) { 4 } else { 3 };
        let mut ops = inst.ops.clone();
        if sv.signed {
            for k in first_value..ops.len() {
                ops[k] = e.op(self.b, op::BITCAST, uty, ops![ops[k]]);
            }
        }
        let mut at = self.locate(e, inst.ops[0], wide);
        let ok = self.fits(e, at.offset, at.len, sv.width / 8);
        let view_ptrs = if wide { vec![] } else { at.view_ptrs(e, self.b, &[AliasKind::U32]).to_vec() };
        self.table.used(self.function, &at);
        let backend = &self.backend;
        let zero = if wide { self.b.constant(uty, &[0, 0]) } else { self.b.c_u32(0) };
        let tys: &[u32] = if inst.op == ATOMIC_STORE { &[] } else { &[uty] };
        let fallback: &[u32] = if inst.op == ATOMIC_STORE { &[] } else { &[zero] };
        let r = e.if_or(
            self.b,
            ok,
            tys,
            |e, b| {
                ops[0] = match at.view64 {
                    Some(view) => {
                        let three = b.c_u32(3);
                        let u32t = b.t_u32();
                        let index = e.op(b, op::SHIFT_RIGHT_LOGICAL, u32t, ops![at.offset, three]);
                        let ptr_ty = b.t_ptr(sc::STORAGE_BUFFER, uty);
                        let c0 = b.c_u32(0);
                        let ptr = e.op(b, op::ACCESS_CHAIN, ptr_ty, ops![view, c0, index]);
                        b.decorate(ptr, deco::NON_UNIFORM, &[]);
                        ptr
                    }
                    None => backend.word_pointer(e, b, sc::STORAGE_BUFFER, &view_ptrs, at.offset, true),
                };
                if inst.op == ATOMIC_STORE {
                    e.stmt(inst.op, ops);
                    smallvec::smallvec![]
                } else {
                    smallvec::smallvec![e.op(b, inst.op, uty, ops)]
                }
            },
            fallback,
        );
        if let Some(&r) = r.first() {
            let opcode = if sv.signed { op::BITCAST } else { op::COPY_OBJECT };
            e.push(Inst::new(opcode, inst.ty, inst.id, ops![r]));
        }
        self.stats.physical_atomics += 1;
        Ok(())
    }

    /// `size` bytes at `offset` lie inside `len` bytes: `len >= size && offset <= len - size`.
    fn fits(&mut self, e: &mut Emitter, offset: u32, len: u32, size: u32) -> u32 {
        let (u32t, bool_t) = (self.b.t_u32(), self.b.t_bool());
        let s = self.b.c_u32(size);
        let room = e.op(self.b, op::I_SUB, u32t, ops![len, s]);
        let big = e.op(self.b, op::U_GREATER_THAN_EQUAL, bool_t, ops![len, s]);
        let below = e.op(self.b, 178 /* OpULessThanEqual */, bool_t, ops![offset, room]);
        e.op(self.b, op::LOGICAL_AND, bool_t, ops![big, below])
    }
}
