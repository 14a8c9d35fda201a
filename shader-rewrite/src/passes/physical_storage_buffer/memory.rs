//! OpLoad, OpStore and OpCopyMemory through addresses: a call of the access helper of the
//! value's type with the pointer's located record and byte offset ([`super::helpers`]). Values
//! holding 8/16-bit scalars are split here, each such leaf crossing the call as its 32-bit twin.
use super::*;
use crate::builder::sc;
use crate::byte_address::{AccessShape, AliasKind, Backend, Linear, Robustness};
use crate::ops;
use crate::passes::layout::contains_width;
use crate::passes::leaves::{moves_as_twin, Cursor, Leaf};
use crate::passes::util::{split_memory_operands, without_aligned};
use crate::target::Target;
use fold::Folder;
use table::Located;

/// What every leaf of one access shares: the buffer, the memory operands for the emitted
/// accesses, the target, and the bounds limits made so far.
pub(super) struct LeafAccess<'l> {
    pub at: &'l mut Located,
    pub mem: &'l [u32],
    pub target: Target,
    pub old_select: bool,
    pub oob_poison: Option<u8>,
    /// The lowering checks bounds (false: the driver's robustBufferAccess2 does).
    pub checked: bool,
    /// Per access size: the limit, and the buffer if an access of that size fits in it at all
    /// (else slot 0), with its view pointers made so far.
    limits: Vec<(u32, u32, Located)>,
}

impl<'l> LeafAccess<'l> {
    pub fn new(at: &'l mut Located, mem: &'l [u32], target: Target, old_select: bool, oob_poison: Option<u8>, checked: bool) -> Self {
        LeafAccess { at, mem, target, old_select, oob_poison, checked, limits: vec![] }
    }

    /// `len >= size ? len - size + 1 : 0`: the offsets at which `size` bytes fit (so one
    /// `offset < limit` is the whole check, without overflow), once per size; with the buffer
    /// loads of that size read (slot 0 where none fits: offset 0 of it is then never outside a
    /// buffer that is read).
    fn limit(&mut self, e: &mut Emitter, b: &mut Builder, size: u32) -> usize {
        if let Some(n) = self.limits.iter().position(|(s, _, _)| *s == size) {
            return n;
        }
        let (u32t, bool_t) = (b.t_u32(), b.t_bool());
        let (s, room_c, zero) = (b.c_u32(size), b.c_u32(size - 1), b.c_u32(0));
        let big = e.op(b, op::U_GREATER_THAN_EQUAL, bool_t, ops![self.at.len, s]);
        let room = e.op(b, op::I_SUB, u32t, ops![self.at.len, room_c]);
        let l = e.op(b, op::SELECT, u32t, ops![big, room, zero]);
        let slot = e.op(b, op::SELECT, u32t, ops![big, self.at.slot(), zero]);
        self.limits.push((size, l, self.at.at_slot(slot)));
        self.limits.len() - 1
    }

