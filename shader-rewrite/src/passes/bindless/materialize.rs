//! Function bodies: handle values retyped to the handle integer, conversions, and descriptor
//! loads from the table where image instructions consume handles.
use super::handles::{Form, Leaf, BOUND, HANDLE, LOCAL};
use super::table::Array;
use super::*;
use crate::module::leading_id_operands;
use crate::passes::util::consumes_image;

mod texel;

/// GLSL.std.450 UMin.
const GLSL_UMIN: u32 = 38;
const DIM_BUFFER: u32 = 5;
const DIM_SUBPASS_DATA: u32 = 6;

/// An OpSampledImage that is not a handle: (type, image, sampler, block). Rebuilt at each
/// consumer when it has a handle part, or when the consumer is in another block (core SPIR-V
/// consumes OpSampledImage results in their own block; the extension lifted that).
#[derive(Clone, Copy)]
struct Recipe {
    ty: u32,
    image: u32,
    sampler: u32,
    block: u32,
}

struct Ctx<'a> {
    types: &'a Types,
    kind: &'a HashMap<u32, u8>,
    ty_of: &'a HashMap<u32, u32>,
    repr: Repr,
    table: &'a mut Table,
    stats: &'a mut Stats,
    recipes: HashMap<u32, Recipe>,
    /// Global OpUndef / OpConstantNull of an opaque type → the same of the handle type.
    neutral: HashMap<u32, u32>,
    /// Per function id: which parameters carry handles.
    handle_params: HashMap<u32, Vec<bool>>,
    /// The function being rewritten, and whether it returns a handle.
    function: u32,
    returns_handle: bool,
    /// OpLoad of an image from a UniformConstant pointer → that pointer (an image value where
    /// OpImageTexelPointer needs the pointer).
    image_loads: HashMap<u32, u32>,
    /// Storage image type → the same with the format atomics need (`texel`).
    atomic_types: HashMap<u32, u32>,
}

/// Rewrites every function; returns the ids whose definitions were dropped.
#[allow(clippy::too_many_arguments)]
pub(super) fn rewrite_functions(
    b: &mut Builder,
    functions: &mut [Function],
    types: &Types,
    kind: &HashMap<u32, u8>,
    ty_of: &HashMap<u32, u32>,
    repr: Repr,
    table: &mut Table,
    stats: &mut Stats,
) -> Result<HashSet<u32>, RewriteError> {
    let k = |id: u32| kind.get(&id).copied().unwrap_or(0);
    let mut recipes = HashMap::default();
    let mut returns_handle: HashSet<u32> = HashSet::default();
    let mut image_loads = HashMap::default();
    for f in functions.iter() {
        for blk in &f.blocks {
            for inst in &blk.insts {
                match inst.op {
                    op::LOAD if types.leaf.contains_key(&inst.ty)
                        && ty_of.get(&inst.ops[0]).and_then(|t| types.pointers.get(t)).is_some_and(|&(s, _)| s == UNIFORM_CONSTANT) =>
                    {
                        image_loads.insert(inst.id, inst.ops[0]);
                    }
                    op::SAMPLED_IMAGE if k(inst.id) != HANDLE => {
                        recipes.insert(inst.id, Recipe { ty: inst.ty, image: inst.ops[0], sampler: inst.ops[1], block: blk.label });
                    }
                    op::RETURN_VALUE if k(inst.ops[0]) == HANDLE && types.leaf.contains_key(&f.def.ty) => {
                        returns_handle.insert(f.def.id);
                    }
                    _ => {}
                }
            }
        }
    }
    let handle_params = functions
        .iter()
        .map(|f| (f.def.id, f.params.iter().map(|p| types.leaf.contains_key(&p.ty) && k(p.id) == HANDLE).collect()))
        .collect();
    let mut cx = Ctx {
        types,
        kind,
        ty_of,
        repr,
        table,
        stats,
        recipes,
        neutral: HashMap::default(),
        handle_params,
        function: 0,
        returns_handle: false,
        image_loads,
        atomic_types: HashMap::default(),
    };
    let mut dropped = HashSet::default();
    // One emitter for every block (its pure cache is allocated once).
    let mut e = Emitter::new(0);
    for f in functions.iter_mut() {
        cx.function = f.def.id;
        cx.returns_handle = returns_handle.contains(&f.def.id);
        cx.signature(b, f);
        e.start_function();
        for blk in f.blocks.iter_mut() {
            e.start(blk.label, blk.insts.len());
            for inst in std::mem::take(&mut blk.insts) {
                if inst.op == op::SAMPLED_IMAGE && k(inst.id) == LOCAL {
                    dropped.insert(inst.id); // rebuilt at each consumer
                    continue;
                }
                cx.inst(&mut e, b, inst)?;
            }
            blk.insts = e.next_block(0);
        }
    }
    Ok(dropped)
}

