//! The shared byte-address backend: loads and stores of scalars/vectors at a dynamic byte
//! address inside a buffer seen through "alias" views (`struct { uint8_t/uint16_t/uint/uvec2/
//! uvec4 data[]; }` bound to the same descriptor), with optional bounds checks.
//!
//! Accesses are emitted inline at the call site (passing SSBO pointers to helper functions
//! would need the VariablePointersStorageBuffer capability); bounds checks are selection
//! constructs that split the caller's block. One exception: the edge path of a per-component
//! vector (each component checked on its own once the whole-vector check failed) is a function
//! shared by the module's accesses of the same type through the same descriptor variable
//! where there are two or more of them and their base is the variable or a descriptor-array
//! element of it ([`Backend::count_edge`], [`Backend::emit_counted`]): it takes the array
//! indices and the byte address, not pointers, and rebuilds the view chains itself.
//!
//! Rules honoured here:
//! - Out-of-bounds accesses are branched around, never clamped, so an empty range is never
//!   touched (design.md §2).
//! - Sub-word stores never do a plain read-modify-write of a shared word: an 8/16-bit alias
//!   store, or an atomic and + or pair on the containing word (design.md §2).
//! - 8/16-bit values are moved with width-only conversions (UConvert/SConvert/FConvert) and
//!   UnpackHalf2x16/PackHalf2x16, the only operations SPV_KHR_16bit_storage allows on 16-bit
//!   types without Int16/Float16 arithmetic.
use rustc_hash::FxHashMap as HashMap;

use crate::builder::{cap, deco, sc, Builder, Emitter, ScalarVec, Vals};
use crate::ops;
use crate::module::op;
use crate::target::Target;

/// An alias view of a buffer: elements of this many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AliasKind {
    U8,
    U16,
    U32,
    U32x2,
    U32x4,
    /// `uint64_t`: only for 64-bit components accessed on their own, checked by the driver
    /// ([`Robustness::ComponentsByDriver`]): one scalar access, where a uvec2 access could be
    /// checked per word.
    U64,
    /// `u64vec2`: only for 64-bit components moved two at a time where the driver checks each
    /// component of a vector access ([`AccessShape::vectors_checked_by_driver`]).
    U64x2,
}

impl AliasKind {
    /// The views accesses are planned onto (widest first where alignment allows; [`plan`]) and
    /// checks counted with ([`granule`]).
    pub const ALL: [AliasKind; 5] = [AliasKind::U8, AliasKind::U16, AliasKind::U32, AliasKind::U32x2, AliasKind::U32x4];
    /// [`AliasKind::ALL`] and the 64-bit views: every bit of a view mask.
    pub const EVERY: [AliasKind; 7] = [AliasKind::U8, AliasKind::U16, AliasKind::U32, AliasKind::U32x2, AliasKind::U32x4, AliasKind::U64, AliasKind::U64x2];
    /// The view whose elements are one component of `bytes` bytes: scalar, so robustness checks
    /// each access as a whole.
    pub fn scalar(bytes: u32) -> Option<AliasKind> {
        match bytes {
            1 => Some(AliasKind::U8),
            2 => Some(AliasKind::U16),
            4 => Some(AliasKind::U32),
            8 => Some(AliasKind::U64),
            _ => None,
        }
    }
    pub fn bytes(self) -> u32 {
        match self {
            AliasKind::U8 => 1,
            AliasKind::U16 => 2,
            AliasKind::U32 => 4,
            AliasKind::U32x2 | AliasKind::U64 => 8,
            AliasKind::U32x4 | AliasKind::U64x2 => 16,
        }
    }
    /// Can the target declare this alias in `storage` (8/16-bit storage features)?
    pub fn available(self, target: &Target, storage: u32) -> bool {
        let uniform = storage == sc::UNIFORM;
        match self {
            AliasKind::U8 => {
                if uniform { target.uniform_and_storage_buffer_8bit } else { target.storage_buffer_8bit }
            }
            AliasKind::U16 => {
                if uniform { target.uniform_and_storage_buffer_16bit } else { target.storage_buffer_16bit }
            }
            AliasKind::U64 | AliasKind::U64x2 => target.int64,
            _ => true,
        }
    }
}

/// One memory access of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// A whole element of an alias view.
    Alias(AliasKind),
    /// A 1- or 2-byte piece read from / written into its containing 32-bit word.
    WordPart(u32),
}

