//! Finds or adds types and constants, so passes never declare a non-aggregate type twice
//! (SPIR-V spec 2.8: non-aggregate types must be unique), and emits instructions.
use rustc_hash::FxHashMap as HashMap;

use crate::ops;
use crate::module::{encode_string, op, Block, Inst, Module};

/// Storage classes (SPIR-V spec 3.7).
pub mod sc {
    pub const UNIFORM_CONSTANT: u32 = 0;
    pub const FUNCTION: u32 = 7;
    pub const INPUT: u32 = 1;
    pub const UNIFORM: u32 = 2;
    pub const OUTPUT: u32 = 3;
    pub const PUSH_CONSTANT: u32 = 9;
    pub const STORAGE_BUFFER: u32 = 12;
    pub const PHYSICAL_STORAGE_BUFFER: u32 = 5349;
}

/// Capabilities (SPIR-V spec 3.31) used by the passes.
pub mod cap {
    pub const FLOAT16: u32 = 9;
    pub const INT64: u32 = 11;
    pub const INT16: u32 = 22;
    pub const INT8: u32 = 39;
    /// StorageBuffer16BitAccess.
    pub const STORAGE_BUFFER_16: u32 = 4433;
    /// StorageBuffer8BitAccess.
    pub const STORAGE_BUFFER_8: u32 = 4448;
    pub const SHADER_NON_UNIFORM: u32 = 5301;
}

/// Memory models and addressing models (SPIR-V spec 3.4, 3.5) used by the passes.
pub mod model {
    pub const MEMORY_MODEL_VULKAN: u32 = 3;
    pub const ADDRESSING_PHYSICAL_STORAGE_BUFFER_64: u32 = 5348;
}

/// Decorations (SPIR-V spec 3.20) used by the passes.
pub mod deco {
    pub const BLOCK: u32 = 2;
    pub const BUFFER_BLOCK: u32 = 3;
    pub const ARRAY_STRIDE: u32 = 6;
    pub const RESTRICT: u32 = 19;
    pub const ALIASED: u32 = 20;
    pub const VOLATILE: u32 = 21;
    pub const COHERENT: u32 = 23;
    pub const NON_WRITABLE: u32 = 24;
    pub const NON_READABLE: u32 = 25;
    pub const NO_CONTRACTION: u32 = 42;
    pub const BINDING: u32 = 33;
    pub const DESCRIPTOR_SET: u32 = 34;
    pub const OFFSET: u32 = 35;
    pub const NON_UNIFORM: u32 = 5300;
}

/// The sorted (target, decoration) pairs of a module's OpDecorates.
struct Decorations<'a>(&'a [(u32, u32)]);

impl Decorations<'_> {
    fn contains(&self, key: &(u32, u32)) -> bool {
        self.0.binary_search(key).is_ok()
    }
}

/// A decoded scalar or vector type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScalarVec {
    pub float: bool,
    pub signed: bool,
    /// Component width in bits.
    pub width: u32,
    /// Component count (1 for a scalar).
    pub n: u32,
    /// The component type id.
    pub comp_ty: u32,
}

/// Lookup keys of the non-aggregate types (SPIR-V spec 2.8: declared once each), packed in a
/// u64 so a lookup hashes one word and allocates nothing: opcode in the top 16 bits, then the
/// operand words (storage class / width / component type, and the second operand).
fn type_key(opcode: u32, a: u32, b: u32) -> u64 {
    ((opcode as u64) << 48) | (((a as u64) & 0xffff) << 32) | b as u64
}

/// How many small u32 constants are cached in an array (most constants a lowering asks for:
/// offsets, shifts, masks, strides).
const SMALL_U32: usize = 64;

pub struct Builder<'m> {
    pub m: &'m mut Module,
    /// Position + 1 in `m.globals` of each global result id (0: not a global), by id. Checked
    /// on use: a pass that edits `m.globals` behind the builder's back gets a search instead.
    index: Vec<u32>,
    /// Non-aggregate types by [`type_key`] (pointer storage classes and widths fit 16 bits; a
    /// type whose operands do not is simply not indexed, and a new one is declared).
    types: HashMap<u64, u32>,
    /// OpTypeFunction by (return type, parameter types), indexed on first use.
    fn_types: Option<HashMap<crate::module::Ops, u32>>,
    /// One-word OpConstants by (type << 32 | value).
    consts: HashMap<u64, u32>,
    /// Other constants (wider OpConstants, composites) by (type, key words), indexed on first
    /// use. Composite keys start with a word no OpConstant literal list of that type has.
    other_consts: Option<HashMap<(u32, crate::module::Ops), u32>>,
    /// u32 constants 0..SMALL_U32 (0: not yet looked up).
    small_u32: [u32; SMALL_U32],
    /// (target, decoration) of every OpDecorate, sorted, made on first query.
    decorated: std::cell::OnceCell<Vec<(u32, u32)>>,
    /// OpConstantNull by type, found on first use.
    nulls: Option<Vec<(u32, u32)>>,
    /// Does the module declare an image, sampler or sampled image type?
    opaque: std::cell::OnceCell<bool>,
    glsl: Option<Option<u32>>,
    /// uint32 and bool, asked for at nearly every emitted instruction: kept out of `types`.
    u32_ty: Option<u32>,
    bool_ty: Option<u32>,
}

