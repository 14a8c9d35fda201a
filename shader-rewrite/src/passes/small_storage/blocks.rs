//! Storage buffers, uniform buffers and push-constant blocks with 8/16-bit members whose
//! capability is emulated: every access to such a block (32-bit members too, since the block
//! type itself must go) becomes a byte-address access through word views of the same memory.
//!
//! - Storage buffers: alias variables `struct { uint/uvec2/uvec4 (and uint8_t/uint16_t where the
//!   target has them) data[]; }` with the same DescriptorSet/Binding, decorated Aliased.
//! - Uniform buffers: one alias `struct { uvec4 data[N]; }` (std140 array strides are 16).
//! - Push constants: an entry point may statically use one push-constant variable
//!   (VUID-StandaloneSpirv-OpEntryPoint-06674), so the block is replaced by a single
//!   `struct { uint data[K]; }` whose member starts at the block's first word, keeping the range
//!   the pipeline layout declares.
//!
//! Pointers into the block become (descriptor index, byte offset) pairs computed from the
//! explicit layout; loads and stores of composites are split into their scalar/vector leaves.
use crate::passes::layout::{byte_size, contains_width, Layouts, MatrixLayout};
use crate::passes::leaves::{describe, Cursor, Leaf, Splitter};
use super::*;

/// What kind of block a variable is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BlockKind {
    /// StorageBuffer Block, or Uniform BufferBlock (SPIR-V 1.0 style).
    Storage,
    Uniform,
    PushConstant,
}

/// Which widths to lower in which kind of block.
pub(super) struct Plan {
    pub storage: Vec<u32>,
    pub uniform: Vec<u32>,
    pub push_constant: Vec<u32>,
}

impl Plan {
    fn widths(&self, k: BlockKind) -> &[u32] {
        match k {
            BlockKind::Storage => &self.storage,
            BlockKind::Uniform => &self.uniform,
            BlockKind::PushConstant => &self.push_constant,
        }
    }
}

fn block_kind(b: &Builder, storage: u32, block: u32) -> Option<BlockKind> {
    match storage {
        sc::STORAGE_BUFFER => Some(BlockKind::Storage),
        sc::UNIFORM if b.has_decoration(block, deco::BUFFER_BLOCK) => Some(BlockKind::Storage),
        sc::UNIFORM => Some(BlockKind::Uniform),
        sc::PUSH_CONSTANT => Some(BlockKind::PushConstant),
        _ => None,
    }
}

/// One lowered variable.
struct Root {
    /// Backend views key (unique per root).
    key: u32,
    /// The original pointee (a block, or an array of blocks).
    pointee: u32,
    /// Alias variable per view kind, in the views' order (a uniform buffer lists its one
    /// variable twice).
    vars: Vec<u32>,
    desc_array: bool,
    /// Push constants: the word view starts at this byte of the block.
    base: u32,
}

/// A pointer into a lowered block.
#[derive(Debug, Clone)]
struct Ptr {
    root: u32,
    /// Descriptor index (arrays of blocks).
    desc: Option<u32>,
    /// Still the whole descriptor array (the variable itself).
    whole_array: bool,
    /// Where in the block (offset from the block start).
    cur: Cursor,
    nonuniform: bool,
}

/// What [`lower`] leaves for the later steps.
#[derive(Default)]
pub(super) struct Lowered {
    /// Width conversions that are exact (the value came from 8/16-bit memory), which type
    /// legalization may turn into copies.
    pub exact: HashSet<u32>,
    /// The alias variables declared (those no access uses go at the end).
    pub alias_vars: Vec<u32>,
}

