//! A cheap structural check after each pass, so that a shape a pass does not handle becomes a
//! precise [`RewriteError`] instead of a module the driver chokes on.
//!
//! One linear walk over the module with one table indexed by id (no hashing):
//! - every id an instruction refers to is defined (result types, leading id operands, OpPhi
//!   operands, decoration and name targets, entry points and their interfaces): nothing refers
//!   to what a pass removed;
//! - the uses a lowering retypes still type-check where SPIR-V requires equal types: OpLoad /
//!   OpStore / atomics against their pointer's pointee, access-chain bases, image operands
//!   (image or sampled image; a texel pointer's image a pointer to an image), OpSampledImage,
//!   OpPhi / OpSelect / OpCopyObject, calls against the callee's signature, OpReturnValue
//!   against the function's return type: a handle integer or an address where an opaque value
//!   or a pointer was is caught here;
//! - 64-bit integers (and after the 8/16-bit lowering 8/16-bit types) have a capability that
//!   allows them (SPIR-V spec 2.16.1, SPV_KHR_16bit_storage / SPV_KHR_8bit_storage);
//! - what the pass removes is gone: its capability, extension, instructions, decorations,
//!   storage class or addressing model, and (8/16-bit storage) no small type left in a storage
//!   class whose capability was emulated.
//!
//! Only rules that every valid module follows are checked, so a valid output never fails.
use crate::error::RewriteError;
use crate::module::{leading_id_operands, op, string_is, Inst, Module};
use crate::target::SmallStorage;

use super::bindless::describe;
use super::util::consumes_image;

/// The pass that just ran.
#[derive(Debug, Clone, Copy)]
pub enum Pass {
    RawAccessChains,
    /// The 8/16-bit storage capabilities it emulated.
    SmallStorage(SmallStorage),
    Bindless,
    PhysicalStorageBuffer,
}

impl Pass {
    fn name(self) -> &'static str {
        match self {
            Pass::RawAccessChains => "raw access chain",
            Pass::SmallStorage(_) => "8/16-bit storage",
            Pass::Bindless => "bindless texture",
            Pass::PhysicalStorageBuffer => "physical storage buffer",
        }
    }
}

const TYPE_MATRIX: u32 = 24;
const TYPE_FORWARD_POINTER: u32 = 39;
const TYPE_UNTYPED_POINTER: u32 = 4417;
const PTR_ACCESS_CHAIN: u32 = 67;
const IN_BOUNDS_PTR_ACCESS_CHAIN: u32 = 70;
const ATOMIC_STORE: u32 = 228;
/// Capabilities (SPIR-V spec 3.31).
const CAP_FLOAT16_BUFFER: u32 = 8;
const CAP_FLOAT16: u32 = 9;
const CAP_INT64: u32 = 11;
const CAP_INT64_ATOMICS: u32 = 12;
const CAP_INT16: u32 = 22;
const CAP_INT8: u32 = 39;
const CAP_FLOAT16_IMAGE_AMD: u32 = 5008;
const CAP_DOT_PRODUCT_INPUT_4X8_BIT: u32 = 6017;
const CAPS_16BIT_STORAGE: [u32; 4] = [4433, 4434, 4435, 4436];
const CAPS_8BIT_STORAGE: [u32; 3] = [4448, 4449, 4450];
/// Storage classes.
const SC_UNIFORM_CONSTANT: u32 = 0;
const SC_INPUT: u32 = 1;
const SC_UNIFORM: u32 = 2;
const SC_OUTPUT: u32 = 3;
const SC_PUSH_CONSTANT: u32 = 9;
const SC_STORAGE_BUFFER: u32 = 12;
const SC_PHYSICAL_STORAGE_BUFFER: u32 = 5349;

/// What defines an id.
#[derive(Clone, Copy, Default)]
struct Def {
    /// Opcode of the defining instruction; 0: undefined.
    op: u32,
    /// Its result type.
    ty: u32,
    /// Index in `globals` (types, constants, variables) or in `functions` (OpFunction).
    at: u32,
}