impl<'m> Builder<'m> {
    pub fn new(m: &'m mut Module) -> Self {
        let bound = m.header[3] as usize;
        let mut index = vec![0u32; bound + bound / 4 + 16];
        // Sized once: growing the maps an insert at a time was a good part of a small rewrite.
        let (n_types, n_consts) = m.globals.iter().fold((0, 0), |(t, c), g| match g.op {
            op::TYPE_VOID..=op::TYPE_VECTOR | op::TYPE_POINTER => (t + 1, c),
            op::CONSTANT => (t, c + 1),
            _ => (t, c),
        });
        let mut types = HashMap::with_capacity_and_hasher(n_types + 16, Default::default());
        let mut consts = HashMap::with_capacity_and_hasher(n_consts + 16, Default::default());
        for (n, i) in m.globals.iter().enumerate() {
            if let Some(slot) = index.get_mut(i.id as usize).filter(|_| i.id != 0) {
                *slot = n as u32 + 1;
            }
            let key = match (i.op, i.ops.as_slice()) {
                (op::TYPE_VOID | op::TYPE_BOOL, []) => type_key(i.op, 0, 0),
                (op::TYPE_INT, &[w, s]) if w <= 0xffff => type_key(i.op, w, s),
                (op::TYPE_FLOAT, &[w]) => type_key(i.op, 0, w),
                (op::TYPE_VECTOR, &[c, n]) if n <= 0xffff => type_key(i.op, n, c),
                (op::TYPE_POINTER, &[s, p]) if s <= 0xffff => type_key(i.op, s, p),
                (op::CONSTANT, &[v]) => {
                    consts.entry(((i.ty as u64) << 32) | v as u64).or_insert(i.id);
                    continue;
                }
                _ => continue,
            };
            types.entry(key).or_insert(i.id);
        }
        Builder {
            index,
            types,
            fn_types: None,
            consts,
            other_consts: None,
            small_u32: [0; SMALL_U32],
            decorated: std::cell::OnceCell::new(),
            nulls: None,
            opaque: std::cell::OnceCell::new(),
            glsl: None,
            u32_ty: None,
            bool_ty: None,
            m,
        }
    }

    pub fn id(&mut self) -> u32 {
        self.m.next_id()
    }

    /// The global (type, constant, variable) defining `id`, if any.
    #[inline]
    pub fn global(&self, id: u32) -> Option<&Inst> {
        match self.index.get(id as usize) {
            Some(&n) if n != 0 => match self.m.globals.get(n as usize - 1) {
                Some(g) if g.id == id => Some(g),
                // `m.globals` was edited directly (a removal or an insertion moved it).
                _ => self.m.globals.iter().find(|g| g.id == id),
            },
            // Defined after the index was made, and not through `add_global`.
            _ if id as usize >= self.index.len() => self.m.globals.iter().find(|g| g.id == id),
            _ => None,
        }
    }

    pub fn add_global(&mut self, inst: Inst) -> u32 {
        let id = inst.id;
        if id as usize >= self.index.len() {
            self.index.resize(id as usize + 1 + self.index.len() / 2, 0);
        }
        self.index[id as usize] = self.m.globals.len() as u32 + 1;
        self.m.globals.push(inst);
        id
    }