/// Splits `size` bytes starting `start` bytes after an address aligned to `align` (relative to
/// `start`) into the widest accesses the alignment and the available views allow.
fn plan(start: u32, size: u32, align: u32, avail: &[AliasKind]) -> smallvec::SmallVec<[(u32, Unit); 4]> {
    let mut out = smallvec::SmallVec::new();
    let mut r = 0;
    while r < size {
        let unit = [AliasKind::U32x4, AliasKind::U32x2, AliasKind::U32, AliasKind::U16, AliasKind::U8]
            .into_iter()
            .find(|k| {
                let u = k.bytes();
                u <= size - r && u <= align && r % u == 0 && avail.contains(k)
            })
            .map(Unit::Alias);
        let part = if r % 2 == 0 { (size - r).min(align).min(2) } else { 1 };
        let unit = unit.unwrap_or(Unit::WordPart(part));
        let step = match unit {
            Unit::Alias(k) => k.bytes(),
            Unit::WordPart(b) => b,
        };
        out.push((start + r, unit));
        r += step;
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Robustness {
    None,
    PerComponent,
    /// Checks the driver makes: each component one unchecked scalar access of its own view
    /// ([`AliasKind::scalar`]), whose robustBufferAccess2 check, exact to the byte, is the
    /// component's RobustnessPerComponentNV check ([`AccessShape::components_checked_by_driver`])
    /// or, for a scalar that is its whole element, the RobustnessPerElementNV check
    /// ([`AccessShape::element_is_its_scalar`]).
    ComponentsByDriver,
    /// Whole-element check of `Stride × Index` against the range.
    PerElement { stride: u32 },
}

/// Everything that makes two accesses need different helper code.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AccessShape {
    pub store: bool,
    pub storage: u32,
    pub value_ty: u32,
    pub value: ScalarVec,
    /// Guaranteed alignment of the byte address (from `Aligned`), capped at 16.
    pub align: u32,
    pub robustness: Robustness,
    /// Memory operands to put on the emitted accesses (mask without Aligned, then its ids).
    pub mem_ops: Vec<u32>,
    pub nonuniform: bool,
    /// The loaded / stored SSA value is the 32-bit twin of an 8/16-bit `value` type (f32, i32 or
    /// u32 components holding the exact 8/16-bit value): no width conversion at the access.
    pub wide: bool,
}

impl AccessShape {
    fn comp_bytes(&self) -> u32 {
        self.value.width / 8
    }
    fn size(&self) -> u32 {
        self.comp_bytes() * self.value.n
    }
    /// Do this access's bounds checks need the range's length to the byte? Not when every
    /// checked offset and size is a multiple of 4: with `len` rounded down to whole words (what
    /// OpArrayLength of a word view gives), `off + size <= len` then holds exactly when it holds
    /// for the byte length.
    pub fn needs_byte_length(&self) -> bool {
        match self.robustness {
            Robustness::None | Robustness::ComponentsByDriver => false,
            Robustness::PerElement { stride } => !stride.is_multiple_of(4),
            // Aligned is at least the component size (SPV_NV_raw_access_chains), so components
            // of 4 bytes or more sit at multiples of 4.
            Robustness::PerComponent => self.comp_bytes() < 4,
        }
    }
    /// The bounds checks this access makes: (bytes checked, alignment of the checked offsets).
    fn checks(&self) -> smallvec::SmallVec<[(u32, u32); 2]> {
        let c = self.comp_bytes();
        match self.robustness {
            Robustness::None | Robustness::ComponentsByDriver => smallvec::SmallVec::new(),
            // Stride × Index is a multiple of the largest power of two dividing Stride.
            Robustness::PerElement { stride } => smallvec::smallvec![(stride, 1 << stride.trailing_zeros().min(4))],
            Robustness::PerComponent if self.value.n == 1 => smallvec::smallvec![(c, c)],
            Robustness::PerComponent => smallvec::smallvec![(self.size(), self.align), (c, c)],
        }
    }

    /// Can this per-component access be one unchecked scalar access per component
    /// ([`Robustness::ComponentsByDriver`])? Then robustBufferAccess2's checks, exact to the byte
    /// ([`crate::Options::component_bounds_by_driver`]), are RobustnessPerComponentNV's: a scalar
    /// access outside the range reads 0 and a store outside writes nothing. It is when the
    /// access is one component, or `Aligned` is the component size (the pieces of the whole
    /// access are its components anyway: no wider access is given up), through a scalar view of
    /// the component's width (8/16-bit storage, Int64 for 64-bit components). Not for wider
    /// pieces: robustness may check a vector access as a whole or per component (the driver's
    /// choice), unless the driver is known to check each component
    /// ([`AccessShape::vectors_checked_by_driver`]); nor where an 8/16-bit component is read
    /// from its word (the driver would check the word).
    pub fn components_checked_by_driver(&self, target: &Target) -> bool {
        self.components_are_scalar(target) && (self.value.n == 1 || self.align == self.comp_bytes() || self.vectors_checked_by_driver(target))
    }

    /// Does the driver check each component of this access's pieces on its own where they are
    /// vectors ([`Target::robust_vector_components`]), so its per-component check of a piece is
    /// RobustnessPerComponentNV's? For 32-bit components, whose pieces ([`plan`]: `uint`,
    /// `uvec2`, `uvec4` views) have 32-bit components; for 64-bit ones where the target has
    /// Int64, moved in `uint64_t`/`u64vec2` pieces ([`u64_pieces`]) rather than `plan`'s, which
    /// would be checked per word. Not for 8/16-bit components (two share a word).
    pub fn vectors_checked_by_driver(&self, target: &Target) -> bool {
        target.robust_vector_components && (self.comp_bytes() == 4 || (self.comp_bytes() == 8 && AliasKind::U64x2.available(target, self.storage)))
    }

    /// Is this a per-component access whose components the target can access each as one
    /// scalar of its width ([`AliasKind::scalar`]: 8/16-bit storage, Int64 for 64-bit ones)?
    pub fn components_are_scalar(&self, target: &Target) -> bool {
        self.robustness == Robustness::PerComponent && AliasKind::scalar(self.comp_bytes()).is_some_and(|k| k.available(target, self.storage))
    }

    /// Is this a per-element access of one scalar as wide as the element (`Stride` = its size),
    /// through a scalar view of its width? With the access at the element's start (the chain's
    /// Offset 0, which the caller checks), the element lies in the range exactly when the
    /// scalar does, so robustBufferAccess2's check of the scalar, exact to the byte, is
    /// RobustnessPerElementNV's.
    pub fn element_is_its_scalar(&self, target: &Target) -> bool {
        let c = self.comp_bytes();
        matches!(self.robustness, Robustness::PerElement { stride } if stride == c)
            && self.value.n == 1
            && AliasKind::scalar(c).is_some_and(|k| k.available(target, self.storage))
    }

    /// Does this access make any bounds check of its own?
    pub fn checked(&self) -> bool {
        !matches!(self.robustness, Robustness::None | Robustness::ComponentsByDriver)
    }

    /// Can every bounds check of this access count whole elements of a view the target has
    /// (exact to the byte; see [`Backend::emit_counted`])? False when a check of 8/16-bit
    /// components needs an 8/16-bit view the target lacks: it is then made on the word view's
    /// length, rounded down to whole words.
    pub fn counted_exact(&self, target: &Target) -> bool {
        self.checks().iter().all(|&(size, align)| granule(size, align, |k| k.available(target, self.storage)).is_some())
    }

    /// [`AccessShape::views_used`] for an access whose checks count view elements
    /// ([`Backend::emit_counted`]): the views of its pieces and of its checks' granules, as a
    /// bit set (bit `kind as usize`), without allocating.
    pub fn view_mask(&self, target: &Target) -> u8 {
        let avail: smallvec::SmallVec<[AliasKind; 5]> = AliasKind::ALL.into_iter().filter(|k| k.available(target, self.storage)).collect();
        let c = self.comp_bytes();
        let mut mask = 1u8 << AliasKind::U32 as usize; // word view: always present (lengths, word parts)
        if self.robustness == Robustness::ComponentsByDriver {
            if !self.vectors_checked_by_driver(target) {
                return mask | AliasKind::scalar(c).map_or(0, |k| 1 << k as usize);
            }
            if c == 8 {
                return u64_pieces(self.value.n, self.align).into_iter().fold(mask, |m, (_, k)| m | 1 << k as usize);
            }
        }
        for (size, align) in self.checks() {
            if let Some(k) = granule(size, align, |k| avail.contains(&k)) {
                mask |= 1 << k as usize;
            }
        }
        let mut add = |start: u32, size: u32, align: u32| {
            for (_, u) in plan(start, size, align, &avail) {
                mask |= 1 << match u {
                    Unit::Alias(k) => k as usize,
                    Unit::WordPart(_) => AliasKind::U32 as usize,
                };
            }
        };
        add(0, self.size(), self.align);
        if self.robustness == Robustness::PerComponent {
            for k in 0..self.value.n {
                add(k * c, c, c);
            }
        }
        mask
    }
    /// The alias views this access can use, given what the target has, when its checks take a
    /// byte length ([`Backend::emit`]): those of [`AccessShape::view_mask`], and the 8-bit one
    /// (the exact byte length) where the checks need it.
    pub fn views_used(&self, target: &Target) -> Vec<AliasKind> {
        let mut mask = self.view_mask(target);
        if self.needs_byte_length() && AliasKind::U8.available(target, self.storage) {
            mask |= 1 << AliasKind::U8 as usize;
        }
        AliasKind::EVERY.into_iter().filter(|&k| mask & (1 << k as usize) != 0).collect()
    }
}

/// The pieces a vector of `n` 64-bit components at an address aligned to `align` moves in
/// where the driver checks each component of a vector access: (first component, view), a
/// `u64vec2` for each pair the alignment allows, else a `uint64_t`.
fn u64_pieces(n: u32, align: u32) -> smallvec::SmallVec<[(u32, AliasKind); 4]> {
    let mut out = smallvec::SmallVec::new();
    let mut k = 0;
    while k < n {
        let kind = if align >= 16 && k + 2 <= n { AliasKind::U64x2 } else { AliasKind::U64 };
        out.push((k, kind));
        k += if kind == AliasKind::U64x2 { 2 } else { 1 };
    }
    out
}

/// The widest view (among those `has`) whose elements can count a check of `size` bytes at
/// offsets aligned to `align`: its element size divides both, so `off + size <= len` is
/// `off / e + size / e <= len / e` exactly, with `len / e` what OpArrayLength of the view gives.
fn granule(size: u32, align: u32, has: impl Fn(AliasKind) -> bool) -> Option<AliasKind> {
    AliasKind::ALL.into_iter().rev().find(|&k| k.bytes() <= align && size.is_multiple_of(k.bytes()) && has(k))
}

/// The alias types of one storage class.
#[derive(Debug, Clone)]
pub struct AliasViews {
    pub kinds: Vec<AliasKind>,
    /// Per kind (same order): the alias struct type, pointer to it, element type, pointer to element.
    pub struct_ty: Vec<u32>,
    pub struct_ptr: Vec<u32>,
    elem_ty: Vec<u32>,
    elem_ptr: Vec<u32>,
    /// Uniform buffers: the only declared view is `uvec4 data[N]` (std140 wants array strides of
    /// 16, Vulkan "Standard Uniform Buffer Layout"); the U32 kind is virtual and reaches a word
    /// as `data[a >> 4][(a >> 2) & 3]`.
    vec4_words: bool,
}

impl AliasViews {
    pub fn new(b: &mut Builder, storage: u32, kinds: Vec<AliasKind>) -> Self {
        Self::new_with(b, storage, kinds, &[])
    }
    /// Like [`AliasViews::new`], but the views in `existing` are block structs the module
    /// already declares (`struct { T data[]; }`, Offset 0, ArrayStride the kind's size, T the
    /// kind's element type): their variables can serve as that view, nothing is declared.
    pub fn new_with(b: &mut Builder, storage: u32, kinds: Vec<AliasKind>, existing: &[(AliasKind, u32)]) -> Self {
        let n = kinds.len();
        let mut v = AliasViews {
            kinds: Vec::with_capacity(n),
            struct_ty: Vec::with_capacity(n),
            struct_ptr: Vec::with_capacity(n),
            elem_ty: Vec::with_capacity(n),
            elem_ptr: Vec::with_capacity(n),
            vec4_words: false,
        };
        let u32t = b.t_u32();
        for k in kinds {
            let elem = match k {
                AliasKind::U8 => b.t_int(8, false),
                AliasKind::U16 => b.t_int(16, false),
                AliasKind::U32 => u32t,
                AliasKind::U32x2 => b.t_vec(u32t, 2),
                AliasKind::U32x4 => b.t_vec(u32t, 4),
                AliasKind::U64 => b.t_int(64, false),
                AliasKind::U64x2 => {
                    let u64t = b.t_int(64, false);
                    b.t_vec(u64t, 2)
                }
            };
            let st = if let Some(&(_, st)) = existing.iter().find(|(x, _)| *x == k) {
                st
            } else {
                let rta = b.t_runtime_array(elem, k.bytes());
                let st = b.t_struct(&[rta]);
                // A Uniform-class SSBO is a BufferBlock (SPIR-V 1.0 style); StorageBuffer wants Block.
                let block = if storage == sc::UNIFORM { deco::BUFFER_BLOCK } else { deco::BLOCK };
                b.decorate(st, block, &[]);
                b.m.member_decorate(st, 0, deco::OFFSET, &[0]);
                st
            };
            let sp = b.t_ptr(storage, st);
            let ep = b.t_ptr(storage, elem);
            v.kinds.push(k);
            v.struct_ty.push(st);
            v.struct_ptr.push(sp);
            v.elem_ty.push(elem);
            v.elem_ptr.push(ep);
        }
        v
    }
    /// A fixed-size word view `struct { uint/uvec4 data[len]; }` (Block, member at byte `base`)
    /// for a uniform buffer (`vec4 = true`: kinds U32 (virtual) + U32x4) or a push-constant block
    /// (kind U32).
    pub fn fixed(b: &mut Builder, storage: u32, vec4: bool, len: u32, base: u32) -> Self {
        let u32t = b.t_u32();
        let elem = if vec4 { b.t_vec(u32t, 4) } else { u32t };
        let n = b.c_u32(len.max(1));
        let arr = b.id();
        b.add_global(crate::module::Inst::new(op::TYPE_ARRAY, 0, arr, ops![elem, n]));
        b.decorate(arr, deco::ARRAY_STRIDE, &[if vec4 { 16 } else { 4 }]);
        let st = b.t_struct(&[arr]);
        b.decorate(st, deco::BLOCK, &[]);
        b.m.member_decorate(st, 0, deco::OFFSET, &[base]);
        let sp = b.t_ptr(storage, st);
        let word_ptr = b.t_ptr(storage, u32t);
        let mut v = AliasViews {
            kinds: vec![AliasKind::U32],
            struct_ty: vec![st],
            struct_ptr: vec![sp],
            elem_ty: vec![u32t],
            elem_ptr: vec![word_ptr],
            vec4_words: vec4,
        };
        if vec4 {
            let vp = b.t_ptr(storage, elem);
            v.kinds.push(AliasKind::U32x4);
            v.struct_ty.push(st);
            v.struct_ptr.push(sp);
            v.elem_ty.push(elem);
            v.elem_ptr.push(vp);
        }
        v
    }
    pub fn slot(&self, k: AliasKind) -> usize {
        self.kinds.iter().position(|x| *x == k).expect("alias view planned but not declared")
    }
}

/// Emits accesses through alias views.
pub struct Backend {
    pub target: Target,
    pub oob_poison: Option<u8>,
    /// Scope for the sub-word atomics: QueueFamily under the Vulkan memory model (Device scope
    /// would need VulkanMemoryModelDeviceScope), Device otherwise.
    pub atomic_scope: u32,
    pub views: HashMap<u32, AliasViews>,
    /// Sub-word stores emitted as atomic and/or pairs.
    pub atomic_subword_stores: u32,
    /// Range lengths defined at the top of the current function's entry block: their bounds
    /// limits are computed once, there (see [`Backend::begin_function`]).
    entry_lens: Vec<u32>,
    /// (length, access size, limit id), for `entry_lens`.
    limits: Vec<(u32, u32, u32)>,
    /// Instructions computing those limits, for the caller to place after the lengths.
    entry_insts: Vec<crate::module::Inst>,
    /// The shared edge functions made so far (see [`Backend::edge_function`]), and their bodies
    /// for the caller to append to the module ([`Backend::take_functions`]).
    edge_fns: Vec<(EdgeKey, u32)>,
    functions: Vec<crate::module::Function>,
    /// How many accesses of the module could share each edge function
    /// ([`Backend::count_edge`]): one used once would only add a call to the inline code.
    edge_uses: Vec<(EdgeKey, u32)>,
    /// Byte addresses the caller made as `Stride × Index + Offset` (constant Stride and Offset,
    /// 32-bit wrapping): address id → (Index, Stride, Offset) ([`Backend::note_address`]).
    addr_forms: AddrForms,
}

/// What the caller said about how byte addresses were made ([`Backend::note_address`],
/// [`Backend::note_based`]).
#[derive(Default)]
pub struct AddrForms {
    /// Address id → (Index, Stride, Offset): `Stride × Index + Offset`.
    scaled: HashMap<u32, (u32, u32, u32)>,
    /// Address id → (base, delta): `base + delta`, `base` a signed offset.
    based: HashMap<u32, (u32, u32)>,
    /// Delta id → its [`Linear`] form.
    linear: HashMap<u32, Linear>,
}

impl AddrForms {
    /// The [`Linear`] form of `id` where it is noted or a constant.
    fn linear_of(&self, b: &Builder, id: u32) -> Option<Linear> {
        self.linear.get(&id).cloned().or_else(|| b.const_value(id).map(|c| Linear { c: c as u32, terms: Default::default() }))
    }
}

/// A u32 value `c + Σ id × scale` (wrapping), for computing it in units of a view's element
/// ([`Backend::note_linear`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Linear {
    pub c: u32,
    pub terms: smallvec::SmallVec<[(u32, u32); 2]>,
}

