//! After a lowering, the words it made for nothing go: copies of a value of the same type and
//! bitcasts back to it (re-used loads, inlined helpers' results, pointer-to-address copies),
//! integer identities (`x + 0`, `x * 1`, shifts by 0), members taken out of a value just
//! constructed, pure instructions computed again where an equal one dominates (a record's
//! members extracted in every block, a push-constant pointer re-loaded where its class is
//! located), and pure instructions nothing uses. An OpAccessChain from another one is one
//! chain from that one's base (a descriptor-array element's struct, then its member: one
//! instruction and one NonUniform decoration fewer once the first chain has no other use).
//! Run after the bindless and physical-storage-buffer lowerings ([`Options::default`]) and
//! after the 8/16-bit storage lowering, which also folds its u32 offset arithmetic of constants
//! into constants and leaves the module's own code unmerged ([`Options::first_new`]).
//!
//! Only pure instructions move or go (their result depends on their operands alone: SPIR-V
//! arithmetic, composites, access chains, GLSL.std.450 instructions without side effects or
//! pointer operands, and loads without memory operands of memory no invocation writes during
//! the dispatch: push constants, UniformConstant descriptors and uniform buffers (Block, not
//! BufferBlock), Vulkan "Push Constants", "Descriptor Sets"; never OpSampledImage, whose
//! result must stay in its consumer's block); an instruction with a decoration other than
//! NonUniform is left as it is, and NonUniform ones are only merged with NonUniform ones.
//!
//! Uses are rewritten only where an operand is certainly an id (leading id operands, OpPhi,
//! GLSL.std.450 operands); a replaced id any other operand word names (say an image operand)
//! keeps its instruction, so no use is ever left without a definition.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::{deco, sc, Builder};
use crate::module::{leading_id_operands, op, Function, Inst, Module, Ops};
use crate::ops;

use super::fold_int::{fold_int, folds, Folded, OP_NOT};
use super::physical_storage_buffer::cfg::Cfg;
use super::util::may_name_ids;

/// What a caller asks of the pass beyond its clean-ups.
#[derive(Clone, Copy, Default)]
pub(crate) struct Options {
    /// The first id the lowering allocated: only results from there on are merged with equal
    /// ones, folded to constants, chained or removed when unused (0: every result). Copies,
    /// identities, bitcasts back and members of constructs fold everywhere (what they replace
    /// goes once unused).
    pub first_new: u32,
    /// u32 scalar arithmetic of constants becomes the constant (offsets of members at constant
    /// positions), made with a [`Builder`].
    pub constants: bool,
}

const OP_SHIFT_RIGHT_ARITHMETIC: u32 = 195;
const OP_U_LESS_THAN_EQUAL: u32 = 178;

/// Pure opcodes this pass may merge and remove.
fn pure(opcode: u32) -> bool {
    matches!(
        opcode,
        op::ACCESS_CHAIN
            | op::IN_BOUNDS_ACCESS_CHAIN
            | op::COMPOSITE_EXTRACT
            | op::COMPOSITE_CONSTRUCT
            | op::COPY_OBJECT
            | op::BITCAST
            | op::U_CONVERT
            | op::I_ADD
            | op::I_SUB
            | op::I_MUL
            | op::U_DIV
            | op::SELECT
            | op::I_EQUAL
            | op::I_NOT_EQUAL
            | op::U_GREATER_THAN_EQUAL
            | op::U_LESS_THAN
            | OP_U_LESS_THAN_EQUAL
            | op::LOGICAL_AND
            | op::SHIFT_RIGHT_LOGICAL
            | OP_SHIFT_RIGHT_ARITHMETIC
            | op::SHIFT_LEFT_LOGICAL
            | op::BITWISE_OR
            | op::BITWISE_AND
            | OP_NOT
    )
}

/// GLSL.std.450 instructions without side effects or pointer operands: RoundEven, Trunc,
/// FAbs, UMin, SMin, UMax, SMax, UClamp, SClamp, PackHalf2x16, UnpackHalf2x16.
fn pure_glsl(number: u32) -> bool {
    matches!(number, 2 | 3 | 4 | 38 | 39 | 41 | 42 | 44 | 45 | 58 | 62)
}

const PACK_HALF_2X16: u32 = 58;
const UNPACK_HALF_2X16: u32 = 62;