struct Check<'m> {
    m: &'m Module,
    pass: Pass,
    defs: Vec<Def>,
}

/// Checks `m` after `pass`.
pub fn after(m: &Module, pass: Pass) -> Result<(), RewriteError> {
    let c = Check::new(m, pass);
    c.ids_and_types()?;
    c.widths()?;
    match pass {
        Pass::RawAccessChains => c.removed(&[5414], &["SPV_NV_raw_access_chains"], &[op::RAW_ACCESS_CHAIN_NV], &[]),
        Pass::SmallStorage(lowered) => c.small_storage(lowered),
        Pass::Bindless => {
            c.removed(&[crate::scan::CAP_BINDLESS_TEXTURE_NV], &["SPV_NV_bindless_texture"], &[5391, 5392, 5393, 5394, 5395, 5396, op::SAMPLER_IMAGE_ADDRESSING_MODE_NV], &[5398, 5399, 5400, 5401])?;
            c.no_opaque_memory()
        }
        Pass::PhysicalStorageBuffer => {
            // OpConvertUToPtr / OpConvertPtrToU need Addresses or PhysicalStorageBuffer64
            // addressing; RestrictPointer / AliasedPointer decorate physical pointers only.
            c.removed(
                &[crate::scan::CAP_PHYSICAL_STORAGE_BUFFER_ADDRESSES],
                &["SPV_KHR_physical_storage_buffer", "SPV_EXT_physical_storage_buffer"],
                &[op::CONVERT_U_TO_PTR, op::CONVERT_PTR_TO_U],
                &[5355, 5356],
            )?;
            c.no_physical_storage()
        }
    }
}

impl<'m> Check<'m> {
    fn new(m: &'m Module, pass: Pass) -> Self {
        let mut defs = vec![Def::default(); m.header[3] as usize];
        fn def(defs: &mut [Def], i: &Inst, at: u32) {
            if let Some(d) = defs.get_mut(i.id as usize).filter(|_| i.id != 0) {
                *d = Def { op: i.op, ty: i.ty, at };
            }
        }
        for i in m.ext_inst_imports.iter().chain(&m.debug).chain(&m.annotations) {
            def(&mut defs, i, 0);
        }
        for (n, g) in m.globals.iter().enumerate() {
            def(&mut defs, g, n as u32);
        }
        for (n, f) in m.functions.iter().enumerate() {
            def(&mut defs, &f.def, n as u32);
            for i in f.params.iter().chain(f.blocks.iter().flat_map(|b| b.insts.iter())) {
                def(&mut defs, i, 0);
            }
            for b in &f.blocks {
                if let Some(d) = defs.get_mut(b.label as usize) {
                    d.op = op::LABEL;
                }
            }
        }
        Check { m, pass, defs }
    }

    fn err(&self, inst: &Inst, reason: impl std::fmt::Display) -> RewriteError {
        RewriteError::unsupported(describe(inst), format!("the {} lowering does not handle this shape (its output would be invalid: {reason})", self.pass.name()))
    }

