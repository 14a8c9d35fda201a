//! The shared byte-address backend: loads and stores of scalars/vectors at a dynamic byte
//! address inside a buffer seen through "alias" views (`struct { uint8_t/uint16_t/uint/uvec2/
//! uvec4 data[]; }` bound to the same descriptor), with optional bounds checks.
//!
//! Accesses are emitted inline at the call site (passing SSBO pointers to helper functions
//! would need the VariablePointersStorageBuffer capability); bounds checks are selection
//! constructs that split the caller's block.
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

use crate::builder::{deco, sc, Builder, Emitter, ScalarVec, Vals};
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
}

impl AliasKind {
    pub const ALL: [AliasKind; 5] = [AliasKind::U8, AliasKind::U16, AliasKind::U32, AliasKind::U32x2, AliasKind::U32x4];
    pub fn bytes(self) -> u32 {
        match self {
            AliasKind::U8 => 1,
            AliasKind::U16 => 2,
            AliasKind::U32 => 4,
            AliasKind::U32x2 => 8,
            AliasKind::U32x4 => 16,
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
    /// The alias views this access can use, given what the target has.
    pub fn views_used(&self, target: &Target) -> Vec<AliasKind> {
        let avail: Vec<AliasKind> =
            AliasKind::ALL.into_iter().filter(|k| k.available(target, self.storage)).collect();
        let c = self.comp_bytes();
        let mut plans = plan(0, self.size(), self.align, &avail);
        if self.robustness == Robustness::PerComponent {
            for k in 0..self.value.n {
                plans.extend(plan(k * c, c, c, &avail));
            }
        }
        let mut used: Vec<AliasKind> = plans
            .iter()
            .map(|(_, u)| match u {
                Unit::Alias(k) => *k,
                Unit::WordPart(_) => AliasKind::U32,
            })
            .collect();
        used.push(AliasKind::U32); // word view: always present (lengths, word parts)
        if self.robustness != Robustness::None && avail.contains(&AliasKind::U8) {
            used.push(AliasKind::U8); // exact byte length of the range
        }
        used.sort();
        used.dedup();
        used
    }
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
        let mut v = AliasViews { kinds: vec![], struct_ty: vec![], struct_ptr: vec![], elem_ty: vec![], elem_ptr: vec![], vec4_words: false };
        let u32t = b.t_u32();
        for k in kinds {
            let elem = match k {
                AliasKind::U8 => b.t_int(8, false),
                AliasKind::U16 => b.t_int(16, false),
                AliasKind::U32 => u32t,
                AliasKind::U32x2 => b.t_vec(u32t, 2),
                AliasKind::U32x4 => b.t_vec(u32t, 4),
            };
            let rta = b.t_runtime_array(elem, k.bytes());
            let st = b.t_struct(&[rta]);
            // A Uniform-class SSBO is a BufferBlock (SPIR-V 1.0 style); StorageBuffer wants Block.
            let block = if storage == sc::UNIFORM { deco::BUFFER_BLOCK } else { deco::BLOCK };
            b.decorate(st, block, &[]);
            b.m.member_decorate(st, 0, deco::OFFSET, &[0]);
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
    entry_lens: rustc_hash::FxHashSet<u32>,
    /// (length, access size) → limit id, for `entry_lens`.
    limits: HashMap<(u32, u32), u32>,
    /// Instructions computing those limits, for the caller to place after the lengths.
    entry_insts: Vec<crate::module::Inst>,
}

/// Per-access state while emitting it.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    shape: &'a AccessShape,
    views: &'a AliasViews,
    /// Pointers to the alias structs, in `views.kinds` order.
    view_ptrs: &'a [u32],
    addr: u32,
    /// An already computed `addr + .0` (its id `.1`), reused by [`Ctx::offset`].
    known: Option<(u32, u32)>,
    comp: ScalarVec,
    u32t: u32,
    atomic_scope: u32,
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
            entry_lens: Default::default(),
            limits: HashMap::default(),
            entry_insts: vec![],
        }
    }

    /// Starts a function whose range lengths `lens` are defined at the top of its entry block.
    pub fn begin_function(&mut self, lens: impl IntoIterator<Item = u32>) {
        self.entry_lens = lens.into_iter().collect();
        self.limits.clear();
        self.entry_insts.clear();
    }