impl Linear {
    /// `id × 1`.
    pub fn atom(id: u32) -> Self {
        Linear { c: 0, terms: smallvec::smallvec![(id, 1)] }
    }

    pub fn plus(mut self, other: &Linear) -> Self {
        self.c = self.c.wrapping_add(other.c);
        for &(id, s) in &other.terms {
            match self.terms.iter_mut().find(|t| t.0 == id) {
                Some(t) => t.1 = t.1.wrapping_add(s),
                None => self.terms.push((id, s)),
            }
        }
        self.terms.retain(|t| t.1 != 0);
        self
    }

    pub fn scale(mut self, k: u32) -> Self {
        self.c = self.c.wrapping_mul(k);
        for t in self.terms.iter_mut() {
            t.1 = t.1.wrapping_mul(k);
        }
        self.terms.retain(|t| t.1 != 0);
        self
    }

    /// Every part a multiple of `unit` (a power of two).
    fn divisible(&self, unit: u32) -> bool {
        self.c.is_multiple_of(unit) && self.terms.iter().all(|t| t.1.is_multiple_of(unit))
    }
}

/// Where a counted access's view pointers come from when they can be rebuilt inside a function:
/// per view (in `views.kinds` order) the descriptor variable, and the descriptor-array indices
/// (empty for a single descriptor). A function cannot take the pointers themselves: without the
/// VariablePointers capabilities an OpFunctionCall pointer argument must be a memory object
/// declaration of a storage class other than StorageBuffer (SPIR-V spec 2.16.1, logical
/// addressing; spirv-val), so it takes the indices and chains from the variables again.
#[derive(Debug, Clone, Default)]
pub struct SharedBase {
    pub vars: Vec<u32>,
    pub indices: Vec<u32>,
    pub index_tys: Vec<u32>,
}

/// What makes two per-component edge paths different functions.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EdgeKey {
    storage: u32,
    vars: Vec<u32>,
    index_tys: Vec<u32>,
    value_ty: u32,
    store: bool,
    mem_ops: Vec<u32>,
    nonuniform: bool,
}

impl EdgeKey {
    fn new(shape: &AccessShape, base: &SharedBase) -> Self {
        EdgeKey {
            storage: shape.storage,
            vars: base.vars.clone(),
            index_tys: base.index_tys.clone(),
            value_ty: shape.value_ty,
            store: shape.store,
            mem_ops: shape.mem_ops.clone(),
            nonuniform: shape.nonuniform,
        }
    }
}

/// How an access's bounds checks learn the range.
#[derive(Clone, Copy)]
enum Bounds {
    /// No checks.
    None,
    /// From the byte length the caller gave: the limits of the element, whole-access and
    /// component checks, computed before the access (see [`Backend::limit`]).
    Limits { elem: u32, whole: u32, comp: u32 },
    /// From the views themselves: OpArrayLength of the view whose elements fit the check.
    Counted,
}

/// Which of an access's checks.
#[derive(Clone, Copy)]
enum Check {
    Elem,
    Whole,
    Comp,
}

/// Per-access state while emitting it.
struct Ctx<'a> {
    shape: &'a AccessShape,
    views: &'a AliasViews,
    /// Pointers to the alias structs, in `views.kinds` order.
    view_ptrs: &'a [u32],
    /// Byte address of the first byte this context accesses.
    addr: u32,
    /// The value's component type (`n` = 1).
    comp: ScalarVec,
    u32t: u32,
    atomic_scope: u32,
    /// Sub-word stores emitted as atomic and/or pairs.
    atomics: std::cell::Cell<u32>,
    bounds: Bounds,
    /// The edge path of a per-component vector accesses each component unchecked: the
    /// driver's checks are exact ([`Backend::edge_checked_by_driver`]).
    edge_by_driver: bool,
    /// [`Backend::note_address`]'s forms.
    forms: &'a AddrForms,
}

/// A loaded piece: `bytes` bytes at byte `off`, in the low bits of u32 `v`.
struct Chunk {
    off: u32,
    bytes: u32,
    v: u32,
    /// The bits above `bytes` are zero (a zero-extended 8/16-bit view load).
    clean: bool,
}

impl Backend {
    pub fn new(target: Target, oob_poison: Option<u8>, vulkan_memory_model: bool) -> Self {
        Backend {
            target,
            oob_poison,
            atomic_scope: if vulkan_memory_model { 5 } else { 1 },
            views: HashMap::default(),
            atomic_subword_stores: 0,
            entry_lens: vec![],
            limits: vec![],
            entry_insts: vec![],
            edge_fns: vec![],
            functions: vec![],
            edge_uses: vec![],
            addr_forms: AddrForms::default(),
        }
    }

    /// Says that byte address `addr` is `stride × index + offset` (wrapping; `stride` and
    /// `offset` constants). A view index of it is then computed from `index`
    /// ([`Ctx::element_index`]) rather than by shifting the product back.
    pub fn note_address(&mut self, addr: u32, index: u32, stride: u32, offset: u32) {
        self.addr_forms.scaled.insert(addr, (index, stride, offset));
    }

    /// Says that u32 `id` is `lin` (an access chain's byte offset from its pointer).
    pub fn note_linear(&mut self, id: u32, lin: Linear) {
        self.addr_forms.linear.insert(id, lin);
    }

    /// The [`Linear`] form of `id`: noted, a constant, or `id × 1`.
    pub fn linear(&self, b: &Builder, id: u32) -> Linear {
        self.addr_forms.linear_of(b, id).unwrap_or_else(|| Linear::atom(id))
    }

    /// Says that byte address `addr` is `base + delta` (wrapping), `base` a signed offset (a
    /// decoded buffer-device address: −2 GiB to 2 GiB from its buffer) and `delta` noted by
    /// [`Backend::note_linear`]: a view index of it is then `(base >> s) + delta / 2^s`
    /// (arithmetic shift), which lavapipe compiles faster than the sum shifted (the emulated
    /// stream kernel's pipeline creation −15 to −20 %, lavapipe alone).
    pub fn note_based(&mut self, addr: u32, base: u32, delta: u32) {
        self.addr_forms.based.insert(addr, (base, delta));
    }