/// Lowers every block `plan` selects.
pub(super) fn lower(
    b: &mut Builder,
    functions: &mut [Function],
    layouts: &Layouts,
    plan: &Plan,
    options: &Options,
    stats: &mut Stats,
) -> Result<Lowered, RewriteError> {
    let vulkan_mm = b.m.memory_model.first().is_some_and(|i| i.ops.get(1) == Some(&model::MEMORY_MODEL_VULKAN));
    let mut backend = Backend::new(options.target, None, vulkan_mm);
    let mut roots: HashMap<u32, Root> = HashMap::default();
    let vars: Vec<Inst> = b.m.globals.iter().filter(|g| g.op == op::VARIABLE).cloned().collect();
    let interface_lists_all = b.m.version() >= (1, 4);
    for var in vars {
        let Some((storage, pointee)) = b.pointer(var.ty) else { continue };
        let (block, desc_array) = match b.global(pointee) {
            Some(t) if t.op == op::TYPE_ARRAY || t.op == op::TYPE_RUNTIME_ARRAY => (t.ops[0], true),
            _ => (pointee, false),
        };
        let Some(kind) = block_kind(b, storage, block) else { continue };
        let widths = plan.widths(kind);
        if widths.is_empty() || !contains_width(b, block, widths) {
            continue;
        }
        if var.ops.len() > 1 {
            return Err(RewriteError::unsupported(format!("%{} = OpVariable", var.id), "a block variable with an initializer"));
        }
        let size = byte_size(b, layouts, block, MatrixLayout::default())
            .ok_or_else(|| RewriteError::unsupported(format!("%{} = OpVariable", var.id), "a block whose explicit layout spans more than 4 GiB"))?;
        let mut root = Root { key: 0x8000_0000 | var.id, pointee, vars: vec![], desc_array, base: 0 };
        let views = match kind {
            BlockKind::Storage => {
                let mut kinds = vec![AliasKind::U32, AliasKind::U32x2, AliasKind::U32x4];
                // Byte views serve 8- and 16-bit members, 16-bit views 16-bit ones: sub-word
                // stores through them need no atomics.
                for (w, k) in [(&[8, 16][..], AliasKind::U8), (&[16][..], AliasKind::U16)] {
                    if contains_width(b, block, w) && k.available(&options.target, storage) {
                        kinds.push(k);
                    }
                }
                kinds.sort();
                for k in &kinds {
                    // Views of 8/16-bit elements use the target's own storage features.
                    let uniform = storage == sc::UNIFORM;
                    match k {
                        AliasKind::U8 => add_cap(b, if uniform { CAP_UBO8 } else { CAP_SB8 }, "SPV_KHR_8bit_storage"),
                        AliasKind::U16 => add_cap(b, if uniform { CAP_UBO16 } else { CAP_SB16 }, "SPV_KHR_16bit_storage"),
                        _ => {}
                    }
                }
                AliasViews::new(b, storage, kinds)
            }
            BlockKind::Uniform => AliasViews::fixed(b, storage, true, size.div_ceil(16), 0),
            BlockKind::PushConstant => {
                let members = b.global(block).map_or(0, |t| t.ops.len() as u32);
                root.base = (0..members).filter_map(|i| layouts.member_offset(block, i)).min().unwrap_or(0) & !3;
                AliasViews::fixed(b, storage, false, size.div_ceil(4).saturating_sub(root.base / 4), root.base)
            }
        };
        let decos = b.m.decorations_of(var.id);
        let name = var_name(b.m, var.id);
        let mut declared: Vec<(u32, u32)> = vec![]; // (alias struct, its variable)
        for slot in 0..views.kinds.len() {
            let st = views.struct_ty[slot];
            if let Some(&(_, v)) = declared.iter().find(|(t, _)| *t == st) {
                root.vars.push(v);
                continue;
            }
            let alias_pointee = if desc_array {
                let arr = b.global(pointee).cloned().expect("checked above");
                let mut ops = arr.ops.clone();
                ops[0] = st;
                let nid = b.id();
                b.add_global(Inst::new(arr.op, 0, nid, ops))
            } else {
                st
            };
            let pty = b.t_ptr(storage, alias_pointee);
            let v = b.id();
            b.add_global(Inst::new(op::VARIABLE, pty, v, ops![storage]));
            for (d, lits) in &decos {
                // Same descriptor, same memory qualifiers. Restrict cannot hold for aliases
                // (SPIR-V spec 2.18.2); they get Aliased instead.
                if matches!(*d, deco::DESCRIPTOR_SET | deco::BINDING | deco::COHERENT | deco::VOLATILE | deco::NON_WRITABLE | deco::NON_READABLE) {
                    b.decorate(v, *d, lits);
                }
            }
            if kind == BlockKind::Storage {
                b.decorate(v, deco::ALIASED, &[]);
            }
            if let Some(n) = &name {
                let suffix = ["u8", "u16", "u32", "u32x2", "u32x4"][views.kinds[slot] as usize];
                let mut ops = vec![v];
                ops.extend(encode_string(&format!("{n}.{suffix}")));
                b.m.add_names([Inst::new(op::NAME, 0, 0, ops)]);
            }
            // Entry points list the variables they use: every one from SPIR-V 1.4, push
            // constants never before that.
            if interface_lists_all {
                for ep in b.m.entry_points.iter_mut() {
                    if interface_ids(ep).contains(&var.id) {
                        ep.ops.push(v);
                    }
                }
            }
            stats.alias_variables += 1;
            declared.push((st, v));
            root.vars.push(v);
        }
        backend.views.insert(root.key, views);
        roots.insert(var.id, root);
        stats.small_storage_blocks += 1;
    }
    if roots.is_empty() {
        return Ok(Lowered::default());
    }

    let mut types: HashMap<u32, u32> = HashMap::default();
    for f in functions.iter() {
        for i in f.params.iter().chain(f.blocks.iter().flat_map(|blk| blk.insts.iter())) {
            if i.id != 0 {
                types.insert(i.id, i.ty);
            }
        }
    }
    let mut cx = Cx { b, layouts, backend: &mut backend, roots: &roots, types, ptrs: HashMap::default(), splitter: Splitter::new(layouts), stats };
    for f in functions.iter_mut() {
        for blk in f.blocks.iter_mut() {
            let mut e = Emitter::new(blk.label);
            for inst in std::mem::take(&mut blk.insts) {
                cx.rewrite(&mut e, inst)?;
            }
            blk.insts = e.take_insts();
        }
    }
    // The original variables and every pointer into them are gone.
    let removed: HashSet<u32> = cx.ptrs.keys().copied().chain(roots.keys().copied()).collect();
    let exact: HashSet<u32> = cx.splitter.exact.drain(..).collect();
    let b = cx.b;
    b.m.globals.retain(|g| !removed.contains(&g.id));
    remove_from_interfaces(b.m, |id| removed.contains(&id));
    forget_ids(b.m, &removed);
    stats.atomic_subword_stores += backend.atomic_subword_stores;
    let alias_vars = roots.values().flat_map(|r| r.vars.iter().copied()).collect();
    Ok(Lowered { exact, alias_vars })
}