    /// The bounds limits the function's accesses used on those lengths: instructions to place
    /// right after the lengths in the entry block (which dominates every access).
    pub fn take_entry_insts(&mut self) -> Vec<crate::module::Inst> {
        std::mem::take(&mut self.entry_insts)
    }

    /// `len >= size ? len - size + 1 : 0`: the number of byte offsets at which `size` bytes fit
    /// inside a range of `len` bytes, so one `off < limit` is the whole bounds check, with no
    /// overflow anywhere (`len - size + 1` is in [1, len] when `len >= size`).
    fn limit(&mut self, e: &mut Emitter, b: &mut Builder, len: u32, size: u32) -> u32 {
        if let Some(&l) = self.limits.get(&(len, size)) {
            return l;
        }
        let bool_t = b.t_bool();
        let u32t = b.t_u32();
        let (s, room_c, zero) = (b.c_u32(size), b.c_u32(size - 1), b.c_u32(0));
        let (ge, room, lim) = (b.id(), b.id(), b.id());
        let insts = [
            crate::module::Inst::new(op::U_GREATER_THAN_EQUAL, bool_t, ge, ops![len, s]),
            crate::module::Inst::new(op::I_SUB, u32t, room, ops![len, room_c]),
            crate::module::Inst::new(op::SELECT, u32t, lim, ops![ge, room, zero]),
        ];
        if self.entry_lens.contains(&len) {
            self.entry_insts.extend(insts);
            self.limits.insert((len, size), lim);
        } else {
            insts.into_iter().for_each(|i| e.push(i));
        }
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
        let c = shape.comp_bytes();
        let n = shape.value.n;
        let size = shape.size();
        // Bounds limits first (they may be cached and need `self` mutably).
        let (lim_elem, lim_whole, lim_comp) = match shape.robustness {
            Robustness::None => (0, 0, 0),
            Robustness::PerElement { stride } => (self.limit(e, b, len.expect("robust access without a range length"), stride), 0, 0),
            Robustness::PerComponent => {
                let len = len.expect("robust access without a range length");
                let whole = if n > 1 { self.limit(e, b, len, size) } else { 0 };
                (0, whole, self.limit(e, b, len, c))
            }
        };
        let views = &self.views[&shape.storage];
        let u32t = b.t_u32();
        let mut comp = shape.value;
        comp.n = 1;
        let ctx = Ctx {
            shape,
            views,
            view_ptrs,
            addr,
            known: None,
            comp,
            u32t,
            atomic_scope: self.atomic_scope,
        };
        let poison = self.oob_poison;
        let elem_ok = |e: &mut Emitter, b: &mut Builder| ctx.below(e, b, elem.expect("per-element access without an element offset"), lim_elem);
        // Component k's address, and a context that reuses it.
        let at_comp = |e: &mut Emitter, b: &mut Builder, k: u32| {
            let a = ctx.offset(e, b, k * c);
            (a, Ctx { known: Some((k * c, a)), ..ctx })
        };
        if shape.store {
            let value = value.expect("store without a value");
            let bits = ctx.value_bits(e, b, value);
            let mut atomics = 0;
            match shape.robustness {
                Robustness::None => atomics += ctx.store_range(e, b, 0, size, shape.align, &bits),
                Robustness::PerElement { .. } => {
                    let ok = elem_ok(e, b);
                    e.if_then(b, ok, |e, b| atomics += ctx.store_range(e, b, 0, size, shape.align, &bits));
                }
                Robustness::PerComponent => {
                    let per_comp = |e: &mut Emitter, b: &mut Builder| {
                        let mut count = 0;
                        for k in 0..n {
                            let (a, at) = at_comp(e, b, k);
                            let ok = ctx.below(e, b, a, lim_comp);
                            e.if_then(b, ok, |e, b| count += at.store_range(e, b, k * c, c, c, &bits));
                        }
                        count
                    };
                    if n == 1 {
                        atomics += per_comp(e, b);
                    } else {
                        // Fast path when the whole vector is in bounds, else each component.
                        let ok = ctx.below(e, b, ctx.addr, lim_whole);
                        let (mut fast, mut slow) = (0, 0);
                        e.if_else(
                            b,
                            ok,
                            &[],
                            |e, b| {
                                fast = ctx.store_range(e, b, 0, size, shape.align, &bits);
                                Vals::new()
                            },
                            |e, b| {
                                slow = per_comp(e, b);
                                Vals::new()
                            },
                        );
                        atomics += fast + slow;
                    }
                }
            }
            self.atomic_subword_stores += atomics;
            0
        } else {
            // Branches merge raw component bits (u32, or uvec2 for 64-bit): an OpPhi of an 8/16-bit
            // type is not allowed without Int8/Int16/Float16 arithmetic.
            let raw_ty = ctx.raw_ty(b);
            let raw_tys: Vals = std::iter::repeat_n(raw_ty, n as usize).collect();
            let raw = match shape.robustness {
                Robustness::None => ctx.load_raw(e, b, 0, size, shape.align),
                Robustness::PerElement { .. } => {
                    let ok = elem_ok(e, b);
                    let oob = ctx.oob_raw(b, poison, n);
                    e.if_or(b, ok, &raw_tys, |e, b| ctx.load_raw(e, b, 0, size, shape.align), &oob)
                }
                Robustness::PerComponent => {
                    let oob = ctx.oob_raw(b, poison, 1);
                    let per_comp = |e: &mut Emitter, b: &mut Builder| -> Vals {
                        (0..n)
                            .map(|k| {
                                let (a, at) = at_comp(e, b, k);
                                let ok = ctx.below(e, b, a, lim_comp);
                                e.if_or(b, ok, &[raw_ty], |e, b| at.load_raw(e, b, k * c, c, c), &oob)[0]
                            })
                            .collect()
                    };
                    if n == 1 {
                        per_comp(e, b)
                    } else {
                        let ok = ctx.below(e, b, ctx.addr, lim_whole);
                        e.if_else(b, ok, &raw_tys, |e, b| ctx.load_raw(e, b, 0, size, shape.align), per_comp)
                    }
                }
            };
            ctx.value_from_raw(e, b, &raw)
        }
    }