impl Ctx<'_> {
    fn kind(&self, id: u32) -> u8 {
        self.kind.get(&id).copied().unwrap_or(0)
    }
    fn ty(&self, id: u32) -> u32 {
        self.ty_of.get(&id).copied().unwrap_or(0)
    }

    /// Parameters and return values that carry handles get the handle type.
    fn signature(&mut self, b: &mut Builder, f: &mut Function) {
        let mut changed = false;
        for (p, is_handle) in f.params.iter_mut().zip(self.handle_params[&f.def.id].iter()) {
            if *is_handle {
                p.ty = self.repr.ty;
                self.stats.bindless_handle_values += 1;
                changed = true;
            }
        }
        if self.returns_handle {
            f.def.ty = self.repr.ty;
            self.stats.bindless_handle_values += 1;
            changed = true;
        }
        if changed {
            let params: Vec<u32> = f.params.iter().map(|p| p.ty).collect();
            f.def.ops[1] = b.t_fn(f.def.ty, &params);
        }
    }

    fn inst(&mut self, e: &mut Emitter, b: &mut Builder, mut inst: Inst) -> Result<(), RewriteError> {
        let m = self.repr.ty;
        let k = self.kind(inst.id);
        match inst.op {
            CONVERT_U_TO_IMAGE | CONVERT_U_TO_SAMPLER | CONVERT_U_TO_SAMPLED_IMAGE => {
                self.convert(e, b, &inst, inst.ops[0], self.ty(inst.ops[0]), m)?;
                self.stats.bindless_conversions += 1;
            }
            CONVERT_IMAGE_TO_U | CONVERT_SAMPLER_TO_U | CONVERT_SAMPLED_IMAGE_TO_U => {
                if self.kind(inst.ops[0]) != HANDLE {
                    return Err(RewriteError::unsupported(
                        describe(&inst),
                        "asks for the handle of an image/sampler from an ordinary descriptor, which has none in the bindless table",
                    ));
                }
                self.convert(e, b, &inst, inst.ops[0], m, inst.ty)?;
                self.stats.bindless_conversions += 1;
            }
            // Both parts handles: one handle with the image slot of one and the sampler slot of
            // the other.
            op::SAMPLED_IMAGE if k == HANDLE => {
                let image = self.handle_value(b, &inst, inst.ops[0])?;
                let sampler = self.handle_value(b, &inst, inst.ops[1])?;
                let image_bits = self.handle_constant(b, (1 << BindlessTable::IMAGE_SLOT_BITS) - 1, u32::MAX);
                let sampler_bits = self.handle_constant(b, !((1 << BindlessTable::IMAGE_SLOT_BITS) - 1), 0);
                let i = e.op(b, op::BITWISE_AND, m, ops![image, image_bits]);
                let s = e.op(b, op::BITWISE_AND, m, ops![sampler, sampler_bits]);
                e.push(Inst::new(op::BITWISE_OR, m, inst.id, ops![i, s]));
            }
            // The image of a handle sampled image: the same handle (same image slot).
            op::IMAGE if k == HANDLE => e.push(Inst::new(op::COPY_OBJECT, m, inst.id, ops![inst.ops[0]])),
            op::IMAGE_TEXEL_POINTER => {
                self.texel_pointer(e, b, &mut inst)?;
                e.push(inst);
            }
            o if consumes_image(o) => {
                inst.ops[0] = self.resolve(e, b, &inst, inst.ops[0])?;
                e.push(inst);
            }
            _ => {
                self.fix_operands(b, &mut inst)?;
                if k == HANDLE && self.types.leaf.contains_key(&inst.ty) {
                    inst.ty = m;
                    if matches!(inst.op, op::PHI | op::SELECT) {
                        self.stats.bindless_handle_values += 1;
                    }
                } else if matches!(inst.op, op::PHI | op::SELECT) && self.types.leaf.contains_key(&inst.ty) {
                    // Only the extension allows an image or sampler there ("Using image/sampler
                    // with OpSelect requires capability BindlessTextureNV"; OpPhi likewise), and
                    // these come from ordinary descriptors, which have no handle to carry.
                    return Err(RewriteError::unsupported(
                        describe(&inst),
                        "chooses between images/samplers from ordinary descriptors (not bindless handles); core SPIR-V allows no OpPhi or OpSelect of them and the lowering carries only handles through those",
                    ));
                } else if k != HANDLE && !carries_handles(inst.op) {
                    let ids = leading_id_operands(inst.op).min(inst.ops.len());
                    if let Some(&x) = inst.ops[..ids].iter().find(|&&x| self.kind(x) & (HANDLE | LOCAL) != 0) {
                        return Err(RewriteError::unsupported(
                            describe(&inst),
                            format!("uses the bindless image/sampler %{x} in a way the lowering does not support (only image instructions, copies, OpPhi, OpSelect, composites, memory and calls)"),
                        ));
                    }
                }
                if inst.op == op::VARIABLE && self.types.handle_memory(inst.ty).is_some_and(|p| self.types.leaf.contains_key(&p)) {
                    self.stats.bindless_handle_values += 1;
                }
                e.push(inst);
            }
        }
        Ok(())
    }

    /// Operands that must be handles where the value is carried as a handle.
    fn fix_operands(&mut self, b: &mut Builder, inst: &mut Inst) -> Result<(), RewriteError> {
        let result_is_handle = self.kind(inst.id) == HANDLE;
        let positions: Vec<usize> = match inst.op {
            op::STORE if self.types.handle_memory(self.ty(inst.ops[0])).is_some() => vec![1],
            op::VARIABLE if inst.ops.len() > 1 && self.types.handle_memory(inst.ty).is_some() => vec![1],
            op::RETURN_VALUE if self.returns_handle => vec![0],
            op::FUNCTION_CALL => {
                let params = self.handle_params.get(&inst.ops[0]).cloned().unwrap_or_default();
                params.iter().enumerate().filter(|(_, h)| **h).map(|(p, _)| p + 1).filter(|&p| p < inst.ops.len()).collect()
            }
            _ if !result_is_handle => vec![],
            op::PHI => (0..inst.ops.len()).step_by(2).collect(),
            op::SELECT => vec![1, 2],
            op::COPY_OBJECT | op::COPY_LOGICAL | op::COMPOSITE_EXTRACT => vec![0],
            op::COMPOSITE_INSERT => vec![0, 1],
            op::COMPOSITE_CONSTRUCT => (0..inst.ops.len()).collect(),
            _ => vec![],
        };
        for p in positions {
            let x = inst.ops[p];
            if self.types.interesting(self.ty(x)) {
                inst.ops[p] = self.handle_value(b, inst, x)?;
            }
        }
        Ok(())
    }

    /// `x` where a handle is carried: a handle, an undefined value of the handle type, or an
    /// aggregate of handles; never a value from an ordinary descriptor.
    fn handle_value(&mut self, b: &mut Builder, inst: &Inst, x: u32) -> Result<u32, RewriteError> {
        let k = self.kind(x);
        if k == HANDLE {
            return Ok(x);
        }
        let t = self.ty(x);
        if k == 0 {
            if !self.types.leaf.contains_key(&t) {
                return Ok(x); // an aggregate: retyped in place
            }
            if let Some(g) = b.global(x).filter(|g| matches!(g.op, op::UNDEF | op::CONSTANT_NULL)).map(|g| g.op) {
                if let Some(&n) = self.neutral.get(&x) {
                    return Ok(n);
                }
                let id = b.id();
                b.add_global(Inst::new(g, self.repr.ty, id, ops![]));
                self.neutral.insert(x, id);
                return Ok(id);
            }
        }
        Err(RewriteError::unsupported(
            describe(inst),
            format!("%{x} is an image/sampler from an ordinary descriptor (or combined with one) but goes where bindless handles are carried (memory, OpPhi/OpSelect, calls); the lowering cannot turn a descriptor into a handle"),
        ))
    }

    /// A constant of the handle type from its low and high words.
    fn handle_constant(&mut self, b: &mut Builder, lo: u32, hi: u32) -> u32 {
        match self.repr.form {
            Form::U32 => b.c_u32(lo),
            Form::U64 => b.constant(self.repr.ty, &[lo, hi]),
            Form::UVec2 => {
                let (l, h) = (b.c_u32(lo), b.c_u32(hi));
                b.constant_composite(self.repr.ty, &[l, h])
            }
        }
    }

    /// Emits `inst.id = v` converted from `from` to `to` (both handle-holding integer types).
    fn convert(&mut self, e: &mut Emitter, b: &mut Builder, inst: &Inst, v: u32, from: u32, to: u32) -> Result<(), RewriteError> {
        if from == to {
            e.push(Inst::new(op::COPY_OBJECT, to, inst.id, ops![v]));
            return Ok(());
        }
        let bits = |t: u32| b.scalar_vec(t).filter(|s| !s.float).map(|s| s.width * s.n);
        match (bits(from), bits(to)) {
            // u64 ↔ uvec2 (or signedness): the same bits.
            (Some(x), Some(y)) if x == y && (x == 32 || x == 64) => {
                e.push(Inst::new(op::BITCAST, to, inst.id, ops![v]));
                Ok(())
            }
            _ => Err(RewriteError::unsupported(
                describe(inst),
                format!("a handle of type %{from} cannot be carried as %{to} (addressing mode 32 takes a u32, 64 a u64 or uvec2)"),
            )),
        }
    }

    /// The image/sampled-image operand of an image instruction, made a real descriptor.
    fn resolve(&mut self, e: &mut Emitter, b: &mut Builder, inst: &Inst, x: u32) -> Result<u32, RewriteError> {
        if self.kind(x) == HANDLE {
            return self.materialize(e, b, inst, x, self.ty(x));
        }
        let Some(r) = self.recipes.get(&x).copied() else { return Ok(x) };
        if self.kind(x) != LOCAL && r.block == e.label() {
            return Ok(x);
        }
        let from_handle = |c: &Self, p: u32| c.kind(p) == HANDLE;
        let image = if from_handle(self, r.image) { self.materialize(e, b, inst, r.image, self.ty(r.image))? } else { r.image };
        let sampler = if from_handle(self, r.sampler) { self.materialize(e, b, inst, r.sampler, self.ty(r.sampler))? } else { r.sampler };
        let v = e.op(b, op::SAMPLED_IMAGE, r.ty, ops![image, sampler]);
        if self.kind(x) != BOUND {
            b.decorate(v, deco::NON_UNIFORM, &[]);
        }
        Ok(v)
    }

    /// Loads the descriptor(s) handle `h` names, as a value of opaque type `ty`.
    fn materialize(&mut self, e: &mut Emitter, b: &mut Builder, inst: &Inst, h: u32, ty: u32) -> Result<u32, RewriteError> {
        match self.types.leaf.get(&ty).copied() {
            Some(Leaf::Image { .. }) => self.load_image(e, b, inst, h, ty),
            Some(Leaf::Sampler) => Ok(self.load_sampler(e, b, h, ty)),
            Some(Leaf::SampledImage { image }) => {
                let i = self.load_image(e, b, inst, h, image)?;
                let sampler_ty = self.table.sampler_ty(b);
                let s = self.load_sampler(e, b, h, sampler_ty);
                let v = e.op(b, op::SAMPLED_IMAGE, ty, ops![i, s]);
                b.decorate(v, deco::NON_UNIFORM, &[]);
                Ok(v)
            }
            None => Err(RewriteError::malformed(0, format!("{}: handle %{h} has no image, sampler or sampled image type", describe(inst)))),
        }
    }

    fn load_image(&mut self, e: &mut Emitter, b: &mut Builder, inst: &Inst, h: u32, ty: u32) -> Result<u32, RewriteError> {
        let ptr = self.image_pointer(e, b, inst, h, ty)?;
        Ok(self.load(e, b, ty, ptr))
    }

    fn load_sampler(&mut self, e: &mut Emitter, b: &mut Builder, h: u32, ty: u32) -> u32 {
        let ptr = self.element(e, b, Array::Samplers, ty, h);
        self.load(e, b, ty, ptr)
    }

    /// Pointer to the image descriptor `h` names in the alias array for image type `ty`:
    /// storage images (Sampled = 2) in the storage-image array, others in the sampled-image one.
    fn image_pointer(&mut self, e: &mut Emitter, b: &mut Builder, inst: &Inst, h: u32, ty: u32) -> Result<u32, RewriteError> {
        let sampled = self.table_image(inst, ty)?;
        let a = if sampled == 2 { Array::StorageImages } else { Array::SampledImages };
        Ok(self.element(e, b, a, ty, h))
    }

    /// The Sampled operand of image type `ty`, which a handle may name: an image view (not a
    /// texel buffer or subpass input, which the table does not hold).
    fn table_image(&self, inst: &Inst, ty: u32) -> Result<u32, RewriteError> {
        let Some(Leaf::Image { dim, sampled }) = self.types.leaf.get(&ty).copied() else {
            return Err(RewriteError::malformed(0, format!("{}: %{ty} is not an image type", describe(inst))));
        };
        if dim == DIM_BUFFER || dim == DIM_SUBPASS_DATA {
            return Err(RewriteError::unsupported(describe(inst), "a bindless texel buffer or subpass input (the table holds only image views)"));
        }
        Ok(sampled)
    }

    /// The index into array `a` of handle `h`: its sampler slot (bits 20..32 of the low word)
    /// or image slot (bits 0..20) kept inside the array (see [`Self::index`]), in one AND when
    /// the array's size is a power of two.
    fn handle_index(&mut self, e: &mut Emitter, b: &mut Builder, h: u32, a: Array) -> u32 {
        let u32t = self.repr.u32t;
        let lo = self.low_word(e, b, h);
        if a == Array::Samplers {
            let shift = b.c_u32(BindlessTable::IMAGE_SLOT_BITS);
            let slot = e.pure(b, op::SHIFT_RIGHT_LOGICAL, u32t, &[lo, shift]);
            return self.index(e, b, a, slot, 1 << BindlessTable::SAMPLER_SLOT_BITS);
        }
        let field = 1 << BindlessTable::IMAGE_SLOT_BITS;
        if self.table.count(a).is_power_of_two() {
            return self.index(e, b, a, lo, u32::MAX);
        }
        let mask = b.c_u32(field - 1);
        let slot = e.pure(b, op::BITWISE_AND, u32t, &[lo, mask]);
        self.index(e, b, a, slot, field)
    }

    /// `slot`, a value below `field` (or any, for `u32::MAX`), kept inside array `a` so that a
    /// garbage handle cannot index past it: `slot & (count - 1)` for a power-of-two count (the
    /// layer's always is; nothing where the field fits the array), else `min(slot, count - 1)`.
    /// Every element holds a live descriptor or a filler, so either names something harmless.
    fn index(&mut self, e: &mut Emitter, b: &mut Builder, a: Array, slot: u32, field: u32) -> u32 {
        let u32t = self.repr.u32t;
        let count = self.table.count(a);
        if field <= count {
            return slot;
        }
        let last = b.c_u32(count - 1);
        if count.is_power_of_two() {
            e.pure(b, op::BITWISE_AND, u32t, &[slot, last])
        } else {
            let glsl = b.glsl_std450();
            e.pure(b, op::EXT_INST, u32t, &[glsl, GLSL_UMIN, slot, last])
        }
    }

    /// `&alias[index]`, the element of array `a` handle `h` names ([`Self::handle_index`]).
    fn element(&mut self, e: &mut Emitter, b: &mut Builder, a: Array, ty: u32, h: u32) -> u32 {
        let fresh = b.m.header[3];
        let index = self.handle_index(e, b, h, a);
        let var = self.table.var(b, a, ty, self.function);
        let pty = b.t_ptr(UNIFORM_CONSTANT, ty);
        // Pure: the uses of one handle in a block share its index and element pointer.
        let ptr = e.pure(b, op::ACCESS_CHAIN, pty, &[var, index]);
        // Handles are not dynamically uniform in general (Vulkan "Descriptor indexing"); ids
        // from before this call are decorated already.
        for id in [index, ptr].into_iter().filter(|&id| id >= fresh) {
            b.decorate(id, deco::NON_UNIFORM, &[]);
        }
        ptr
    }

    fn load(&mut self, e: &mut Emitter, b: &mut Builder, ty: u32, ptr: u32) -> u32 {
        let v = e.op(b, op::LOAD, ty, ops![ptr]);
        b.decorate(v, deco::NON_UNIFORM, &[]);
        self.stats.bindless_descriptor_loads += 1;
        v
    }

    /// The low 32 bits of a handle (the high word is ignored).
    fn low_word(&mut self, e: &mut Emitter, b: &mut Builder, h: u32) -> u32 {
        let u32t = self.repr.u32t;
        match self.repr.form {
            Form::U32 => h,
            Form::U64 => e.pure(b, op::U_CONVERT, u32t, &[h]),
            Form::UVec2 => e.pure(b, op::COMPOSITE_EXTRACT, u32t, &[h, 0]),
        }
    }
}

/// Instructions that may take handles as operands besides image instructions.
fn carries_handles(opcode: u32) -> bool {
    matches!(
        opcode,
        op::PHI
            | op::SELECT
            | op::COPY_OBJECT
            | op::COPY_LOGICAL
            | op::COMPOSITE_CONSTRUCT
            | op::COMPOSITE_EXTRACT
            | op::COMPOSITE_INSERT
            | op::STORE
            | op::RETURN_VALUE
            | op::FUNCTION_CALL
            | op::EXT_INST
    )
}