    /// One leaf, without a branch: when the bytes [offset + leaf.off, + size) lie inside the
    /// buffer it is accessed there; else a load reads offset 0 (of slot 0 after the
    /// one-comparison check, [`whole_unit_check`]; else of this buffer when `size` bytes fit in
    /// it, else of slot 0, a null descriptor) and yields 0 (or the poison pattern),
    /// a store writes to offset 0 of slot 0 (dropped by the null descriptor; a real buffer there
    /// would only see writes nobody reads).
    pub fn emit(&mut self, backend: &mut Backend, e: &mut Emitter, b: &mut Builder, leaf: &Leaf, value: Option<u32>) -> u32 {
        let (u32t, bool_t) = (b.t_u32(), b.t_bool());
        let zero = b.c_u32(0);
        let a = if leaf.off == zero { self.at.offset } else { e.op(b, op::I_ADD, u32t, ops![self.at.offset, leaf.off]) };
        if !self.checked {
            // robustBufferAccess2: the driver checks the access against the descriptor's range
            // (a load outside reads 0, a store outside is dropped), as the checks below would.
            let shape = self.shape(b, leaf, value.is_some());
            return raw_access(backend, e, b, &shape, &self.target, self.at, a, value);
        }
        let size = leaf.sv.n * leaf.sv.width / 8;
        if let Some(ok) = whole_unit_check(backend, e, b, a, self.at.len, size, leaf.align) {
            // Outside: offset 0 of slot 0 (a null descriptor, or at least 16 bytes nothing reads).
            let a = e.op(b, op::SELECT, u32t, ops![ok, a, zero]);
            let slot = e.op(b, op::SELECT, u32t, ops![ok, self.at.slot(), zero]);
            let mut at = self.at.at_slot(slot);
            return self.finish(backend, e, b, leaf, value, a, ok, &mut at);
        }
        let n = self.limit(e, b, size);
        let ok = e.op(b, op::U_LESS_THAN, bool_t, ops![a, self.limits[n].1]);
        let a = e.op(b, op::SELECT, u32t, ops![ok, a, zero]);
        if value.is_some() {
            let slot = e.op(b, op::SELECT, u32t, ops![ok, self.at.slot(), zero]);
            let mut at = self.at.at_slot(slot);
            return self.finish(backend, e, b, leaf, value, a, ok, &mut at);
        }
        // (Loads of one size share the buffer they read, view pointers included.)
        let mut at = self.limits[n].2.clone();
        let v = self.finish(backend, e, b, leaf, value, a, ok, &mut at);
        self.limits[n].2 = at;
        v
    }

    /// The access itself at checked offset `a` through the buffer `at` (the views it needs made
    /// there), a load selected to the out-of-range value where `ok` is false.
    #[allow(clippy::too_many_arguments)]
    fn finish(&mut self, backend: &mut Backend, e: &mut Emitter, b: &mut Builder, leaf: &Leaf, value: Option<u32>, a: u32, ok: u32, at: &mut Located) -> u32 {
        let shape = self.shape(b, leaf, value.is_some());
        let v = raw_access(backend, e, b, &shape, &self.target, at, a, value);
        self.at.used.extend(at.used.iter().copied());
        if value.is_some() {
            return v;
        }
        self.select_loaded(e, b, leaf, ok, v)
    }

    fn shape(&self, b: &Builder, leaf: &Leaf, store: bool) -> AccessShape {
        AccessShape {
            store,
            storage: sc::STORAGE_BUFFER,
            value_ty: leaf.ty,
            value: leaf.sv,
            align: leaf.align,
            robustness: Robustness::None,
            mem_ops: self.mem.to_vec(),
            nonuniform: !self.at.uniform(),
            wide: moves_as_twin(b, leaf.sv, store),
        }
    }

    /// `ok ? v : the out-of-range value` for a loaded leaf.
    fn select_loaded(&self, e: &mut Emitter, b: &mut Builder, leaf: &Leaf, ok: u32, v: u32) -> u32 {
        let bool_t = b.t_bool();
        // The loaded value's type: the leaf's, or its 32-bit twin.
        let ty = helpers::Helpers::boundary_ty(b, leaf.ty, false);
        let oob = oob_value(b, ty, self.oob_poison);
        let cond = if self.old_select && leaf.sv.n > 1 {
            // Before SPIR-V 1.4 OpSelect of vectors wants a vector condition.
            let bv = b.t_vec(bool_t, leaf.sv.n);
            e.op(b, op::COMPOSITE_CONSTRUCT, bv, vec![ok; leaf.sv.n as usize])
        } else {
            ok
        };
        e.op(b, op::SELECT, ty, ops![cond, v, oob])
    }
}

/// Notes leaf offset `off` (`rel` bytes past the split access's offset `delta`, of form
/// `base`) for the backend's element indices ([`Backend::note_based`]).
fn note_leaf(backend: &mut Backend, base: &Linear, delta: u32, off: u32, rel: u32) {
    if off != delta {
        backend.note_linear(off, base.clone().plus(&Linear { c: rel, terms: Default::default() }));
    }
}

/// The access of `shape` at byte `a` of the buffer `at`, unchecked (the views it needs made
/// there).
#[allow(clippy::too_many_arguments)]
fn raw_access(backend: &mut Backend, e: &mut Emitter, b: &mut Builder, shape: &AccessShape, target: &Target, at: &mut Located, a: u32, value: Option<u32>) -> u32 {
    let views = shape.views_used(target);
    let view_ptrs = at.view_ptrs(e, b, &views).to_vec();
    backend.emit(e, b, shape, &view_ptrs, a, None, None, value)
}