/// The bits `PackHalf2x16(construct)` packs again: where `construct` is (the first component
/// of an UnpackHalf2x16 of those bits, +0.0). PackHalf2x16 of a value exactly a binary16 one
/// is its bits (GLSL.std.450: the high half from +0.0 is 0), the bits themselves for NaNs too.
fn packed_bits(construct: u32, constructs: &HashMap<u32, Ops>, low_halves: &HashMap<u32, u32>, b: Option<&Builder>) -> Option<u32> {
    let parts = constructs.get(&construct)?;
    let (&[x, zero], Some(b)) = (&parts[..], b) else { return None };
    let positive_zero = b.global(zero).is_some_and(|c| c.op == op::CONSTANT && c.ops[..] == [0]);
    low_halves.get(&x).copied().filter(|_| positive_zero)
}

/// How an id is decorated: none, NonUniform only, or otherwise (never merged).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decorated {
    No,
    NonUniform,
    Other,
}

/// Opcode and decoration, result type, up to four operands (u32::MAX after the last; longer
/// ones are keyed by their operands in [`Long`]).
type Key = (u32, u32, [u32; 4]);
type Long = (u32, u32, Ops);
/// Where equal instructions are: (block, id) of each.
type Seen = smallvec::SmallVec<[(u32, u32); 1]>;

/// What the pass knows of one id.
#[derive(Clone, Copy)]
struct Info {
    /// Result type (0: none).
    ty: u32,
    decorated: Decorated,
    /// Vector types: their component count (0: not a vector).
    vector_len: u8,
    /// Pointer types to read-only memory (push constants, UniformConstant), and pointers into
    /// uniform buffers (their variables, then access chains and copies of those as the walk
    /// meets them: Uniform pointer types also point into BufferBlock storage buffers).
    read_only: bool,
    integer_type: bool,
    buffer_block: bool,
    /// Uniform pointer types: their pointee; arrays: their element type; structs: u32::MAX.
    pointee: u32,
    /// Integer scalar constants: their value.
    value: Option<u64>,
}

/// What the pass knows of every id, in one table indexed by id (the module's bound).
struct Cx {
    o: Options,
    ids: Vec<Info>,
    /// OpExtInstImport ids of GLSL.std.450 (every operand after the instruction number an id).
    glsl_std450: Vec<u32>,
    /// The u32 type (0: none), where `o.constants`.
    u32t: u32,
}