    /// The byte length of the bound range, from the exact 8-bit view when there is one, else
    /// the word view (rounded down to whole words). `views` as in [`Backend::emit`].
    pub fn byte_length(&self, e: &mut Emitter, b: &mut Builder, storage: u32, view_ptrs: &[u32]) -> u32 {
        let ptr = view_ptrs[self.views[&storage].slot(self.length_view(storage))];
        self.length_of_view(e, b, storage, ptr)
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
        let ctx = Ctx { shape: &shape, views, view_ptrs, addr, known: None, comp: shape.value, u32t, atomic_scope: self.atomic_scope };
        ctx.elem_ptr(e, b, AliasKind::U32, addr)
    }

    /// The view whose OpArrayLength gives the byte length: U8 when declared, else U32.
    pub fn length_view(&self, storage: u32) -> AliasKind {
        if self.views[&storage].kinds.contains(&AliasKind::U8) { AliasKind::U8 } else { AliasKind::U32 }
    }

    /// Byte length from a pointer to the alias struct of [`Backend::length_view`].
    pub fn length_of_view(&self, e: &mut Emitter, b: &mut Builder, storage: u32, ptr: u32) -> u32 {
        let u32t = b.t_u32();
        if self.length_view(storage) == AliasKind::U8 {
            e.op(b, op::ARRAY_LENGTH, u32t, ops![ptr, 0])
        } else {
            let words = e.op(b, op::ARRAY_LENGTH, u32t, ops![ptr, 0]);
            let two = b.c_u32(2);
            e.op(b, op::SHIFT_LEFT_LOGICAL, u32t, ops![words, two])
        }
    }