/// The interface ids of an OpEntryPoint.
pub(super) fn interface_ids(ep: &Inst) -> &[u32] {
    &ep.ops[crate::module::interface_start(&ep.ops)..]
}

fn var_name(m: &Module, id: u32) -> Option<String> {
    m.debug.iter().find(|d| d.op == op::NAME && d.ops.first() == Some(&id)).map(|d| decode_string(&d.ops[1..]))
}

struct Cx<'a, 'm> {
    b: &'a mut Builder<'m>,
    layouts: &'a Layouts,
    backend: &'a mut Backend,
    roots: &'a HashMap<u32, Root>,
    /// Result types of function-local ids.
    types: HashMap<u32, u32>,
    ptrs: HashMap<u32, Ptr>,
    splitter: Splitter<'a>,
    stats: &'a mut Stats,
}

/// Atomic opcodes (OpAtomicLoad..OpAtomicXor, flag ops, min/max/float add).
fn is_atomic(opcode: u32) -> bool {
    matches!(opcode, 227..=242 | 318 | 319 | 5614 | 5615 | 6035)
}

impl Cx<'_, '_> {
    fn tracked(&self, id: u32) -> bool {
        self.ptrs.contains_key(&id) || self.roots.contains_key(&id)
    }

    /// The pointer `id` names, if it points into a lowered block.
    fn ptr(&mut self, id: u32) -> Option<Ptr> {
        if let Some(p) = self.ptrs.get(&id) {
            return Some(p.clone());
        }
        let root = self.roots.get(&id)?;
        let (desc_array, pointee) = (root.desc_array, root.pointee);
        Some(Ptr { root: id, desc: None, whole_array: desc_array, cur: Cursor::at_start(self.b, pointee, 16), nonuniform: false })
    }

