//! The code behind every access, as functions the rewritten module calls: one per kind of
//! access (shared by all accesses of that kind in the module), so a pointer access costs a call
//! in the caller, not an inlined bounds-checked access. Where the driver checks bounds
//! (`checked` false) the leaves' accesses and `locate` are emitted in place instead
//! ([`Helpers::call_access`], [`Helpers::locate_here`]): unchecked, each is a few
//! instructions, fewer than a call costs the drivers (`super::inline`).
//!
//! - `locate(address) -> uvec3(slot, offset, length)`: the address decoded (slot clamped to 0
//!   outside the table, length 0 there) and its buffer's byte length (a plain OpArrayLength for
//!   a dynamically uniform address, else NonUniform, or in a subgroup waterfall loop under the
//!   array-length quirk). Called once per located pointer class ([`super::roots`]): the
//!   *record* of the class. Where the driver checks bounds (`Target::robust_buffer_access2`,
//!   no poison) the record is `uvec2(slot, offset)`: no length is taken.
//! - `load(record, delta) -> T` / `store(record, delta, T)`: the value at byte `offset + delta`
//!   of the record's buffer, split into scalar/vector leaves, each checked against the length
//!   and branched around when outside (reads 0, writes dropped; or left to the driver's
//!   robustBufferAccess2, which does the same per access). T holds no 8/16-bit scalar
//!   (those are split in the caller; a helper takes or returns one such leaf's 32-bit twin, as
//!   functions cannot carry 8/16-bit values with storage capabilities only).
//! - `atomic(record, delta, values...)`: one atomic opcode with its scope and semantics
//!   constants, done when the whole value lies inside the buffer (else nothing, result 0; under
//!   the driver's robustBufferAccess2 an atomic outside modifies nothing either).
//!
//! Functions take and return only integers and values (no pointers: passing storage-buffer
//! pointers would need VariablePointersStorageBuffer), and every driver inlines them.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::{deco, sc, Builder, Emitter};
use crate::byte_address::{AliasKind, Backend};
use crate::error::RewriteError;
use crate::module::{op, Block, Function, Inst};
use crate::ops;
use crate::passes::layout::Layouts;
use crate::passes::leaves::{moves_as_twin, Cursor, Leaf, Splitter};

use super::address::{Addr, Decoded};
use super::fold::Folder;
use super::memory::LeafAccess;
use super::table::{Length, Table};

/// One helper function: what it does, everything that makes two of them differ.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Locate { length: Length },
    Access { store: bool, ty: u32, align: u32, mem: Vec<u32> },
    /// `opcode` on a `uty` (unsigned twin of a signed integer) with these constant operands
    /// (scope, semantics) and `values` value operands of type `value_ty`; `result_ty` = void
    /// for OpAtomicStore.
    Atomic { opcode: u32, result_ty: u32, uty: u32, value_ty: u32, constants: Vec<u32>, values: usize },
}


/// The helpers of one module and what building them needs.
pub(super) struct Helpers<'l> {
    pub backend: Backend,
    pub table: Table,
    pub addr: Addr,
    layouts: &'l Layouts,
    /// SPIR-V < 1.4: OpSelect of vectors wants a vector condition.
    pub old_select: bool,
    /// The lowering checks bounds itself (false: the driver's robustBufferAccess2 does).
    pub checked: bool,
    made: HashMap<Kind, u32>,
    /// Access helpers of 32/64-bit scalars and vectors by (store, width, components, alignment,
    /// memory operands) → the value type of the first one made: another type of the same bits
    /// (float/int, signed/unsigned) uses it through OpBitcast instead of a helper of its own.
    by_bits: HashMap<(bool, u32, u32, u32, Vec<u32>), u32>,
    /// The helpers' definitions, to append to the module's functions.
    pub functions: Vec<Function>,
    /// Ids the helpers' bodies made and dropped unused (their decorations must go).
    pub dead: HashSet<u32>,
    /// The function code is emitted into (the one being lowered, or the helper being built):
    /// where the table's variables an access emitted in place uses are counted as used.
    pub current: u32,
    /// Records decoded in place ([`Helpers::locate_here`]) → their (slot, offset): accesses
    /// through them take those, not the record's members.
    parts: HashMap<u32, (u32, u32)>,
}