    fn def(&self, id: u32) -> Def {
        self.defs.get(id as usize).copied().unwrap_or_default()
    }
    /// The global instruction defining `id`, if it is one.
    fn global(&self, id: u32) -> Option<&'m Inst> {
        let d = self.def(id);
        (d.op != 0 && d.op != op::FUNCTION).then(|| self.m.globals.get(d.at as usize)).flatten().filter(|g| g.id == id)
    }
    /// The type of value `id`.
    fn ty(&self, id: u32) -> u32 {
        self.def(id).ty
    }
    /// The type opcode of value `id`'s type.
    fn ty_op(&self, id: u32) -> u32 {
        self.def(self.ty(id)).op
    }

    /// `(storage class, pointee)` when value `x` is a typed pointer; `Ok(None)` for an untyped
    /// one; an error when it is no pointer.
    fn pointer(&self, inst: &Inst, x: u32) -> Result<Option<(u32, u32)>, RewriteError> {
        let t = self.ty(x);
        match self.def(t).op {
            op::TYPE_POINTER => Ok(self.global(t).map(|g| (g.ops[0], g.ops[1]))),
            TYPE_UNTYPED_POINTER => Ok(None),
            _ => Err(self.err(inst, format_args!("%{x} is not a pointer (its type %{t} is opcode {})", self.def(t).op))),
        }
    }
    /// `x`'s pointer type points to `want`.
    fn points_to(&self, inst: &Inst, x: u32, want: u32) -> Result<(), RewriteError> {
        match self.pointer(inst, x)? {
            Some((_, p)) if p != want => Err(self.err(inst, format_args!("%{x} points to %{p}, not to %{want}"))),
            _ => Ok(()),
        }
    }
    fn same_type(&self, inst: &Inst, x: u32, want: u32) -> Result<(), RewriteError> {
        let t = self.ty(x);
        if t != want {
            return Err(self.err(inst, format_args!("%{x} has type %{t} where %{want} is required")));
        }
        Ok(())
    }

    fn defined(&self, inst: &Inst, x: u32) -> Result<(), RewriteError> {
        if self.def(x).op == 0 {
            return Err(self.err(inst, format_args!("it refers to %{x}, which is not defined")));
        }
        Ok(())
    }

    /// Every referenced id is defined; typed uses agree.
    fn ids_and_types(&self) -> Result<(), RewriteError> {
        let m = self.m;
        for i in m.debug.iter().chain(&m.annotations).filter(|i| matches!(i.op, op::NAME | op::MEMBER_NAME) || is_decoration(i.op)) {
            self.defined(i, i.ops[0])?;
        }
        for ep in &m.entry_points {
            let name_words = ep.ops.iter().skip(2).position(|w| w.to_le_bytes().contains(&0)).map_or(0, |n| n + 1);
            for &x in ep.ops.iter().skip(1).take(1).chain(ep.ops.iter().skip(2 + name_words)) {
                self.defined(ep, x)?;
            }
        }
        for g in &m.globals {
            self.operands_defined(g)?;
            if g.op == op::VARIABLE {
                if let Some(&init) = g.ops.get(1) {
                    self.points_to(g, g.id, self.ty(init))?;
                }
            }
        }
        for f in &m.functions {
            for i in std::iter::once(&f.def).chain(&f.params) {
                self.operands_defined(i)?;
            }
            for i in f.blocks.iter().flat_map(|b| b.insts.iter()) {
                self.operands_defined(i)?;
                self.typed_use(i, f.def.ty)?;
            }
        }
        Ok(())
    }

    fn operands_defined(&self, i: &Inst) -> Result<(), RewriteError> {
        if i.ty != 0 {
            self.defined(i, i.ty)?;
        }
        let ids: &[u32] = match i.op {
            // (value, parent block) pairs.
            op::PHI => &i.ops,
            // Forward declarations and a type's member list may name ids not checked here.
            TYPE_FORWARD_POINTER => &[],
            _ => &i.ops[..leading_id_operands(i.op).min(i.ops.len())],
        };
        for &x in ids {
            self.defined(i, x)?;
        }
        Ok(())
    }

    /// The type rules of the instructions whose operands a lowering retypes. `ret`: the
    /// enclosing function's return type.
    fn typed_use(&self, i: &Inst, ret: u32) -> Result<(), RewriteError> {
        let o = &i.ops;
        match i.op {
            op::LOAD => self.points_to(i, o[0], i.ty),
            op::STORE => self.points_to(i, o[0], self.ty(o[1])),
            op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | PTR_ACCESS_CHAIN | IN_BOUNDS_PTR_ACCESS_CHAIN | op::RAW_ACCESS_CHAIN_NV => self.pointer(i, o[0]).map(|_| ()),
            ATOMIC_STORE => self.points_to(i, o[0], self.ty(o[3])),
            // OpAtomicLoad..OpAtomicXor, OpAtomicFMin/FMax/FAddEXT: the result has the
            // pointee's type. The flag operations (318, 319) only need a pointer.
            227..=242 | 5614 | 5615 | 6035 => self.points_to(i, o[0], i.ty),
            318 | 319 => self.pointer(i, o[0]).map(|_| ()),
            op::IMAGE_TEXEL_POINTER => match self.pointer(i, o[0])? {
                Some((_, p)) if self.def(p).op != op::TYPE_IMAGE => Err(self.err(i, format_args!("its Image %{} points to %{p}, not to an image", o[0]))),
                _ => Ok(()),
            },
            op::SAMPLED_IMAGE => {
                self.opaque(i, o[0], &[op::TYPE_IMAGE])?;
                self.opaque(i, o[1], &[op::TYPE_SAMPLER])
            }
            opcode if consumes_image(opcode) => self.opaque(i, o[0], &[op::TYPE_IMAGE, op::TYPE_SAMPLED_IMAGE]),
            op::PHI => o.iter().step_by(2).try_for_each(|&x| self.same_type(i, x, i.ty)),
            op::SELECT => o[1..3].iter().try_for_each(|&x| self.same_type(i, x, i.ty)),
            op::COPY_OBJECT => self.same_type(i, o[0], i.ty),
            op::RETURN_VALUE => self.same_type(i, o[0], ret),
            op::FUNCTION_CALL => self.call(i),
            _ => Ok(()),
        }
    }

    fn opaque(&self, inst: &Inst, x: u32, want: &[u32]) -> Result<(), RewriteError> {
        let t = self.ty_op(x);
        if !want.contains(&t) {
            return Err(self.err(inst, format_args!("%{x} is not an image, sampled image or sampler as the instruction needs (its type %{} is opcode {t})", self.ty(x))));
        }
        Ok(())
    }

    fn call(&self, i: &Inst) -> Result<(), RewriteError> {
        let d = self.def(i.ops[0]);
        if d.op != op::FUNCTION {
            return Err(self.err(i, format_args!("%{} is not a function", i.ops[0])));
        }
        let f = &self.m.functions[d.at as usize];
        if f.def.ty != i.ty {
            return Err(self.err(i, format_args!("the callee returns %{}, the call expects %{}", f.def.ty, i.ty)));
        }
        if f.params.len() != i.ops.len() - 1 {
            return Err(self.err(i, format_args!("{} arguments for {} parameters", i.ops.len() - 1, f.params.len())));
        }
        f.params.iter().zip(&i.ops[1..]).try_for_each(|(p, &a)| self.same_type(i, a, p.ty))
    }

    /// 64-bit integers (which the lowerings use for handles and addresses) need Int64 (or
    /// Int64Atomics, which implies it); after the 8/16-bit lowering, 8/16-bit types need a
    /// capability or extension that allows them (SPIR-V spec 2.16.1, SPV_KHR_16bit_storage,
    /// SPV_KHR_8bit_storage, SPV_AMD_gpu_shader_int16 / _half_float).
    fn widths(&self) -> Result<(), RewriteError> {
        let m = self.m;
        let has = |caps: &[u32]| caps.iter().any(|&c| m.has_capability(c));
        let small = matches!(self.pass, Pass::SmallStorage(_));
        let storage16 = has(&CAPS_16BIT_STORAGE);
        for g in m.globals.iter().filter(|g| matches!(g.op, op::TYPE_INT | op::TYPE_FLOAT)) {
            let allowed = match (g.op, g.ops[0], g.ops.len()) {
                (op::TYPE_INT, 64, _) => has(&[CAP_INT64, CAP_INT64_ATOMICS]),
                _ if !small => true,
                (op::TYPE_INT, 16, _) => storage16 || has(&[CAP_INT16]) || m.has_extension("SPV_AMD_gpu_shader_int16"),
                (op::TYPE_INT, 8, _) => has(&CAPS_8BIT_STORAGE) || has(&[CAP_INT8, CAP_DOT_PRODUCT_INPUT_4X8_BIT]),
                // A float with an encoding operand (BFloat16, Float8) has capabilities of its own.
                (op::TYPE_FLOAT, 16, 1) => {
                    storage16 || has(&[CAP_FLOAT16, CAP_FLOAT16_BUFFER, CAP_FLOAT16_IMAGE_AMD]) || m.has_extension("SPV_AMD_gpu_shader_half_float")
                }
                _ => true,
            };
            if !allowed {
                return Err(self.err(g, format_args!("no capability of the module allows a {}-bit {}", g.ops[0], if g.op == op::TYPE_INT { "integer" } else { "float" })));
            }
        }
        Ok(())
    }

    /// None of `caps`, `extensions`, `opcodes` (anywhere) or `decorations` is left.
    fn removed(&self, caps: &[u32], extensions: &[&str], opcodes: &[u32], decorations: &[u32]) -> Result<(), RewriteError> {
        let m = self.m;
        if let Some(c) = m.capabilities.iter().find(|c| caps.contains(&c.ops[0])) {
            return Err(self.err(c, format_args!("capability {} is still declared", c.ops[0])));
        }
        if let Some(e) = m.extensions.iter().find(|e| extensions.iter().any(|x| string_is(&e.ops, x))) {
            return Err(self.err(e, "its extension is still declared"));
        }
        let all = m.memory_model.iter().chain(&m.globals).chain(m.functions.iter().flat_map(|f| f.blocks.iter().flat_map(|b| b.insts.iter())));
        if let Some(i) = all.into_iter().find(|i| opcodes.contains(&i.op)) {
            return Err(self.err(i, "the instruction is still there"));
        }
        let deco = |a: &Inst| match a.op {
            op::DECORATE | op::DECORATE_ID => a.ops.get(1).copied(),
            op::MEMBER_DECORATE => a.ops.get(2).copied(),
            _ => None,
        };
        if let Some(a) = m.annotations.iter().find(|a| deco(a).is_some_and(|d| decorations.contains(&d))) {
            return Err(self.err(a, format_args!("decoration {} is still there", deco(a).unwrap_or(0))));
        }
        Ok(())
    }

    /// Bits of the scalar widths (8: 1, 16: 2) type `t` holds, not following pointers;
    /// `memo` caches aggregates (types are declared before use, so the walk is short).
    fn small_widths(&self, t: u32, memo: &mut [u8]) -> u8 {
        let Some(g) = self.global(t) else { return 0 };
        let cached = memo.get(t as usize).copied().unwrap_or(0);
        if cached != 0 {
            return cached & 3;
        }
        let bits = match g.op {
            op::TYPE_INT | op::TYPE_FLOAT if g.ops.len() <= 2 => match g.ops[0] {
                8 => 1,
                16 => 2,
                _ => 0,
            },
            op::TYPE_VECTOR | TYPE_MATRIX | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => self.small_widths(g.ops[0], memo),
            op::TYPE_STRUCT => g.ops.iter().fold(0, |a, &x| a | self.small_widths(x, memo)),
            _ => 0,
        };
        if let Some(c) = memo.get_mut(t as usize) {
            *c = bits | 4; // 4: computed
        }
        bits
    }

    /// After 8/16-bit storage: the capabilities it lowered are gone, and no pointer into a
    /// storage class whose capability it emulated holds a type of that width unless a
    /// capability still declared allows it there.
    fn small_storage(&self, lowered: SmallStorage) -> Result<(), RewriteError> {
        let m = self.m;
        if let Some(c) = m.capabilities.iter().find(|c| lowered.get(c.ops[0])) {
            return Err(self.err(c, format_args!("capability {} is still declared", c.ops[0])));
        }
        let has = |c: u32| m.has_capability(c);
        // (width bit, storage class) → (emulated, still allowed).
        let rule = |bit: u8, sc: u32| -> (bool, bool) {
            let (sb, ubo, pc) = if bit == 2 { (4433, 4434, 4435) } else { (4448, 4449, 4450) };
            match sc {
                SC_STORAGE_BUFFER => (lowered.get(sb) || lowered.get(ubo), has(sb) || has(ubo)),
                // Uniform with BufferBlock is a storage buffer: either capability.
                SC_UNIFORM => (lowered.get(ubo), has(ubo) || has(sb)),
                SC_PUSH_CONSTANT => (lowered.get(pc), has(pc)),
                SC_INPUT | SC_OUTPUT if bit == 2 => (lowered.get(4436), has(4436)),
                _ => (false, true),
            }
        };
        let mut memo = vec![0u8; self.defs.len()];
        for g in m.globals.iter().filter(|g| g.op == op::TYPE_POINTER) {
            let bits = self.small_widths(g.ops[1], &mut memo);
            for bit in [1u8, 2] {
                let (emulated, allowed) = rule(bit, g.ops[0]);
                if bits & bit != 0 && emulated && !allowed {
                    return Err(self.err(g, format_args!("pointer type %{} into storage class {} still holds {}-bit data", g.id, g.ops[0], bit * 8)));
                }
            }
        }
        Ok(())
    }

    /// After bindless: no memory but UniformConstant holds images, samplers or sampled images
    /// (handles live there as integers).
    fn no_opaque_memory(&self) -> Result<(), RewriteError> {
        let mut memo = vec![0u8; self.defs.len()];
        for g in self.m.globals.iter().filter(|g| g.op == op::TYPE_POINTER && g.ops[0] != SC_UNIFORM_CONSTANT) {
            if self.holds_opaque(g.ops[1], &mut memo) {
                return Err(self.err(g, format_args!("pointer type %{} into storage class {} still points to an image, sampler or sampled image", g.id, g.ops[0])));
            }
        }
        Ok(())
    }

    fn holds_opaque(&self, t: u32, memo: &mut [u8]) -> bool {
        let Some(g) = self.global(t) else { return false };
        if let Some(&c) = memo.get(t as usize).filter(|&&c| c != 0) {
            return c == 2;
        }
        let opaque = match g.op {
            op::TYPE_IMAGE | op::TYPE_SAMPLER | op::TYPE_SAMPLED_IMAGE => true,
            op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => self.holds_opaque(g.ops[0], memo),
            op::TYPE_STRUCT => g.ops.iter().any(|&x| self.holds_opaque(x, memo)),
            _ => false,
        };
        if let Some(c) = memo.get_mut(t as usize) {
            *c = 1 + opaque as u8;
        }
        opaque
    }

    /// After physical storage buffers: no PhysicalStorageBuffer storage class or addressing.
    fn no_physical_storage(&self) -> Result<(), RewriteError> {
        const ADDRESSING_PHYSICAL_STORAGE_BUFFER_64: u32 = 5348;
        if let Some(mm) = self.m.memory_model.iter().find(|i| i.op == op::MEMORY_MODEL && i.ops[0] == ADDRESSING_PHYSICAL_STORAGE_BUFFER_64) {
            return Err(self.err(mm, "the addressing model is still PhysicalStorageBuffer64"));
        }
        let class = |g: &Inst| match g.op {
            op::TYPE_POINTER | TYPE_FORWARD_POINTER | TYPE_UNTYPED_POINTER => g.ops.get(if g.op == TYPE_FORWARD_POINTER { 1 } else { 0 }).copied(),
            op::VARIABLE => g.ops.first().copied(),
            _ => None,
        };
        let all = self.m.globals.iter().chain(self.m.functions.iter().flat_map(|f| f.blocks.iter().flat_map(|b| b.insts.iter())));
        if let Some(g) = all.into_iter().find(|g| class(g) == Some(SC_PHYSICAL_STORAGE_BUFFER)) {
            return Err(self.err(g, "the PhysicalStorageBuffer storage class is still used"));
        }
        Ok(())
    }
}

fn is_decoration(opcode: u32) -> bool {
    matches!(opcode, op::DECORATE | op::MEMBER_DECORATE | op::DECORATE_ID | op::DECORATE_STRING | op::MEMBER_DECORATE_STRING | op::GROUP_DECORATE | op::GROUP_MEMBER_DECORATE)
}