    /// The non-aggregate type `opcode a b` (see [`type_key`]), found or declared.
    fn ty(&mut self, opcode: u32, a: u32, b: u32, ops: &[u32]) -> u32 {
        let key = (a <= 0xffff).then(|| type_key(opcode, a, b));
        if let Some(&id) = key.and_then(|k| self.types.get(&k)) {
            return id;
        }
        let id = self.id();
        self.add_global(Inst::new(opcode, 0, id, ops));
        if let Some(k) = key {
            self.types.insert(k, id);
        }
        id
    }
    pub fn t_void(&mut self) -> u32 {
        self.ty(op::TYPE_VOID, 0, 0, &[])
    }
    pub fn t_bool(&mut self) -> u32 {
        if let Some(t) = self.bool_ty {
            return t;
        }
        let t = self.ty(op::TYPE_BOOL, 0, 0, &[]);
        self.bool_ty = Some(t);
        t
    }
    pub fn t_int(&mut self, width: u32, signed: bool) -> u32 {
        self.ty(op::TYPE_INT, width, signed as u32, &[width, signed as u32])
    }
    pub fn t_u32(&mut self) -> u32 {
        if let Some(t) = self.u32_ty {
            return t;
        }
        let t = self.t_int(32, false);
        self.u32_ty = Some(t);
        t
    }
    pub fn t_float(&mut self, width: u32) -> u32 {
        self.ty(op::TYPE_FLOAT, 0, width, &[width])
    }
    pub fn t_vec(&mut self, comp: u32, n: u32) -> u32 {
        if n == 1 {
            return comp;
        }
        self.ty(op::TYPE_VECTOR, n, comp, &[comp, n])
    }
    pub fn t_ptr(&mut self, storage: u32, pointee: u32) -> u32 {
        self.ty(op::TYPE_POINTER, storage, pointee, &[storage, pointee])
    }
    pub fn t_fn(&mut self, ret: u32, params: &[u32]) -> u32 {
        let mut ops = crate::module::Ops::from_slice(&[ret]);
        ops.extend_from_slice(params);
        let m = &*self.m;
        let map = self.fn_types.get_or_insert_with(|| {
            let mut map = HashMap::default();
            for g in m.globals.iter().filter(|g| g.op == op::TYPE_FUNCTION) {
                map.entry(g.ops.clone()).or_insert(g.id);
            }
            map
        });
        if let Some(&id) = map.get(&ops) {
            return id;
        }
        let id = self.id();
        self.add_global(Inst::new(op::TYPE_FUNCTION, 0, id, ops.clone()));
        self.fn_types.as_mut().expect("indexed above").insert(ops, id);
        id
    }
    /// A new (never shared) struct type.
    pub fn t_struct(&mut self, members: &[u32]) -> u32 {
        let id = self.id();
        self.add_global(Inst::new(op::TYPE_STRUCT, 0, id, members.to_vec()))
    }
    /// A new runtime array type with the given ArrayStride.
    pub fn t_runtime_array(&mut self, elem: u32, stride: u32) -> u32 {
        let id = self.id();
        self.add_global(Inst::new(op::TYPE_RUNTIME_ARRAY, 0, id, ops![elem]));
        self.decorate(id, deco::ARRAY_STRIDE, &[stride]);
        id
    }

    pub fn constant(&mut self, ty: u32, words: &[u32]) -> u32 {
        if let [v] = *words {
            let key = ((ty as u64) << 32) | v as u64;
            if let Some(&id) = self.consts.get(&key) {
                return id;
            }
            let id = self.id();
            self.add_global(Inst::new(op::CONSTANT, ty, id, ops![v]));
            self.consts.insert(key, id);
            return id;
        }
        self.other_constant(op::CONSTANT, ty, crate::module::Ops::from_slice(words), words)
    }

    /// A constant other than a one-word OpConstant: `key` (type-unique) → the OpConstant or
    /// OpConstantComposite `opcode %ty ops`, found or declared.
    fn other_constant(&mut self, opcode: u32, ty: u32, key: crate::module::Ops, ops: &[u32]) -> u32 {
        let m = &*self.m;
        let map = self.other_consts.get_or_insert_with(|| {
            let mut map = HashMap::default();
            for g in m.globals.iter() {
                let key = match g.op {
                    op::CONSTANT if g.ops.len() != 1 => g.ops.clone(),
                    op::CONSTANT_COMPOSITE => {
                        let mut key = ops![u32::MAX - 1];
                        key.extend_from_slice(&g.ops);
                        key
                    }
                    _ => continue,
                };
                map.entry((g.ty, key)).or_insert(g.id);
            }
            map
        });
        let key = (ty, key);
        if let Some(&id) = map.get(&key) {
            return id;
        }
        let id = self.id();
        self.add_global(Inst::new(opcode, ty, id, ops));
        self.other_consts.as_mut().expect("indexed above").insert(key, id);
        id
    }

    pub fn c_u32(&mut self, v: u32) -> u32 {
        if let Some(&id) = self.small_u32.get(v as usize).filter(|&&id| id != 0) {
            return id;
        }
        let t = self.t_u32();
        let id = self.constant(t, &[v]);
        if let Some(slot) = self.small_u32.get_mut(v as usize) {
            *slot = id;
        }
        id
    }
    pub fn c_f32(&mut self, v: f32) -> u32 {
        let t = self.t_float(32);
        self.constant(t, &[v.to_bits()])
    }