/// Tidies every function of `m`; returns the ids no longer defined.
pub(crate) fn tidy(m: &mut Module, o: Options) -> HashSet<u32> {
    let bound = m.header[3] as usize;
    let none = Info { ty: 0, decorated: Decorated::No, vector_len: 0, read_only: false, integer_type: false, buffer_block: false, pointee: 0, value: None };
    let mut cx = Cx { o, ids: vec![none; bound], glsl_std450: vec![], u32t: 0 };
    for a in m.annotations.iter() {
        let Some(&t) = a.ops.first() else { continue };
        match a.op {
            op::DECORATE | op::DECORATE_ID | op::DECORATE_STRING => {
                let d = if a.op == op::DECORATE && a.ops.get(1) == Some(&deco::NON_UNIFORM) { Decorated::NonUniform } else { Decorated::Other };
                if let Some(e) = cx.ids.get_mut(t as usize) {
                    e.decorated = if e.decorated == Decorated::No || e.decorated == d { d } else { Decorated::Other };
                    e.buffer_block |= a.op == op::DECORATE && a.ops.get(1) == Some(&deco::BUFFER_BLOCK);
                }
            }
            // Decoration groups decorate through OpGroupDecorate: their targets are left alone.
            op::GROUP_DECORATE | op::GROUP_MEMBER_DECORATE => {
                for &t in &a.ops[1..] {
                    if let Some(e) = cx.ids.get_mut(t as usize) {
                        e.decorated = Decorated::Other;
                    }
                }
            }
            _ => {}
        }
    }
    for g in m.globals.iter().filter(|g| g.id != 0 && (g.id as usize) < bound) {
        let ids = &mut cx.ids;
        ids[g.id as usize].ty = g.ty;
        match g.op {
            op::TYPE_VECTOR => ids[g.id as usize].vector_len = g.ops[1] as u8,
            op::TYPE_POINTER => {
                ids[g.id as usize].read_only = matches!(g.ops[0], sc::PUSH_CONSTANT | sc::UNIFORM_CONSTANT);
                ids[g.id as usize].pointee = if g.ops[0] == sc::UNIFORM { g.ops[1] } else { 0 };
            }
            op::TYPE_STRUCT => ids[g.id as usize].pointee = u32::MAX,
            op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY => ids[g.id as usize].pointee = g.ops[0],
            op::TYPE_INT if o.constants && g.ops[..] == [32, 0] && cx.u32t == 0 => {
                cx.u32t = g.id;
                ids[g.id as usize].integer_type = true;
            }
            op::TYPE_INT => ids[g.id as usize].integer_type = true,
            // Integer constants only (a float's words are not its value).
            op::CONSTANT if g.ops.len() <= 2 && ids.get(g.ty as usize).is_some_and(|t| t.integer_type) => ids[g.id as usize].value = Some(g.ops.iter().rev().fold(0, |v, &w| v << 32 | w as u64)),
            // A uniform buffer (a Block struct or an array of them, Uniform storage class).
            op::VARIABLE if g.ops[0] == sc::UNIFORM => {
                let mut t = ids.get(g.ty as usize).map_or(0, |p| p.pointee);
                for _ in 0..8 {
                    match ids.get(t as usize).map(|e| e.pointee) {
                        Some(e) if e != 0 && e != u32::MAX => t = e,
                        _ => break,
                    }
                }
                ids[g.id as usize].read_only = ids.get(t as usize).is_some_and(|s| s.pointee == u32::MAX && !s.buffer_block);
            }
            _ => {}
        }
    }
    // "GLSL.std.450" as its literal string's words (nul-terminated, little-endian).
    const GLSL_STD450: [u32; 4] = [0x4c53_4c47, 0x6474_732e, 0x3035_342e, 0];
    cx.glsl_std450 = m.ext_inst_imports.iter().filter(|i| i.ops[..] == GLSL_STD450).map(|i| i.id).collect();
    let mut functions = std::mem::take(&mut m.functions);
    // A builder (for the folded constants, and the mask of packed bits) only where there is
    // u32 arithmetic to fold or a PackHalf2x16 to undo.
    let foldable = |i: &Inst| cx.u32t != 0 && i.ty == cx.u32t && i.id >= o.first_new && (folds(i.op) || (cx.glsl(i) && i.ops.get(1) == Some(&PACK_HALF_2X16)));
    let any_foldable = functions.iter().flat_map(|f| f.blocks.iter().flat_map(|b| b.insts.iter())).any(foldable);
    let mut b = any_foldable.then(|| Builder::new(m));
    let mut gone = HashSet::default();
    let mut slots = vec![Slot::default(); bound];
    let count = functions.len();
    for (n, f) in functions.iter_mut().enumerate() {
        cx.function(f, n + 1 == count, &mut b, &mut slots, &mut gone);
    }
    drop(b);
    m.functions = functions;
    gone
}

/// What the walk of a function keeps of one id (back to default for the next function).
#[derive(Clone, Copy, Default)]
struct Slot {
    /// What the id was replaced by (0: itself).
    repl: u32,
    /// Operand words that may name it.
    uses: u32,
    /// Where it is, while looking for unused instructions: (block + 1, index) (block 0: not a
    /// removable one).
    def_at: (u32, u32),
}

impl Cx {
    fn decorated(&self, id: u32) -> Decorated {
        self.ids.get(id as usize).map_or(Decorated::Other, |i| i.decorated)
    }

    fn ty(&self, id: u32) -> u32 {
        self.ids.get(id as usize).map_or(0, |i| i.ty)
    }

    fn read_only(&self, id: u32) -> bool {
        self.ids.get(id as usize).is_some_and(|i| i.read_only)
    }

    fn glsl(&self, inst: &Inst) -> bool {
        inst.op == op::EXT_INST && inst.ops.first().is_some_and(|s| self.glsl_std450.contains(s))
    }

    /// May `inst` be merged with an equal one, and removed when unused?
    fn mergeable(&self, inst: &Inst) -> bool {
        if inst.id == 0 || self.decorated(inst.id) == Decorated::Other {
            return false;
        }
        pure(inst.op)
            || (inst.op == op::LOAD && inst.ops.len() == 1 && (self.read_only(self.ty(inst.ops[0])) || self.read_only(inst.ops[0])))
            || (self.glsl(inst) && inst.ops.get(1).is_some_and(|&n| pure_glsl(n)))
    }