impl<'l> Helpers<'l> {
    pub fn new(backend: Backend, table: Table, addr: Addr, layouts: &'l Layouts, old_select: bool, checked: bool) -> Self {
        Helpers { backend, table, addr, layouts, old_select, checked, made: HashMap::default(), by_bits: HashMap::default(), functions: vec![], dead: HashSet::default(), current: 0, parts: HashMap::default() }
    }

    /// The record type: uvec3(slot, offset, length), or uvec2(slot, offset) where the driver
    /// checks bounds.
    pub fn record_ty(&self, b: &mut Builder) -> u32 {
        let u32t = b.t_u32();
        b.t_vec(u32t, if self.checked { 3 } else { 2 })
    }

    /// The type a value of `ty` crosses a helper's boundary as (`store`: into it, else loaded
    /// out of it): its 32-bit twin where [`moves_as_twin`], else itself.
    pub fn boundary_ty(b: &mut Builder, ty: u32, store: bool) -> u32 {
        match b.scalar_vec(ty) {
            Some(sv) if moves_as_twin(b, sv, store) => {
                let c = if sv.float { b.t_float(32) } else { b.t_int(32, sv.signed) };
                if sv.n == 1 { c } else { b.t_vec(c, sv.n) }
            }
            _ => ty,
        }
    }

    /// A call of the access helper for a `ty` value at `off` from record `rec` (`value`: the
    /// value a store writes, a 32-bit twin for 8/16-bit scalars); returns the loaded value
    /// (`result` when given). A helper made for another type of the same bits serves through
    /// OpBitcast: a bitcast per call costs less than a second helper.
    #[allow(clippy::too_many_arguments)]
    pub fn call_access(&mut self, e: &mut Emitter, b: &mut Builder, ty: u32, align: u32, mem: &[u32], rec: u32, off: u32, value: Option<u32>, result: Option<u32>, inst: &Inst) -> Result<u32, RewriteError> {
        if let Some(sv) = b.scalar_vec(ty).filter(|sv| sv.width >= 32 && align < 4) {
            // Vulkan "Offset and Stride Assignment": a 32/64-bit component's offset is a multiple
            // of 4 at least (of its size, but an Aligned below it is allowed); the byte-address
            // backend moves such components in whole words.
            let what = crate::passes::leaves::describe(inst);
            return Err(RewriteError::unsupported(what, format!("a {}-bit component at an alignment of {align} byte(s): the explicit layout (Offset, ArrayStride, MatrixStride) breaks Vulkan's offset rules", sv.width)));
        }
        let store = value.is_some();
        if let Some(sv) = b.scalar_vec(ty).filter(|_| !self.checked) {
            // Where the driver checks bounds a leaf's access is a few instructions: emitted
            // here, not called (see `inline`: a call costs the drivers more than its body).
            let (d, len) = self.unpack(e, b, rec, off);
            let mut at = self.table.at(&d, len);
            let mut access = LeafAccess::new(&mut at, mem, self.backend.target, self.old_select, self.backend.oob_poison, self.checked);
            let leaf = Leaf { ty, sv, off: b.c_u32(0), rel: 0, align: align_for(sv.n * sv.width / 8, align) };
            let v = access.emit(&mut self.backend, e, b, &leaf, value);
            self.table.used(self.current, &at);
            return Ok(match (value, result) {
                (Some(_), _) => 0,
                (None, Some(r)) => {
                    e.push(Inst::new(op::COPY_OBJECT, Self::boundary_ty(b, ty, false), r, ops![v]));
                    r
                }
                (None, None) => v,
            });
        }
        let hty = match b.scalar_vec(ty) {
            Some(sv) if sv.width >= 32 => *self.by_bits.entry((store, sv.width, sv.n, align_for(sv.n * sv.width / 8, align), mem.to_vec())).or_insert(ty),
            _ => ty,
        };
        let f = self.get(b, Kind::Access { store, ty: hty, align, mem: mem.to_vec() }, inst)?;
        let result = result.unwrap_or_else(|| b.id());
        match value {
            Some(v) => {
                let v = if hty == ty { v } else { e.op(b, op::BITCAST, hty, ops![v]) };
                let void = b.t_void();
                e.push(Inst::new(op::FUNCTION_CALL, void, result, ops![f, rec, off, v]));
            }
            None if hty == ty => {
                let rt = Self::boundary_ty(b, ty, false);
                e.push(Inst::new(op::FUNCTION_CALL, rt, result, ops![f, rec, off]));
            }
            None => {
                let r = e.op(b, op::FUNCTION_CALL, hty, ops![f, rec, off]);
                e.push(Inst::new(op::BITCAST, ty, result, ops![r]));
            }
        }
        Ok(result)
    }