/// The check that `size` bytes at byte offset `a` lie inside a buffer of `len` bytes, in one
/// comparison, where `len` is a whole number of words (taken through the word view) and the
/// access is one unit of the `size`-byte view (`size` 4, 8 or 16 and `Aligned` at least that:
/// `plan` in crate::byte_address then takes exactly one such unit): `(a | (size - 4)) < len`.
/// For `a` a multiple of `size` that is `a + size <= len`; for any other `a` the unit read,
/// `size` bytes at `a` rounded down to a multiple of `size`, still lies inside (`len` is a
/// multiple of 4). None where the general check is needed.
pub(super) fn whole_unit_check(backend: &Backend, e: &mut Emitter, b: &mut Builder, a: u32, len: u32, size: u32, align: u32) -> Option<u32> {
    if backend.length_view(sc::STORAGE_BUFFER) != AliasKind::U32 || !matches!(size, 4 | 8 | 16) || align < size {
        return None;
    }
    let (u32t, bool_t) = (b.t_u32(), b.t_bool());
    let probe = if size == 4 {
        a
    } else {
        let low = b.c_u32(size - 4);
        e.op(b, op::BITWISE_OR, u32t, ops![a, low])
    };
    Some(e.op(b, op::U_LESS_THAN, bool_t, ops![probe, len]))
}

/// What an out-of-range load of a `ty` (a 32/64-bit scalar or vector) returns: 0, or the debug
/// poison byte repeated.
fn oob_value(b: &mut Builder, ty: u32, poison: Option<u8>) -> u32 {
    let sv = b.scalar_vec(ty).expect("a scalar or vector");
    // One literal word per 32 bits; a narrower type's literal has its high bits 0 (SPIR-V spec
    // 2.2.1, Literal).
    let pattern = poison.unwrap_or(0) as u32 * 0x0101_0101;
    let byte = if sv.width < 32 { pattern & ((1 << sv.width) - 1) } else { pattern };
    let comp = b.constant(sv.comp_ty, &vec![byte; (sv.width as usize).div_ceil(32)]);
    if sv.n == 1 {
        comp
    } else {
        b.constant_composite(ty, &vec![comp; sv.n as usize])
    }
}

/// The alignment an access through a physical pointer is lowered for: its `Aligned` operand
/// (required on physical pointers), 1 without one or for a value that is not a power of two
/// (invalid SPIR-V, not trusted), at most 16 (no view is wider). Every decision about views
/// (`words_only`, `one_unit`) reads it from here, so none assumes more than the accesses get.
pub(super) fn access_alignment(mem: &[u32]) -> u32 {
    split_memory_operands(mem).1.filter(|a| a.is_power_of_two()).unwrap_or(1).min(16)
}

/// An access through a pointer: the helper kind's common part and where it starts.
struct Access {
    rec: u32,
    delta: u32,
    cur: Cursor,
    mem: Vec<u32>,
}

impl Access {
    /// Is the value split into its leaves here, one helper call per leaf, rather than moved by
    /// one helper of its type? For 8/16-bit scalars (moved as their 32-bit twins), and for a
    /// matrix or a row-major column whose layout only the pointer's chain knows (a helper is
    /// shared by every access of its type, whatever the layout).
    fn split_in_caller(&self, b: &Builder) -> bool {
        contains_width(b, self.cur.ty, &[8, 16]) || (self.cur.mat, self.cur.comp_stride) != Shape::default()
    }
}

/// A composite access's helper, but for the record and offset: (store, value type,
/// Aligned, the other memory operands).
pub(super) type CompositeKey = (bool, u32, u32, Vec<u32>);

impl Cx<'_, '_> {
    /// The key of a `store` (or load) of what physical pointer `ptr` points to, if that is a
    /// composite.
    fn composite_key(&self, ptr: u32, store: bool, mem: &[u32]) -> Option<CompositeKey> {
        let p = self.phys(ptr)?;
        self.b.scalar_vec(p.pointee).is_none().then(|| (store, p.pointee, access_alignment(mem), without_aligned(mem)))
    }

