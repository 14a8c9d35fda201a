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
    pub const BINDING: u32 = 33;
    pub const DESCRIPTOR_SET: u32 = 34;
    pub const OFFSET: u32 = 35;
    pub const NON_UNIFORM: u32 = 5300;
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

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Void,
    Bool,
    Int(u32, u32),
    Float(u32),
    Vector(u32, u32),
    Pointer(u32, u32),
    Function(Vec<u32>),
}

pub struct Builder<'m> {
    pub m: &'m mut Module,
    index: HashMap<u32, usize>,
    types: HashMap<Key, u32>,
    /// (type, literal words or a tagged constituent list) → constant id. Keys are inline
    /// `Ops`: a lookup allocates nothing.
    consts: HashMap<(u32, crate::module::Ops), u32>,
    /// u32 constants by value (the hot path: no allocation per lookup).
    u32_consts: HashMap<u32, u32>,
    /// (target, decoration) of every OpDecorate, for O(1) queries.
    decorated: rustc_hash::FxHashSet<(u32, u32)>,
    glsl: Option<u32>,
    /// uint32 and bool, asked for at nearly every emitted instruction: kept out of `types`.
    u32_ty: Option<u32>,
    bool_ty: Option<u32>,
}

impl<'m> Builder<'m> {
    pub fn new(m: &'m mut Module) -> Self {
        let mut decorated = rustc_hash::FxHashSet::with_capacity_and_hasher(m.annotations.len(), Default::default());
        decorated.extend(m.annotations.iter().filter(|a| a.op == op::DECORATE && a.ops.len() >= 2).map(|a| (a.ops[0], a.ops[1])));
        let mut b = Builder {
            index: m.global_index(),
            types: HashMap::with_capacity_and_hasher(64, Default::default()),
            consts: HashMap::with_capacity_and_hasher(64, Default::default()),
            u32_consts: HashMap::with_capacity_and_hasher(32, Default::default()),
            decorated,
            glsl: None,
            u32_ty: None,
            bool_ty: None,
            m,
        };
        for i in &b.m.globals {
            let key = match i.op {
                op::TYPE_VOID => Some(Key::Void),
                op::TYPE_BOOL => Some(Key::Bool),
                op::TYPE_INT if i.ops.len() == 2 => Some(Key::Int(i.ops[0], i.ops[1])),
                op::TYPE_FLOAT if i.ops.len() == 1 => Some(Key::Float(i.ops[0])),
                op::TYPE_VECTOR if i.ops.len() == 2 => Some(Key::Vector(i.ops[0], i.ops[1])),
                op::TYPE_POINTER if i.ops.len() == 2 => Some(Key::Pointer(i.ops[0], i.ops[1])),
                op::TYPE_FUNCTION => Some(Key::Function(i.ops.to_vec())),
                op::CONSTANT => {
                    b.consts.entry((i.ty, i.ops.clone())).or_insert(i.id);
                    None
                }
                _ => None,
            };
            if let Some(k) = key {
                b.types.entry(k).or_insert(i.id);
            }
        }
        b.glsl = b.m.ext_inst_imports.iter().find(|i| crate::module::string_is(&i.ops, "GLSL.std.450")).map(|i| i.id);
        b
    }

    pub fn id(&mut self) -> u32 {
        self.m.next_id()
    }

    /// The global (type, constant, variable) defining `id`, if any.
    pub fn global(&self, id: u32) -> Option<&Inst> {
        self.index.get(&id).map(|&n| &self.m.globals[n])
    }

    pub fn add_global(&mut self, inst: Inst) -> u32 {
        let id = inst.id;
        self.index.insert(id, self.m.globals.len());
        self.m.globals.push(inst);
        id
    }