    /// The helper for `kind` (built on first use); `inst` names the access in errors.
    pub fn get(&mut self, b: &mut Builder, mut kind: Kind, inst: &Inst) -> Result<u32, RewriteError> {
        if let Kind::Access { ty, align, .. } = &mut kind {
            if let Some(sv) = b.scalar_vec(*ty) {
                *align = align_for(sv.n * sv.width / 8, *align);
            }
        }
        if let Some(&f) = self.made.get(&kind) {
            return Ok(f);
        }
        let f = self.build(b, &kind, inst)?;
        self.made.insert(kind, f);
        Ok(f)
    }

    fn build(&mut self, b: &mut Builder, kind: &Kind, inst: &Inst) -> Result<u32, RewriteError> {
        let id = b.id();
        let caller = std::mem::replace(&mut self.current, id);
        let built = self.build_as(b, kind, inst, id);
        self.current = caller;
        built
    }

    fn build_as(&mut self, b: &mut Builder, kind: &Kind, inst: &Inst, id: u32) -> Result<u32, RewriteError> {
        let label = b.id();
        let mut e = Emitter::new(label);
        let rec_ty = self.record_ty(b);
        let mut params: Vec<Inst> = vec![];
        let mut param = |b: &mut Builder, ty: u32| {
            let p = b.id();
            params.push(Inst::new(op::FUNCTION_PARAMETER, ty, p, ops![]));
            p
        };
        let u32t = b.t_u32();
        let (ret_ty, ret) = match kind {
            // (Only where the lowering checks bounds: elsewhere the decode is in place,
            // `locate_here`.)
            Kind::Locate { length } => {
                debug_assert!(self.checked);
                let a = param(b, self.addr.ty);
                let d = self.addr.decode(&mut e, b, a, self.table.count());
                let mut at = self.table.at(&d, 0);
                let len = self.table.length(&mut e, b, &self.backend, &d, *length, &mut at.used);
                self.table.used(id, &at);
                (rec_ty, Some(e.op(b, op::COMPOSITE_CONSTRUCT, rec_ty, ops![d.slot, d.offset, len])))
            }
            Kind::Access { store, ty, align, mem } => {
                let (rec, delta) = (param(b, rec_ty), param(b, u32t));
                let value_ty = Self::boundary_ty(b, *ty, *store);
                let value = store.then(|| param(b, value_ty));
                let loaded = match b.scalar_vec(*ty) {
                    // One scalar/vector (an 8/16-bit one moved as its 32-bit twin).
                    Some(sv) => {
                        let (d, len) = self.unpack(&mut e, b, rec, delta);
                        let mut at = self.table.at(&d, len);
                        let mut access = LeafAccess::new(&mut at, mem, self.backend.target, self.old_select, self.backend.oob_poison, self.checked);
                        let leaf = Leaf { ty: *ty, sv, off: b.c_u32(0), rel: 0, align: *align };
                        let v = access.emit(&mut self.backend, &mut e, b, &leaf, value);
                        self.table.used(id, &at);
                        value.is_none().then_some(v)
                    }
                    // A composite: a call of the leaf helper per scalar/vector.
                    None => self.composite(&mut e, b, rec, delta, *ty, *align, mem, value, inst)?,
                };
                (if *store { b.t_void() } else { value_ty }, loaded)
            }
            Kind::Atomic { opcode, result_ty, uty, value_ty, constants, values } => {
                let (rec, delta) = (param(b, rec_ty), param(b, u32t));
                let vals: Vec<u32> = (0..*values).map(|_| param(b, *value_ty)).collect();
                let (d, len) = self.unpack(&mut e, b, rec, delta);
                let has_result = *result_ty != b.t_void();
                let r = self.atomic(&mut e, b, id, &d, len, *opcode, *uty, constants, &vals, has_result);
                (*result_ty, r.map(|r| if *uty == *result_ty { r } else { e.op(b, op::BITCAST, *result_ty, ops![r]) }))
            }
        };
        let mut blocks: Vec<Block> = e.finish();
        let last = blocks.last_mut().expect("a block");
        last.insts.push(match ret {
            Some(v) => Inst::new(op::RETURN_VALUE, 0, 0, ops![v]),
            None => Inst::new(op::RETURN, 0, 0, ops![]),
        });
        Folder::blocks(b, &mut blocks);
        self.dead.extend(remove_dead(&mut blocks));
        let param_tys: Vec<u32> = params.iter().map(|p| p.ty).collect();
        let fn_ty = b.t_fn(ret_ty, &param_tys);
        self.functions.push(Function {
            def: Inst::new(op::FUNCTION, ret_ty, id, ops![0, fn_ty]),
            params,
            blocks,
            end: vec![Inst::new(op::FUNCTION_END, 0, 0, ops![])],
        });
        Ok(id)
    }