    fn type_of(&self, id: u32) -> u32 {
        self.b.global(id).map(|g| g.ty).or_else(|| self.types.get(&id).copied()).unwrap_or(0)
    }

    fn rewrite(&mut self, e: &mut Emitter, inst: Inst) -> Result<(), RewriteError> {
        let first = inst.ops.first().copied().unwrap_or(0);
        match inst.op {
            op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN if self.tracked(first) => {
                let mut p = self.ptr(first).expect("tracked");
                p.nonuniform |= self.b.has_decoration(inst.id, deco::NON_UNIFORM) || self.b.has_decoration(first, deco::NON_UNIFORM);
                for &idx in &inst.ops[1..] {
                    p = self.step(e, p, idx, &inst)?;
                }
                self.ptrs.insert(inst.id, p);
            }
            op::COPY_OBJECT if self.tracked(first) => {
                let p = self.ptr(first).expect("tracked");
                self.ptrs.insert(inst.id, p);
            }
            op::LOAD if self.tracked(first) => {
                let p = self.ptr(first).expect("tracked");
                let mem = without_aligned(inst.ops.get(1..).unwrap_or(&[]));
                let vp = self.view_ptrs(e, &p, &inst)?;
                let v = self.load(e, &p, &vp, &p.cur, &mem, &inst)?;
                e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![v]));
                self.stats.small_storage_loads += 1;
            }
            op::STORE if self.tracked(first) => {
                let p = self.ptr(first).expect("tracked");
                let value = *inst.ops.get(1).ok_or_else(|| RewriteError::malformed(0, "OpStore without an object"))?;
                let mem = without_aligned(inst.ops.get(2..).unwrap_or(&[]));
                let vp = self.view_ptrs(e, &p, &inst)?;
                self.store(e, &p, &vp, &p.cur, value, &mem, &inst)?;
                self.stats.small_storage_stores += 1;
            }
            op::ARRAY_LENGTH if self.tracked(first) => self.array_length(e, &inst)?,
            opcode if is_atomic(opcode) && self.tracked(first) => self.atomic(e, inst)?,
            op::COPY_MEMORY if self.tracked(first) || inst.ops.get(1).is_some_and(|&s| self.tracked(s)) => self.copy_memory(e, &inst)?,
            _ => {
                if let Some((_, id)) = pointer_operands(&inst).into_iter().find(|&(_, id)| self.tracked(id)) {
                    return Err(RewriteError::unsupported(
                        describe(&inst),
                        format!(
                            "uses %{id}, a pointer into a block with emulated 8/16-bit members, in a way the lowering cannot follow \
                             (supported: access chains, OpCopyObject, OpLoad, OpStore, OpCopyMemory, OpArrayLength, 32-bit atomics)"
                        ),
                    ));
                }
                e.push(inst);
            }
        }
        Ok(())
    }

    /// One access-chain index applied to `p`.
    fn step(&mut self, e: &mut Emitter, mut p: Ptr, idx: u32, inst: &Inst) -> Result<Ptr, RewriteError> {
        if p.whole_array {
            let t = self.b.global(p.cur.ty).cloned().ok_or_else(|| RewriteError::malformed(0, format!("{}: type %{} not found", describe(inst), p.cur.ty)))?;
            p.desc = Some(idx);
            p.whole_array = false;
            p.cur.ty = t.ops[0];
            p.nonuniform |= self.b.has_decoration(idx, deco::NON_UNIFORM);
            return Ok(p);
        }
        let idx_ty = self.type_of(idx);
        p.cur = p.cur.step(e, self.b, self.layouts, idx, idx_ty, inst)?;
        Ok(p)
    }

    /// Pointers to the alias structs of `p`'s block, one per view.
    fn view_ptrs(&mut self, e: &mut Emitter, p: &Ptr, inst: &Inst) -> Result<Vec<u32>, RewriteError> {
        let root = &self.roots[&p.root];
        if !root.desc_array {
            return Ok(root.vars.clone());
        }
        let desc = p.desc.ok_or_else(|| RewriteError::unsupported(describe(inst), "accesses a whole descriptor array"))?;
        let views = &self.backend.views[&root.key];
        let mut out: Vec<u32> = vec![];
        let mut made: Vec<(u32, u32)> = vec![];
        for (slot, &v) in root.vars.iter().enumerate() {
            if let Some(&(_, c)) = made.iter().find(|(x, _)| *x == v) {
                out.push(c);
                continue;
            }
            let c = e.op(self.b, op::ACCESS_CHAIN, views.struct_ptr[slot], ops![v, desc]);
            if p.nonuniform {
                self.b.decorate(c, deco::NON_UNIFORM, &[]);
            }
            made.push((v, c));
            out.push(c);
        }
        Ok(out)
    }

    /// A load of the value at `cur`, split into leaves emitted through the backend.
    fn load(&mut self, e: &mut Emitter, p: &Ptr, vp: &[u32], cur: &Cursor, mem: &[u32], inst: &Inst) -> Result<u32, RewriteError> {
        let leaf_access = LeafAccess { root: &self.roots[&p.root], nonuniform: p.nonuniform, vp, mem };
        let backend = &mut *self.backend;
        self.splitter.load(e, self.b, cur, inst, &mut |e, b, leaf| leaf_access.emit(backend, e, b, leaf, None))
    }

    /// A store of `value` at `cur`, split into leaves emitted through the backend.
    #[allow(clippy::too_many_arguments)]
    fn store(&mut self, e: &mut Emitter, p: &Ptr, vp: &[u32], cur: &Cursor, value: u32, mem: &[u32], inst: &Inst) -> Result<(), RewriteError> {
        let leaf_access = LeafAccess { root: &self.roots[&p.root], nonuniform: p.nonuniform, vp, mem };
        let backend = &mut *self.backend;
        self.splitter.store(e, self.b, cur, value, inst, &mut |e, b, leaf, v| {
            leaf_access.emit(backend, e, b, leaf, Some(v));
        })
    }

    /// OpArrayLength: (bytes in range − member offset) / stride, 0 if the range ends before it.
    fn array_length(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let p = self.ptr(inst.ops[0]).expect("tracked");
        let member = *inst.ops.get(1).ok_or_else(|| RewriteError::malformed(0, "OpArrayLength without a member"))?;
        let t = self.b.global(p.cur.ty).filter(|t| t.op == op::TYPE_STRUCT).ok_or_else(|| RewriteError::malformed(0, format!("{}: not a struct pointer", describe(inst))))?;
        let arr = *t.ops.get(member as usize).ok_or_else(|| RewriteError::malformed(0, format!("{}: member {member} out of range", describe(inst))))?;
        let offset = self.layouts.member_offset(p.cur.ty, member).unwrap_or(0);
        let stride = self.layouts.array_stride(arr).filter(|&s| s > 0).ok_or_else(|| RewriteError::unsupported(describe(inst), "runtime array without ArrayStride"))?;
        let vp = self.view_ptrs(e, &p, inst)?;
        let key = self.roots[&p.root].key;
        let bytes = self.backend.byte_length(e, self.b, key, &vp);
        let (u32t, bool_t) = (self.b.t_u32(), self.b.t_bool());
        let (o, s, zero) = (self.b.c_u32(offset), self.b.c_u32(stride), self.b.c_u32(0));
        let fits = e.op(self.b, op::U_GREATER_THAN_EQUAL, bool_t, ops![bytes, o]);
        let rest = e.op(self.b, op::I_SUB, u32t, ops![bytes, o]);
        let n = e.op(self.b, op::U_DIV, u32t, ops![rest, s]);
        e.push(Inst::new(op::SELECT, inst.ty, inst.id, ops![fits, n, zero]));
        Ok(())
    }

    /// A 32-bit atomic on a member: the same atomic on the containing word of the u32 view
    /// (operands and result bitcast when the member is an int).
    fn atomic(&mut self, e: &mut Emitter, mut inst: Inst) -> Result<(), RewriteError> {
        let p = self.ptr(inst.ops[0]).expect("tracked");
        let sv = self.b.scalar_vec(p.cur.ty).filter(|v| v.n == 1 && v.width == 32 && !v.float).ok_or_else(|| {
            RewriteError::unsupported(describe(&inst), "atomic on a member of a block with emulated 8/16-bit storage that is not a 32-bit integer")
        })?;
        let vp = self.view_ptrs(e, &p, &inst)?;
        let root = &self.roots[&p.root];
        let addr = view_address(e, self.b, root, p.cur.off);
        let word = self.backend.word_pointer(e, self.b, root.key, &vp, addr, p.nonuniform);
        let u32t = self.b.t_u32();
        // Value operands follow pointer, scope and semantics (two semantics for compare-exchange).
        let first_value = if matches!(inst.op, 230 | 231) { 4 } else { 3 };
        inst.ops[0] = word;
        if sv.signed {
            for k in first_value..inst.ops.len() {
                inst.ops[k] = e.op(self.b, op::BITCAST, u32t, ops![inst.ops[k]]);
            }
        }
        if inst.id == 0 {
            e.push(inst);
        } else if sv.signed {
            let (ty, id) = (inst.ty, inst.id);
            let r = e.op(self.b, inst.op, u32t, inst.ops);
            e.push(Inst::new(op::BITCAST, ty, id, ops![r]));
        } else {
            inst.ty = u32t;
            e.push(inst);
        }
        Ok(())
    }

    /// OpCopyMemory with a lowered side: a load and a store.
    fn copy_memory(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let (dst, src) = (inst.ops[0], inst.ops[1]);
        let value = match self.ptr(src) {
            Some(p) => {
                let vp = self.view_ptrs(e, &p, inst)?;
                self.load(e, &p, &vp, &p.cur, &[], inst)?
            }
            None => {
                let ty = self.b.pointer(self.type_of(src)).map(|(_, t)| t).ok_or_else(|| RewriteError::malformed(0, format!("{}: source %{src} is not a pointer", describe(inst))))?;
                e.op(self.b, op::LOAD, ty, ops![src])
            }
        };
        match self.ptr(dst) {
            Some(p) => {
                let vp = self.view_ptrs(e, &p, inst)?;
                self.store(e, &p, &vp, &p.cur, value, &[], inst)?;
            }
            None => e.stmt(op::STORE, ops![dst, value]),
        }
        Ok(())
    }
}