    /// Counts every function's composite loads and stores through physical pointers by
    /// [`CompositeKey`] (loads the lowering then reuses included: at worst a helper is made
    /// for one access, and inlined).
    pub(super) fn count_composites(&mut self, functions: &[Function]) {
        for i in functions.iter().flat_map(|f| f.blocks.iter().flat_map(|b| b.insts.iter())) {
            let keys = match i.op {
                op::LOAD => [self.composite_key(i.ops[0], false, &i.ops[1..]), None],
                op::STORE if i.ops.len() >= 2 => [self.composite_key(i.ops[0], true, &i.ops[2..]), None],
                op::COPY_MEMORY if i.ops.len() >= 2 => {
                    let (dst_mem, src_mem) = copy_memory_operands(&i.ops[2..]);
                    [self.composite_key(i.ops[0], true, dst_mem), self.composite_key(i.ops[1], false, src_mem)]
                }
                _ => continue,
            };
            for k in keys.into_iter().flatten() {
                *self.composites.entry(k).or_default() += 1;
            }
        }
    }

    /// Is `a` a composite access split here (its leaves called or emitted from here)? Where the
    /// driver checks bounds, always (the leaves are emitted in place: nothing is called); else
    /// when it is the module's only access of its kind (a helper of its own would be called
    /// once and inlined again: the same code, made twice).
    fn split_here(&self, a: &Access, store: bool) -> bool {
        self.b.scalar_vec(a.cur.ty).is_none() && (!self.h.checked || self.composites.get(&(store, a.cur.ty, a.cur.align, a.mem.clone())).is_some_and(|&n| n == 1))
    }

    /// May the leaves of a composite split here move as 8/16-byte units ([`units`])? Where the
    /// driver checks bounds and vector accesses per component, as for [`super::combine`].
    fn units_here(&self) -> bool {
        !self.h.checked && self.h.backend.target.robust_vector_components
    }

    /// Where an access through pointer `ptr` starts: its record and byte offset, the pointee at
    /// that offset, aligned as the memory operands' Aligned says (required on physical
    /// pointers; 1 without it).
    fn access(&mut self, e: &mut Emitter, ptr: u32, mem: &[u32]) -> Result<Access, RewriteError> {
        let p = self.phys(ptr).expect("a physical pointer");
        let align = access_alignment(mem);
        let (rec, delta) = self.record(e, ptr)?;
        let mut cur = Cursor::at_start(self.b, p.pointee, align);
        cur.off = delta;
        (cur.mat, cur.comp_stride) = self.shape(ptr);
        Ok(Access { rec, delta, cur, mem: without_aligned(mem) })
    }

