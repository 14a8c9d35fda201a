//! Atomics through addresses: the same atomic on the buffer's u32 view (32-bit integers) or on
//! a view of the value's type (64-bit integers as u64, 32/64-bit floats), when the whole value
//! lies inside the buffer; otherwise nothing happens and the result is 0.
use super::*;
use crate::builder::{deco, sc};
use crate::byte_address::AliasKind;
use crate::ops;

const ATOMIC_LOAD: u32 = 227;
const ATOMIC_STORE: u32 = 228;
const ATOMIC_EXCHANGE: u32 = 229;
const ATOMIC_COMPARE_EXCHANGE: u32 = 230;
const ATOMIC_COMPARE_EXCHANGE_WEAK: u32 = 231;
const ATOMIC_XOR: u32 = 242;
/// OpAtomicFMinEXT, OpAtomicFMaxEXT (SPV_EXT_shader_atomic_float_min_max), OpAtomicFAddEXT
/// (SPV_EXT_shader_atomic_float_add).
const ATOMIC_FLOAT: [u32; 3] = [5614, 5615, 6035];

impl Cx<'_, '_> {
    pub(super) fn atomic(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let p = self.phys(inst.ops[0]).expect("a physical pointer");
        let sv = self.b.scalar_vec(p.pointee).filter(|v| v.n == 1 && matches!(v.width, 32 | 64));
        let supported = sv.is_some_and(|v| match v.float {
            false => (ATOMIC_LOAD..=ATOMIC_XOR).contains(&inst.op),
            true => matches!(inst.op, ATOMIC_LOAD | ATOMIC_STORE | ATOMIC_EXCHANGE) || ATOMIC_FLOAT.contains(&inst.op),
        });
        let sv = sv.filter(|_| supported).ok_or_else(|| {
            RewriteError::unsupported(describe(inst), "only atomics on 32/64-bit integers and floats (not flag atomics, not 8/16-bit values) are lowered on PhysicalStorageBuffer pointers")
        })?;
        if sv.width == 64 && !sv.float && !self.int64_target {
            return Err(RewriteError::unsupported(describe(inst), "a 64-bit atomic needs shaderInt64 on the target"));
        }
        // 32-bit integers use the word view; others a view of their (unsigned) type.
        let word = sv.width == 32 && !sv.float;
        let uty = if sv.float { p.pointee } else { self.b.t_int(sv.width, false) };
        // Value operands follow pointer, scope and semantics (two semantics for compare-exchange).
        let first_value = if matches!(inst.op, ATOMIC_COMPARE_EXCHANGE | ATOMIC_COMPARE_EXCHANGE_WEAK) { 4 } else { 3 };
        let mut ops = inst.ops.clone();
        if sv.signed {
            for k in first_value..ops.len() {
                ops[k] = e.op(self.b, op::BITCAST, uty, ops![ops[k]]);
            }
        }
        let mut at = self.locate(e, inst.ops[0], (!word).then_some(uty));
        let ok = self.fits(e, at.offset, at.len, sv.width / 8);
        let view_ptrs = if word { at.view_ptrs(e, self.b, &[AliasKind::U32]).to_vec() } else { vec![] };
        self.table.used(self.function, &at);
        let backend = &self.backend;
        let zero = self.b.constant(uty, &vec![0; sv.width as usize / 32]);
        let tys: &[u32] = if inst.op == ATOMIC_STORE { &[] } else { &[uty] };
        let fallback: &[u32] = if inst.op == ATOMIC_STORE { &[] } else { &[zero] };
        let r = e.if_or(
            self.b,
            ok,
            tys,
            |e, b| {
                ops[0] = match at.typed {
                    Some(view) => {
                        let shift = b.c_u32((sv.width / 8).trailing_zeros());
                        let u32t = b.t_u32();
                        let index = e.op(b, op::SHIFT_RIGHT_LOGICAL, u32t, ops![at.offset, shift]);
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
