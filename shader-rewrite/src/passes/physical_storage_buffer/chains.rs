//! Access chains on addresses: the explicit layout's byte offset added to the address.
use super::*;
use crate::passes::leaves::Cursor;

impl Cx<'_, '_> {
    /// OpAccessChain / OpInBoundsAccessChain (indices into the pointee) and OpPtrAccessChain /
    /// OpInBoundsPtrAccessChain (first an Element step of the pointer type's ArrayStride, SPIR-V
    /// spec 2.16.2: "OpPtrAccessChain ... must have an ArrayStride decoration").
    pub(super) fn chain(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let base = inst.ops[0];
        let p = self.phys(base).expect("a physical base");
        let mut cur = Cursor::at_start(self.b, p.pointee, 16);
        let mut indices = &inst.ops[1..];
        if matches!(inst.op, PTR_ACCESS_CHAIN | IN_BOUNDS_PTR_ACCESS_CHAIN) {
            let element = *indices.first().ok_or_else(|| RewriteError::malformed(0, format!("{}: no Element operand", describe(inst))))?;
            let stride = p.stride.ok_or_else(|| RewriteError::unsupported(describe(inst), "OpPtrAccessChain on a PhysicalStorageBuffer pointer type without ArrayStride"))?;
            let ty = self.type_of(element);
            cur.advance(e, self.b, Some(element), ty, stride);
            indices = &indices[1..];
        }
        for &idx in indices {
            let ty = self.type_of(idx);
            cur = cur.step(e, self.b, self.layouts, idx, ty, inst)?;
        }
        self.addr.add(e, self.b, base, cur.off, inst.id);
        self.stats.physical_chains += 1;
        Ok(())
    }
}