    /// A composite load (`value` None) or store at `delta` from the record `rec`: one call of
    /// the access helper of each leaf.
    #[allow(clippy::too_many_arguments)]
    fn composite(&mut self, e: &mut Emitter, b: &mut Builder, rec: u32, delta: u32, ty: u32, align: u32, mem: &[u32], value: Option<u32>, inst: &Inst) -> Result<Option<u32>, RewriteError> {
        let mut cur = Cursor::at_start(b, ty, align);
        cur.off = delta;
        let mut splitter = Splitter::keeping_f16(self.layouts);
        let mut err = None;
        let mut call = |this: &mut Self, e: &mut Emitter, b: &mut Builder, leaf: &Leaf, v: Option<u32>| match this.call_access(e, b, leaf.ty, leaf.align, mem, rec, leaf.off, v, None, inst) {
            Ok(r) => r,
            Err(x) => {
                err.get_or_insert(x);
                0
            }
        };
        let r = match value {
            Some(v) => {
                splitter.store(e, b, &cur, v, inst, &mut |e, b, leaf, v| {
                    call(self, e, b, leaf, Some(v));
                })?;
                None
            }
            None => Some(splitter.load(e, b, &cur, inst, &mut |e, b, leaf| call(self, e, b, leaf, None))?),
        };
        err.map_or(Ok(r), Err)
    }

    /// The record of address `a` where the driver checks bounds: `uvec2(slot, offset)`, decoded
    /// here (a few instructions: not a call of `locate`).
    pub fn locate_here(&mut self, e: &mut Emitter, b: &mut Builder, a: u32, uniform: bool) -> u32 {
        debug_assert!(!self.checked);
        let rec_ty = self.record_ty(b);
        let (slot, offset) = self.addr.slot_and_offset(e, b, a, self.table.count());
        if uniform {
            self.table.uniform_slots.insert(slot);
        }
        let rec = e.op(b, op::COMPOSITE_CONSTRUCT, rec_ty, ops![slot, offset]);
        self.parts.insert(rec, (slot, offset));
        rec
    }

