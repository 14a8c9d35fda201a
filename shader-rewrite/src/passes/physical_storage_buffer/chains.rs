//! Access chains on addresses: the explicit layout's byte offset from the pointer's root
//! ([`super::roots`]), constants folded. Accesses use that offset with the root's record; the
//! chain's address (`root + offset` in the offset word) is made only where the pointer is used
//! as a value.
use super::*;
use crate::ops;
use crate::passes::leaves::Cursor;
use crate::byte_address::Linear;
use fold::Folder;

impl Cx<'_, '_> {
    /// OpAccessChain / OpInBoundsAccessChain (indices into the pointee) and OpPtrAccessChain /
    /// OpInBoundsPtrAccessChain (first an Element step of the pointer type's ArrayStride, SPIR-V
    /// spec 2.16.2: "OpPtrAccessChain ... must have an ArrayStride decoration"); OpCopyObject and
    /// pointer-to-pointer OpBitcast (no step).
    pub(super) fn chain(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let base = inst.ops[0];
        let p = self.phys(base).expect("a physical base");
        let base_delta = self.delta(base);
        let mut scratch = Emitter::new(0);
        let mut cur = Cursor::at_start(self.b, p.pointee, 16);
        cur.off = base_delta;
        (cur.mat, cur.comp_stride) = self.shape(base);
        let mut indices = if matches!(inst.op, op::COPY_OBJECT | op::BITCAST) { &[][..] } else { &inst.ops[1..] };
        if matches!(inst.op, op::PTR_ACCESS_CHAIN | op::IN_BOUNDS_PTR_ACCESS_CHAIN) {
            let element = *indices.first().ok_or_else(|| RewriteError::malformed(0, format!("{}: no Element operand", describe(inst))))?;
            let stride = p.stride.ok_or_else(|| RewriteError::unsupported(describe(inst), "OpPtrAccessChain on a PhysicalStorageBuffer pointer type without ArrayStride"))?;
            let ty = self.type_of(element);
            cur.advance(&mut scratch, self.b, Some(element), ty, stride);
            indices = &indices[1..];
        }
        for &idx in indices {
            let ty = self.type_of(idx);
            cur = cur.step(&mut scratch, self.b, self.layouts, idx, ty, inst)?;
        }
        let insts = scratch.take_insts();
        let lin = self.linear_of(&insts, cur.off);
        let delta = Folder::emit(self.b, e, insts, cur.off);
        self.h.backend.note_linear(delta, lin);
        self.derive(e, inst, base, delta, (cur.mat, cur.comp_stride))?;
        if !matches!(inst.op, op::COPY_OBJECT | op::BITCAST) {
            self.stats.physical_chains += 1;
        }
        Ok(())
    }

    /// The [`Linear`] form of `result`, computed by `insts` (the cursor's additions and
    /// multiplications by constants, and index conversions) from the base pointer's offset
    /// (its form noted before) and indices.
    fn linear_of(&self, insts: &[Inst], result: u32) -> Linear {
        let mut known: HashMap<u32, Linear> = HashMap::default();
        let backend = &self.h.backend;
        let get = |known: &HashMap<u32, Linear>, id: u32| known.get(&id).cloned().unwrap_or_else(|| backend.linear(self.b, id));
        for i in insts {
            let lin = match (i.op, &i.ops[..]) {
                (op::I_ADD, &[x, y]) => get(&known, x).plus(&get(&known, y)),
                (op::I_MUL, &[x, y]) => {
                    let (lx, ly) = (get(&known, x), get(&known, y));
                    match (lx.terms.is_empty(), ly.terms.is_empty()) {
                        (true, _) => ly.scale(lx.c),
                        (_, true) => lx.scale(ly.c),
                        _ => Linear::atom(i.id),
                    }
                }
                _ => Linear::atom(i.id),
            };
            known.insert(i.id, lin);
        }
        get(&known, result)
    }

    /// OpSelect of two pointers of one root (`roots::Derived::Select`): that root plus the
    /// selected offset.
    pub(super) fn select_offset(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let (cond, a, b) = (inst.ops[0], inst.ops[1], inst.ops[2]);
        if self.shape(a) != self.shape(b) {
            return Err(RewriteError::unsupported(describe(inst), "a select of pointers into matrices of different layouts"));
        }
        let (da, db) = (self.delta(a), self.delta(b));
        let delta = if da == db {
            da
        } else {
            let id = self.b.id();
            e.push(Inst::new(op::SELECT, self.b.t_u32(), id, ops![cond, da, db]));
            id
        };
        self.derive(e, inst, a, delta, self.shape(a))
    }

    /// Pointer `inst` is `base`'s root plus `delta` into a place of layout `shape`: recorded for
    /// its accesses, and its address made if it is used as a value.
    fn derive(&mut self, e: &mut Emitter, inst: &Inst, base: u32, delta: u32, shape: Shape) -> Result<(), RewriteError> {
        self.deltas.insert(inst.id, delta);
        if shape != Shape::default() {
            // Only this chain knows the layout (SPIR-V puts MatrixStride and RowMajor on the
            // struct member, not on the pointer type): a pointer that leaves it as a value (a
            // phi, a call, memory, an integer) would reach its accesses without it.
            if self.roots.needs_value.contains(&inst.id) {
                return Err(RewriteError::unsupported(
                    describe(inst),
                    "a pointer into a matrix (or a row-major matrix's column) used as a value: the lowering knows a matrix's MatrixStride and RowMajor only along the access chains from its struct",
                ));
            }
            self.shapes.insert(inst.id, shape);
        }
        if self.roots.needs_value.contains(&inst.id) {
            let root = self.roots.root_of.get(&inst.id).copied().unwrap_or(base);
            if self.b.const_value(delta) == Some(0) {
                e.push(Inst::new(op::COPY_OBJECT, self.addr().ty, inst.id, ops![root]));
            } else {
                self.addr().add(e, self.b, root, delta, inst.id);
            }
        } else {
            self.elided.insert(inst.id);
        }
        Ok(())
    }

    /// The matrix layout and component stride of what pointer `ptr` points at ([`Cx::shapes`];
    /// the default for a root: packed vectors, and no matrix layout).
    pub(super) fn shape(&self, ptr: u32) -> Shape {
        self.shapes.get(&ptr).copied().unwrap_or_default()
    }

    /// The byte offset of pointer `ptr` from its root (a u32 id; constant 0 for a root).
    pub(super) fn delta(&mut self, ptr: u32) -> u32 {
        match self.deltas.get(&ptr) {
            Some(&d) => d,
            None => self.b.c_u32(0),
        }
    }
}