    /// Counts an access [`Backend::emit_counted`] will get with `base`: the edge paths of
    /// per-component vectors are shared through a function where at least two accesses have
    /// the same one.
    pub fn count_edge(&mut self, shape: &AccessShape, base: &SharedBase) {
        if !self.shares_edge(shape) {
            return;
        }
        let key = EdgeKey::new(shape, base);
        match self.edge_uses.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => self.edge_uses.push((key, 1)),
        }
    }

    /// Can `shape`'s edge path be a shared function: a per-component vector of 32/64-bit
    /// components (8/16-bit ones merge raw bits per component) through views other than a
    /// uniform buffer's fixed uvec4 array.
    pub fn shares_edge(&self, shape: &AccessShape) -> bool {
        shape.robustness == Robustness::PerComponent && shape.value.n > 1 && shape.comp_bytes() >= 4 && self.views.get(&shape.storage).is_some_and(|v| !v.vec4_words)
    }

    /// Can the edge path of `shape` (a per-component vector) leave each component's check to
    /// the driver: robustBufferAccess2 exact to the byte, no poison byte
    /// ([`crate::target::component_bounds_by_driver`]), and each component one scalar access
    /// ([`AccessShape::components_are_scalar`]; 64-bit ones where the lowering declared the
    /// uint64_t view for it).
    fn edge_checked_by_driver(&self, shape: &AccessShape) -> bool {
        crate::target::component_bounds_by_driver(&self.target, self.oob_poison)
            && shape.components_are_scalar(&self.target)
            && (shape.comp_bytes() <= 4 || self.views.get(&shape.storage).is_some_and(|v| v.kinds.contains(&AliasKind::U64)))
    }

    /// The functions the shared edge paths were emitted into, to append to the module.
    pub fn take_functions(&mut self) -> Vec<crate::module::Function> {
        std::mem::take(&mut self.functions)
    }

    /// Starts a function whose range lengths `lens` are defined at the top of its entry block.
    pub fn begin_function(&mut self, lens: impl IntoIterator<Item = u32>) {
        self.entry_lens.clear();
        self.entry_lens.extend(lens);
        self.limits.clear();
        self.entry_insts.clear();
    }

    /// Declares one more length defined at the top of the current function's entry block
    /// (after those of [`Backend::begin_function`]).
    pub fn add_entry_len(&mut self, len: u32) {
        if !self.entry_lens.contains(&len) {
            self.entry_lens.push(len);
        }
    }

    /// The bounds limits the function's accesses used on those lengths: instructions to place
    /// right after the lengths in the entry block (which dominates every access).
    pub fn take_entry_insts(&mut self) -> Vec<crate::module::Inst> {
        std::mem::take(&mut self.entry_insts)
    }

    /// The number of byte offsets at which `size` bytes fit inside a range of `len` bytes, so
    /// one `off < limit` is the whole bounds check, with no overflow anywhere: `len - size + 1`
    /// when `len >= size` (in [1, len]), else 0. `len` is a multiple of `granule` (the length
    /// view's element size) and the checked offsets of `off_align`: when `size <= granule` and
    /// offsets are multiples of it, `off + size <= len` is `off < len`, and the limit is `len`.
    #[allow(clippy::too_many_arguments)]
    fn limit(&mut self, e: &mut Emitter, b: &mut Builder, len: u32, size: u32, off_align: u32, granule: u32) -> u32 {
        if size <= granule && off_align.is_multiple_of(granule) {
            return len;
        }
        if let Some(&(_, _, l)) = self.limits.iter().find(|(x, s, _)| *x == len && *s == size) {
            return l;
        }
        let bool_t = b.t_bool();
        let u32t = b.t_u32();
        let (s, room_c, zero) = (b.c_u32(size), b.c_u32(size - 1), b.c_u32(0));
        if !self.entry_lens.contains(&len) {
            let ge = e.pure(b, op::U_GREATER_THAN_EQUAL, bool_t, &[len, s]);
            let room = e.pure(b, op::I_SUB, u32t, &[len, room_c]);
            return e.pure(b, op::SELECT, u32t, &[ge, room, zero]);
        }
        let (ge, room, lim) = (b.id(), b.id(), b.id());
        self.entry_insts.extend([
            crate::module::Inst::new(op::U_GREATER_THAN_EQUAL, bool_t, ge, ops![len, s]),
            crate::module::Inst::new(op::I_SUB, u32t, room, ops![len, room_c]),
            crate::module::Inst::new(op::SELECT, u32t, lim, ops![ge, room, zero]),
        ]);
        self.limits.push((len, size, lim));
        lim
    }

    /// Emits `shape`'s access at the current point of `e`: `view_ptrs` point to the alias
    /// structs (in `views.kinds` order), `addr` is the byte address, `len` the byte length of the
    /// bound range (robust accesses), `elem` the element offset (per-element robustness), `value`
    /// the value to store. Returns the loaded value (0 for a store). Bounds checks end the current
    /// block and continue in a merge block.
    #[allow(clippy::too_many_arguments)]
    pub fn emit(
        &mut self,
        e: &mut Emitter,
        b: &mut Builder,
        shape: &AccessShape,
        view_ptrs: &[u32],
        addr: u32,
        len: Option<u32>,
        elem: Option<u32>,
        value: Option<u32>,
    ) -> u32 {
        self.emit_as(e, b, shape, view_ptrs, addr, len, elem, value, None)
    }

    /// [`Backend::emit`], the loaded value getting the id `result` when given (the id of the
    /// load it replaces: no copy).
    #[allow(clippy::too_many_arguments)]
    pub fn emit_as(
        &mut self,
        e: &mut Emitter,
        b: &mut Builder,
        shape: &AccessShape,
        view_ptrs: &[u32],
        addr: u32,
        len: Option<u32>,
        elem: Option<u32>,
        value: Option<u32>,
        result: Option<u32>,
    ) -> u32 {
        let c = shape.comp_bytes();
        let size = shape.size();
        // Bounds limits first (they may be cached and need `self` mutably).
        let granule = if shape.checked() { self.length_view(shape.storage).bytes() } else { 1 };
        let bounds = match shape.robustness {
            Robustness::None | Robustness::ComponentsByDriver => Bounds::None,
            Robustness::PerElement { stride } => {
                let len = len.expect("robust access without a range length");
                // Stride × Index is a multiple of the largest power of two dividing Stride.
                Bounds::Limits { elem: self.limit(e, b, len, stride, 1 << stride.trailing_zeros().min(4), granule), whole: 0, comp: 0 }
            }
            Robustness::PerComponent => {
                let len = len.expect("robust access without a range length");
                let whole = if shape.value.n > 1 { self.limit(e, b, len, size, shape.align, granule) } else { 0 };
                Bounds::Limits { elem: 0, whole, comp: self.limit(e, b, len, c, shape.align.min(c), granule) }
            }
        };
        self.emit_with(e, b, shape, view_ptrs, addr, bounds, elem, value, result, None)
    }

    /// [`Backend::emit_as`] for an access whose `view_ptrs` point straight at descriptors (a
    /// variable, or a descriptor-array element: not a variable pointer, which OpArrayLength
    /// cannot take): each bounds check compares the offset in elements of the widest view that
    /// fits it with that view's OpArrayLength (taken where the access is, once per block), so
    /// no byte length is needed, a word-sized check is one compare of the index the access uses
    /// anyway, and 16-bit checks are exact with a 16-bit view. With `shared` (where the view
    /// pointers come from), the edge path of a per-component vector of 32/64-bit components is
    /// a call of a function shared by the module's accesses of that base and type.
    #[allow(clippy::too_many_arguments)]
    pub fn emit_counted(
        &mut self,
        e: &mut Emitter,
        b: &mut Builder,
        shape: &AccessShape,
        view_ptrs: &[u32],
        addr: u32,
        elem: Option<u32>,
        value: Option<u32>,
        result: Option<u32>,
        shared: Option<&SharedBase>,
    ) -> u32 {
        let bounds = if shape.checked() { Bounds::Counted } else { Bounds::None };
        self.emit_with(e, b, shape, view_ptrs, addr, bounds, elem, value, result, shared)
    }

    /// The function holding the edge path of `shape`'s per-component access through `base`
    /// (32/64-bit components, checks counted on the views): made on first use, then shared.
    /// Parameters: the descriptor-array indices, the byte address, and for a store the value;
    /// a load returns the value. Its body is what the inline edge path would be: each component
    /// checked and accessed on its own.
    fn edge_function(&mut self, b: &mut Builder, shape: &AccessShape, base: &SharedBase, key: EdgeKey) -> u32 {
        if let Some(&(_, f)) = self.edge_fns.iter().find(|(k, _)| *k == key) {
            return f;
        }
        let views = &self.views[&shape.storage];
        let u32t = b.t_u32();
        let c = shape.comp_bytes();
        let mut params: Vec<crate::module::Inst> = vec![];
        let mut param = |b: &mut Builder, ty: u32| {
            let id = b.id();
            params.push(crate::module::Inst::new(op::FUNCTION_PARAMETER, ty, id, ops![]));
            id
        };
        let indices: Vals = base.index_tys.iter().map(|&t| param(b, t)).collect();
        let addr = param(b, u32t);
        let value = shape.store.then(|| param(b, shape.value_ty));
        let ret = if shape.store { b.t_void() } else { shape.value_ty };
        let param_tys: Vec<u32> = params.iter().map(|p| p.ty).collect();
        let fn_ty = b.t_fn(ret, &param_tys);
        let (f, label) = (b.id(), b.id());
        let mut e = Emitter::new(label);
        // Pointers to the views the components' pieces and checks use (c bytes at multiples of c).
        // (Unchecked, each component one access of the scalar view of its width.)
        let edge_by_driver = self.edge_checked_by_driver(shape);
        let mut used = 0u8;
        match AliasKind::scalar(c).filter(|_| edge_by_driver) {
            Some(k) => used |= 1 << views.slot(k),
            None => {
                used |= 1 << views.slot(granule(c, c, |k| views.kinds.contains(&k)).unwrap_or(AliasKind::U32));
                for (_, u) in plan(0, c, c, &views.kinds) {
                    if let Unit::Alias(k) = u {
                        used |= 1 << views.slot(k);
                    }
                }
            }
        }
        let view_ptrs: Vals = (0..views.kinds.len())
            .map(|i| {
                if used & (1 << i) == 0 {
                    0
                } else if indices.is_empty() {
                    base.vars[i]
                } else {
                    let mut ops: crate::module::Ops = ops![base.vars[i]];
                    ops.extend_from_slice(&indices);
                    let p = e.op(b, op::ACCESS_CHAIN, views.struct_ptr[i], ops);
                    if shape.nonuniform {
                        b.decorate(p, deco::NON_UNIFORM, &[]);
                    }
                    p
                }
            })
            .collect();
        let mut comp = shape.value;
        comp.n = 1;
        let ctx = Ctx { shape, views, view_ptrs: &view_ptrs, addr, comp, u32t, atomic_scope: self.atomic_scope, atomics: Default::default(), bounds: Bounds::Counted, edge_by_driver, forms: &self.addr_forms };
        match value {
            Some(v) => {
                ctx.edge_store(&mut e, b, v);
                e.stmt(op::RETURN, ops![]);
            }
            None => {
                let comp_oob = ctx.oob_value(b, self.oob_poison, comp.comp_ty, 1);
                let v = ctx.edge_load(&mut e, b, shape.value_ty, comp.comp_ty, comp_oob)[0];
                e.stmt(op::RETURN_VALUE, ops![v]);
            }
        }
        self.functions.push(crate::module::Function {
            def: crate::module::Inst::new(op::FUNCTION, ret, f, ops![0, fn_ty]),
            params,
            blocks: e.finish(),
            end: vec![crate::module::Inst::new(op::FUNCTION_END, 0, 0, ops![])],
        });
        self.edge_fns.push((key, f));
        f
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_with(
        &mut self,
        e: &mut Emitter,
        b: &mut Builder,
        shape: &AccessShape,
        view_ptrs: &[u32],
        addr: u32,
        bounds: Bounds,
        elem: Option<u32>,
        value: Option<u32>,
        result: Option<u32>,
        shared: Option<&SharedBase>,
    ) -> u32 {
        let c = shape.comp_bytes();
        let n = shape.value.n;
        let size = shape.size();
        // The edge path of a per-component vector: a call of the function shared by every such
        // access of this base and type, where the views can be rebuilt there.
        let edge_fn = match (shared, bounds) {
            (Some(s), Bounds::Counted) if self.shares_edge(shape) => {
                let key = EdgeKey::new(shape, s);
                let uses = self.edge_uses.iter().find(|(k, _)| *k == key).map_or(0, |(_, n)| *n);
                (uses >= 2).then(|| self.edge_function(b, shape, s, key))
            }
            _ => None,
        };
        let views = &self.views[&shape.storage];
        let u32t = b.t_u32();
        let mut comp = shape.value;
        comp.n = 1;
        let edge_by_driver = shape.robustness == Robustness::ComponentsByDriver || self.edge_checked_by_driver(shape);
        let ctx = Ctx { shape, views, view_ptrs, addr, comp, u32t, atomic_scope: self.atomic_scope, atomics: Default::default(), bounds, edge_by_driver, forms: &self.addr_forms };
        let small = c < 4;
        // Checked loads merge the value as its type (8/16-bit components: see below); stores of
        // 8/16-bit components go through the 32-bit twin.
        let merge_ty = if small { ctx.wide_ty(b, n) } else { shape.value_ty };
        if shape.store {
            let value = value.expect("store without a value");
            let value = if small && !shape.wide { ctx.convert(e, b, value, merge_ty) } else { value };
            match shape.robustness {
                Robustness::None => ctx.store_value(e, b, size, shape.align, value),
                // Unchecked: the whole access where the driver checks each component of a vector
                // access, else each component its own scalar access (the edge path's, ctx.edge_by_driver).
                Robustness::ComponentsByDriver if shape.vectors_checked_by_driver(&self.target) && c == 8 => ctx.store_u64_pieces(e, b, value, shape.align),
                Robustness::ComponentsByDriver if shape.vectors_checked_by_driver(&self.target) => ctx.store_value(e, b, size, shape.align, value),
                Robustness::ComponentsByDriver => ctx.edge_store(e, b, value),
                Robustness::PerElement { .. } => {
                    let ok = ctx.in_range(e, b, elem.expect("per-element access without an element offset"), Check::Elem);
                    e.if_then(b, ok, |e, b| ctx.store_value(e, b, size, shape.align, value));
                }
                Robustness::PerComponent if n == 1 => {
                    let ok = ctx.in_range(e, b, addr, Check::Comp);
                    e.if_then(b, ok, |e, b| ctx.store_value(e, b, c, c, value));
                }
                Robustness::PerComponent => {
                    // One check when the whole vector is in range; each component on its own
                    // only at the edge.
                    let ok = ctx.in_range(e, b, addr, Check::Whole);
                    e.if_else(
                        b,
                        ok,
                        &[],
                        |e, b| {
                            ctx.store_value(e, b, size, shape.align, value);
                            Vals::new()
                        },
                        |e, b| {
                            match edge_fn {
                                Some(f) => {
                                    let mut ops: crate::module::Ops = ops![f];
                                    ops.extend_from_slice(&shared.expect("an edge function has its base").indices);
                                    ops.extend([addr, value]);
                                    let void = b.t_void();
                                    e.op(b, op::FUNCTION_CALL, void, ops);
                                }
                                None => ctx.edge_store(e, b, value),
                            }
                            Vals::new()
                        },
                    );
                }
            }
            self.atomic_subword_stores += ctx.atomics.get();
            0
        } else {
            // What the branches of the checks merge: 8/16-bit components as raw bits (a u32
            // each), widened after the merge (an OpPhi of an 8/16-bit type is not allowed without
            // Int8/Int16/Float16 arithmetic, and bits moved untouched keep NaN payloads a float
            // round trip could lose); other values whole, as their type.
            let poison = self.oob_poison;
            let (tys, oobs, comp_ty, comp_oob): (Vals, Vals, u32, u32) = if small {
                let oob = b.c_u32(poison.unwrap_or(0) as u32 * 0x0101_0101);
                (std::iter::repeat_n(u32t, n as usize).collect(), std::iter::repeat_n(oob, n as usize).collect(), u32t, oob)
            } else {
                let comp_ty = ctx.comp.comp_ty;
                (smallvec::smallvec![merge_ty], smallvec::smallvec![ctx.oob_value(b, poison, merge_ty, n)], comp_ty, ctx.oob_value(b, poison, comp_ty, 1))
            };
            let load = |ctx: &Ctx, e: &mut Emitter, b: &mut Builder, size: u32, align: u32| ctx.load_merged(e, b, size, align);
            let merged = match shape.robustness {
                Robustness::None => load(&ctx, e, b, size, shape.align),
                Robustness::ComponentsByDriver if shape.vectors_checked_by_driver(&self.target) && c == 8 => ctx.load_u64_pieces(e, b, merge_ty, shape.align),
                Robustness::ComponentsByDriver if shape.vectors_checked_by_driver(&self.target) => load(&ctx, e, b, size, shape.align),
                Robustness::ComponentsByDriver => ctx.edge_load(e, b, merge_ty, comp_ty, comp_oob),
                Robustness::PerElement { .. } => {
                    let ok = ctx.in_range(e, b, elem.expect("per-element access without an element offset"), Check::Elem);
                    e.if_or(b, ok, &tys, |e, b| load(&ctx, e, b, size, shape.align), &oobs)
                }
                Robustness::PerComponent if n == 1 => {
                    let ok = ctx.in_range(e, b, addr, Check::Comp);
                    e.if_or(b, ok, &tys, |e, b| load(&ctx, e, b, c, c), &oobs)
                }
                Robustness::PerComponent => {
                    // One check when the whole vector is in range; each component on its own
                    // only at the edge.
                    let ok = ctx.in_range(e, b, addr, Check::Whole);
                    e.if_else(
                        b,
                        ok,
                        &tys,
                        |e, b| load(&ctx, e, b, size, shape.align),
                        |e, b| match edge_fn {
                            Some(f) => {
                                let mut ops: crate::module::Ops = ops![f];
                                ops.extend_from_slice(&shared.expect("an edge function has its base").indices);
                                ops.push(addr);
                                smallvec::smallvec![e.op(b, op::FUNCTION_CALL, merge_ty, ops)]
                            }
                            None => ctx.edge_load(e, b, merge_ty, comp_ty, comp_oob),
                        },
                    )
                }
            };
            let v = if !small {
                merged[0]
            } else if shape.wide {
                ctx.wide_from_raw(e, b, &merged)
            } else if ctx.comp.float && ctx.comp.width == 16 && b.m.has_capability(cap::FLOAT16) {
                ctx.halves_from_raw(e, b, &merged)
            } else {
                let wide = ctx.wide_from_raw(e, b, &merged);
                let to = b.t_vec(ctx.comp.comp_ty, n);
                ctx.convert(e, b, wide, to)
            };
            ctx.finish_load(e, v, result)
        }
    }

    /// The byte length of the bound range, from the exact 8-bit view when there is one, else
    /// the word view (rounded down to whole words). `views` as in [`Backend::emit`].
    pub fn byte_length(&self, e: &mut Emitter, b: &mut Builder, storage: u32, view_ptrs: &[u32]) -> u32 {
        let kind = self.length_view(storage);
        let ptr = view_ptrs[self.views[&storage].slot(kind)];
        self.length_of_view(e, b, kind, ptr)
    }

    /// Pointer to the 32-bit word holding byte address `addr` (4-aligned), for atomics.
    pub fn word_pointer(&self, e: &mut Emitter, b: &mut Builder, storage: u32, view_ptrs: &[u32], addr: u32, nonuniform: bool) -> u32 {
        let views = &self.views[&storage];
        let u32t = b.t_u32();
        let shape = AccessShape {
            store: false,
            storage,
            value_ty: u32t,
            value: ScalarVec { float: false, signed: false, width: 32, n: 1, comp_ty: u32t },
            align: 4,
            robustness: Robustness::None,
            mem_ops: vec![],
            nonuniform,
            wide: false,
        };
        let ctx = Ctx { shape: &shape, views, view_ptrs, addr, comp: shape.value, u32t, atomic_scope: self.atomic_scope, atomics: Default::default(), bounds: Bounds::None, edge_by_driver: false, forms: &self.addr_forms };
        ctx.word_ptr(e, b, addr)
    }

    /// The view whose OpArrayLength gives the byte length: U8 when declared, else U32.
    pub fn length_view(&self, storage: u32) -> AliasKind {
        if self.views[&storage].kinds.contains(&AliasKind::U8) { AliasKind::U8 } else { AliasKind::U32 }
    }

    /// Byte length from a pointer to an alias struct of elements `kind` (OpArrayLength counts
    /// them: × their bytes).
    pub fn length_of_view(&self, e: &mut Emitter, b: &mut Builder, kind: AliasKind, ptr: u32) -> u32 {
        let u32t = b.t_u32();
        let count = e.op(b, op::ARRAY_LENGTH, u32t, ops![ptr, 0]);
        if kind.bytes() == 1 {
            return count;
        }
        let shift = b.c_u32(kind.bytes().trailing_zeros());
        e.op(b, op::SHIFT_LEFT_LOGICAL, u32t, ops![count, shift])
    }

}