    /// An OpConstantComposite of type `ty` with constituents `parts` (found or added).
    pub fn constant_composite(&mut self, ty: u32, parts: &[u32]) -> u32 {
        let mut key = ops![u32::MAX - 1]; // cannot collide with an OpConstant's literal words
        key.extend_from_slice(parts);
        self.other_constant(op::CONSTANT_COMPOSITE, ty, key, parts)
    }

    /// The OpConstantNull of `ty` (found or added).
    pub fn c_null(&mut self, ty: u32) -> u32 {
        let m = &*self.m;
        let nulls = self.nulls.get_or_insert_with(|| m.globals.iter().filter(|g| g.op == op::CONSTANT_NULL).map(|g| (g.ty, g.id)).collect());
        if let Some(&(_, id)) = nulls.iter().find(|(t, _)| *t == ty) {
            return id;
        }
        let id = self.id();
        self.add_global(Inst::new(op::CONSTANT_NULL, ty, id, ops![]));
        self.nulls.as_mut().expect("found above").push((ty, id));
        id
    }

    /// A u32 scalar (`n` = 1) or an OpConstantComposite splat of `v` over `n` components.
    pub fn c_u32_splat(&mut self, v: u32, n: u32) -> u32 {
        let c = self.c_u32(v);
        if n == 1 {
            return c;
        }
        let u32t = self.t_u32();
        let ty = self.t_vec(u32t, n);
        let parts: smallvec::SmallVec<[u32; 4]> = smallvec::smallvec![c; n as usize];
        self.constant_composite(ty, &parts)
    }

    /// The GLSL.std.450 extended instruction set (imported if the module lacks it).
    pub fn glsl_std450(&mut self) -> u32 {
        let found = *self.glsl.get_or_insert_with(|| self.m.ext_inst_imports.iter().find(|i| crate::module::string_is(&i.ops, "GLSL.std.450")).map(|i| i.id));
        if let Some(id) = found {
            return id;
        }
        let id = self.id();
        self.m.ext_inst_imports.push(Inst::new(op::EXT_INST_IMPORT, 0, id, encode_string("GLSL.std.450")));
        self.glsl = Some(Some(id));
        id
    }

    /// Decodes a scalar/vector int or float type. Only widths 8/16/32/64 and 2..=16 components
    /// (SPIR-V spec 2.16.1 and OpTypeVector; Vulkan allows no other widths): a damaged module's
    /// other numbers are not a scalar or vector here, so no pass multiplies or loops over them.
    pub fn scalar_vec(&self, ty: u32) -> Option<ScalarVec> {
        let t = self.global(ty)?;
        let width_ok = |w: u32| matches!(w, 8 | 16 | 32 | 64);
        match t.op {
            op::TYPE_INT if t.ops.len() == 2 && width_ok(t.ops[0]) => Some(ScalarVec { float: false, signed: t.ops[1] != 0, width: t.ops[0], n: 1, comp_ty: ty }),
            op::TYPE_FLOAT if !t.ops.is_empty() && width_ok(t.ops[0]) => Some(ScalarVec { float: true, signed: false, width: t.ops[0], n: 1, comp_ty: ty }),
            op::TYPE_VECTOR if t.ops.len() == 2 && (2..=16).contains(&t.ops[1]) => {
                // One level only: a vector's component is a scalar (and a malformed module
                // whose vector names itself must not recurse).
                let (comp, n) = (t.ops[0], t.ops[1]);
                let c = self.global(comp).filter(|c| matches!(c.op, op::TYPE_INT | op::TYPE_FLOAT) && !c.ops.is_empty() && width_ok(c.ops[0]))?;
                let (float, width) = (c.op == op::TYPE_FLOAT, c.ops[0]);
                let signed = !float && c.ops.get(1).is_some_and(|&s| s != 0);
                Some(ScalarVec { float, signed, width, n, comp_ty: comp })
            }
            _ => None,
        }
    }

    /// (storage class, pointee) of a pointer type.
    pub fn pointer(&self, ty: u32) -> Option<(u32, u32)> {
        let t = self.global(ty)?;
        (t.op == op::TYPE_POINTER).then(|| (t.ops[0], t.ops[1]))
    }

    /// Value of a scalar integer OpConstant (up to 64 bits).
    pub fn const_value(&self, id: u32) -> Option<u64> {
        let c = self.global(id)?;
        if c.op != op::CONSTANT {
            return None;
        }
        let t = self.global(c.ty)?;
        if t.op != op::TYPE_INT {
            return None;
        }
        Some(match c.ops.as_slice() {
            [lo] => *lo as u64,
            [lo, hi] => (*lo as u64) | ((*hi as u64) << 32),
            _ => return None,
        })
    }