    fn load_from(&mut self, e: &mut Emitter, ptr: u32, mem: &[u32], inst: &Inst, result: u32) -> Result<u32, RewriteError> {
        let a = self.access(e, ptr, mem)?;
        self.stats.physical_loads += 1;
        let ty = a.cur.ty;
        let result = if result == 0 { self.b.id() } else { result };
        if !a.split_in_caller(self.b) && !self.split_here(&a, false) {
            return self.h.call_access(e, self.b, ty, a.cur.align, &a.mem, a.rec, a.delta, None, Some(result), inst);
        }
        let plan = if self.units_here() { units::plan(&mut self.splitter, self.b, &a.cur, inst, false) } else { None };
        self.stats.physical_combined_loads += plan.as_ref().map_or(0, |(units, _)| units.iter().map(|u| u.leaves as u32).sum());
        let (h, rec) = (&mut self.h, a.rec);
        let mut err = None;
        // The leaves' offsets folded where they are constants (a helper's body is, Folder::blocks).
        let mut split = Emitter::new(e.label());
        let (mut index, mut wide) = (0, vec![0u32; plan.as_ref().map_or(0, |p| p.0.len())]);
        let base_lin = h.backend.linear(self.b, a.delta);
        let v = self.splitter.load(&mut split, self.b, &a.cur, inst, &mut |e, b, leaf| {
            let k = index;
            index += 1;
            note_leaf(&mut h.backend, &base_lin, a.delta, leaf.off, leaf.rel);
            let unit = plan.as_ref().and_then(|(units, member)| member[k].map(|(u, byte)| (u, byte, units[u].size)));
            let got = match unit {
                // A leaf of a unit: the unit loaded once (where its first leaf in split order
                // is), this leaf its part.
                Some((u, byte, size)) => {
                    if wide[u] == 0 {
                        let u32t = b.t_u32();
                        let (ty, start) = (b.t_vec(u32t, size / 4), if byte == 0 { leaf.off } else { let c = b.c_u32(byte); e.op(b, op::I_SUB, u32t, ops![leaf.off, c]) });
                        note_leaf(&mut h.backend, &base_lin, a.delta, start, leaf.rel.wrapping_sub(byte));
                        wide[u] = h.call_access(e, b, ty, size, &a.mem, rec, start, None, None, inst).unwrap_or_else(|x| {
                            err.get_or_insert(x);
                            0
                        });
                    }
                    Ok(units::part(e, b, wide[u], size / 4, leaf.ty, leaf.sv.n * leaf.sv.width / 32, byte))
                }
                None => h.call_access(e, b, leaf.ty, leaf.align, &a.mem, rec, leaf.off, None, None, inst),
            };
            got.unwrap_or_else(|x| {
                err.get_or_insert(x);
                0
            })
        })?;
        if let Some(x) = err {
            return Err(x);
        }
        let v = Folder::emit(self.b, e, split.take_insts(), v);
        e.push(Inst::new(op::COPY_OBJECT, ty, result, ops![v]));
        Ok(result)
    }

    fn store_to(&mut self, e: &mut Emitter, ptr: u32, value: u32, mem: &[u32], inst: &Inst) -> Result<(), RewriteError> {
        let a = self.access(e, ptr, mem)?;
        self.stats.physical_stores += 1;
        let ty = a.cur.ty;
        if !a.split_in_caller(self.b) && !self.split_here(&a, true) {
            self.h.call_access(e, self.b, ty, a.cur.align, &a.mem, a.rec, a.delta, Some(value), None, inst)?;
            return Ok(());
        }
        let plan = if self.units_here() { units::plan(&mut self.splitter, self.b, &a.cur, inst, true) } else { None };
        let (h, rec) = (&mut self.h, a.rec);
        let mut err = None;
        let mut split = Emitter::new(e.label());
        // Per unit, its leaves' (byte, value, type, words) and the offset of its start, until all
        // have come; then the unit is stored at once.
        let mut gathered: Vec<units::Gathered> = plan.as_ref().map_or(vec![], |p| p.0.iter().map(|_| (vec![], 0)).collect());
        let mut index = 0;
        let base_lin = h.backend.linear(self.b, a.delta);
        self.splitter.store(&mut split, self.b, &a.cur, value, inst, &mut |e, b, leaf, v| {
            let k = index;
            index += 1;
            note_leaf(&mut h.backend, &base_lin, a.delta, leaf.off, leaf.rel);
            let stored = match plan.as_ref().and_then(|(units, member)| member[k].map(|(u, byte)| (u, byte, units[u]))) {
                Some((u, byte, unit)) => {
                    let (leaves, start) = &mut gathered[u];
                    leaves.push((byte, v, leaf.ty, leaf.sv.n * leaf.sv.width / 32));
                    if byte == 0 {
                        *start = leaf.off;
                    }
                    if leaves.len() < unit.leaves {
                        return;
                    }
                    leaves.sort_by_key(|l| l.0);
                    let parts: Vec<(u32, u32, u32)> = leaves.iter().map(|&(_, v, ty, n)| (v, ty, n)).collect();
                    let whole = units::whole(e, b, unit.size / 4, &parts);
                    let u32t = b.t_u32();
                    let ty = b.t_vec(u32t, unit.size / 4);
                    h.call_access(e, b, ty, unit.size, &a.mem, rec, *start, Some(whole), None, inst)
                }
                None => h.call_access(e, b, leaf.ty, leaf.align, &a.mem, rec, leaf.off, Some(v), None, inst),
            };
            if let Err(x) = stored {
                err.get_or_insert(x);
            }
        })?;
        Folder::emit(self.b, e, split.take_insts(), 0);
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
