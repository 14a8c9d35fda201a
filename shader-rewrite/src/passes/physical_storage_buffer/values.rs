//! Addresses as plain values where the pointers needed more than a retyping.
use super::*;
use crate::ops;

impl Cx<'_, '_> {
    /// OpSelect of uvec2 addresses before SPIR-V 1.4: the condition must be a vector of the
    /// objects' size (SPIR-V 1.4 allows a scalar one, OpSelect).
    pub(super) fn select(&mut self, e: &mut Emitter, mut inst: Inst) {
        let cond = inst.ops[0];
        let bool_t = self.b.t_bool();
        if self.type_of(cond) == bool_t {
            let bv2 = self.b.t_vec(bool_t, 2);
            inst.ops[0] = e.op(self.b, op::COMPOSITE_CONSTRUCT, bv2, ops![cond, cond]);
        }
        e.push(inst);
    }

    /// OpPtrDiff: elements of the pointer type's ArrayStride (or the pointee's size) between
    /// two addresses.
    pub(super) fn diff(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let p = self.phys(inst.ops[0]).expect("a physical operand");
        let size = || crate::passes::layout::byte_size(self.b, self.layouts, p.pointee, Default::default());
        let stride = p.stride.or_else(size).filter(|&s| s > 0).ok_or_else(|| RewriteError::unsupported(describe(inst), "pointee of unknown size"))?;
        self.addr().diff(e, self.b, inst.ops[0], inst.ops[1], stride, inst.ty, inst.id);
        Ok(())
    }
}