    /// The record's slot (decorated NonUniform by [`Table::at`]), its offset plus `delta`, and its
    /// length (0 where the record has none: the driver checks bounds).
    fn unpack(&mut self, e: &mut Emitter, b: &mut Builder, rec: u32, delta: u32) -> (Decoded, u32) {
        let u32t = b.t_u32();
        let (slot, base) = match self.parts.get(&rec) {
            Some(&parts) => parts,
            None => (e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![rec, 0]), e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![rec, 1])),
        };
        let len = if self.checked { e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![rec, 2]) } else { b.c_u32(0) };
        let offset = if b.const_value(delta) == Some(0) { base } else { e.op(b, op::I_ADD, u32t, ops![base, delta]) };
        // (At delta 0 too: the record's accesses then share one shifted offset per view.)
        self.backend.note_based(offset, base, delta);
        (Decoded { slot, offset, in_table: 0 }, len)
    }

    /// The atomic `opcode` through record `rec` plus `delta`, emitted here where the driver
    /// checks bounds (one access chain and the atomic: building a helper to inline it again
    /// cost more than the body); its result (of type `uty`), if it has one.
    #[allow(clippy::too_many_arguments)]
    pub fn atomic_here(&mut self, e: &mut Emitter, b: &mut Builder, rec: u32, delta: u32, opcode: u32, uty: u32, constants: &[u32], vals: &[u32], has_result: bool) -> Option<u32> {
        debug_assert!(!self.checked);
        let (d, len) = self.unpack(e, b, rec, delta);
        self.atomic(e, b, self.current, &d, len, opcode, uty, constants, vals, has_result)
    }

    /// An atomic on the buffer's u32 view (32-bit integers) or on a view of its (unsigned)
    /// type, when the whole value lies inside the buffer; else nothing happens and the result
    /// is 0.
    #[allow(clippy::too_many_arguments)]
    fn atomic(&mut self, e: &mut Emitter, b: &mut Builder, function: u32, d: &Decoded, len: u32, opcode: u32, uty: u32, constants: &[u32], vals: &[u32], has_result: bool) -> Option<u32> {
        let sv = b.scalar_vec(uty).expect("an atomic's scalar type");
        let word = sv.width == 32 && !sv.float;
        let mut at = self.table.at(d, len);
        if !word {
            at.typed = Some(self.table.typed_view(e, b, uty, d.slot, &mut at.used));
        }
        let view_ptrs = if word { at.view_ptrs(e, b, &[AliasKind::U32]).to_vec() } else { vec![] };
        self.table.used(function, &at);
        let backend = &self.backend;
        let access = |e: &mut Emitter, b: &mut Builder| {
            let ptr = match at.typed {
                Some(view) => {
                    let shift = b.c_u32((sv.width / 8).trailing_zeros());
                    let u32t = b.t_u32();
                    let index = e.op(b, op::SHIFT_RIGHT_LOGICAL, u32t, ops![at.offset, shift]);
                    let ptr_ty = b.t_ptr(sc::STORAGE_BUFFER, uty);
                    let c0 = b.c_u32(0);
                    let ptr = e.op(b, op::ACCESS_CHAIN, ptr_ty, ops![view, c0, index]);
                    if !at.uniform() {
                        b.decorate(ptr, deco::NON_UNIFORM, &[]);
                    }
                    ptr
                }
                None => backend.word_pointer(e, b, sc::STORAGE_BUFFER, &view_ptrs, at.offset, !at.uniform()),
            };
            let mut ops = ops![ptr];
            ops.extend_from_slice(constants);
            ops.extend_from_slice(vals);
            if has_result {
                smallvec::smallvec![e.op(b, opcode, uty, ops)]
            } else {
                debug_assert_eq!(opcode, op::ATOMIC_STORE);
                e.stmt(opcode, ops);
                smallvec::smallvec![]
            }
        };
        if !self.checked {
            // robustBufferAccess2: an atomic outside the descriptor's range modifies nothing.
            return access(e, b).first().copied();
        }
        // One element of the u32 view or of the typed view: the one-comparison check holds
        // whatever the offset's alignment (memory::whole_unit_check).
        let size = sv.width / 8;
        let ok = match super::memory::whole_unit_check(backend, e, b, at.offset, len, size, size) {
            Some(ok) => ok,
            None => fits(e, b, at.offset, len, size),
        };
        let zero = b.constant(uty, &vec![0; sv.width as usize / 32]);
        let (tys, fallback): (&[u32], &[u32]) = if has_result { (&[uty], &[zero]) } else { (&[], &[]) };
        e.if_or(b, ok, tys, access, fallback).first().copied()
    }
}

