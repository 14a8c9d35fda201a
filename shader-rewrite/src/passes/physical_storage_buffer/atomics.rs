//! Atomics through addresses: where the lowering checks bounds, a call of the helper for the
//! opcode, its type and its constant scope and semantics operands ([`super::helpers`]), which
//! does the same atomic on the buffer's u32 view (32-bit integers) or on a view of the value's
//! type (64-bit integers as u64, 32/64-bit floats) when the whole value lies inside the buffer;
//! otherwise nothing happens and the result is 0. Where the driver checks bounds
//! (robustBufferAccess2: an atomic outside the descriptor's range modifies nothing) that atomic
//! is emitted in place.
use super::*;
use crate::ops;
use helpers::Kind;

const ATOMIC_LOAD: u32 = 227;
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
            true => matches!(inst.op, ATOMIC_LOAD | op::ATOMIC_STORE | ATOMIC_EXCHANGE) || ATOMIC_FLOAT.contains(&inst.op),
        });
        let sv = sv.filter(|_| supported).ok_or_else(|| {
            RewriteError::unsupported(describe(inst), "only atomics on 32/64-bit integers and floats (not flag atomics, not 8/16-bit values) are lowered on PhysicalStorageBuffer pointers")
        })?;
        if sv.width == 64 && !sv.float && !self.int64_target {
            return Err(RewriteError::unsupported(describe(inst), "a 64-bit atomic needs shaderInt64 on the target"));
        }
        // Signed integers are done on their unsigned twin (the table's views are unsigned).
        let uty = if sv.float { p.pointee } else { self.b.t_int(sv.width, false) };
        // Scope and semantics (two for compare-exchange) follow the pointer; values come last.
        let first_value = if matches!(inst.op, ATOMIC_COMPARE_EXCHANGE | ATOMIC_COMPARE_EXCHANGE_WEAK) { 4 } else { 3 };
        let first_value = first_value.min(inst.ops.len());
        let value_ty = inst.ops.get(first_value).map_or(uty, |&v| self.type_of(v));
        let mut args = ops![0];
        let (rec, delta) = self.record(e, inst.ops[0])?;
        args.extend([rec, delta]);
        for &v in &inst.ops[first_value..] {
            args.push(if sv.signed { e.op(self.b, op::BITCAST, uty, ops![v]) } else { v });
        }
        if !self.h.checked {
            let has_result = inst.op != op::ATOMIC_STORE;
            let r = self.h.atomic_here(e, self.b, rec, delta, inst.op, uty, &inst.ops[1..first_value], &args[3..], has_result);
            if let Some(r) = r {
                if uty != inst.ty {
                    e.push(Inst::new(op::BITCAST, inst.ty, inst.id, ops![r]));
                } else if !e.rename_last(r, inst.id) {
                    e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![r]));
                }
            }
            self.stats.physical_atomics += 1;
            return Ok(());
        }
        let (result_ty, value_ty) = if sv.signed { (if inst.op == op::ATOMIC_STORE { self.b.t_void() } else { uty }, uty) } else { (if inst.op == op::ATOMIC_STORE { self.b.t_void() } else { inst.ty }, value_ty) };
        let kind = Kind::Atomic { opcode: inst.op, result_ty, uty, value_ty, constants: inst.ops[1..first_value].to_vec(), values: inst.ops.len() - first_value };
        args[0] = self.h.get(self.b, kind, inst)?;
        if inst.op == op::ATOMIC_STORE {
            let void = self.b.t_void();
            e.op(self.b, op::FUNCTION_CALL, void, args);
        } else if sv.signed {
            let r = e.op(self.b, op::FUNCTION_CALL, uty, args);
            e.push(Inst::new(op::BITCAST, inst.ty, inst.id, ops![r]));
        } else {
            e.push(Inst::new(op::FUNCTION_CALL, inst.ty, inst.id, args));
        }
        self.stats.physical_atomics += 1;
        Ok(())
    }
}
