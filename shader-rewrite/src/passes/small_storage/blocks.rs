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
use super::layout::{byte_size, contains_width, pow2_align, Layouts, MatrixLayout, TYPE_MATRIX};
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
    /// Byte offset from the block start (a u32 id).
    off: u32,
    /// Guaranteed alignment of `off`.
    align: u32,
    ty: u32,
    mat: MatrixLayout,
    /// Vectors: bytes between components (a row-major matrix column); 0 = packed.
    comp_stride: u32,
    nonuniform: bool,
}

/// Lowers every block `plan` selects. Returns the ids of width conversions that are exact (the
/// value came from 8/16-bit memory), which type legalization may turn into copies.
pub(super) fn lower(
    b: &mut Builder,
    functions: &mut [Function],
    layouts: &Layouts,
    plan: &Plan,
    options: &Options,
    stats: &mut Stats,
) -> Result<HashSet<u32>, RewriteError> {
    let vulkan_mm = b.m.memory_model.first().is_some_and(|i| i.ops.get(1) == Some(&MEMORY_MODEL_VULKAN));
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
                b.m.debug.push(Inst::new(op::NAME, 0, 0, ops));
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
        return Ok(HashSet::default());
    }

    let mut types: HashMap<u32, u32> = HashMap::default();
    for f in functions.iter() {
        for i in f.params.iter().chain(f.blocks.iter().flat_map(|blk| blk.insts.iter())) {
            if i.id != 0 {
                types.insert(i.id, i.ty);
            }
        }
    }
    let mut cx = Cx { b, layouts, backend: &mut backend, roots: &roots, types, ptrs: HashMap::default(), exact: HashSet::default(), stats, leaf_budget: 0, depth: 0 };
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
    let exact = std::mem::take(&mut cx.exact);
    let b = cx.b;
    b.m.globals.retain(|g| !removed.contains(&g.id));
    for ep in b.m.entry_points.iter_mut() {
        let name_end = 2 + name_words(ep);
        let kept: crate::module::Ops = ep.ops.iter().enumerate().filter(|(i, id)| *i < name_end || !removed.contains(id)).map(|(_, id)| *id).collect();
        ep.ops = kept;
    }
    forget_ids(b.m, &removed);
    stats.atomic_subword_stores += backend.atomic_subword_stores;
    Ok(exact)
}

/// Words of an OpEntryPoint's name literal (after the execution model and function).
fn name_words(ep: &Inst) -> usize {
    ep.ops.get(2..).and_then(|w| w.iter().position(|w| w >> 24 == 0)).map_or(0, |p| p + 1)
}

/// The interface ids of an OpEntryPoint.
pub(super) fn interface_ids(ep: &Inst) -> &[u32] {
    ep.ops.get(2 + name_words(ep)..).unwrap_or(&[])
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
    exact: HashSet<u32>,
    stats: &'a mut Stats,
    /// Scalar/vector leaves the current load/store may still emit (a whole-array access of a
    /// huge array must fail, not exhaust memory).
    leaf_budget: u32,
    depth: u32,
}

/// Most leaves one load or store of a composite may split into.
const MAX_LEAVES: u32 = 4096;
/// Deepest composite nesting a load or store may walk.
const MAX_DEPTH: u32 = 64;

