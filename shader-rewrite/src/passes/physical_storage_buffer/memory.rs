//! OpLoad, OpStore and OpCopyMemory through addresses: the address is decoded once per
//! instruction, then every scalar/vector leaf goes through the byte-address backend, bounds
//! checked against the buffer's length (out of bounds: 0 loaded, nothing stored).
use super::*;
use crate::builder::sc;
use crate::byte_address::{AccessShape, Robustness};
use crate::target::Target;
use crate::ops;
use crate::passes::leaves::{Cursor, Leaf};
use crate::passes::util::{split_memory_operands, without_aligned};
use table::Located;

/// What every leaf of one load or store shares.
struct LeafAccess<'l> {
    at: &'l mut Located,
    mem: &'l [u32],
    target: Target,
}

impl LeafAccess<'_> {
    /// One leaf: the bytes [offset + leaf.off, + size) must lie inside the buffer.
    fn emit(&mut self, backend: &mut Backend, e: &mut Emitter, b: &mut Builder, leaf: &Leaf, value: Option<u32>) -> u32 {
        let u32t = b.t_u32();
        let zero = b.c_u32(0);
        let a = if leaf.off == zero { self.at.offset } else { e.op(b, op::I_ADD, u32t, ops![self.at.offset, leaf.off]) };
        let shape = AccessShape {
            store: value.is_some(),
            storage: sc::STORAGE_BUFFER,
            value_ty: leaf.ty,
            value: leaf.sv,
            align: leaf.align,
            robustness: Robustness::PerElement { stride: leaf.sv.n * leaf.sv.width / 8 },
            mem_ops: self.mem.to_vec(),
            nonuniform: true,
            wide: leaf.sv.width < 32,
        };
        let view_ptrs = self.at.view_ptrs(e, b, &shape.views_used(&self.target)).to_vec();
        backend.emit(e, b, &shape, &view_ptrs, a, Some(self.at.len), Some(a), value)
    }
}

impl Cx<'_, '_> {
    /// The buffer address `a` names.
    pub(super) fn locate(&mut self, e: &mut Emitter, a: u32, typed: Option<u32>) -> Located {
        let d = self.addr.decode(e, self.b, a, self.table.count());
        self.table.locate(e, self.b, &self.backend, &d, typed, self.waterfall)
    }

    /// Where an access through pointer `ptr` starts: the pointee at offset 0, aligned as the
    /// memory operands' Aligned says (required on physical pointers; 1 without it).
    fn start(&mut self, ptr: u32, mem: &[u32]) -> Cursor {
        let p = self.phys(ptr).expect("a physical pointer");
        let align = split_memory_operands(mem).1.filter(|a| a.is_power_of_two()).unwrap_or(1).min(16);
        Cursor::at_start(self.b, p.pointee, align)
    }

    fn load_from(&mut self, e: &mut Emitter, ptr: u32, mem: &[u32], inst: &Inst) -> Result<u32, RewriteError> {
        let cur = self.start(ptr, mem);
        let mut at = self.locate(e, ptr, None);
        let mem = without_aligned(mem);
        let mut access = LeafAccess { at: &mut at, mem: &mem, target: self.backend.target };
        let backend = &mut self.backend;
        let v = self.splitter.load(e, self.b, &cur, inst, &mut |e, b, leaf| access.emit(backend, e, b, leaf, None))?;
        self.table.used(self.function, &at);
        self.stats.physical_loads += 1;
        Ok(v)
    }

    fn store_to(&mut self, e: &mut Emitter, ptr: u32, value: u32, mem: &[u32], inst: &Inst) -> Result<(), RewriteError> {
        let cur = self.start(ptr, mem);
        let mut at = self.locate(e, ptr, None);
        let mem = without_aligned(mem);
        let mut access = LeafAccess { at: &mut at, mem: &mem, target: self.backend.target };
        let backend = &mut self.backend;
        self.splitter.store(e, self.b, &cur, value, inst, &mut |e, b, leaf, v| {
            access.emit(backend, e, b, leaf, Some(v));
        })?;
        self.table.used(self.function, &at);
        self.stats.physical_stores += 1;
        Ok(())
    }

    pub(super) fn load(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let v = self.load_from(e, inst.ops[0], &inst.ops[1..], inst)?;
        e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![v]));
        Ok(())
    }

    pub(super) fn store(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let value = *inst.ops.get(1).ok_or_else(|| RewriteError::malformed(0, "OpStore without an object"))?;
        self.store_to(e, inst.ops[0], value, &inst.ops[2..], inst)
    }

    /// OpCopyMemory with an address on either side: a load and a store (the first memory
    /// operands are the target's, the second the source's; one set serves both, OpCopyMemory).
    pub(super) fn copy_memory(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let (dst, src) = (inst.ops[0], inst.ops[1]);
        let (dst_mem, src_mem) = copy_memory_operands(&inst.ops[2..]);
        let value = if self.phys(src).is_some() {
            self.load_from(e, src, src_mem, inst)?
        } else {
            let ty = self.b.pointer(self.type_of(src)).map(|(_, t)| t).ok_or_else(|| RewriteError::malformed(0, format!("{}: source %{src} is not a pointer", describe(inst))))?;
            e.op(self.b, op::LOAD, ty, ops![src])
        };
        if self.phys(dst).is_some() {
            self.store_to(e, dst, value, dst_mem, inst)
        } else {
            e.stmt(op::STORE, ops![dst, value]);
            Ok(())
        }
    }
}

/// OpCopyMemory's operands after the pointers: (target's, source's) memory operands.
fn copy_memory_operands(ops: &[u32]) -> (&[u32], &[u32]) {
    let Some(&mask) = ops.first() else { return (&[], &[]) };
    // Aligned (0x2) takes one literal, MakePointerAvailable (0x8) and MakePointerVisible
    // (0x10) one scope id each (SPIR-V spec 3.26).
    let len = 1 + (mask & 0x2 != 0) as usize + (mask & 0x8 != 0) as usize + (mask & 0x10 != 0) as usize;
    let len = len.min(ops.len());
    let rest = &ops[len..];
    (&ops[..len], if rest.is_empty() { &ops[..len] } else { rest })
}