    /// Does the module declare an image, sampler or sampled image type (so values that must
    /// stay in the block that uses them may exist)?
    pub fn has_opaque_types(&self) -> bool {
        let m = &*self.m;
        *self.opaque.get_or_init(|| m.globals.iter().any(|g| matches!(g.op, op::TYPE_IMAGE | op::TYPE_SAMPLER | op::TYPE_SAMPLED_IMAGE)))
    }
    pub fn has_decoration(&self, id: u32, decoration: u32) -> bool {
        self.decorations().contains(&(id, decoration))
    }
    /// (target, decoration) of every OpDecorate, sorted.
    fn decorations(&self) -> Decorations<'_> {
        let m = &*self.m;
        Decorations(self.decorated.get_or_init(|| {
            let mut v: Vec<(u32, u32)> = m.annotations.iter().filter(|a| a.op == op::DECORATE && a.ops.len() >= 2).map(|a| (a.ops[0], a.ops[1])).collect();
            v.sort_unstable();
            v
        }))
    }
    pub fn decorate(&mut self, target: u32, decoration: u32, literals: &[u32]) {
        if let Some(v) = self.decorated.get_mut() {
            if let Err(at) = v.binary_search(&(target, decoration)) {
                v.insert(at, (target, decoration));
            }
        }
        self.m.decorate(target, decoration, literals);
    }
}

/// A few ids (the values a branch arm yields), without a heap allocation.
pub type Vals = smallvec::SmallVec<[u32; 4]>;

/// A pure instruction's identity for [`Emitter::pure`]: opcode, result type, up to four operands.
type PureKey = (u32, u32, [u32; 4]);

/// Slots of an emitter's pure-instruction cache: open addressing over a few probes, the one
/// used longest ago replaced when they all hold live entries, so a lookup is one hash and a few
/// compares, and nothing is inserted into or removed from a map as branch arms open and close.
/// 2 probes replacing the key's own slot (and a hash that used 7 bits) evicted live entries in
/// the long blocks of the dxil-spirv vector modules: their edge functions took an
/// `OpArrayLength` again, bab-float3 936 words where 919 do. 256 slots would keep them too,
/// but cost the first call in a process ~2 µs more (the table zeroed and faulted in), for
/// modules that never fill 128 (measured 2026-12-03).
const PURE_SLOTS: usize = 128;
/// Slots a key may sit in, from its own.
const PURE_PROBES: usize = 4;

#[derive(Clone, Copy, Default)]
struct PureSlot {
    key: PureKey,
    /// The result (0: empty).
    id: u32,
    /// The branch arm it was emitted in (0: outside every arm); valid while that arm is open.
    arm: u32,
    /// The emitter's `epoch` it was emitted in: entries of earlier ones are empty.
    epoch: u32,
    /// The emitter's `tick` when last found or put: the probe used longest ago is replaced.
    used: u32,
}

fn pure_slot(key: &PureKey) -> usize {
    let mut h = key.0.wrapping_mul(0x9e37_79b1) ^ key.1;
    for &w in &key.2 {
        h = h.rotate_left(5).wrapping_mul(0x9e37_79b1) ^ w;
    }
    (h.wrapping_mul(0x9e37_79b1) >> (32 - PURE_SLOTS.trailing_zeros())) as usize // PURE_SLOTS: a power of two
}

/// Straight-line and structured code emission into a list of blocks.
pub struct Emitter {
    pub blocks: Vec<Block>,
    label: u32,
    insts: Vec<Inst>,
    /// Results of pure instructions emitted so far (see [`Emitter::pure`]), allocated on first
    /// use; an entry dominates the current point while the arm it was emitted in is open.
    pure: Vec<PureSlot>,
    /// The arms open now, innermost last, and the serial the next one gets.
    arms: Vec<u32>,
    next_arm: u32,
    /// The key of the last pure instruction emitted (for [`Emitter::rename_last`]).
    last_pure: Option<PureKey>,
    /// Bumped by [`Emitter::take_blocks`] / [`Emitter::next_block`] to empty the pure cache
    /// without rewriting it.
    epoch: u32,
    /// Counts the pure cache's lookups (see `PureSlot::used`).
    tick: u32,
    /// The epoch of the current function's entry block (0: none, see
    /// [`Emitter::start_function`]): its entries emitted outside arms stay live in every later
    /// block, which the entry block dominates.
    entry_epoch: u32,
}