    /// The operands of `inst` the pass knows to be ids: the leading ones, a GLSL.std.450
    /// instruction's (not the set and the instruction number); none of OpPhi's (done at the
    /// end).
    fn id_operands(&self, inst: &Inst) -> std::ops::Range<usize> {
        match inst.op {
            op::PHI => 0..0,
            op::EXT_INST if self.glsl(inst) => 2.min(inst.ops.len())..inst.ops.len(),
            op::EXT_INST => 0..0,
            opcode => 0..leading_id_operands(opcode).min(inst.ops.len()),
        }
    }

    /// Tidies `f` (`last`: no function follows to need `s` clean).
    fn function(&mut self, f: &mut Function, last: bool, b: &mut Option<Builder>, s: &mut [Slot], gone: &mut HashSet<u32>) {
        // (Operands are resolved before a result is replaced, so a chain is one hop; only invalid
        // input closes a cycle — a copy of itself, a result id defined twice — and the self-check
        // and the bound keep the walk finite.)
        let resolve = |s: &[Slot], mut id: u32| {
            for _ in 0..64 {
                match s.get(id as usize).map(|s| s.repl).filter(|&r| r != 0 && r != id) {
                    Some(r) => id = r,
                    None => break,
                }
            }
            id
        };
        for p in f.params.iter() {
            if let Some(t) = self.ids.get_mut(p.id as usize) {
                t.ty = p.ty;
            }
        }
        // (One block: nothing to dominate, no graph to build.)
        let cfg = (f.blocks.len() > 1).then(|| Cfg::new(f));
        // Lists and maps sized once for the function (grown a push at a time they were a good
        // part of this pass on large functions).
        let n: usize = f.blocks.iter().map(|b| b.insts.len()).sum();
        let mut replaced: Vec<u32> = Vec::with_capacity(n / 4);
        // The lowering's pure results.
        let mut removable: Vec<u32> = Vec::with_capacity(n / 2);
        // Equal instructions seen.
        let mut avail: HashMap<Key, Seen> = HashMap::with_capacity_and_hasher(n / 2, Default::default());
        let mut avail_long: HashMap<Long, Seen> = HashMap::default();
        let sized = |d: usize| HashMap::with_capacity_and_hasher(n / d, Default::default());
        let mut constructs: HashMap<u32, Ops> = sized(8);
        // OpAccessChains seen (not InBounds, not decorated but NonUniform): their operands.
        let mut chains: HashMap<u32, Ops> = sized(8);
        let mut bitcasts: HashMap<u32, u32> = HashMap::with_capacity_and_hasher(n / 8, Default::default());
        // Single-index OpCompositeExtracts seen: (composite, index).
        let mut extracts: HashMap<u32, (u32, u32)> = HashMap::with_capacity_and_hasher(n / 8, Default::default());
        // UnpackHalf2x16 results, and their first components: the bits unpacked.
        let (mut unpacked, mut low_halves): (HashMap<u32, u32>, HashMap<u32, u32>) = Default::default();
        let mut own: Vec<u32> = Vec::with_capacity(n / 2);
        for (k, blk) in f.blocks.iter_mut().enumerate() {
            let reachable = cfg.as_ref().is_none_or(|c| c.reachable(k));
            for (n, inst) in blk.insts.iter_mut().enumerate() {
                // (Operands are defined before their uses but for OpPhi's, SPIR-V spec 2.16.1.)
                if let Some(t) = self.ids.get_mut(inst.id as usize).filter(|_| inst.id != 0) {
                    t.ty = inst.ty;
                }
                if !replaced.is_empty() {
                    for n in self.id_operands(inst) {
                        inst.ops[n] = resolve(s, inst.ops[n]);
                    }
                }
                // A pointer into a uniform buffer, from one.
                if matches!(inst.op, op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::COPY_OBJECT) && inst.ops.first().is_some_and(|&p| self.read_only(p)) {
                    if let Some(r) = self.ids.get_mut(inst.id as usize) {
                        r.read_only = true;
                    }
                }
                if !self.mergeable(inst) {
                    continue;
                }
                let new = inst.id >= self.o.first_new;
                // Where it is, should it come to be unused: (block + 1, index). The module's own
                // pure instructions go only once a removal here takes their last use.
                let at = (k as u32 + 1, n as u32);
                s[inst.id as usize].def_at = at;
                if new {
                    removable.push(inst.id);
                } else {
                    own.push(inst.id);
                }
                // A member of a value just constructed (every constituent a member, but for a
                // vector built from smaller vectors).
                while inst.op == op::COMPOSITE_EXTRACT && inst.ops.len() >= 2 {
                    let Some(parts) = constructs.get(&inst.ops[0]) else {
                        break;
                    };
                    let n = self.ids.get(self.ty(inst.ops[0]) as usize).map_or(0, |t| t.vector_len) as usize;
                    if n != 0 && n != parts.len() {
                        break;
                    }
                    let Some(&part) = parts.get(inst.ops[1] as usize) else {
                        break;
                    };
                    if inst.ops.len() == 2 {
                        *inst = Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![part]);
                    } else {
                        inst.ops.remove(1);
                        inst.ops[0] = part;
                    }
                }
                // A bitcast back to the type a bitcast came from is that value (bitcasts
                // between helpers of the same bits and their callers).
                if inst.op == op::BITCAST {
                    match bitcasts.get(&inst.ops[0]) {
                        Some(&from) if self.ty(from) == inst.ty => *inst = Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![from]),
                        _ => {
                            bitcasts.insert(inst.id, inst.ops[0]);
                        }
                    }
                }
                // Integer arithmetic of constants, and identities (`x + 0`: offsets of constant
                // deltas inlined into branching helpers).
                if folds(inst.op) && inst.ops.len() == 1 + (inst.op != OP_NOT) as usize {
                    let value = |id: u32| self.ids.get(id as usize).map_or_else(|| b.as_ref().and_then(|b| b.const_value(id)), |i| i.value);
                    let (x, y) = (inst.ops[0], inst.ops.get(1).copied().unwrap_or(0));
                    match fold_int(inst.op, value(x), value(y), x, y) {
                        Some(Folded::Value(v)) if new && inst.ty == self.u32t => {
                            if let Some(b) = b.as_mut() {
                                s[inst.id as usize].repl = b.c_u32(v);
                                s[inst.id as usize].def_at = at;
                                replaced.push(inst.id);
                                continue;
                            }
                        }
                        Some(Folded::Same(same)) if self.ty(same) == inst.ty => *inst = Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![same]),
                        _ => {}
                    }
                }
                // A vector made of its own components in order is that vector (leaves moved as
                // one unit and stored as one again, `physical_storage_buffer::units`).
                if inst.op == op::COMPOSITE_CONSTRUCT && inst.ops.len() >= 2 {
                    let from = extracts.get(&inst.ops[0]).filter(|&&(_, i)| i == 0).map(|&(x, _)| x);
                    let whole = from.filter(|&x| {
                        self.ty(x) == inst.ty
                            && self.ids.get(inst.ty as usize).is_some_and(|t| t.vector_len as usize == inst.ops.len())
                            && inst.ops.iter().enumerate().all(|(k, o)| extracts.get(o) == Some(&(x, k as u32)))
                    });
                    if let Some(x) = whole {
                        *inst = Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![x]);
                    }
                }
                if inst.op == op::COMPOSITE_EXTRACT && inst.ops.len() == 2 {
                    extracts.insert(inst.id, (inst.ops[0], inst.ops[1]));
                }
                // A copy of a value of the same type is that value. (Replaced instructions stay
                // until no operand names them: a use the substitution does not reach keeps them
                // defined.)
                if inst.op == op::COPY_OBJECT && self.decorated(inst.id) == Decorated::No && self.ty(inst.ops[0]) == inst.ty {
                    s[inst.id as usize].repl = inst.ops[0];
                    s[inst.id as usize].def_at = at;
                    replaced.push(inst.id);
                    continue;
                }
                if inst.op == op::COMPOSITE_CONSTRUCT {
                    constructs.insert(inst.id, inst.ops.clone());
                }
                // binary16 bits unpacked to f32 and packed again (a value loaded from 16-bit
                // storage, or rounded in integer code, stored to 16-bit storage) are those bits.
                if self.glsl(inst) && inst.ops.len() == 3 {
                    match inst.ops[1] {
                        UNPACK_HALF_2X16 => {
                            unpacked.insert(inst.id, inst.ops[2]);
                        }
                        PACK_HALF_2X16 if new => {
                            if let (Some(bits), Some(b)) = (packed_bits(inst.ops[2], &constructs, &low_halves, b.as_ref()), b.as_mut()) {
                                let mask = b.c_u32(0xffff);
                                *inst = Inst::new(op::BITWISE_AND, inst.ty, inst.id, ops![bits, mask]);
                            }
                        }
                        _ => {}
                    }
                }
                if inst.op == op::COMPOSITE_EXTRACT && inst.ops[1..] == [0] {
                    if let Some(&bits) = unpacked.get(&inst.ops[0]) {
                        low_halves.insert(inst.id, bits);
                    }
                }
                if !new {
                    continue;
                }
                if inst.op == op::ACCESS_CHAIN {
                    // A chain from a chain: one chain from its base, the indices of both in turn
                    // (OpAccessChain indexes the same way from either). Only where the result
                    // is at least as decorated: a NonUniform index stays under NonUniform.
                    if let Some(inner) = chains.get(&inst.ops[0]).filter(|_| self.decorated(inst.ops[0]) == Decorated::No || self.decorated(inst.id) == Decorated::NonUniform) {
                        let mut merged = inner.clone();
                        merged.extend_from_slice(&inst.ops[1..]);
                        inst.ops = merged;
                    }
                    chains.insert(inst.id, inst.ops.clone());
                }
                // An equal instruction in this block or a dominating one.
                let op_decorated = inst.op | (self.decorated(inst.id) as u32) << 16;
                let seen = if inst.ops.len() <= 4 {
                    let mut ops = [u32::MAX; 4];
                    ops[..inst.ops.len()].copy_from_slice(&inst.ops);
                    avail.entry((op_decorated, inst.ty, ops)).or_default()
                } else {
                    avail_long.entry((op_decorated, inst.ty, inst.ops.clone())).or_default()
                };
                let k = k as u32;
                match seen.iter().find(|&&(b, _)| b == k || (reachable && cfg.as_ref().is_some_and(|c| c.reachable(b as usize) && c.dominates(b as usize, k as usize)))) {
                    Some(&(_, e)) => {
                        s[inst.id as usize].repl = e;
                        s[inst.id as usize].def_at = at;
                        replaced.push(inst.id);
                    }
                    None => seen.push((k, inst.id)),
                }
            }
        }
        if !replaced.is_empty() {
            for i in f.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()).filter(|i| i.op == op::PHI) {
                for o in i.ops.iter_mut().step_by(2) {
                    *o = resolve(s, *o);
                }
            }
        }
        // Replaced instructions and pure ones nothing uses, their operands' uses dropped in turn.
        for w in f.blocks.iter().flat_map(|b| b.insts.iter()).flat_map(may_name_ids) {
            if let Some(u) = s.get_mut(*w as usize) {
                u.uses += 1;
            }
        }
        let mut work: Vec<u32> = removable.iter().chain(replaced.iter()).copied().filter(|&id| s[id as usize].uses == 0).collect();
        let mut dead: Vec<u32> = Vec::with_capacity(work.len());
        while let Some(id) = work.pop() {
            let (k, n) = s[id as usize].def_at;
            if k == 0 {
                continue;
            }
            s[id as usize].def_at.0 = 0;
            dead.push(id);
            for &w in may_name_ids(&f.blocks[k as usize - 1].insts[n as usize]) {
                if let Some(u) = s.get_mut(w as usize) {
                    u.uses -= 1;
                    if u.uses == 0 && u.def_at.0 != 0 {
                        work.push(w);
                    }
                }
            }
        }
        // The tables back to zero for the next function.
        if !last {
            for w in f.blocks.iter().flat_map(|b| b.insts.iter()).flat_map(|i| i.ops.iter()) {
                if let Some(u) = s.get_mut(*w as usize) {
                    u.uses = 0;
                }
            }
        }
        for &id in removable.iter().chain(replaced.iter()).chain(own.iter()) {
            s[id as usize].def_at = (0, 0);
        }
        for id in replaced {
            s[id as usize].repl = 0;
        }
        if !dead.is_empty() {
            for &id in &dead {
                s[id as usize].def_at.1 = u32::MAX;
            }
            for blk in f.blocks.iter_mut() {
                blk.insts.retain(|i| s.get(i.id as usize).is_none_or(|d| d.def_at.1 != u32::MAX));
            }
            for &id in &dead {
                s[id as usize].def_at = (0, 0);
            }
            gone.extend(dead);
        }
    }
}