fn describe(inst: &Inst) -> String {
    let id = if inst.id != 0 { format!("%{} = ", inst.id) } else { String::new() };
    format!("{id}opcode {} %{}", inst.op, inst.ops.first().copied().unwrap_or(0))
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
        Some(Ptr {
            root: id,
            desc: None,
            whole_array: desc_array,
            off: self.b.c_u32(0),
            align: 16,
            ty: pointee,
            mat: MatrixLayout::default(),
            comp_stride: 0,
            nonuniform: false,
        })
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
                let mem = memory_operands(inst.ops.get(1..).unwrap_or(&[]));
                let vp = self.view_ptrs(e, &p, &inst)?;
                self.begin_access();
                let v = self.load(e, &p, &vp, p.ty, p.off, p.align, p.mat, p.comp_stride, &mem, &inst)?;
                e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![v]));
                self.stats.small_storage_loads += 1;
            }
            op::STORE if self.tracked(first) => {
                let p = self.ptr(first).expect("tracked");
                let value = *inst.ops.get(1).ok_or_else(|| RewriteError::malformed(0, "OpStore without an object"))?;
                let mem = memory_operands(inst.ops.get(2..).unwrap_or(&[]));
                let vp = self.view_ptrs(e, &p, &inst)?;
                self.begin_access();
                self.store(e, &p, &vp, p.ty, p.off, p.align, p.mat, p.comp_stride, value, &mem, &inst)?;
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
        let t = self.b.global(p.ty).cloned().ok_or_else(|| RewriteError::malformed(0, format!("{}: type %{} not found", describe(inst), p.ty)))?;
        if p.whole_array {
            p.desc = Some(idx);
            p.whole_array = false;
            p.ty = t.ops[0];
            p.nonuniform |= self.b.has_decoration(idx, deco::NON_UNIFORM);
            return Ok(p);
        }
        match t.op {
            op::TYPE_STRUCT => {
                let i = self.b.const_value(idx).ok_or_else(|| RewriteError::malformed(0, format!("{}: struct index %{idx} is not a constant", describe(inst))))? as u32;
                let member = *t.ops.get(i as usize).ok_or_else(|| RewriteError::malformed(0, format!("{}: member {i} out of range", describe(inst))))?;
                let off = self.layouts.member_offset(p.ty, i).ok_or_else(|| {
                    RewriteError::unsupported(describe(inst), format!("member {i} of struct %{} has no Offset decoration", p.ty))
                })?;
                self.add(e, &mut p, None, off);
                p.mat = self.layouts.matrix(p.ty, i);
                p.ty = member;
            }
            op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => {
                let stride = self.layouts.array_stride(p.ty).ok_or_else(|| RewriteError::unsupported(describe(inst), format!("array %{} has no ArrayStride", p.ty)))?;
                self.add(e, &mut p, Some(idx), stride);
                p.ty = t.ops[0];
            }
            TYPE_MATRIX => {
                let col = t.ops[0];
                let comp = self.b.scalar_vec(col).map_or(4, |v| v.width / 8);
                if p.mat.row_major {
                    self.add(e, &mut p, Some(idx), comp);
                    p.comp_stride = p.mat.stride;
                } else {
                    let stride = p.mat.stride;
                    self.add(e, &mut p, Some(idx), stride);
                }
                p.ty = col;
            }
            op::TYPE_VECTOR => {
                let comp = self.b.scalar_vec(p.ty).map_or(4, |v| v.width / 8);
                let stride = if p.comp_stride != 0 { p.comp_stride } else { comp };
                self.add(e, &mut p, Some(idx), stride);
                p.ty = t.ops[0];
                p.comp_stride = 0;
            }
            _ => return Err(RewriteError::malformed(0, format!("{}: indexes into a non-composite type", describe(inst)))),
        }
        Ok(p)
    }

    /// `p.off += idx * scale` (`idx` None: `+= scale`), folding constants.
    fn add(&mut self, e: &mut Emitter, p: &mut Ptr, idx: Option<u32>, scale: u32) {
        let c = match idx {
            None => Some(scale),
            Some(i) => self.b.const_value(i).map(|v| (v as u32).wrapping_mul(scale)),
        };
        let u32t = self.b.t_u32();
        let term = match c {
            Some(0) => return,
            Some(c) => {
                p.align = p.align.min(pow2_align(c));
                self.b.c_u32(c)
            }
            None => {
                let i = self.index_u32(e, idx.expect("dynamic index"));
                p.align = p.align.min(pow2_align(scale));
                if scale == 1 {
                    i
                } else {
                    let s = self.b.c_u32(scale);
                    e.op(self.b, op::I_MUL, u32t, ops![i, s])
                }
            }
        };
        p.off = e.op(self.b, op::I_ADD, u32t, ops![p.off, term]);
    }

    /// An index as u32 (wrapping), whatever its integer type.
    fn index_u32(&mut self, e: &mut Emitter, idx: u32) -> u32 {
        let u32t = self.b.t_u32();
        let ty = self.type_of(idx);
        match self.b.scalar_vec(ty) {
            Some(v) if v.width == 32 && !v.signed => idx,
            Some(v) if v.width == 32 => e.op(self.b, op::BITCAST, u32t, ops![idx]),
            _ => e.op(self.b, op::U_CONVERT, u32t, ops![idx]),
        }
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

    /// The address the backend sees: the offset from the start of the word view.
    fn view_address(&mut self, e: &mut Emitter, root: u32, off: u32) -> u32 {
        let base = self.roots[&root].base;
        if base == 0 {
            return off;
        }
        let u32t = self.b.t_u32();
        let c = self.b.c_u32(base.wrapping_neg());
        e.op(self.b, op::I_ADD, u32t, ops![off, c])
    }

    fn shape(&self, p: &Ptr, store: bool, ty: u32, value: ScalarVec, align: u32, mem: &[u32]) -> AccessShape {
        AccessShape {
            store,
            storage: self.roots[&p.root].key,
            value_ty: ty,
            value,
            align,
            robustness: Robustness::None,
            mem_ops: mem.to_vec(),
            nonuniform: p.nonuniform,
            wide: value.width < 32,
        }
    }

    /// Offset `off + c` and its alignment.
    fn at(&mut self, e: &mut Emitter, off: u32, align: u32, c: u32) -> (u32, u32) {
        if c == 0 {
            return (off, align);
        }
        let u32t = self.b.t_u32();
        let k = self.b.c_u32(c);
        (e.op(self.b, op::I_ADD, u32t, ops![off, k]), align.min(pow2_align(c)))
    }

    /// Width conversion between an 8/16-bit scalar/vector type and its 32-bit twin.
    fn convert(&mut self, e: &mut Emitter, v: u32, sv: ScalarVec, to: u32) -> u32 {
        let opcode = if sv.float { op::F_CONVERT } else if sv.signed { op::S_CONVERT } else { op::U_CONVERT };
        e.op(self.b, opcode, to, ops![v])
    }

    /// The 32-bit twin of a small scalar/vector type.
    fn wide_ty(&mut self, sv: ScalarVec) -> u32 {
        let c = if sv.float { self.b.t_float(32) } else { self.b.t_int(32, sv.signed) };
        self.b.t_vec(c, sv.n)
    }

    #[allow(clippy::too_many_arguments)]
    fn load(&mut self, e: &mut Emitter, p: &Ptr, vp: &[u32], ty: u32, off: u32, align: u32, mat: MatrixLayout, cs: u32, mem: &[u32], inst: &Inst) -> Result<u32, RewriteError> {
        if let Some(sv) = self.leaf(ty, inst)? {
            let small = sv.width < 32;
            let wide = if sv.n == 1 || cs == 0 || cs == sv.width / 8 {
                let addr = self.view_address(e, p.root, off);
                let shape = self.shape(p, false, ty, sv, align, mem);
                self.backend.emit(e, self.b, &shape, vp, addr, None, None, None)
            } else {
                // A row-major matrix column: one access per component.
                let comp = ScalarVec { n: 1, ..sv };
                let comps: Vec<u32> = (0..sv.n)
                    .map(|k| {
                        let (o, a) = self.at(e, off, align, k * cs);
                        let addr = self.view_address(e, p.root, o);
                        let shape = self.shape(p, false, sv.comp_ty, comp, a, mem);
                        self.backend.emit(e, self.b, &shape, vp, addr, None, None, None)
                    })
                    .collect();
                let vt = if small { self.wide_ty(sv) } else { ty };
                e.op(self.b, op::COMPOSITE_CONSTRUCT, vt, comps)
            };
            if !small {
                return Ok(wide);
            }
            let v = self.convert(e, wide, sv, ty);
            self.exact.insert(v);
            return Ok(v);
        }
        let parts = self.parts(ty, mat, inst)?;
        let mut vals = vec![];
        self.nest(inst)?;
        for part in parts {
            let (o, a) = self.at(e, off, align, part.offset);
            vals.push(self.load(e, p, vp, part.ty, o, a, part.mat, part.comp_stride, mem, inst)?);
        }
        self.depth -= 1;
        Ok(e.op(self.b, op::COMPOSITE_CONSTRUCT, ty, vals))
    }

    #[allow(clippy::too_many_arguments)]
    fn store(&mut self, e: &mut Emitter, p: &Ptr, vp: &[u32], ty: u32, off: u32, align: u32, mat: MatrixLayout, cs: u32, value: u32, mem: &[u32], inst: &Inst) -> Result<(), RewriteError> {
        if let Some(sv) = self.leaf(ty, inst)? {
            let small = sv.width < 32;
            let wide = if small {
                let wt = self.wide_ty(sv);
                self.convert(e, value, sv, wt)
            } else {
                value
            };
            if sv.n == 1 || cs == 0 || cs == sv.width / 8 {
                let addr = self.view_address(e, p.root, off);
                let shape = self.shape(p, true, ty, sv, align, mem);
                self.backend.emit(e, self.b, &shape, vp, addr, None, None, Some(wide));
            } else {
                let comp = ScalarVec { n: 1, ..sv };
                let ct = if small { self.wide_ty(comp) } else { sv.comp_ty };
                for k in 0..sv.n {
                    let c = e.op(self.b, op::COMPOSITE_EXTRACT, ct, ops![wide, k]);
                    let (o, a) = self.at(e, off, align, k * cs);
                    let addr = self.view_address(e, p.root, o);
                    let shape = self.shape(p, true, sv.comp_ty, comp, a, mem);
                    self.backend.emit(e, self.b, &shape, vp, addr, None, None, Some(c));
                }
            }
            return Ok(());
        }
        let parts = self.parts(ty, mat, inst)?;
        self.nest(inst)?;
        for (i, part) in parts.into_iter().enumerate() {
            let v = e.op(self.b, op::COMPOSITE_EXTRACT, part.ty, ops![value, i as u32]);
            let (o, a) = self.at(e, off, align, part.offset);
            self.store(e, p, vp, part.ty, o, a, part.mat, part.comp_stride, v, mem, inst)?;
        }
        self.depth -= 1;
        Ok(())
    }

    /// Resets the per-access limits before one load or store is split into leaves.
    fn begin_access(&mut self) {
        self.leaf_budget = MAX_LEAVES;
        self.depth = 0;
    }

    /// One level deeper into a composite (a malformed type may contain itself).
    fn nest(&mut self, inst: &Inst) -> Result<(), RewriteError> {
        if self.depth >= MAX_DEPTH {
            return Err(RewriteError::unsupported(describe(inst), format!("loads or stores a composite nested more than {MAX_DEPTH} levels deep")));
        }
        self.depth += 1;
        Ok(())
    }

    /// `ty` as a scalar/vector leaf of a load or store (None for composites).
    fn leaf(&mut self, ty: u32, inst: &Inst) -> Result<Option<ScalarVec>, RewriteError> {
        if self.leaf_budget == 0 {
            return Err(RewriteError::unsupported(describe(inst), format!("loads or stores a composite of more than {MAX_LEAVES} scalars/vectors")));
        }
        self.leaf_budget -= 1;
        match self.b.scalar_vec(ty) {
            Some(sv) if matches!(sv.width, 8 | 16 | 32 | 64) && (1..=4).contains(&sv.n) => Ok(Some(sv)),
            Some(_) => Err(RewriteError::unsupported(describe(inst), format!("type %{ty} is not an 8/16/32/64-bit scalar or 2-4 component vector"))),
            None => Ok(None),
        }
    }

    /// The members / elements / columns of a composite in an explicit layout.
    fn parts(&self, ty: u32, mat: MatrixLayout, inst: &Inst) -> Result<Vec<Part>, RewriteError> {
        let t = self.b.global(ty).ok_or_else(|| RewriteError::malformed(0, format!("{}: type %{ty} not found", describe(inst))))?;
        Ok(match t.op {
            op::TYPE_STRUCT => (0..t.ops.len() as u32)
                .map(|i| {
                    let offset = self.layouts.member_offset(ty, i).ok_or_else(|| {
                        RewriteError::unsupported(describe(inst), format!("member {i} of struct %{ty} has no Offset decoration"))
                    })?;
                    Ok(Part { ty: t.ops[i as usize], offset, mat: self.layouts.matrix(ty, i), comp_stride: 0 })
                })
                .collect::<Result<_, RewriteError>>()?,
            op::TYPE_ARRAY => {
                let n = self.b.const_value(t.ops[1]).ok_or_else(|| RewriteError::unsupported(describe(inst), "array length is a specialization constant"))?;
                if n > MAX_LEAVES as u64 {
                    return Err(RewriteError::unsupported(describe(inst), format!("loads or stores an array of {n} elements (at most {MAX_LEAVES})")));
                }
                let n = n as u32;
                let stride = self.layouts.array_stride(ty).ok_or_else(|| RewriteError::unsupported(describe(inst), format!("array %{ty} has no ArrayStride")))?;
                (0..n).map(|i| Part { ty: t.ops[0], offset: i * stride, mat, comp_stride: 0 }).collect()
            }
            TYPE_MATRIX => {
                // OpTypeMatrix: "Column Count is the number of columns ... must be at least 2"
                // and at most 4 (Vector16 aside); a damaged count must not size a Vec.
                let columns = *t.ops.get(1).unwrap_or(&0);
                if !(2..=4).contains(&columns) {
                    return Err(RewriteError::malformed(0, format!("{}: matrix type %{ty} has {columns} columns", describe(inst))));
                }
                let comp = self.b.scalar_vec(t.ops[0]).map_or(4, |v| v.width / 8);
                (0..columns)
                    .map(|j| {
                        if mat.row_major {
                            Part { ty: t.ops[0], offset: j * comp, mat, comp_stride: mat.stride }
                        } else {
                            Part { ty: t.ops[0], offset: j * mat.stride, mat, comp_stride: 0 }
                        }
                    })
                    .collect()
            }
            _ => return Err(RewriteError::unsupported(describe(inst), format!("loads or stores a value of type %{ty} (runtime arrays and opaque types cannot be)"))),
        })
    }

    /// OpArrayLength: (bytes in range − member offset) / stride, 0 if the range ends before it.
    fn array_length(&mut self, e: &mut Emitter, inst: &Inst) -> Result<(), RewriteError> {
        let p = self.ptr(inst.ops[0]).expect("tracked");
        let member = *inst.ops.get(1).ok_or_else(|| RewriteError::malformed(0, "OpArrayLength without a member"))?;
        let t = self.b.global(p.ty).filter(|t| t.op == op::TYPE_STRUCT).ok_or_else(|| RewriteError::malformed(0, format!("{}: not a struct pointer", describe(inst))))?;
        let arr = *t.ops.get(member as usize).ok_or_else(|| RewriteError::malformed(0, format!("{}: member {member} out of range", describe(inst))))?;
        let offset = self.layouts.member_offset(p.ty, member).unwrap_or(0);
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
        let sv = self.b.scalar_vec(p.ty).filter(|v| v.n == 1 && v.width == 32 && !v.float).ok_or_else(|| {
            RewriteError::unsupported(describe(&inst), "atomic on a member of a block with emulated 8/16-bit storage that is not a 32-bit integer")
        })?;
        let vp = self.view_ptrs(e, &p, &inst)?;
        let addr = self.view_address(e, p.root, p.off);
        let key = self.roots[&p.root].key;
        let word = self.backend.word_pointer(e, self.b, key, &vp, addr, p.nonuniform);
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
        self.begin_access();
        let ty = match self.ptr(src) {
            Some(p) => p.ty,
            None => self
                .b
                .pointer(self.type_of(src))
                .map(|(_, t)| t)
                .ok_or_else(|| RewriteError::malformed(0, format!("{}: source %{src} is not a pointer", describe(inst))))?,
        };
        let value = match self.ptr(src) {
            Some(p) => {
                let vp = self.view_ptrs(e, &p, inst)?;
                self.load(e, &p, &vp, p.ty, p.off, p.align, p.mat, p.comp_stride, &[], inst)?
            }
            None => e.op(self.b, op::LOAD, ty, ops![src]),
        };
        match self.ptr(dst) {
            Some(p) => {
                let vp = self.view_ptrs(e, &p, inst)?;
                self.begin_access();
                self.store(e, &p, &vp, p.ty, p.off, p.align, p.mat, p.comp_stride, value, &[], inst)?;
            }
            None => e.stmt(op::STORE, ops![dst, value]),
        }
        Ok(())
    }
}

struct Part {
    ty: u32,
    offset: u32,
    mat: MatrixLayout,
    comp_stride: u32,
}

/// Memory operands of a lowered load/store, without Aligned (the word accesses have their own
/// alignment).
fn memory_operands(ops: &[u32]) -> Vec<u32> {
    let (mask, _, rest) = split_memory_operands(ops);
    if mask & !MEM_ALIGNED == 0 {
        return vec![];
    }
    let mut out = vec![mask & !MEM_ALIGNED];
    out.extend(rest);
    out
}
