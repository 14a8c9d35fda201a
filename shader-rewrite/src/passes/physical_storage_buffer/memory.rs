//! OpLoad, OpStore and OpCopyMemory through addresses: a call of the access helper of the
//! value's type with the pointer's located record and byte offset ([`super::helpers`]). Values
//! holding 8/16-bit scalars are split here, each such leaf crossing the call as its 32-bit twin.
use super::*;
use crate::builder::sc;
use crate::byte_address::{AccessShape, Robustness};
use crate::ops;
use crate::passes::layout::contains_width;
use crate::passes::leaves::{Cursor, Leaf};
use crate::passes::util::{split_memory_operands, without_aligned};
use crate::target::Target;
use helpers::{Helpers, Kind};
use table::Located;

/// What every leaf of one access shares: the buffer, the memory operands for the emitted
/// accesses, the target.
pub(super) struct LeafAccess<'l> {
    pub at: &'l mut Located,
    pub mem: &'l [u32],
    pub target: Target,
}

impl LeafAccess<'_> {
    /// One leaf: the bytes [offset + leaf.off, + size) must lie inside the buffer.
    pub fn emit(&mut self, backend: &mut Backend, e: &mut Emitter, b: &mut Builder, leaf: &Leaf, value: Option<u32>) -> u32 {
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

/// An access through a pointer: the helper kind's common part and where it starts.
struct Access {
    rec: u32,
    delta: u32,
    cur: Cursor,
    mem: Vec<u32>,
}

impl Cx<'_, '_> {
    /// Where an access through pointer `ptr` starts: its record and byte offset, the pointee at
    /// that offset, aligned as the memory operands' Aligned says (required on physical
    /// pointers; 1 without it).
    fn access(&mut self, e: &mut Emitter, ptr: u32, mem: &[u32]) -> Access {
        let p = self.phys(ptr).expect("a physical pointer");
        let align = split_memory_operands(mem).1.filter(|a| a.is_power_of_two()).unwrap_or(1).min(16);
        let (rec, delta) = self.record(e, ptr);
        let mut cur = Cursor::at_start(self.b, p.pointee, align);
        cur.off = delta;
        Access { rec, delta, cur, mem: without_aligned(mem) }
    }

    fn load_from(&mut self, e: &mut Emitter, ptr: u32, mem: &[u32], inst: &Inst, result: u32) -> Result<u32, RewriteError> {
        let a = self.access(e, ptr, mem);
        self.stats.physical_loads += 1;
        let ty = a.cur.ty;
        let result = if result == 0 { self.b.id() } else { result };
        if !contains_width(self.b, ty, &[8, 16]) {
            let rt = Helpers::boundary_ty(self.b, ty);
            let f = self.h.get(self.b, Kind::Access { store: false, ty, align: a.cur.align, mem: a.mem }, inst)?;
            e.push(Inst::new(op::FUNCTION_CALL, rt, result, ops![f, a.rec, a.delta]));
            return Ok(result);
        }
        let (h, rec) = (&mut self.h, a.rec);
        let mut err = None;
        let v = self.splitter.load(e, self.b, &a.cur, inst, &mut |e, b, leaf| {
            let kind = Kind::Access { store: false, ty: leaf.ty, align: leaf.align, mem: a.mem.clone() };
            let rt = Helpers::boundary_ty(b, leaf.ty);
            match h.get(b, kind, inst) {
                Ok(f) => e.op(b, op::FUNCTION_CALL, rt, ops![f, rec, leaf.off]),
                Err(x) => {
                    err.get_or_insert(x);
                    0
                }
            }
        })?;
        if let Some(x) = err {
            return Err(x);
        }
        e.push(Inst::new(op::COPY_OBJECT, ty, result, ops![v]));
        Ok(result)
    }

    fn store_to(&mut self, e: &mut Emitter, ptr: u32, value: u32, mem: &[u32], inst: &Inst) -> Result<(), RewriteError> {
        let a = self.access(e, ptr, mem);
        self.stats.physical_stores += 1;
        let ty = a.cur.ty;
        let void = self.b.t_void();
        if !contains_width(self.b, ty, &[8, 16]) {
            let f = self.h.get(self.b, Kind::Access { store: true, ty, align: a.cur.align, mem: a.mem }, inst)?;
            e.op(self.b, op::FUNCTION_CALL, void, ops![f, a.rec, a.delta, value]);
            return Ok(());
        }
        let (h, rec) = (&mut self.h, a.rec);
        let mut err = None;
        self.splitter.store(e, self.b, &a.cur, value, inst, &mut |e, b, leaf, v| {
            let kind = Kind::Access { store: true, ty: leaf.ty, align: leaf.align, mem: a.mem.clone() };
            match h.get(b, kind, inst) {
                Ok(f) => {
                    e.op(b, op::FUNCTION_CALL, void, ops![f, rec, leaf.off, v]);
                }
                Err(x) => {
                    err.get_or_insert(x);
                }
            }
        })?;
        err.map_or(Ok(()), Err)
    }

    pub(super) fn load(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        self.load_from(e, inst.ops[0], &inst.ops[1..], inst, inst.id)?;
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
            self.load_from(e, src, src_mem, inst, 0)?
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