    /// Does this access branch (and so split its block)?
    pub fn branches(shape: &AccessShape) -> bool {
        shape.robustness != Robustness::None
    }
}
impl Ctx<'_> {
    fn view_ptr(&self, k: AliasKind) -> u32 {
        self.view_ptrs[self.views.slot(k)]
    }

    /// Pointer to the element of view `k` holding byte address `a` (which is `k`-aligned,
    /// or any address for the word view of a word part).
    fn elem_ptr(&self, e: &mut Emitter, b: &mut Builder, k: AliasKind, a: u32) -> u32 {
        if k == AliasKind::U32 && self.views.vec4_words {
            let (four, two, three) = (b.c_u32(4), b.c_u32(2), b.c_u32(3));
            let row = e.op(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, ops![a, four]);
            let w = e.op(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, ops![a, two]);
            let col = e.op(b, op::BITWISE_AND, self.u32t, ops![w, three]);
            let zero = b.c_u32(0);
            let p = e.op(b, op::ACCESS_CHAIN, self.views.elem_ptr[self.views.slot(k)], ops![self.view_ptr(k), zero, row, col]);
            if self.shape.nonuniform {
                b.decorate(p, deco::NON_UNIFORM, &[]);
            }
            return p;
        }
        let shift = k.bytes().trailing_zeros();
        let idx = if shift == 0 {
            a
        } else {
            let s = b.c_u32(shift);
            e.op(b, op::SHIFT_RIGHT_LOGICAL, self.u32t, ops![a, s])
        };
        let zero = b.c_u32(0);
        let slot = self.views.slot(k);
        let p = e.op(b, op::ACCESS_CHAIN, self.views.elem_ptr[slot], ops![self.view_ptr(k), zero, idx]);
        if self.shape.nonuniform {
            b.decorate(p, deco::NON_UNIFORM, &[]);
        }
        p
    }

    fn load(&self, e: &mut Emitter, b: &mut Builder, k: AliasKind, a: u32) -> u32 {
        let p = self.elem_ptr(e, b, k, a);
        let mut ops = ops![p];
        ops.extend_from_slice(&self.shape.mem_ops);
        e.op(b, op::LOAD, self.views.elem_ty[self.views.slot(k)], ops)
    }

    fn store(&self, e: &mut Emitter, b: &mut Builder, k: AliasKind, a: u32, v: u32) {
        let p = self.elem_ptr(e, b, k, a);
        let mut ops = ops![p, v];
        ops.extend_from_slice(&self.shape.mem_ops);
        e.stmt(op::STORE, ops);
    }

    /// addr + off, wrapping (design.md §2: 32-bit wrapping byte addresses).
    fn offset(&self, e: &mut Emitter, b: &mut Builder, off: u32) -> u32 {
        if off == 0 {
            return self.addr;
        }
        if let Some((_, id)) = self.known.filter(|&(o, _)| o == off) {
            return id;
        }
        let c = b.c_u32(off);
        e.op(b, op::I_ADD, self.u32t, ops![self.addr, c])
    }

    /// `off < limit` (see [`Backend::limit`]): [off, off + size) lies inside the range.
    fn below(&self, e: &mut Emitter, b: &mut Builder, off: u32, limit: u32) -> u32 {
        let bool_t = b.t_bool();
        e.op(b, op::U_LESS_THAN, bool_t, ops![off, limit])
    }

    /// Loads `size` bytes at addr+start (aligned to `align`) as chunks.
    fn load_chunks(&self, e: &mut Emitter, b: &mut Builder, start: u32, size: u32, align: u32) -> smallvec::SmallVec<[Chunk; 4]> {
        let mut chunks = smallvec::SmallVec::new();
        for (o, unit) in plan(start, size, align, &self.views.kinds) {
            let a = self.offset(e, b, o);
            match unit {
                Unit::Alias(k @ (AliasKind::U32x4 | AliasKind::U32x2)) => {
                    let v = self.load(e, b, k, a);
                    for j in 0..k.bytes() / 4 {
                        let w = e.op(b, op::COMPOSITE_EXTRACT, self.u32t, ops![v, j]);
                        chunks.push(Chunk { off: o + 4 * j, bytes: 4, v: w, clean: true });
                    }
                }
                Unit::Alias(AliasKind::U32) => {
                    let v = self.load(e, b, AliasKind::U32, a);
                    chunks.push(Chunk { off: o, bytes: 4, v, clean: true });
                }
                Unit::Alias(k) => {
                    let v = self.load(e, b, k, a);
                    let w = e.op(b, op::U_CONVERT, self.u32t, ops![v]);
                    chunks.push(Chunk { off: o, bytes: k.bytes(), v: w, clean: true });
                }
                Unit::WordPart(n) => {
                    let w = self.load(e, b, AliasKind::U32, a);
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
        let lo = e.op(b, op::BITWISE_AND, self.u32t, ops![a, three]);
        let bits = e.op(b, op::SHIFT_LEFT_LOGICAL, self.u32t, ops![lo, three]);
        e.op(b, opcode, self.u32t, ops![v, bits])
    }

    /// Raw value type of one component: u32 (8/16/32-bit, value in the low bits) or uvec2.
    fn raw_ty(&self, b: &mut Builder) -> u32 {
        if self.comp.width == 64 { b.t_vec(self.u32t, 2) } else { self.u32t }
    }

    /// Loads bytes [start, start+size) (start aligned to `align`) as raw component values.
    fn load_raw(&self, e: &mut Emitter, b: &mut Builder, start: u32, size: u32, align: u32) -> Vals {
        let chunks = self.load_chunks(e, b, start, size, align);
        let c = self.comp.width / 8;
        (0..size / c).map(|k| self.raw_from_chunks(e, b, &chunks, start + k * c)).collect()
    }

    /// Raw values an out-of-bounds load returns: zero, or the debug poison pattern.
    fn oob_raw(&self, b: &mut Builder, poison: Option<u8>, n: u32) -> Vals {
        let byte = poison.unwrap_or(0) as u32;
        let word = b.c_u32(byte * 0x0101_0101);
        let v = if self.comp.width == 64 {
            let uv2 = b.t_vec(self.u32t, 2);
            b.constant_composite(uv2, &[word, word])
        } else {
            word
        };
        smallvec::smallvec![v; n as usize]
    }

    /// The raw value of the component starting at byte `off`, from loaded chunks.
    fn raw_from_chunks(&self, e: &mut Emitter, b: &mut Builder, chunks: &[Chunk], off: u32) -> u32 {
        let chunk = |at: u32| chunks.iter().find(|ch| ch.off <= at && at < ch.off + ch.bytes).expect("planned bytes loaded");
        match self.comp.width {
            64 => {
                let uv2 = b.t_vec(self.u32t, 2);
                e.op(b, op::COMPOSITE_CONSTRUCT, uv2, ops![chunk(off).v, chunk(off + 4).v])
            }
            32 => chunk(off).v,
            width => {
                // The component's bytes may come from several chunks (byte views for a 16-bit
                // value); bits above a chunk's bytes are masked off before pieces are combined.
                let end = off + width / 8;
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
        }
    }

    /// The 32-bit type 8/16-bit components are widened to: f32, u32 or i32.
    fn wide_comp_ty(&self, b: &mut Builder) -> u32 {
        if self.comp.float { b.t_float(32) } else { b.t_int(32, self.comp.signed) }
    }

    /// Width-only conversion between the value type and its 32-bit-wide twin (scalars or whole
    /// vectors: 8/16-bit vectors cannot be built or taken apart without Int8/Int16/Float16).
    fn convert(&self, e: &mut Emitter, b: &mut Builder, v: u32, to: u32) -> u32 {
        let opcode = if self.comp.float { op::F_CONVERT } else if self.comp.signed { op::S_CONVERT } else { op::U_CONVERT };
        e.op(b, opcode, to, ops![v])
    }

    /// Raw component values → the loaded value.
    fn value_from_raw(&self, e: &mut Emitter, b: &mut Builder, raw: &[u32]) -> u32 {
        let n = raw.len() as u32;
        let ct = self.comp.comp_ty;
        let small = self.comp.width < 32;
        let comp_ty = if small { self.wide_comp_ty(b) } else { ct };
        let comps: Vec<u32> = raw
            .iter()
            .map(|&r| match self.comp.width {
                32 if comp_ty == self.u32t => r,
                64 | 32 => e.op(b, op::BITCAST, comp_ty, ops![r]),
                _ if self.comp.float => {
                    // UnpackHalf2x16 (GLSL.std.450 62) reads the low half exactly.
                    let glsl = b.glsl_std450();
                    let v2 = b.t_vec(comp_ty, 2);
                    let pair = e.op(b, op::EXT_INST, v2, ops![glsl, 62, r]);
                    e.op(b, op::COMPOSITE_EXTRACT, comp_ty, ops![pair, 0])
                }
                _ => {
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
        let whole = if n == 1 {
            comps[0]
        } else {
            let ty = b.t_vec(comp_ty, n);
            e.op(b, op::COMPOSITE_CONSTRUCT, ty, comps)
        };
        if small && !self.shape.wide {
            let to = b.t_vec(ct, n);
            self.convert(e, b, whole, to)
        } else {
            whole
        }
    }

    /// The stored value's components as raw bits: u32 (8/16-bit in the low bits, the rest zero)
    /// or uvec2 (64-bit).
    fn value_bits(&self, e: &mut Emitter, b: &mut Builder, value: u32) -> Vec<u32> {
        let n = self.shape.value.n;
        let small = self.comp.width < 32;
        let comp_ty = if small { self.wide_comp_ty(b) } else { self.comp.comp_ty };
        let whole = if small && !self.shape.wide {
            let ty = b.t_vec(comp_ty, n);
            self.convert(e, b, value, ty)
        } else {
            value
        };
        (0..n)
            .map(|k| {
                let v = if n == 1 { whole } else { e.op(b, op::COMPOSITE_EXTRACT, comp_ty, ops![whole, k]) };
                match self.comp.width {
                    64 => {
                        let uv2 = b.t_vec(self.u32t, 2);
                        e.op(b, op::BITCAST, uv2, ops![v])
                    }
                    32 if comp_ty == self.u32t => v,
                    32 => e.op(b, op::BITCAST, self.u32t, ops![v]),
                    _ if self.comp.float => {
                        // PackHalf2x16 (GLSL.std.450 58) of (v, 0): the exact half bits, high half 0.
                        let glsl = b.glsl_std450();
                        let zero = b.c_f32(0.0);
                        let v2 = b.t_vec(comp_ty, 2);
                        let pair = e.op(b, op::COMPOSITE_CONSTRUCT, v2, ops![v, zero]);
                        e.op(b, op::EXT_INST, self.u32t, ops![glsl, 58, pair])
                    }
                    w => {
                        let u = if comp_ty == self.u32t { v } else { e.op(b, op::BITCAST, self.u32t, ops![v]) };
                        let mask = b.c_u32((1u32 << w) - 1);
                        e.op(b, op::BITWISE_AND, self.u32t, ops![u, mask])
                    }
                }
            })
            .collect()
    }

    /// The `len` bytes at byte `off` of the value, as a u32 (len ≤ 4), from component bits.
    fn compose(&self, e: &mut Emitter, b: &mut Builder, bits: &[u32], off: u32, len: u32) -> u32 {
        let c = self.comp.width / 8;
        if c == 8 {
            let k = off / 8;
            return e.op(b, op::COMPOSITE_EXTRACT, self.u32t, ops![bits[k as usize], (off % 8) / 4]);
        }
        if c == 4 {
            return bits[(off / 4) as usize];
        }
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

    /// Stores bytes [start, start+size) of the value; returns the number of atomic word-part stores.
    fn store_range(&self, e: &mut Emitter, b: &mut Builder, start: u32, size: u32, align: u32, bits: &[u32]) -> u32 {
        let mut atomics = 0;
        for (o, unit) in plan(start, size, align, &self.views.kinds) {
            let a = self.offset(e, b, o);
            match unit {
                Unit::Alias(k @ (AliasKind::U32x4 | AliasKind::U32x2)) => {
                    let words: Vec<u32> = (0..k.bytes() / 4).map(|j| self.compose(e, b, bits, o + 4 * j, 4)).collect();
                    let ty = b.t_vec(self.u32t, words.len() as u32);
                    let v = e.op(b, op::COMPOSITE_CONSTRUCT, ty, words);
                    self.store(e, b, k, a, v);
                }
                Unit::Alias(AliasKind::U32) => {
                    let v = self.compose(e, b, bits, o, 4);
                    self.store(e, b, AliasKind::U32, a, v);
                }
                Unit::Alias(k) => {
                    let v = self.compose(e, b, bits, o, k.bytes());
                    let t = self.views.elem_ty[self.views.slot(k)];
                    let narrow = e.op(b, op::U_CONVERT, t, ops![v]);
                    self.store(e, b, k, a, narrow);
                }
                Unit::WordPart(n) => {
                    // No 8/16-bit view: clear then set the bytes with atomics so neighbouring
                    // sub-word stores from other invocations are never lost.
                    let v = self.compose(e, b, bits, o, n);
                    let p = self.elem_ptr(e, b, AliasKind::U32, a);
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
