//! A cheap structural check after each pass, so that a shape a pass does not handle becomes a
//! precise [`RewriteError`] instead of a module the driver chokes on.
//!
//! One linear walk over the module with one table indexed by id (no hashing, one allocation):
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
//! Only rules that every valid module follows are checked, so a valid output never fails. The
//! walk itself builds no message: a rule returns a small [`Fail`], and only a failure is turned
//! into text.
use crate::builder::{cap, model, sc};
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

    /// Instructions the pass removes (anywhere in the module).
    const fn removes(self, opcode: u32) -> bool {
        match self {
            Pass::RawAccessChains => opcode == op::RAW_ACCESS_CHAIN_NV,
            // OpConvertUTo{Image,Sampler}NV .. OpSamplerImageAddressingModeNV.
            Pass::Bindless => matches!(opcode, 5391..=5397),
            // They need Addresses or PhysicalStorageBuffer64 addressing.
            Pass::PhysicalStorageBuffer => opcode == op::CONVERT_U_TO_PTR || opcode == op::CONVERT_PTR_TO_U,
            Pass::SmallStorage(_) => false,
        }
    }

    /// Capabilities, extensions and decorations the pass removes.
    fn removes_declarations(self) -> (&'static [u32], &'static [&'static str], &'static [u32]) {
        match self {
            Pass::RawAccessChains => (&[crate::scan::CAP_RAW_ACCESS_CHAINS_NV], &["SPV_NV_raw_access_chains"], &[]),
            // BindlessSamplerNV, BindlessImageNV, BoundSamplerNV, BoundImageNV.
            Pass::Bindless => (&[crate::scan::CAP_BINDLESS_TEXTURE_NV], &["SPV_NV_bindless_texture"], &[5398, 5399, 5400, 5401]),
            // RestrictPointer / AliasedPointer decorate physical pointers only.
            Pass::PhysicalStorageBuffer => (
                &[crate::scan::CAP_PHYSICAL_STORAGE_BUFFER_ADDRESSES],
                &["SPV_KHR_physical_storage_buffer", "SPV_EXT_physical_storage_buffer"],
                &[5355, 5356],
            ),
            Pass::SmallStorage(_) => (&[], &[], &[]),
        }
    }
}

const TYPE_UNTYPED_POINTER: u32 = 4417;
/// Capabilities (SPIR-V spec 3.31) only the check names (the shared ones: crate::builder::cap).
const CAP_FLOAT16_BUFFER: u32 = 8;
const CAP_INT64_ATOMICS: u32 = 12;
const CAP_FLOAT16_IMAGE_AMD: u32 = 5008;
const CAP_DOT_PRODUCT_INPUT_4X8_BIT: u32 = 6017;
const CAPS_16BIT_STORAGE: [u32; 4] = [4433, 4434, 4435, 4436];
const CAPS_8BIT_STORAGE: [u32; 3] = [4448, 4449, 4450];

/// What defines an id (8 bytes: the table is the check's one big allocation).
#[derive(Clone, Copy, Default)]
struct Def {
    /// Opcode of the defining instruction; 0: not defined (yet).
    op: u32,
    /// Its result type; for OpTypePointer its pointee; for OpFunction its index in
    /// `functions`.
    ty: u32,
}

/// A broken rule: what, and the id it is about. Small (returned in a register by the hot
/// loop); [`Check::explain`] turns it into text.
#[derive(Debug, Clone, Copy)]
struct Fail {
    kind: Kind,
    id: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Undefined,
    NotPointer,
    /// The pointee is not the type the instruction reads or writes.
    Pointee,
    /// The value's type is not the one required (`Fail::id` is the value).
    Type,
    /// Not an image / sampled image / sampler where the instruction needs one.
    NotOpaque,
    NotImagePointer,
    NotFunction,
    Arguments,
    Removed,
    Capability,
    Extension,
    Decoration,
    Width,
    SmallData,
    OpaqueMemory,
    Physical,
    PhysicalAddressing,
    OpaqueChoice,
}