/// The alignment that matters for a scalar/vector of `size` bytes: its accesses use no unit
/// wider than its size, so alignment past the largest power of two in it changes nothing (one
/// helper for all).
fn align_for(size: u32, align: u32) -> u32 {
    align.min(1 << (31 - size.leading_zeros()))
}

/// `size` bytes at `offset` lie inside `len` bytes: `len >= size && offset <= len - size`.
fn fits(e: &mut Emitter, b: &mut Builder, offset: u32, len: u32, size: u32) -> u32 {
    let (u32t, bool_t) = (b.t_u32(), b.t_bool());
    let s = b.c_u32(size);
    let room = e.op(b, op::I_SUB, u32t, ops![len, s]);
    let big = e.op(b, op::U_GREATER_THAN_EQUAL, bool_t, ops![len, s]);
    let below = e.op(b, 178 /* OpULessThanEqual */, bool_t, ops![offset, room]);
    e.op(b, op::LOGICAL_AND, bool_t, ops![big, below])
}

/// Drops the instructions of `blocks` without side effects whose results nothing uses (the view
/// pointers an access did not need); returns their ids.
fn remove_dead(blocks: &mut [Block]) -> HashSet<u32> {
    let pure = |opcode: u32| {
        matches!(
            opcode,
            op::ACCESS_CHAIN | op::COMPOSITE_EXTRACT | op::COMPOSITE_CONSTRUCT | op::I_ADD | op::I_SUB | op::SELECT | op::SHIFT_RIGHT_LOGICAL | op::BITWISE_AND | op::U_GREATER_THAN_EQUAL | op::U_LESS_THAN
        )
    };
    // Uses counted once (every operand word, literals too: a literal equal to an id keeps it,
    // as a set of used words would); a dead instruction's removal releases its operands, so
    // the dead chains go in one pass instead of a recount per round. A helper's results are
    // fresh ids close together: counts and definitions by id in the range they span.
    let results = || blocks.iter().flat_map(|b| b.insts.iter()).filter(|i| i.id != 0 && pure(i.op)).map(|i| i.id);
    let (Some(lo), Some(hi)) = (results().min(), results().max()) else { return HashSet::default() };
    let span = (hi - lo) as usize + 1;
    let slot = |id: u32| id.checked_sub(lo).map(|d| d as usize).filter(|&d| d < span);
    let mut uses = vec![0u32; span];
    // (block + 1, instruction) of each pure result (block 0: none).
    let mut defs = vec![(0usize, 0usize); span];
    for (bi, blk) in blocks.iter().enumerate() {
        for (k, i) in blk.insts.iter().enumerate() {
            for &o in i.ops.iter() {
                if let Some(d) = slot(o) {
                    uses[d] += 1;
                }
            }
            if let Some(d) = slot(i.id).filter(|_| pure(i.op)) {
                defs[d] = (bi + 1, k);
            }
        }
    }
    let mut work: Vec<u32> = (0..span).filter(|&d| defs[d].0 != 0 && uses[d] == 0).map(|d| lo + d as u32).collect();
    let mut dead = HashSet::default();
    while let Some(id) = work.pop() {
        if !dead.insert(id) {
            continue;
        }
        let (bi, k) = defs[slot(id).expect("a result")];
        for &o in blocks[bi - 1].insts[k].ops.iter() {
            if let Some(d) = slot(o) {
                uses[d] -= 1;
                if uses[d] == 0 && defs[d].0 != 0 {
                    work.push(o);
                }
            }
        }
    }
    if !dead.is_empty() {
        for blk in blocks.iter_mut() {
            blk.insts.retain(|i| i.id == 0 || !dead.contains(&i.id));
        }
    }
    dead
}