/// What every leaf of one load or store of a lowered block shares.
struct LeafAccess<'r> {
    root: &'r Root,
    nonuniform: bool,
    /// Pointers to the alias structs.
    vp: &'r [u32],
    mem: &'r [u32],
}

impl LeafAccess<'_> {
    /// One leaf through the backend: loads return the (32-bit twin) value, stores `value`.
    fn emit(&self, backend: &mut Backend, e: &mut Emitter, b: &mut Builder, leaf: &Leaf, value: Option<u32>) -> u32 {
        let addr = view_address(e, b, self.root, leaf.off);
        let shape = AccessShape {
            store: value.is_some(),
            storage: self.root.key,
            value_ty: leaf.ty,
            value: leaf.sv,
            align: leaf.align,
            robustness: Robustness::None,
            mem_ops: self.mem.to_vec(),
            nonuniform: self.nonuniform,
            wide: leaf.sv.width < 32,
        };
        backend.emit(e, b, &shape, self.vp, addr, None, None, value)
    }
}

/// The address the backend sees: the offset from the start of the word view.
fn view_address(e: &mut Emitter, b: &mut Builder, root: &Root, off: u32) -> u32 {
    if root.base == 0 {
        return off;
    }
    let u32t = b.t_u32();
    let c = b.c_u32(root.base.wrapping_neg());
    e.op(b, op::I_ADD, u32t, ops![off, c])
}