fn fail(kind: Kind, id: u32) -> Fail {
    Fail { kind, id }
}

type Rule = Result<(), Fail>;

struct Check<'m> {
    m: &'m Module,
    pass: Pass,
    defs: Vec<Def>,
}

/// Per opcode below 512: [`leading_id_operands`] in the low 7 bits (`ALL_IDS`: every operand),
/// and `SPECIAL` where a typed rule applies or a pass removes it. One lookup per instruction:
/// most take no other branch. Built by the compiler (no setup on the first module).
static OPCODES: [u8; 512] = {
    let mut t = [0u8; 512];
    let mut o = 0;
    while o < t.len() {
        t[o] = opcode_entry(o as u32);
        o += 1;
    }
    t
};
const ALL_IDS: u8 = 0x7f;
const SPECIAL: u8 = 0x80;

/// The [`OPCODES`] entry of `o` (computed for opcodes past the table).
const fn opcode_entry(o: u32) -> u8 {
    let special = special(o) || Pass::RawAccessChains.removes(o) || Pass::Bindless.removes(o) || Pass::PhysicalStorageBuffer.removes(o);
    let lead = leading_id_operands(o);
    (if lead < ALL_IDS as usize { lead as u8 } else { ALL_IDS }) | if special { SPECIAL } else { 0 }
}

/// Opcodes with a typed rule in [`Check::special`].
const fn special(opcode: u32) -> bool {
    matches!(
        opcode,
        op::LOAD | op::STORE | op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::PTR_ACCESS_CHAIN | op::IN_BOUNDS_PTR_ACCESS_CHAIN | op::RAW_ACCESS_CHAIN_NV
            | 227..=242 | 318 | 319 | 5614 | 5615 | 6035
            | op::IMAGE_TEXEL_POINTER | op::SAMPLED_IMAGE | op::PHI | op::SELECT | op::COPY_OBJECT | op::RETURN_VALUE | op::FUNCTION_CALL
    ) || consumes_image(opcode)
}

/// Checks `m` after `pass`. Not inlined, so callgrind attributes its cost (see
/// shader-rewrite/tests/check.rs, `callgrind_workload`).
#[inline(never)]
pub fn after(m: &Module, pass: Pass) -> Result<(), RewriteError> {
    let mut c = Check { m, pass, defs: vec![Def::default(); m.header[3] as usize] };
    c.walk().map_err(|(i, f, ret)| {
        RewriteError::unsupported(describe(i), format!("the {} lowering does not handle this shape (its output would be invalid: {})", pass.name(), c.explain(i, f, ret)))
    })
}