    fn ty(&mut self, key: Key, opcode: u32, ops: &[u32]) -> u32 {
        if let Some(&id) = self.types.get(&key) {
            return id;
        }
        let id = self.id();
        self.add_global(Inst::new(opcode, 0, id, ops));
        self.types.insert(key, id);
        id
    }
    pub fn t_void(&mut self) -> u32 {
        self.ty(Key::Void, op::TYPE_VOID, &[])
    }
    pub fn t_bool(&mut self) -> u32 {
        if let Some(t) = self.bool_ty {
            return t;
        }
        let t = self.ty(Key::Bool, op::TYPE_BOOL, &[]);
        self.bool_ty = Some(t);
        t
    }
    pub fn t_int(&mut self, width: u32, signed: bool) -> u32 {
        self.ty(Key::Int(width, signed as u32), op::TYPE_INT, &[width, signed as u32])
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
        self.ty(Key::Float(width), op::TYPE_FLOAT, &[width])
    }
    pub fn t_vec(&mut self, comp: u32, n: u32) -> u32 {
        if n == 1 {
            return comp;
        }
        self.ty(Key::Vector(comp, n), op::TYPE_VECTOR, &[comp, n])
    }
    pub fn t_ptr(&mut self, storage: u32, pointee: u32) -> u32 {
        self.ty(Key::Pointer(storage, pointee), op::TYPE_POINTER, &[storage, pointee])
    }
    pub fn t_fn(&mut self, ret: u32, params: &[u32]) -> u32 {
        let mut ops = vec![ret];
        ops.extend_from_slice(params);
        self.ty(Key::Function(ops.clone()), op::TYPE_FUNCTION, &ops)
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
        let key = (ty, crate::module::Ops::from_slice(words));
        if let Some(&id) = self.consts.get(&key) {
            return id;
        }
        let id = self.id();
        self.add_global(Inst::new(op::CONSTANT, ty, id, key.1.clone()));
        self.consts.insert(key, id);
        id
    }
    pub fn c_u32(&mut self, v: u32) -> u32 {
        if let Some(&id) = self.u32_consts.get(&v) {
            return id;
        }
        let t = self.t_u32();
        let id = self.constant(t, &[v]);
        self.u32_consts.insert(v, id);
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
        let key = (ty, key);
        if let Some(&id) = self.consts.get(&key) {
            return id;
        }
        let id = self.id();
        self.add_global(Inst::new(op::CONSTANT_COMPOSITE, ty, id, parts));
        self.consts.insert(key, id);
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
        let key = (ty, ops![u32::MAX, c, n]); // cannot collide with an OpConstant's literal words
        if let Some(&id) = self.consts.get(&key) {
            return id;
        }
        let id = self.id();
        self.add_global(Inst::new(op::CONSTANT_COMPOSITE, ty, id, vec![c; n as usize]));
        self.consts.insert(key, id);
        id
    }

    /// The GLSL.std.450 extended instruction set (imported if the module lacks it).
    pub fn glsl_std450(&mut self) -> u32 {
        if let Some(id) = self.glsl {
            return id;
        }
        let id = self.id();
        self.m.ext_inst_imports.push(Inst::new(op::EXT_INST_IMPORT, 0, id, encode_string("GLSL.std.450")));
        self.glsl = Some(id);
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

    pub fn has_decoration(&self, id: u32, decoration: u32) -> bool {
        self.decorated.contains(&(id, decoration))
    }
    pub fn decorate(&mut self, target: u32, decoration: u32, literals: &[u32]) {
        self.decorated.insert((target, decoration));
        self.m.decorate(target, decoration, literals);
    }
}

/// A few ids (the values a branch arm yields), without a heap allocation.
pub type Vals = smallvec::SmallVec<[u32; 4]>;

/// Straight-line and structured code emission into a list of blocks.
pub struct Emitter {
    pub blocks: Vec<Block>,
    label: u32,
    insts: Vec<Inst>,
}

impl Emitter {
    pub fn new(label: u32) -> Self {
        Self::with_capacity(label, 0)
    }
    /// An emitter whose scratch list starts with room for `n` instructions.
    pub fn with_capacity(label: u32, n: usize) -> Self {
        Emitter { blocks: vec![], label, insts: Vec::with_capacity(n) }
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
    /// Emits an instruction without a result id.
    pub fn stmt(&mut self, opcode: u32, ops: impl Into<crate::module::Ops>) {
        self.insts.push(Inst::new(opcode, 0, 0, ops));
    }
    pub fn push(&mut self, inst: Inst) {
        self.insts.push(inst);
    }
    /// Ends the current block with `terminator` and starts block `next`.
    pub fn terminate(&mut self, terminator: Inst, next: u32) {
        self.insts.push(terminator);
        // An exactly sized copy: the scratch list keeps its capacity for the next block.
        let insts = self.insts.drain(..).collect();
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
        let v_then = then(self, b);
        let end_then = self.label;
        self.terminate(Inst::new(op::BRANCH, 0, 0, ops![l_merge]), l_else);
        let v_else = otherwise(self, b);
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
        let v_then = then(self, b);
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
        then(self, b);
        self.terminate(Inst::new(op::BRANCH, 0, 0, ops![l_merge]), l_merge);
    }
}