impl Emitter {
    pub fn new(label: u32) -> Self {
        Self::with_capacity(label, 0)
    }
    /// An emitter whose scratch list starts with room for `n` instructions.
    pub fn with_capacity(label: u32, n: usize) -> Self {
        Emitter { blocks: vec![], label, insts: Vec::with_capacity(n), pure: vec![], arms: vec![], next_arm: 0, last_pure: None, epoch: 1, tick: 0, entry_epoch: 0 }
    }
    pub fn label(&self) -> u32 {
        self.label
    }
    /// Emits an instruction with a fresh result id and returns it.
    pub fn op(&mut self, b: &mut Builder, opcode: u32, ty: u32, ops: impl Into<crate::module::Ops>) -> u32 {
        let id = b.id();
        self.insts.push(Inst::new(opcode, ty, id, ops));
        id
    }
    /// A pure instruction (no side effects, no memory access: arithmetic, comparisons, access
    /// chains) with up to four operands: the result of an identical one emitted earlier in this
    /// emitter where it still dominates (before the current branch arm, or earlier in it), else
    /// a new one. Repeated address arithmetic of one access and of accesses through the same
    /// raw chain is emitted once.
    pub fn pure(&mut self, b: &mut Builder, opcode: u32, ty: u32, ops: &[u32]) -> u32 {
        self.pure_as(b, opcode, ty, ops, 0)
    }
    /// [`Emitter::pure`], a new instruction getting the result id `id` (0: a fresh one).
    pub fn pure_as(&mut self, b: &mut Builder, opcode: u32, ty: u32, ops: &[u32], id: u32) -> u32 {
        debug_assert!(ops.len() <= 4);
        let mut key_ops = [u32::MAX; 4];
        key_ops[..ops.len()].copy_from_slice(ops);
        let key = (opcode, ty, key_ops);
        if self.pure.is_empty() {
            self.pure = vec![PureSlot::default(); PURE_SLOTS];
        }
        // Up to PURE_PROBES slots from the key's own; a new entry takes the first one not
        // holding a live entry, else the one used longest ago.
        let home = pure_slot(&key);
        self.tick = self.tick.wrapping_add(1);
        let mut free = None;
        let mut oldest = home;
        for p in 0..PURE_PROBES {
            let slot = (home + p) % PURE_SLOTS;
            let s = self.pure[slot];
            let live = s.id != 0
                && ((s.epoch == self.epoch && (s.arm == 0 || self.arms.contains(&s.arm))) || (s.epoch == self.entry_epoch && s.arm == 0));
            if live && s.key == key {
                self.pure[slot].used = self.tick;
                return s.id;
            }
            if !live && free.is_none() {
                free = Some(slot);
            }
            if live && self.tick.wrapping_sub(s.used) > self.tick.wrapping_sub(self.pure[oldest].used) {
                oldest = slot;
            }
        }
        let id = if id == 0 { b.id() } else { id };
        self.insts.push(Inst { op: opcode, ty, id, ops: crate::module::ops_from(ops) });
        self.pure[free.unwrap_or(oldest)] = PureSlot { key, id, arm: self.arms.last().copied().unwrap_or(0), epoch: self.epoch, used: self.tick };
        self.last_pure = Some(key);
        id
    }
    /// Starts a branch arm: what [`Emitter::pure`] emits in it does not dominate what follows
    /// the construct (nor the construct's other arm).
    fn open_arm(&mut self) -> usize {
        self.next_arm += 1;
        self.arms.push(self.next_arm);
        self.arms.len()
    }
    /// Ends the branch arm [`Emitter::open_arm`] returned `mark` for.
    fn close_arm(&mut self, mark: usize) {
        self.arms.truncate(mark - 1);
    }
    /// Emits an instruction without a result id.
    pub fn stmt(&mut self, opcode: u32, ops: impl Into<crate::module::Ops>) {
        self.insts.push(Inst::new(opcode, 0, 0, ops));
    }
    pub fn push(&mut self, inst: Inst) {
        self.insts.push(inst);
    }
    /// Gives the last emitted instruction the result id `to` if its result is `from` (the
    /// value a lowering computed for an instruction it replaces takes that instruction's id,
    /// instead of a copy). False when the last instruction is not `from`'s definition.
    pub fn rename_last(&mut self, from: u32, to: u32) -> bool {
        match self.insts.last_mut() {
            Some(last) if last.id == from && from != 0 => {
                last.id = to;
                // A pure result is the last pure key's when it is the last instruction.
                if let Some(key) = self.last_pure {
                    let home = pure_slot(&key);
                    for p in 0..PURE_PROBES {
                        if let Some(s) = self.pure.get_mut((home + p) % PURE_SLOTS).filter(|s| s.id == from && s.key == key && s.epoch == self.epoch) {
                            s.id = to;
                        }
                    }
                }
                true
            }
            _ => false,
        }
    }
    /// Ends the current block with `terminator` and starts block `next`.
    pub fn terminate(&mut self, terminator: Inst, next: u32) {
        self.insts.push(terminator);
        // The block takes the scratch list; the next one starts with room for as many.
        let room = self.insts.len().max(8);
        let insts = std::mem::replace(&mut self.insts, Vec::with_capacity(room));
        self.blocks.push(Block { label: self.label, insts });
        self.label = next;
    }
    /// Instructions emitted since the last block boundary, for a caller that emitted no
    /// control flow (one that did takes its blocks with [`Emitter::finish`]).
    pub fn take_insts(&mut self) -> Vec<Inst> {
        assert!(self.blocks.is_empty(), "emission split block %{}: take the blocks with Emitter::finish", self.label);
        std::mem::take(&mut self.insts)
    }
    /// The blocks emitted, the last one (labelled [`Emitter::label`]) holding what was emitted
    /// since the last block boundary.
    pub fn finish(mut self) -> Vec<Block> {
        let insts = std::mem::take(&mut self.insts);
        self.blocks.push(Block { label: self.label, insts });
        self.blocks
    }
    /// [`Emitter::finish`], leaving the emitter ready for another block `next` (its tables keep
    /// their allocations: one emitter can serve every block a pass rewrites).
    pub fn take_blocks(&mut self, next: u32, room: usize) -> Vec<Block> {
        let insts = std::mem::replace(&mut self.insts, Vec::with_capacity(room));
        self.blocks.push(Block { label: self.label, insts });
        self.label = next;
        self.forget();
        std::mem::take(&mut self.blocks)
    }
    /// [`Emitter::take_insts`] for a caller that emits one block at a time into one emitter:
    /// the instructions of this block, and the emitter ready for block `next` (what it emitted
    /// does not dominate that block).
    pub fn next_block(&mut self, next: u32) -> Vec<Inst> {
        let insts = self.take_insts();
        self.label = next;
        self.forget();
        insts
    }
    /// For a caller of [`Emitter::next_block`]: the next block is a function's entry block,
    /// whose pure instructions outside arms the following blocks of the function reuse (the
    /// entry block dominates every block of its function, SPIR-V 2.2.4), until the next call.
    pub fn start_function(&mut self) {
        self.forget();
        self.entry_epoch = self.epoch;
    }
    /// Empties the pure cache (but the entry block's entries) and the open arms.
    fn forget(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // Wrapped: entries of the epoch that comes round again must not look live.
            self.pure.fill(PureSlot::default());
            self.epoch = 1;
            self.entry_epoch = 0;
        }
        self.arms.clear();
        self.last_pure = None;
    }
    /// Starts block `label` on an emitter that holds nothing (after [`Emitter::take_blocks`]).
    pub fn start(&mut self, label: u32, room: usize) {
        debug_assert!(self.blocks.is_empty() && self.insts.is_empty());
        self.label = label;
        if self.insts.capacity() < room {
            self.insts.reserve(room);
        }
    }

    /// `if cond { then() } else { otherwise() }` as a selection construct (SPIR-V spec 2.11);
    /// both arms return one value per type in `tys`, merged with OpPhi.
    pub fn if_else(
        &mut self,
        b: &mut Builder,
        cond: u32,
        tys: &[u32],
        then: impl FnOnce(&mut Self, &mut Builder) -> Vals,
        otherwise: impl FnOnce(&mut Self, &mut Builder) -> Vals,
    ) -> Vals {
        let (l_then, l_else, l_merge) = (b.id(), b.id(), b.id());
        self.stmt(op::SELECTION_MERGE, ops![l_merge, 0]);
        self.terminate(Inst::new(op::BRANCH_CONDITIONAL, 0, 0, ops![cond, l_then, l_else]), l_then);
        let mark = self.open_arm();
        let v_then = then(self, b);
        self.close_arm(mark);
        let end_then = self.label;
        self.terminate(Inst::new(op::BRANCH, 0, 0, ops![l_merge]), l_else);
        let mark = self.open_arm();
        let v_else = otherwise(self, b);
        self.close_arm(mark);
        let end_else = self.label;
        self.terminate(Inst::new(op::BRANCH, 0, 0, ops![l_merge]), l_merge);
        self.phis(b, tys, &v_then, end_then, &v_else, end_else)
    }

    /// `if cond { then() } else { fallback }` where `fallback` holds values already available
    /// before the branch (constants): the false edge goes straight to the merge block, which
    /// takes them from the header (an OpPhi parent may be the selection header, SPIR-V spec 2.11).
    pub fn if_or(&mut self, b: &mut Builder, cond: u32, tys: &[u32], then: impl FnOnce(&mut Self, &mut Builder) -> Vals, fallback: &[u32]) -> Vals {
        let (l_then, l_merge) = (b.id(), b.id());
        let header = self.label;
        self.stmt(op::SELECTION_MERGE, ops![l_merge, 0]);
        self.terminate(Inst::new(op::BRANCH_CONDITIONAL, 0, 0, ops![cond, l_then, l_merge]), l_then);
        let mark = self.open_arm();
        let v_then = then(self, b);
        self.close_arm(mark);
        let end_then = self.label;
        self.terminate(Inst::new(op::BRANCH, 0, 0, ops![l_merge]), l_merge);
        self.phis(b, tys, &v_then, end_then, fallback, header)
    }

    fn phis(&mut self, b: &mut Builder, tys: &[u32], a: &[u32], from_a: u32, c: &[u32], from_c: u32) -> Vals {
        tys.iter().zip(a.iter().zip(c.iter())).map(|(&ty, (&x, &y))| self.op(b, op::PHI, ty, ops![x, from_a, y, from_c])).collect()
    }

    /// `if cond { then() }` with no value.
    pub fn if_then(&mut self, b: &mut Builder, cond: u32, then: impl FnOnce(&mut Self, &mut Builder)) {
        let (l_then, l_merge) = (b.id(), b.id());
        self.stmt(op::SELECTION_MERGE, ops![l_merge, 0]);
        self.terminate(Inst::new(op::BRANCH_CONDITIONAL, 0, 0, ops![cond, l_then, l_merge]), l_then);
        let mark = self.open_arm();
        then(self, b);
        self.close_arm(mark);
        self.terminate(Inst::new(op::BRANCH, 0, 0, ops![l_merge]), l_merge);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value looked up again and again (a view's length every access of a block takes) stays
    /// in the pure cache however many other values pass through it: the slot replaced is the
    /// one used longest ago, not the new key's own.
    #[test]
    fn a_value_in_use_stays_in_the_pure_cache() {
        // OpCapability Linkage, OpMemoryModel Logical GLSL450: a module with no entry point.
        let mut m = Module::parse(&[crate::module::MAGIC, 0x0001_0000, 0, 16, 0, 2 << 16 | 17, 5, 3 << 16 | 14, 0, 1]).unwrap();
        let mut b = Builder::new(&mut m);
        let u32t = b.t_u32();
        let mut e = Emitter::new(1);
        let len = e.pure(&mut b, op::ARRAY_LENGTH, u32t, &[7, 0]);
        for k in 0..4000u32 {
            e.pure(&mut b, op::I_ADD, u32t, &[1000 + k, 3]);
            if k % 8 == 0 {
                assert_eq!(e.pure(&mut b, op::ARRAY_LENGTH, u32t, &[7, 0]), len, "taken again after {k} other values");
            }
        }
    }

    /// After [`Emitter::start_function`], what the entry block computes outside an arm is found
    /// again in the function's later blocks (the entry block dominates them); what another block
    /// or an arm computed is not, nor anything of the function before.
    #[test]
    fn the_entry_block_s_values_serve_the_whole_function() {
        let mut m = Module::parse(&[crate::module::MAGIC, 0x0001_0000, 0, 16, 0, 2 << 16 | 17, 5, 3 << 16 | 14, 0, 1]).unwrap();
        let mut b = Builder::new(&mut m);
        let (u32t, bool_t) = (b.t_u32(), b.t_bool());
        let mut e = Emitter::new(0);
        e.start_function();
        e.start(1, 0);
        let entry = e.pure(&mut b, op::I_ADD, u32t, &[10, 11]);
        let mut in_arm = 0;
        e.if_else(
            &mut b,
            12,
            &[],
            |e, b| {
                in_arm = e.pure(b, op::I_ADD, u32t, &[20, 21]);
                Vals::new()
            },
            |_, _| Vals::new(),
        );
        let after_merge = e.pure(&mut b, op::I_ADD, u32t, &[30, 31]);
        let _ = e.take_blocks(2, 0);
        assert_eq!(e.pure(&mut b, op::I_ADD, u32t, &[10, 11]), entry);
        assert_eq!(e.pure(&mut b, op::I_ADD, u32t, &[30, 31]), after_merge);
        assert_ne!(e.pure(&mut b, op::I_ADD, u32t, &[20, 21]), in_arm, "an arm's value does not dominate");
        let second = e.pure(&mut b, op::U_LESS_THAN, bool_t, &[40, 41]);
        let _ = e.next_block(0);
        e.start(3, 0);
        assert_ne!(e.pure(&mut b, op::U_LESS_THAN, bool_t, &[40, 41]), second, "block 2 does not dominate block 3");
        let _ = e.next_block(0);
        e.start_function();
        e.start(4, 0);
        assert_ne!(e.pure(&mut b, op::I_ADD, u32t, &[10, 11]), entry, "another function");
    }
}