impl<'m> Check<'m> {
    /// One walk in module order: ids that may be named before their definition (imports,
    /// strings, groups, functions, labels) first, then each instruction is checked against
    /// what precedes it and defined. In a valid module every other id is defined before it is
    /// used (blocks come after their dominators, SPIR-V spec 2.16.1); OpPhi operands and the
    /// names and decorations, which may refer forward, are checked once all is defined.
    fn walk(&mut self) -> Result<(), (&'m Inst, Fail, u32)> {
        let m = self.m;
        for section in [&m.ext_inst_imports, &m.debug, &m.annotations] {
            for i in section.iter().filter(|i| i.id != 0) {
                self.define(i, 0);
            }
        }
        for (n, f) in m.functions.iter().enumerate() {
            self.define(&f.def, n as u32);
            for b in &f.blocks {
                if let Some(d) = self.defs.get_mut(b.label as usize) {
                    d.op = op::LABEL;
                }
            }
        }
        self.declarations().map_err(|(i, f)| (i, f, 0))?;
        self.globals().map_err(|(i, f)| (i, f, 0))?;
        let mut phis: Vec<(&'m Inst, u32)> = Vec::new();
        for f in &m.functions {
            let ret = f.def.ty;
            self.operands_defined(&f.def).map_err(|e| (&f.def, e, ret))?;
            for p in &f.params {
                self.operands_defined(p).map_err(|e| (p, e, ret))?;
                self.define(p, 0);
            }
            for b in &f.blocks {
                for i in &b.insts {
                    if i.op == op::PHI {
                        phis.push((i, ret));
                    } else {
                        self.instruction(i, ret).map_err(|e| (i, e, ret))?;
                    }
                    if i.id != 0 {
                        self.define(i, 0);
                    }
                }
            }
        }
        for (i, ret) in phis {
            self.instruction(i, ret).map_err(|e| (i, e, ret))?;
        }
        self.references().map_err(|(i, f)| (i, f, 0))
    }

    #[inline]
    fn define(&mut self, i: &Inst, at: u32) {
        if let Some(d) = self.defs.get_mut(i.id as usize) {
            *d = match i.op {
                op::TYPE_POINTER => Def { op: i.op, ty: i.ops[1] },
                op::FUNCTION => Def { op: i.op, ty: at },
                _ => Def { op: i.op, ty: i.ty },
            };
        }
    }

    #[inline]
    fn def(&self, id: u32) -> Def {
        self.defs.get(id as usize).copied().unwrap_or_default()
    }
    #[inline]
    fn ty(&self, id: u32) -> u32 {
        self.def(id).ty
    }

    #[inline]
    fn defined(&self, x: u32) -> Rule {
        // Entry 0 is never written (no instruction defines id 0).
        match self.defs.get(x as usize) {
            Some(d) if d.op != 0 => Ok(()),
            _ => Err(fail(Kind::Undefined, x)),
        }
    }

    /// The pointee of value `x`'s pointer type; 0 for an untyped pointer.
    #[inline]
    fn pointee(&self, x: u32) -> Result<u32, Fail> {
        let t = self.def(self.ty(x));
        match t.op {
            op::TYPE_POINTER => Ok(t.ty),
            TYPE_UNTYPED_POINTER => Ok(0),
            _ => Err(fail(Kind::NotPointer, x)),
        }
    }
    #[inline]
    fn points_to(&self, x: u32, want: u32) -> Rule {
        match self.pointee(x)? {
            p if p != want && p != 0 => Err(fail(Kind::Pointee, x)),
            _ => Ok(()),
        }
    }
    #[inline]
    fn same_type(&self, x: u32, want: u32) -> Rule {
        if self.ty(x) != want {
            return Err(fail(Kind::Type, x));
        }
        Ok(())
    }
    #[inline]
    fn opaque(&self, x: u32, a: u32, b: u32) -> Rule {
        let t = self.def(self.ty(x)).op;
        if t != a && t != b {
            return Err(fail(Kind::NotOpaque, x));
        }
        Ok(())
    }

    /// The result type and the leading id operands (all of OpPhi's) are defined.
    #[inline(always)]
    fn operands_defined(&self, i: &Inst) -> Rule {
        self.operands_defined_n(i, match i.op {
            o if o < 512 => OPCODES[o as usize] & ALL_IDS,
            o => leading_id_operands(o).min(ALL_IDS as usize) as u8,
        })
    }

    #[inline(always)]
    fn operands_defined_n(&self, i: &Inst, leading: u8) -> Rule {
        if i.ty != 0 {
            self.defined(i.ty)?;
        }
        let ops = i.ops.as_slice();
        let n = match i.op {
            // (value, parent block) pairs.
            op::PHI => ops.len(),
            // A forward declaration names a type declared later.
            op::TYPE_FORWARD_POINTER => 0,
            _ if leading == ALL_IDS => ops.len(),
            _ => (leading as usize).min(ops.len()),
        };
        for &x in &ops[..n] {
            self.defined(x)?;
        }
        Ok(())
    }

    /// One instruction of a function body. `ret`: the function's return type.
    #[inline(always)]
    fn instruction(&self, i: &Inst, ret: u32) -> Rule {
        let entry = if i.op < 512 { OPCODES[i.op as usize] } else { SPECIAL | leading_id_operands(i.op).min(ALL_IDS as usize) as u8 };
        self.operands_defined_n(i, entry & ALL_IDS)?;
        if entry & SPECIAL == 0 {
            return Ok(());
        }
        self.special(i, ret)
    }

    /// The typed rules, and the instructions the pass removes.
    fn special(&self, i: &Inst, ret: u32) -> Rule {
        if self.pass.removes(i.op) {
            return Err(fail(Kind::Removed, 0));
        }
        let o = i.ops.as_slice();
        match i.op {
            op::LOAD => self.points_to(o[0], i.ty),
            op::STORE => self.points_to(o[0], self.ty(o[1])),
            op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::PTR_ACCESS_CHAIN | op::IN_BOUNDS_PTR_ACCESS_CHAIN | op::RAW_ACCESS_CHAIN_NV => self.pointee(o[0]).map(|_| ()),
            op::ATOMIC_STORE => self.points_to(o[0], self.ty(o[3])),
            // OpAtomicLoad..OpAtomicXor, OpAtomicFMin/FMax/FAddEXT: the result has the
            // pointee's type. The flag operations (318, 319) only need a pointer.
            227..=242 | 5614 | 5615 | 6035 => self.points_to(o[0], i.ty),
            318 | 319 => self.pointee(o[0]).map(|_| ()),
            op::IMAGE_TEXEL_POINTER => match self.pointee(o[0])? {
                p if p != 0 && self.def(p).op != op::TYPE_IMAGE => Err(fail(Kind::NotImagePointer, o[0])),
                _ => Ok(()),
            },
            op::SAMPLED_IMAGE => {
                self.opaque(o[0], op::TYPE_IMAGE, op::TYPE_IMAGE)?;
                self.opaque(o[1], op::TYPE_SAMPLER, op::TYPE_SAMPLER)
            }
            op::PHI | op::SELECT if self.opaque_result(i) => Err(fail(Kind::OpaqueChoice, i.ty)),
            op::PHI => o.iter().step_by(2).try_for_each(|&x| self.same_type(x, i.ty)),
            op::SELECT => {
                self.same_type(o[1], i.ty)?;
                self.same_type(o[2], i.ty)
            }
            op::COPY_OBJECT => self.same_type(o[0], i.ty),
            op::RETURN_VALUE => self.same_type(o[0], ret),
            op::FUNCTION_CALL => self.call(i),
            opcode if consumes_image(opcode) => self.opaque(o[0], op::TYPE_IMAGE, op::TYPE_SAMPLED_IMAGE),
            _ => Ok(()),
        }
    }

    /// An image, sampler or sampled image chosen by OpPhi / OpSelect, which only
    /// SPV_NV_bindless_texture allows: after that pass, never.
    fn opaque_result(&self, i: &Inst) -> bool {
        matches!(self.pass, Pass::Bindless) && matches!(self.def(i.ty).op, op::TYPE_IMAGE | op::TYPE_SAMPLER | op::TYPE_SAMPLED_IMAGE)
    }

    fn call(&self, i: &Inst) -> Rule {
        let d = self.def(i.ops[0]);
        if d.op != op::FUNCTION {
            return Err(fail(Kind::NotFunction, i.ops[0]));
        }
        let f = &self.m.functions[d.ty as usize];
        if f.def.ty != i.ty {
            return Err(fail(Kind::Type, i.ops[0]));
        }
        if f.params.len() != i.ops.len() - 1 {
            return Err(fail(Kind::Arguments, i.ops[0]));
        }
        f.params.iter().zip(&i.ops[1..]).try_for_each(|(p, &a)| self.same_type(a, p.ty))
    }

    /// The text of `f` at instruction `i` (`ret`: the enclosing function's return type).
    fn explain(&self, i: &Inst, f: Fail, ret: u32) -> String {
        let x = f.id;
        let t = self.ty(x);
        match f.kind {
            Kind::Undefined => format!("it refers to %{x}, which is not defined"),
            Kind::NotPointer => format!("%{x} is not a pointer (its type %{t} is opcode {})", self.def(t).op),
            Kind::Pointee => format!("%{x} points to %{}, not to the type the instruction reads or writes", self.def(t).ty),
            Kind::Type => {
                let want = match i.op {
                    op::RETURN_VALUE => ret,
                    op::VARIABLE => self.def(i.ty).ty,
                    op::FUNCTION_CALL if x == i.ops[0] => i.ty,
                    op::FUNCTION_CALL => {
                        let callee = &self.m.functions[self.def(i.ops[0]).ty as usize];
                        i.ops[1..].iter().zip(&callee.params).find(|(&a, _)| a == x).map_or(0, |(_, p)| p.ty)
                    }
                    _ => i.ty,
                };
                let t = if i.op == op::FUNCTION_CALL && x == i.ops[0] { self.m.functions[self.def(x).ty as usize].def.ty } else { t };
                format!("%{x} has type %{t} where %{want} is required")
            }
            Kind::NotOpaque => format!("%{x} is not an image, sampled image or sampler as the instruction needs (its type %{t} is opcode {})", self.def(t).op),
            Kind::NotImagePointer => format!("its Image %{x} points to %{}, not to an image", self.def(t).ty),
            Kind::NotFunction => format!("%{x} is not a function"),
            Kind::Arguments => format!("{} arguments for the {} parameters of %{x}", i.ops.len() - 1, self.m.functions[self.def(x).ty as usize].params.len()),
            Kind::Removed => "the instruction is still there".into(),
            Kind::Capability => format!("capability {x} is still declared"),
            Kind::Extension => "its extension is still declared".into(),
            Kind::Decoration => format!("decoration {x} is still there"),
            Kind::Width => format!("no capability of the module allows a {}-bit {}", i.ops[0], if i.op == op::TYPE_INT { "integer" } else { "float" }),
            Kind::SmallData => format!("pointer type %{} into storage class {} still holds {x}-bit data", i.id, i.ops[0]),
            Kind::OpaqueMemory => format!("pointer type %{} into storage class {} still points to an image, sampler or sampled image", i.id, i.ops[0]),
            Kind::Physical => "the PhysicalStorageBuffer storage class is still used".into(),
            Kind::PhysicalAddressing => "the addressing model is still PhysicalStorageBuffer64".into(),
            Kind::OpaqueChoice => format!("an OpPhi or OpSelect of image/sampler type %{x}, which needs SPV_NV_bindless_texture"),
        }
    }

    /// Capabilities, extensions and the memory model.
    fn declarations(&self) -> Result<(), (&'m Inst, Fail)> {
        let m = self.m;
        let (caps, extensions, _) = self.pass.removes_declarations();
        for c in &m.capabilities {
            let lowered = matches!(self.pass, Pass::SmallStorage(s) if s.get(c.ops[0]));
            if caps.contains(&c.ops[0]) || lowered {
                return Err((c, fail(Kind::Capability, c.ops[0])));
            }
        }
        if let Some(e) = m.extensions.iter().find(|e| extensions.iter().any(|x| string_is(&e.ops, x))) {
            return Err((e, fail(Kind::Extension, 0)));
        }
        for mm in &m.memory_model {
            if self.pass.removes(mm.op) {
                return Err((mm, fail(Kind::Removed, 0)));
            }
            if matches!(self.pass, Pass::PhysicalStorageBuffer) && mm.op == op::MEMORY_MODEL && mm.ops[0] == model::ADDRESSING_PHYSICAL_STORAGE_BUFFER_64 {
                return Err((mm, fail(Kind::PhysicalAddressing, 0)));
            }
        }
        Ok(())
    }

    /// Entry points, execution modes, names and decorations: what they name is defined (once
    /// everything is), and the decorations the pass removes are gone.
    fn references(&self) -> Result<(), (&'m Inst, Fail)> {
        let m = self.m;
        let (_, _, decorations) = self.pass.removes_declarations();
        for ep in &m.entry_points {
            let start = crate::module::interface_start(&ep.ops);
            for &x in ep.ops.iter().skip(1).take(1).chain(ep.ops.iter().skip(start)) {
                self.defined(x).map_err(|f| (ep, f))?;
            }
        }
        for em in &m.execution_modes {
            self.defined(em.ops[0]).map_err(|f| (em, f))?;
        }
        for i in m.debug.iter().filter(|i| matches!(i.op, op::NAME | op::MEMBER_NAME)) {
            self.defined(i.ops[0]).map_err(|f| (i, f))?;
        }
        for a in &m.annotations {
            let deco = match a.op {
                op::DECORATE | op::DECORATE_ID | op::DECORATE_STRING => a.ops[1],
                op::MEMBER_DECORATE | op::MEMBER_DECORATE_STRING => a.ops[2],
                op::GROUP_DECORATE | op::GROUP_MEMBER_DECORATE => 0,
                _ => continue,
            };
            if decorations.contains(&deco) {
                return Err((a, fail(Kind::Decoration, deco)));
            }
            self.defined(a.ops[0]).map_err(|f| (a, f))?;
        }
        Ok(())
    }

    /// Types, constants and global variables, in order (each refers to earlier ones only, but
    /// for forward-declared pointers).
    fn globals(&mut self) -> Result<(), (&'m Inst, Fail)> {
        let m = self.m;
        let has = |caps: &[u32]| caps.iter().any(|&c| m.has_capability(c));
        let small = matches!(self.pass, Pass::SmallStorage(_));
        let physical = matches!(self.pass, Pass::PhysicalStorageBuffer);
        let int64 = has(&[cap::INT64, CAP_INT64_ATOMICS]);
        let storage16 = has(&CAPS_16BIT_STORAGE);
        // Per type id: 1 = holds an 8-bit scalar, 2 = a 16-bit one, 4 = an image, sampler or
        // sampled image (through arrays, structs, vectors and matrices; not pointers). Members
        // are declared before their aggregates, so one walk in order fills it.
        let mut holds = vec![0u8; if small || matches!(self.pass, Pass::Bindless) { self.defs.len() } else { 0 }];
        for g in &m.globals {
            self.operands_defined(g).map_err(|f| (g, f))?;
            if self.pass.removes(g.op) {
                return Err((g, fail(Kind::Removed, 0)));
            }
            match g.op {
                op::TYPE_INT | op::TYPE_FLOAT => {
                    let (w, int) = (g.ops[0], g.op == op::TYPE_INT);
                    // 64-bit ints carry handles and addresses. The 8/16-bit rules (SPIR-V 2.16.1,
                    // SPV_AMD_gpu_shader_int16 / _half_float) only after that pass; a float with
                    // an encoding operand (BFloat16, Float8) has capabilities of its own.
                    let allowed = match (int, w) {
                        (true, 64) => int64,
                        _ if !small => true,
                        (true, 16) => storage16 || has(&[cap::INT16]) || m.has_extension("SPV_AMD_gpu_shader_int16"),
                        (true, 8) => has(&CAPS_8BIT_STORAGE) || has(&[cap::INT8, CAP_DOT_PRODUCT_INPUT_4X8_BIT]),
                        (false, 16) if g.ops.len() == 1 => {
                            storage16 || has(&[cap::FLOAT16, CAP_FLOAT16_BUFFER, CAP_FLOAT16_IMAGE_AMD]) || m.has_extension("SPV_AMD_gpu_shader_half_float")
                        }
                        _ => true,
                    };
                    if !allowed {
                        return Err((g, fail(Kind::Width, w)));
                    }
                    if let Some(h) = holds.get_mut(g.id as usize) {
                        *h = match (w, g.ops.len() <= 2) {
                            (8, true) => 1,
                            (16, true) => 2,
                            _ => 0,
                        };
                    }
                }
                op::TYPE_IMAGE | op::TYPE_SAMPLER | op::TYPE_SAMPLED_IMAGE => {
                    if let Some(h) = holds.get_mut(g.id as usize) {
                        *h = 4;
                    }
                }
                op::TYPE_VECTOR | op::TYPE_MATRIX | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY | op::TYPE_STRUCT if !holds.is_empty() => {
                    let members = if g.op == op::TYPE_STRUCT { &g.ops[..] } else { &g.ops[..1] };
                    let bits = members.iter().fold(0, |a, &x| a | holds.get(x as usize).copied().unwrap_or(0));
                    if let Some(h) = holds.get_mut(g.id as usize) {
                        *h = bits;
                    }
                }
                op::TYPE_POINTER | op::TYPE_FORWARD_POINTER | TYPE_UNTYPED_POINTER => {
                    let sc = g.ops[usize::from(g.op == op::TYPE_FORWARD_POINTER)];
                    if physical && sc == sc::PHYSICAL_STORAGE_BUFFER {
                        return Err((g, fail(Kind::Physical, 0)));
                    }
                    if g.op == op::TYPE_POINTER && !holds.is_empty() {
                        self.pointer_data(g, holds.get(g.ops[1] as usize).copied().unwrap_or(0)).map_err(|f| (g, f))?;
                    }
                    if g.op == op::TYPE_FORWARD_POINTER {
                        // Structs may name the pointer before its OpTypePointer.
                        if let Some(d) = self.defs.get_mut(g.ops[0] as usize) {
                            d.op = op::TYPE_FORWARD_POINTER;
                        }
                    }
                }
                op::VARIABLE => {
                    if physical && g.ops[0] == sc::PHYSICAL_STORAGE_BUFFER {
                        return Err((g, fail(Kind::Physical, 0)));
                    }
                    if let Some(&init) = g.ops.get(1) {
                        self.defined(init).map_err(|f| (g, f))?;
                        // The variable is not defined yet: its type's pointee is what counts.
                        let t = self.def(g.ty);
                        if t.op == op::TYPE_POINTER && t.ty != self.ty(init) {
                            return Err((g, fail(Kind::Type, init)));
                        }
                    }
                }
                _ => {}
            }
            if g.id != 0 {
                self.define(g, 0);
            }
        }
        Ok(())
    }

    /// Pointer type `g` into a storage class, whose pointee holds `bits` (see `globals`): no
    /// images outside UniformConstant after bindless (handles live in memory as integers); no
    /// 8/16-bit data where the 8/16-bit lowering emulated the capability and none still
    /// declared allows it.
    fn pointer_data(&self, g: &Inst, bits: u8) -> Rule {
        let (sc, m) = (g.ops[0], self.m);
        match self.pass {
            Pass::Bindless if bits & 4 != 0 && sc != sc::UNIFORM_CONSTANT => Err(fail(Kind::OpaqueMemory, 0)),
            Pass::SmallStorage(lowered) => {
                for (bit, width) in [(1u8, 8u32), (2, 16)] {
                    if bits & bit == 0 {
                        continue;
                    }
                    let (sb, ubo, pc) = if width == 16 { (4433, 4434, 4435) } else { (4448, 4449, 4450) };
                    let has = |c: u32| m.has_capability(c);
                    // (emulated, still allowed); Uniform with BufferBlock is a storage buffer.
                    let (emulated, allowed) = match sc {
                        sc::STORAGE_BUFFER => (lowered.get(sb) || lowered.get(ubo), has(sb) || has(ubo)),
                        sc::UNIFORM => (lowered.get(ubo), has(ubo) || has(sb)),
                        sc::PUSH_CONSTANT => (lowered.get(pc), has(pc)),
                        sc::INPUT | sc::OUTPUT if width == 16 => (lowered.get(4436), has(4436)),
                        _ => (false, true),
                    };
                    if emulated && !allowed {
                        return Err(fail(Kind::SmallData, width));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