impl Ctx<'_> {
    fn view_ptr(&self, k: AliasKind) -> u32 {
        self.view_ptrs[self.views.slot(k)]
    }

    /// The same access `off` bytes further (a component of a vector checked on its own).
    fn at(&self, e: &mut Emitter, b: &mut Builder, off: u32) -> Self {
        Ctx { addr: self.offset(e, b, off), atomics: Default::default(), ..*self }
    }

    /// Loads `size` bytes (aligned to `align`) as what checked loads merge: raw bits per
    /// component for 8/16-bit components ([`Ctx::load_raw`]), else the value.
    fn load_merged(&self, e: &mut Emitter, b: &mut Builder, size: u32, align: u32) -> Vals {
        if self.comp.width < 32 { self.load_raw(e, b, size, align) } else { smallvec::smallvec![self.load_value(e, b, size, align)] }
    }

    /// The 64-bit components of the value at the address, in the pieces [`u64_pieces`] gives
    /// for `align` (8: each its own `uint64_t` access), unchecked (bitcast to the component
    /// type): the value as `merge_ty`.
    fn load_u64_pieces(&self, e: &mut Emitter, b: &mut Builder, merge_ty: u32, align: u32) -> Vals {
        let u64t = b.t_int(64, false);
        let n = self.shape.value.n;
        let parts: Vals = u64_pieces(n, align)
            .into_iter()
            .map(|(k, kind)| {
                let v = self.load(e, b, kind, k * 8);
                if self.comp.comp_ty == u64t {
                    return v;
                }
                let ty = if kind == AliasKind::U64 { self.comp.comp_ty } else { b.t_vec(self.comp.comp_ty, 2) };
                e.pure(b, op::BITCAST, ty, &[v])
            })
            .collect();
        // One piece is the whole value (a scalar, or a u64vec2 bitcast to its type).
        if parts.len() == 1 { parts } else { smallvec::smallvec![e.op(b, op::COMPOSITE_CONSTRUCT, merge_ty, &parts[..])] }
    }

    /// Stores `value`'s 64-bit components in the pieces of [`Ctx::load_u64_pieces`].
    fn store_u64_pieces(&self, e: &mut Emitter, b: &mut Builder, value: u32, align: u32) {
        let u64t = b.t_int(64, false);
        let n = self.shape.value.n;
        for (k, kind) in u64_pieces(n, align) {
            let (v, bits_ty) = match kind {
                _ if n == 1 => (value, u64t),
                AliasKind::U64 => (e.pure(b, op::COMPOSITE_EXTRACT, self.comp.comp_ty, &[value, k]), u64t),
                _ => {
                    let pair = b.t_vec(self.comp.comp_ty, 2);
                    (e.pure(b, op::VECTOR_SHUFFLE, pair, &[value, value, k, k + 1]), b.t_vec(u64t, 2))
                }
            };
            let bits = if self.comp.comp_ty == u64t { v } else { e.pure(b, op::BITCAST, bits_ty, &[v]) };
            self.store(e, b, kind, k * 8, bits);
        }
    }

    /// The edge path of a per-component vector load: each component checked and loaded on its
    /// own (`comp_oob` where out of range). Returns what the checked load merges: raw bits per
    /// component (8/16-bit), else the value as `merge_ty`.
    fn edge_load(&self, e: &mut Emitter, b: &mut Builder, merge_ty: u32, comp_ty: u32, comp_oob: u32) -> Vals {
        let c = self.comp.width / 8;
        if self.edge_by_driver {
            // Each component its own scalar access (AccessShape::components_checked_by_driver).
            return if c == 8 { self.load_u64_pieces(e, b, merge_ty, 8) } else { self.load_merged(e, b, c * self.shape.value.n, c) };
        }
        let comps: Vals = (0..self.shape.value.n)
            .map(|k| {
                let at = self.at(e, b, k * c);
                let ok = at.in_range(e, b, at.addr, Check::Comp);
                e.if_or(b, ok, &[comp_ty], |e, b| at.load_merged(e, b, c, c), &[comp_oob])[0]
            })
            .collect();
        if c < 4 { comps } else { smallvec::smallvec![e.op(b, op::COMPOSITE_CONSTRUCT, merge_ty, &comps[..])] }
    }

    /// The edge path of a per-component vector store of `value` (the merge type): each
    /// component checked and stored on its own.
    fn edge_store(&self, e: &mut Emitter, b: &mut Builder, value: u32) {
        let c = self.comp.width / 8;
        if self.edge_by_driver {
            return if c == 8 { self.store_u64_pieces(e, b, value, 8) } else { self.store_value(e, b, c * self.shape.value.n, c, value) };
        }
        let comp_ty = if c < 4 { self.wide_ty(b, 1) } else { self.comp.comp_ty };
        for k in 0..self.shape.value.n {
            let v = e.pure(b, op::COMPOSITE_EXTRACT, comp_ty, &[value, k]);
            let at = self.at(e, b, k * c);
            let ok = at.in_range(e, b, at.addr, Check::Comp);
            e.if_then(b, ok, |e, b| at.store_value(e, b, c, c, v));
            self.atomics.set(self.atomics.get() + at.atomics.get());
        }
    }

    /// An OpAccessChain into view `k` at element `idx`, NonUniform when the access is.
    fn chain(&self, e: &mut Emitter, b: &mut Builder, k: AliasKind, idx: &[u32]) -> u32 {
        let slot = self.views.slot(k);
        let zero = b.c_u32(0);
        let mut ops = smallvec::SmallVec::<[u32; 4]>::from_slice(&[self.view_ptr(k), zero]);
        ops.extend_from_slice(idx);
        let fresh = b.m.header[3];
        let p = e.pure(b, op::ACCESS_CHAIN, self.views.elem_ptr[slot], &ops);
        if self.shape.nonuniform && p >= fresh {
            b.decorate(p, deco::NON_UNIFORM, &[]);
        }
        p
    }

    /// Pointer to the 32-bit word holding byte address `a` (any alignment).
    fn word_ptr(&self, e: &mut Emitter, b: &mut Builder, a: u32) -> u32 {
        let two = b.c_u32(2);
        if self.views.vec4_words {
            let (four, three) = (b.c_u32(4), b.c_u32(3));
            let row = e.pure(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, &[a, four]);
            let w = e.pure(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, &[a, two]);
            let col = e.pure(b, op::BITWISE_AND, self.u32t, &[w, three]);
            return self.chain(e, b, AliasKind::U32, &[row, col]);
        }
        let idx = e.pure(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, &[a, two]);
        self.chain(e, b, AliasKind::U32, &[idx])
    }

    /// Pointer to the element of view `k` holding the bytes at `addr + off` (both multiples
    /// of the element size). The element index is `(addr >> s) + off / size`, shared by every
    /// piece of the access: the pieces of an access that passed its check (or needs no check)
    /// lie inside the range, so they cannot wrap around 2^32 (design.md §2) in between.
    fn unit_ptr(&self, e: &mut Emitter, b: &mut Builder, k: AliasKind, off: u32) -> u32 {
        if k == AliasKind::U32 && self.views.vec4_words {
            let a = self.offset(e, b, off);
            return self.word_ptr(e, b, a);
        }
        let shift = k.bytes().trailing_zeros();
        let base = self.element_index(e, b, self.addr, shift);
        let idx = if off == 0 {
            base
        } else {
            let c = b.c_u32(off >> shift);
            e.pure(b, op::I_ADD, self.u32t, &[base, c])
        };
        self.chain(e, b, k, &[idx])
    }

    /// `off >> shift`: the index of the element of 2^shift bytes holding byte address `off`.
    /// Where `off` is `Stride × Index + Offset` with Stride the element size and Offset a
    /// multiple of it ([`Backend::note_address`]) it is `(Index + Offset') & (2^(32 − shift) − 1)`
    /// (Offset' = Offset >> shift): the same value under 32-bit wrapping (the address is a
    /// multiple of 2^shift, so the bits shifted out are zero and its wrapped high bits are those
    /// the mask drops), and what drivers compile faster than the product shifted back
    /// (lavapipe's pipeline creation of an unchecked vec4 kernel: −10 %).
    fn element_index(&self, e: &mut Emitter, b: &mut Builder, off: u32, shift: u32) -> u32 {
        if shift == 0 {
            return off;
        }
        if let Some(idx) = self.based_index(e, b, off, shift) {
            return idx;
        }
        match self.forms.scaled.get(&off) {
            // Only where Stride is the element size: elsewhere the index needs a product of
            // its own besides the mask, where one shift of the address serves every piece.
            Some(&(index, stride, offset)) if stride == 1 << shift && offset.is_multiple_of(stride) => {
                let sum = match offset >> shift {
                    0 => index,
                    o => {
                        let o = b.c_u32(o);
                        e.pure(b, op::I_ADD, self.u32t, &[index, o])
                    }
                };
                let mask = b.c_u32(u32::MAX >> shift);
                e.pure(b, op::BITWISE_AND, self.u32t, &[sum, mask])
            }
            _ => {
                let s = b.c_u32(shift);
                e.pure(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, &[off, s])
            }
        }
    }

    /// The element index of [`Backend::note_based`]'s `base + delta` when `delta` is a
    /// multiple of 2^shift term by term: `floor(base / 2^shift) + delta / 2^shift` is then
    /// exactly `floor((base + delta) / 2^shift)`, whatever `base`'s low bits, wherever the
    /// access lies inside its buffer (the arithmetic shift takes a negative base: a pointer
    /// below its buffer accessed back inside it). Outside, where the sum shifted would have
    /// wrapped around 2^32 into the buffer, this index lies past every buffer the table holds
    /// (its descriptors cover 2 GiB at most): both are places outside any buffer.
    fn based_index(&self, e: &mut Emitter, b: &mut Builder, off: u32, shift: u32) -> Option<u32> {
        let &(base, delta) = self.forms.based.get(&off)?;
        let lin = self.forms.linear_of(b, delta)?;
        if !lin.divisible(1 << shift) {
            return None;
        }
        let s = b.c_u32(shift);
        let mut sum = e.pure(b, op::SHIFT_RIGHT_ARITHMETIC, self.u32t, &[base, s]);
        for &(id, scale) in &lin.terms {
            let t = match scale >> shift {
                1 => id,
                k => {
                    let k = b.c_u32(k);
                    e.pure(b, op::I_MUL, self.u32t, &[id, k])
                }
            };
            sum = e.pure(b, op::I_ADD, self.u32t, &[sum, t]);
        }
        if lin.c != 0 {
            let c = b.c_u32(lin.c >> shift);
            sum = e.pure(b, op::I_ADD, self.u32t, &[sum, c]);
        }
        Some(sum)
    }

    fn load(&self, e: &mut Emitter, b: &mut Builder, k: AliasKind, off: u32) -> u32 {
        let p = self.unit_ptr(e, b, k, off);
        let mut ops = ops![p];
        ops.extend_from_slice(&self.shape.mem_ops);
        e.op(b, op::LOAD, self.views.elem_ty[self.views.slot(k)], ops)
    }

    fn store(&self, e: &mut Emitter, b: &mut Builder, k: AliasKind, off: u32, v: u32) {
        let p = self.unit_ptr(e, b, k, off);
        let mut ops = ops![p, v];
        ops.extend_from_slice(&self.shape.mem_ops);
        e.stmt(op::STORE, ops);
    }

    /// addr + off, wrapping (design.md §2: 32-bit wrapping byte addresses).
    fn offset(&self, e: &mut Emitter, b: &mut Builder, off: u32) -> u32 {
        if off == 0 {
            return self.addr;
        }
        let c = b.c_u32(off);
        e.pure(b, op::I_ADD, self.u32t, &[self.addr, c])
    }

    /// `off < limit` (see [`Backend::limit`]): [off, off + size) lies inside the range.
    fn below(&self, e: &mut Emitter, b: &mut Builder, off: u32, limit: u32) -> u32 {
        let bool_t = b.t_bool();
        e.pure(b, op::U_LESS_THAN, bool_t, &[off, limit])
    }

    /// Does check `which` pass for the bytes at offset `off`?
    fn in_range(&self, e: &mut Emitter, b: &mut Builder, off: u32, which: Check) -> u32 {
        let c = self.comp.width / 8;
        let (size, align) = match which {
            Check::Elem => {
                let Robustness::PerElement { stride } = self.shape.robustness else { unreachable!("a per-element check") };
                (stride, 1 << stride.trailing_zeros().min(4))
            }
            Check::Whole => (self.shape.size(), self.shape.align),
            Check::Comp => (c, c),
        };
        match self.bounds {
            Bounds::Limits { elem, whole, comp } => self.below(e, b, off, match which {
                Check::Elem => elem,
                Check::Whole => whole,
                Check::Comp => comp,
            }),
            Bounds::Counted => self.counted(e, b, off, size, align),
            Bounds::None => unreachable!("a check of an access without robustness"),
        }
    }

    /// `off + size <= len` in elements of the widest view that fits (see [`granule`]), with
    /// `len / element` from OpArrayLength of the view; without one (8/16-bit checks on a target
    /// without those views), in bytes of the word view's length (rounded down to whole words).
    fn counted(&self, e: &mut Emitter, b: &mut Builder, off: u32, size: u32, align: u32) -> u32 {
        let (u32t, bool_t) = (self.u32t, b.t_bool());
        let limit = |e: &mut Emitter, b: &mut Builder, n: u32, units: u32| {
            if units == 1 {
                return n;
            }
            // n >= units ? n - units + 1 : 0, the number of offsets where `units` fit.
            let (u, room_c, zero) = (b.c_u32(units), b.c_u32(units - 1), b.c_u32(0));
            let ge = e.pure(b, op::U_GREATER_THAN_EQUAL, bool_t, &[n, u]);
            let room = e.pure(b, op::I_SUB, u32t, &[n, room_c]);
            e.pure(b, op::SELECT, u32t, &[ge, room, zero])
        };
        let (idx, lim) = match granule(size, align, |k| self.views.kinds.contains(&k)) {
            Some(k) => {
                let idx = self.element_index(e, b, off, k.bytes().trailing_zeros());
                let n = e.pure(b, op::ARRAY_LENGTH, u32t, &[self.view_ptr(k), 0]);
                (idx, limit(e, b, n, size / k.bytes()))
            }
            None => {
                let words = e.pure(b, op::ARRAY_LENGTH, u32t, &[self.view_ptr(AliasKind::U32), 0]);
                let two = b.c_u32(2);
                let len = e.pure(b, op::SHIFT_LEFT_LOGICAL, u32t, &[words, two]);
                (off, limit(e, b, len, size))
            }
        };
        e.pure(b, op::U_LESS_THAN, bool_t, &[idx, lim])
    }

    /// The 32-bit twin of the value type with `n` components: f32, u32 or i32 components.
    fn wide_ty(&self, b: &mut Builder, n: u32) -> u32 {
        let c = if self.comp.float { b.t_float(32) } else { b.t_int(32, self.comp.signed) };
        b.t_vec(c, n)
    }

    /// What an out-of-bounds load of 32/64-bit components gives, as a constant of `ty` (`n`
    /// components of the value type): zero, or the debug poison byte repeated over the bits.
    fn oob_value(&self, b: &mut Builder, poison: Option<u8>, ty: u32, n: u32) -> u32 {
        let Some(p) = poison else { return b.c_null(ty) };
        let word = p as u32 * 0x0101_0101;
        let comp_ty = if n == 1 { ty } else { b.global(ty).map_or(ty, |t| t.ops[0]) };
        let comp = if self.comp.width == 64 { b.constant(comp_ty, &[word, word]) } else { b.constant(comp_ty, &[word]) };
        if n == 1 {
            comp
        } else {
            let parts: smallvec::SmallVec<[u32; 4]> = smallvec::smallvec![comp; n as usize];
            b.constant_composite(ty, &parts)
        }
    }

    /// The loaded value `v` under the id `result` when one is asked for: the instruction that
    /// made it takes the id, or a copy does.
    fn finish_load(&self, e: &mut Emitter, v: u32, result: Option<u32>) -> u32 {
        match result {
            Some(r) if r != v => {
                if !e.rename_last(v, r) {
                    e.push(crate::module::Inst::new(op::COPY_OBJECT, self.shape.value_ty, r, ops![v]));
                }
                r
            }
            _ => v,
        }
    }

    /// Loads `size` bytes of 8/16-bit components at the context's address (aligned to `align`)
    /// as raw bits: a u32 per component, the value in the low bits.
    fn load_raw(&self, e: &mut Emitter, b: &mut Builder, size: u32, align: u32) -> Vals {
        let c = self.comp.width / 8;
        let chunks = self.load_chunks(e, b, size, align);
        (0..size / c).map(|k| self.raw_from_chunks(e, b, &chunks, k * c)).collect()
    }

    /// Loads `size` bytes at the context's address (aligned to `align`) as the merge type (see
    /// [`Backend::emit_as`]) with `size / component size` components. Word-view pieces become
    /// the value by one bitcast each (a uvec4 → vec4, a uvec2 → double) and one construct.
    fn load_value(&self, e: &mut Emitter, b: &mut Builder, size: u32, align: u32) -> u32 {
        let c = self.comp.width / 8;
        let n = size / c;
        debug_assert!(c >= 4, "8/16-bit components load with load_raw");
        let comp_ty = self.comp.comp_ty;
        let mut pieces = Vals::new();
        let mut halves = Vals::new();
        for (o, unit) in plan(0, size, align, &self.views.kinds) {
            let Unit::Alias(k) = unit else { unreachable!("components of 4 bytes or more are word aligned") };
            let v = self.load(e, b, k, o);
            if k.bytes() >= c {
                let ty = b.t_vec(comp_ty, k.bytes() / c);
                pieces.push(if ty == self.views.elem_ty[self.views.slot(k)] { v } else { e.op(b, op::BITCAST, ty, ops![v]) });
            } else {
                // A 64-bit component from two words.
                halves.push(v);
                if halves.len() == 2 {
                    let uv2 = b.t_vec(self.u32t, 2);
                    let pair = e.op(b, op::COMPOSITE_CONSTRUCT, uv2, ops![halves[0], halves[1]]);
                    pieces.push(e.op(b, op::BITCAST, comp_ty, ops![pair]));
                    halves.clear();
                }
            }
        }
        if pieces.len() == 1 {
            return pieces[0];
        }
        let ty = b.t_vec(comp_ty, n);
        e.op(b, op::COMPOSITE_CONSTRUCT, ty, &pieces[..])
    }

    /// Stores `value` (the merge type, `size / component size` components) at the context's
    /// address (aligned to `align`): each word-view piece is a bitcast of the value, of one
    /// component or of a shuffle of adjacent ones.
    fn store_value(&self, e: &mut Emitter, b: &mut Builder, size: u32, align: u32, value: u32) {
        let c = self.comp.width / 8;
        let n = size / c;
        if c < 4 {
            let bits = self.value_bits(e, b, value, n);
            self.atomics.set(self.atomics.get() + self.store_range(e, b, size, align, &bits));
            return;
        }
        let comp_ty = self.comp.comp_ty;
        for (o, unit) in plan(0, size, align, &self.views.kinds) {
            let Unit::Alias(k) = unit else { unreachable!("components of 4 bytes or more are word aligned") };
            let raw_ty = self.views.elem_ty[self.views.slot(k)];
            let (j, m) = (o / c, k.bytes() / c);
            let bits = if m == 0 {
                // One word of a 64-bit component.
                let v = if n == 1 { value } else { e.pure(b, op::COMPOSITE_EXTRACT, comp_ty, &[value, j]) };
                let uv2 = b.t_vec(self.u32t, 2);
                let pair = e.pure(b, op::BITCAST, uv2, &[v]);
                e.pure(b, op::COMPOSITE_EXTRACT, self.u32t, &[pair, (o % c) / 4])
            } else {
                let sub = if m == n {
                    value
                } else if m == 1 {
                    e.pure(b, op::COMPOSITE_EXTRACT, comp_ty, &[value, j])
                } else {
                    let ty = b.t_vec(comp_ty, m);
                    let mut ops = ops![value, value];
                    ops.extend(j..j + m);
                    e.op(b, op::VECTOR_SHUFFLE, ty, ops)
                };
                if b.t_vec(comp_ty, m) == raw_ty { sub } else { e.pure(b, op::BITCAST, raw_ty, &[sub]) }
            };
            self.store(e, b, k, o, bits);
        }
    }

    /// Loads `size` bytes (aligned to `align`) as chunks (8/16-bit components).
    fn load_chunks(&self, e: &mut Emitter, b: &mut Builder, size: u32, align: u32) -> smallvec::SmallVec<[Chunk; 4]> {
        let mut chunks = smallvec::SmallVec::new();
        for (o, unit) in plan(0, size, align, &self.views.kinds) {
            match unit {
                Unit::Alias(k @ (AliasKind::U32x4 | AliasKind::U32x2)) => {
                    let v = self.load(e, b, k, o);
                    for j in 0..k.bytes() / 4 {
                        let w = e.op(b, op::COMPOSITE_EXTRACT, self.u32t, ops![v, j]);
                        chunks.push(Chunk { off: o + 4 * j, bytes: 4, v: w, clean: true });
                    }
                }
                Unit::Alias(AliasKind::U32) => {
                    let v = self.load(e, b, AliasKind::U32, o);
                    chunks.push(Chunk { off: o, bytes: 4, v, clean: true });
                }
                Unit::Alias(k) => {
                    let v = self.load(e, b, k, o);
                    let w = e.op(b, op::U_CONVERT, self.u32t, ops![v]);
                    chunks.push(Chunk { off: o, bytes: k.bytes(), v: w, clean: true });
                }
                Unit::WordPart(n) => {
                    let a = self.offset(e, b, o);
                    let p = self.word_ptr(e, b, a);
                    let mut ops = ops![p];
                    ops.extend_from_slice(&self.shape.mem_ops);
                    let w = e.op(b, op::LOAD, self.u32t, ops);
                    let v = self.shift_by_byte_pos(e, b, op::SHIFT_RIGHT_LOGICAL, w, a);
                    chunks.push(Chunk { off: o, bytes: n, v, clean: false });
                }
            }
        }
        chunks
    }

    /// `v >> ((a & 3) * 8)` or `v << ((a & 3) * 8)`.
    fn shift_by_byte_pos(&self, e: &mut Emitter, b: &mut Builder, opcode: u32, v: u32, a: u32) -> u32 {
        let three = b.c_u32(3);
        let lo = e.pure(b, op::BITWISE_AND, self.u32t, &[a, three]);
        let bits = e.pure(b, op::SHIFT_LEFT_LOGICAL, self.u32t, &[lo, three]);
        e.op(b, opcode, self.u32t, ops![v, bits])
    }

    /// The raw value of the 8/16-bit component starting at byte `off`, from loaded chunks (in
    /// the low bits of a u32; the bits above may be garbage).
    fn raw_from_chunks(&self, e: &mut Emitter, b: &mut Builder, chunks: &[Chunk], off: u32) -> u32 {
        let chunk = |at: u32| chunks.iter().find(|ch| ch.off <= at && at < ch.off + ch.bytes).expect("planned bytes loaded");
        // The component's bytes may come from several chunks (byte views for a 16-bit value);
        // bits above a chunk's bytes are masked off before pieces are combined.
        let end = off + self.comp.width / 8;
        let (mut acc, mut at) = (0, off);
        while at < end {
            let ch = chunk(at);
            let mut v = ch.v;
            if at > ch.off {
                let s = b.c_u32((at - ch.off) * 8);
                v = e.op(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, ops![v, s]);
            }
            let taken = (ch.off + ch.bytes).min(end) - at;
            if acc == 0 && at + taken == end {
                return v; // one piece: the caller ignores bits above the component
            }
            if taken < 4 && !(ch.clean && at + taken == ch.off + ch.bytes) {
                let mask = b.c_u32((1u32 << (taken * 8)) - 1);
                v = e.op(b, op::BITWISE_AND, self.u32t, ops![v, mask]);
            }
            if at > off {
                let s = b.c_u32((at - off) * 8);
                v = e.op(b, op::SHIFT_LEFT_LOGICAL, self.u32t, ops![v, s]);
            }
            acc = if acc == 0 { v } else { e.op(b, op::BITWISE_OR, self.u32t, ops![acc, v]) };
            at += taken;
        }
        acc
    }

    /// Width-only conversion between the value type and its 32-bit-wide twin (scalars or whole
    /// vectors: 8/16-bit vectors cannot be built or taken apart without Int8/Int16/Float16).
    fn convert(&self, e: &mut Emitter, b: &mut Builder, v: u32, to: u32) -> u32 {
        let opcode = if self.comp.float { op::F_CONVERT } else if self.comp.signed { op::S_CONVERT } else { op::U_CONVERT };
        e.op(b, opcode, to, ops![v])
    }

    /// Raw binary16 component values (low halves of u32s) → the f16 value(s) with exactly those
    /// bits, where the module has Float16: each u32 bitcast to an f16vec2 (equal widths, SPIR-V
    /// OpBitcast), its first component. A load moves bits; going through f32 (UnpackHalf2x16,
    /// then OpFConvert) is exact for numbers but lets a driver change NaNs: NVIDIA's turns them
    /// all into 0x7fff (seen on an H100, 2026-11-26), which a native load never does.
    fn halves_from_raw(&self, e: &mut Emitter, b: &mut Builder, raw: &[u32]) -> u32 {
        let h = self.comp.comp_ty;
        let pair = b.t_vec(h, 2);
        let comps: Vals = raw
            .iter()
            .map(|&r| {
                let both = e.op(b, op::BITCAST, pair, ops![r]);
                e.op(b, op::COMPOSITE_EXTRACT, h, ops![both, 0])
            })
            .collect();
        if comps.len() == 1 {
            comps[0]
        } else {
            let ty = b.t_vec(h, comps.len() as u32);
            e.op(b, op::COMPOSITE_CONSTRUCT, ty, &comps[..])
        }
    }

    /// Raw 8/16-bit component values (low bits of u32s) → the 32-bit twin holding them.
    fn wide_from_raw(&self, e: &mut Emitter, b: &mut Builder, raw: &[u32]) -> u32 {
        let n = raw.len() as u32;
        let comp_ty = self.wide_ty(b, 1);
        let comps: Vals = raw
            .iter()
            .map(|&r| {
                if self.comp.float {
                    // UnpackHalf2x16 (GLSL.std.450 62) reads the low half exactly.
                    let glsl = b.glsl_std450();
                    let v2 = b.t_vec(comp_ty, 2);
                    let pair = e.op(b, op::EXT_INST, v2, ops![glsl, 62, r]);
                    e.op(b, op::COMPOSITE_EXTRACT, comp_ty, ops![pair, 0])
                } else {
                    // Sign- or zero-extend the low bits in 32-bit arithmetic.
                    let shift = b.c_u32(32 - self.comp.width);
                    let up = e.op(b, op::SHIFT_LEFT_LOGICAL, self.u32t, ops![r, shift]);
                    if self.comp.signed {
                        let i = e.op(b, op::BITCAST, comp_ty, ops![up]);
                        e.op(b, 195 /* OpShiftRightArithmetic */, comp_ty, ops![i, shift])
                    } else {
                        e.op(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, ops![up, shift])
                    }
                }
            })
            .collect();
        if n == 1 {
            comps[0]
        } else {
            let ty = b.t_vec(comp_ty, n);
            e.op(b, op::COMPOSITE_CONSTRUCT, ty, &comps[..])
        }
    }

    /// The components of a 32-bit twin value holding 8/16-bit values, as raw bits: u32s with
    /// the value in the low bits, the rest zero.
    fn value_bits(&self, e: &mut Emitter, b: &mut Builder, wide: u32, n: u32) -> Vals {
        let comp_ty = self.wide_ty(b, 1);
        (0..n)
            .map(|k| {
                let v = if n == 1 { wide } else { e.pure(b, op::COMPOSITE_EXTRACT, comp_ty, &[wide, k]) };
                if self.comp.float {
                    // PackHalf2x16 (GLSL.std.450 58) of (v, 0): the exact half bits, high half 0.
                    let glsl = b.glsl_std450();
                    let zero = b.c_f32(0.0);
                    let v2 = b.t_vec(comp_ty, 2);
                    let pair = e.op(b, op::COMPOSITE_CONSTRUCT, v2, ops![v, zero]);
                    e.op(b, op::EXT_INST, self.u32t, ops![glsl, 58, pair])
                } else {
                    let u = if comp_ty == self.u32t { v } else { e.op(b, op::BITCAST, self.u32t, ops![v]) };
                    let mask = b.c_u32((1u32 << self.comp.width) - 1);
                    e.op(b, op::BITWISE_AND, self.u32t, ops![u, mask])
                }
            })
            .collect()
    }

    /// The `len` bytes at byte `off` of the value, as a u32 (len ≤ 4), from component bits.
    fn compose(&self, e: &mut Emitter, b: &mut Builder, bits: &[u32], off: u32, len: u32) -> u32 {
        let c = self.comp.width / 8;
        // Components overlapping [off, off + len): a byte view may take part of a component.
        let mut acc = 0;
        for k in off / c..=(off + len - 1) / c {
            let mut v = bits[k as usize];
            let rel = (k * c) as i64 - off as i64;
            if rel != 0 {
                let s = b.c_u32((rel.unsigned_abs() * 8) as u32);
                let opcode = if rel > 0 { op::SHIFT_LEFT_LOGICAL } else { op::SHIFT_RIGHT_LOGICAL };
                v = e.op(b, opcode, self.u32t, ops![v, s]);
            }
            acc = if acc == 0 { v } else { e.op(b, op::BITWISE_OR, self.u32t, ops![acc, v]) };
        }
        if c > len {
            // Only the bytes asked for (a word part store ORs the value into a shared word).
            let mask = b.c_u32((1u32 << (len * 8)) - 1);
            acc = e.op(b, op::BITWISE_AND, self.u32t, ops![acc, mask]);
        }
        acc
    }

    /// Stores `size` bytes of an 8/16-bit value (aligned to `align`) from component bits;
    /// returns the number of atomic word-part stores.
    fn store_range(&self, e: &mut Emitter, b: &mut Builder, size: u32, align: u32, bits: &[u32]) -> u32 {
        let mut atomics = 0;
        for (o, unit) in plan(0, size, align, &self.views.kinds) {
            match unit {
                Unit::Alias(k @ (AliasKind::U32x4 | AliasKind::U32x2)) => {
                    let words: Vals = (0..k.bytes() / 4).map(|j| self.compose(e, b, bits, o + 4 * j, 4)).collect();
                    let ty = b.t_vec(self.u32t, words.len() as u32);
                    let v = e.op(b, op::COMPOSITE_CONSTRUCT, ty, &words[..]);
                    self.store(e, b, k, o, v);
                }
                Unit::Alias(AliasKind::U32) => {
                    let v = self.compose(e, b, bits, o, 4);
                    self.store(e, b, AliasKind::U32, o, v);
                }
                Unit::Alias(k) => {
                    let v = self.compose(e, b, bits, o, k.bytes());
                    let t = self.views.elem_ty[self.views.slot(k)];
                    let narrow = e.op(b, op::U_CONVERT, t, ops![v]);
                    self.store(e, b, k, o, narrow);
                }
                Unit::WordPart(n) => {
                    // No 8/16-bit view: clear then set the bytes with atomics so neighbouring
                    // sub-word stores from other invocations are never lost.
                    let v = self.compose(e, b, bits, o, n);
                    let a = self.offset(e, b, o);
                    let p = self.word_ptr(e, b, a);
                    let ones = b.c_u32(if n == 1 { 0xff } else { 0xffff });
                    let mask = self.shift_by_byte_pos(e, b, op::SHIFT_LEFT_LOGICAL, ones, a);
                    let not_mask = e.op(b, 200 /* OpNot */, self.u32t, ops![mask]);
                    let val = self.shift_by_byte_pos(e, b, op::SHIFT_LEFT_LOGICAL, v, a);
                    let scope = b.c_u32(self.atomic_scope);
                    let relaxed = b.c_u32(0);
                    e.op(b, op::ATOMIC_AND, self.u32t, ops![p, scope, relaxed, not_mask]);
                    e.op(b, op::ATOMIC_OR, self.u32t, ops![p, scope, relaxed, val]);
                    atomics += 1;
                }
            }
        }
        atomics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const ALL: [AliasKind; 5] = AliasKind::ALL;
    const WORDS: [AliasKind; 3] = [AliasKind::U32, AliasKind::U32x2, AliasKind::U32x4];

    #[test]
    fn plan_uses_widest_aligned_views() {
        assert_eq!(plan(0, 16, 16, &ALL).to_vec(), vec![(0, Unit::Alias(AliasKind::U32x4))]);
        assert_eq!(plan(0, 12, 16, &ALL).to_vec(), vec![(0, Unit::Alias(AliasKind::U32x2)), (8, Unit::Alias(AliasKind::U32))]);
        assert_eq!(plan(0, 16, 4, &ALL).len(), 4);
        assert_eq!(plan(0, 6, 2, &ALL).to_vec(), vec![(0, Unit::Alias(AliasKind::U16)), (2, Unit::Alias(AliasKind::U16)), (4, Unit::Alias(AliasKind::U16))]);
        assert_eq!(plan(0, 6, 4, &ALL).to_vec(), vec![(0, Unit::Alias(AliasKind::U32)), (4, Unit::Alias(AliasKind::U16))]);
    }

    #[test]
    fn plan_falls_back_to_word_parts_without_small_views() {
        assert_eq!(plan(0, 3, 1, &WORDS).to_vec(), vec![(0, Unit::WordPart(1)), (1, Unit::WordPart(1)), (2, Unit::WordPart(1))]);
        assert_eq!(plan(0, 4, 2, &WORDS).to_vec(), vec![(0, Unit::WordPart(2)), (2, Unit::WordPart(2))]);
        assert_eq!(plan(8, 2, 2, &WORDS).to_vec(), vec![(8, Unit::WordPart(2))]);
    }
}
