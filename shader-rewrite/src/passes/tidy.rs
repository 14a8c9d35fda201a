//! After a lowering (buffer device addresses, bindless handles), the words it made for nothing
//! go: copies of a value of the same type and bitcasts back to it
//! (re-used loads, inlined helpers' results, pointer-to-address copies), members taken out of
//! a value just constructed, pure instructions computed again where an equal one dominates
//! (a record's members extracted in every block, a push-constant pointer re-loaded where its
//! class is located), and pure instructions nothing uses. An OpAccessChain from another one is
//! one chain from that one's base (a descriptor-array element's struct, then its member: one
//! instruction and one NonUniform decoration fewer once the first chain has no other use).
//!
//! Only pure instructions move or go (their result depends on their operands alone: SPIR-V
//! arithmetic, composites, access chains, GLSL.std.450 integer min/max/clamp, and loads without
//! memory operands of push constants and of UniformConstant descriptors, read-only for the
//! whole dispatch, Vulkan "Push Constants", "Descriptor Sets"; never OpSampledImage, whose
//! result must stay in its consumer's block); an instruction with a decoration other than
//! NonUniform is left as it is, and NonUniform ones are only merged with NonUniform ones.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::{deco, sc};
use crate::module::{leading_id_operands, op, Function, Inst, Module, Ops};
use crate::ops;

use super::physical_storage_buffer::cfg::Cfg;

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
            | op::SELECT
            | op::I_EQUAL
            | op::I_NOT_EQUAL
            | op::U_GREATER_THAN_EQUAL
            | op::U_LESS_THAN
            | op::LOGICAL_AND
            | op::SHIFT_RIGHT_LOGICAL
            | op::SHIFT_LEFT_LOGICAL
            | op::BITWISE_OR
            | op::BITWISE_AND
            | 178 // OpULessThanEqual
    )
}

/// GLSL.std.450 UMin, SMin, UMax, SMax, UClamp, SClamp.
const GLSL_INTEGER_MIN_MAX: [u32; 6] = [38, 39, 41, 42, 44, 45];

/// How an id is decorated: none, NonUniform only, or otherwise (never merged).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Decorated {
    No,
    NonUniform,
    Other,
}

type Key = (u32, u32, Decorated, Ops);

/// What the pass knows of every id, in tables indexed by id (the module's bound).
struct Cx {
    decorated: Vec<Decorated>,
    /// Result type of each id (0: none).
    types: Vec<u32>,
    /// Vector types: their component count (0: not a vector).
    vector_len: Vec<u8>,
    /// Pointer types to read-only memory.
    read_only: Vec<bool>,
    /// OpExtInstImport ids of GLSL.std.450 (every operand after the instruction number an id).
    glsl_std450: Vec<u32>,
    /// Constants whose words are all 0.
    zero: Vec<bool>,
}

/// Tidies every function of `m`; returns the ids no longer defined.
pub(crate) fn tidy(m: &mut Module) -> HashSet<u32> {
    let bound = m.header[3] as usize;
    let mut cx = Cx { decorated: vec![Decorated::No; bound], types: vec![0; bound], vector_len: vec![0; bound], read_only: vec![false; bound], glsl_std450: vec![], zero: vec![false; bound] };
    for a in m.annotations.iter() {
        let Some(&t) = a.ops.first() else { continue };
        match a.op {
            op::DECORATE | op::DECORATE_ID | op::DECORATE_STRING => {
                let d = if a.op == op::DECORATE && a.ops.get(1) == Some(&deco::NON_UNIFORM) { Decorated::NonUniform } else { Decorated::Other };
                if let Some(e) = cx.decorated.get_mut(t as usize) {
                    *e = if *e == Decorated::No || *e == d { d } else { Decorated::Other };
                }
            }
            // Decoration groups decorate through OpGroupDecorate: their targets are left alone.
            op::GROUP_DECORATE | op::GROUP_MEMBER_DECORATE => {
                for &t in &a.ops[1..] {
                    if let Some(e) = cx.decorated.get_mut(t as usize) {
                        *e = Decorated::Other;
                    }
                }
            }
            _ => {}
        }
    }
    for g in m.globals.iter().filter(|g| g.id != 0 && (g.id as usize) < bound) {
        cx.types[g.id as usize] = g.ty;
        match g.op {
            op::TYPE_VECTOR => cx.vector_len[g.id as usize] = g.ops[1] as u8,
            op::TYPE_POINTER => cx.read_only[g.id as usize] = matches!(g.ops[0], sc::PUSH_CONSTANT | sc::UNIFORM_CONSTANT),
            op::CONSTANT => cx.zero[g.id as usize] = g.ops.iter().all(|&w| w == 0),
            _ => {}
        }
    }
    // "GLSL.std.450" as its literal string's words (nul-terminated, little-endian).
    const GLSL_STD450: [u32; 4] = [0x4c53_4c47, 0x6474_732e, 0x3035_342e, 0];
    cx.glsl_std450 = m.ext_inst_imports.iter().filter(|i| i.ops[..] == GLSL_STD450).map(|i| i.id).collect();
    for f in m.functions.iter() {
        for i in f.params.iter().chain(f.blocks.iter().flat_map(|b| b.insts.iter())).filter(|i| i.id != 0 && (i.id as usize) < bound) {
            cx.types[i.id as usize] = i.ty;
        }
    }
    let mut gone = HashSet::default();
    let mut scratch = Scratch { repl: vec![0; bound], uses: vec![0; bound], def_at: vec![(0, 0); bound] };
    for f in m.functions.iter_mut() {
        cx.function(f, &mut scratch, &mut gone);
    }
    gone
}

/// Per-id tables reused between functions.
struct Scratch {
    /// What an id was replaced by (0: itself).
    repl: Vec<u32>,
    /// Operand words naming each id.
    uses: Vec<u32>,
    /// Where each pure instruction is, while looking for unused ones.
    def_at: Vec<(u32, u32)>,
}

impl Cx {
    fn decorated(&self, id: u32) -> Decorated {
        self.decorated.get(id as usize).copied().unwrap_or(Decorated::Other)
    }

    fn ty(&self, id: u32) -> u32 {
        self.types.get(id as usize).copied().unwrap_or(0)
    }

    /// May `inst` be merged with an equal one and removed when unused?
    fn mergeable(&self, inst: &Inst) -> bool {
        if inst.id == 0 || self.decorated(inst.id) == Decorated::Other {
            return false;
        }
        pure(inst.op)
            || (inst.op == op::LOAD && inst.ops.len() == 1 && self.read_only.get(self.ty(inst.ops[0]) as usize).copied().unwrap_or(false))
            || (inst.op == op::EXT_INST && self.glsl_std450.contains(&inst.ops[0]) && GLSL_INTEGER_MIN_MAX.contains(&inst.ops[1]))
    }

    /// The id operands of `inst` the pass knows to be ids: the leading ones, a GLSL.std.450
    /// instruction's operands (not the set and the instruction number); none of OpPhi's (done
    /// at the end).
    fn id_operands(&self, inst: &Inst) -> std::ops::Range<usize> {
        match inst.op {
            op::PHI => 0..0,
            op::EXT_INST if inst.ops.first().is_some_and(|s| self.glsl_std450.contains(s)) => 2.min(inst.ops.len())..inst.ops.len(),
            op::EXT_INST => 0..0,
            opcode => 0..leading_id_operands(opcode).min(inst.ops.len()),
        }
    }

    fn function(&self, f: &mut Function, s: &mut Scratch, gone: &mut HashSet<u32>) {
        let resolve = |repl: &[u32], mut id: u32| {
            while let Some(&r) = repl.get(id as usize).filter(|&&r| r != 0) {
                id = r;
            }
            id
        };
        // (One block: nothing to dominate, no graph to build.)
        let cfg = (f.blocks.len() > 1).then(|| Cfg::new(f));
        let mut replaced: Vec<u32> = vec![];
        // Equal instructions seen: key → (block, id) of each.
        let n: usize = f.blocks.iter().map(|b| b.insts.len()).sum();
        let mut avail: HashMap<Key, smallvec::SmallVec<[(usize, u32); 2]>> = HashMap::with_capacity_and_hasher(n / 2, Default::default());
        let mut constructs: HashMap<u32, Ops> = HashMap::default();
        // OpAccessChains seen (not InBounds, not decorated but NonUniform): their operands.
        let mut chains: HashMap<u32, Ops> = HashMap::default();
        let mut bitcasts: HashMap<u32, u32> = HashMap::default();
        for (k, blk) in f.blocks.iter_mut().enumerate() {
            let reachable = cfg.as_ref().is_none_or(|c| c.reachable(k));
            for inst in blk.insts.iter_mut() {
                if !replaced.is_empty() {
                    for n in self.id_operands(inst) {
                        inst.ops[n] = resolve(&s.repl, inst.ops[n]);
                    }
                }
                if !self.mergeable(inst) {
                    continue;
                }
                // A member of a value just constructed (every constituent a member, but for a
                // vector built from smaller vectors).
                while inst.op == op::COMPOSITE_EXTRACT && inst.ops.len() >= 2 {
                    let Some(parts) = constructs.get(&inst.ops[0]) else { break };
                    let n = self.vector_len.get(self.ty(inst.ops[0]) as usize).copied().unwrap_or(0) as usize;
                    if n != 0 && n != parts.len() {
                        break;
                    }
                    let Some(&part) = parts.get(inst.ops[1] as usize) else { break };
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
                // x + 0 is x (offsets of constant deltas inlined into branching helpers).
                if inst.op == op::I_ADD && self.ty(inst.ops[0]) == inst.ty && self.zero.get(inst.ops[1] as usize).copied().unwrap_or(false) {
                    *inst = Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![inst.ops[0]]);
                }
                // A copy of a value of the same type is that value. (Replaced instructions stay
                // until no operand names them: a use the substitution does not reach, after a
                // literal, keeps them defined.)
                if inst.op == op::COPY_OBJECT && self.decorated(inst.id) == Decorated::No && self.ty(inst.ops[0]) == inst.ty {
                    s.repl[inst.id as usize] = inst.ops[0];
                    replaced.push(inst.id);
                    continue;
                }
                if inst.op == op::COMPOSITE_CONSTRUCT {
                    constructs.insert(inst.id, inst.ops.clone());
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
                let seen = avail.entry((inst.op, inst.ty, self.decorated(inst.id), inst.ops.clone())).or_default();
                match seen.iter().find(|&&(b, _)| b == k || (reachable && cfg.as_ref().is_some_and(|c| c.reachable(b) && c.dominates(b, k)))) {
                    Some(&(_, e)) => {
                        s.repl[inst.id as usize] = e;
                        replaced.push(inst.id);
                    }
                    None => seen.push((k, inst.id)),
                }
            }
        }
        if !replaced.is_empty() {
            for i in f.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()).filter(|i| i.op == op::PHI) {
                for o in i.ops.iter_mut().step_by(2) {
                    *o = resolve(&s.repl, *o);
                }
            }
        }
        // Pure instructions nothing uses (any operand word counts as a use: a literal equal to
        // an id only keeps it), their operands' uses dropped in turn.
        for w in f.blocks.iter().flat_map(|b| b.insts.iter()).flat_map(|i| i.ops.iter()) {
            if let Some(u) = s.uses.get_mut(*w as usize) {
                *u += 1;
            }
        }
        // Where each mergeable instruction is: (block, index) + 1 (0: not one).
        let mut work: Vec<u32> = vec![];
        for (k, blk) in f.blocks.iter().enumerate() {
            for (n, i) in blk.insts.iter().enumerate().filter(|(_, i)| self.mergeable(i)) {
                s.def_at[i.id as usize] = (k as u32 + 1, n as u32);
                if s.uses[i.id as usize] == 0 {
                    work.push(i.id);
                }
            }
        }
        let mut dead: Vec<u32> = vec![];
        while let Some(id) = work.pop() {
            let (k, n) = s.def_at[id as usize];
            if k == 0 {
                continue;
            }
            s.def_at[id as usize].0 = 0;
            dead.push(id);
            for &w in &f.blocks[k as usize - 1].insts[n as usize].ops {
                if let Some(u) = s.uses.get_mut(w as usize) {
                    *u -= 1;
                    if *u == 0 && s.def_at[w as usize].0 != 0 {
                        work.push(w);
                    }
                }
            }
        }
        // The tables back to zero for the next function.
        for blk in f.blocks.iter() {
            for i in blk.insts.iter() {
                for &w in i.ops.iter() {
                    if let Some(u) = s.uses.get_mut(w as usize) {
                        *u = 0;
                    }
                }
                if let Some(d) = s.def_at.get_mut(i.id as usize) {
                    *d = (0, 0);
                }
            }
        }
        for id in replaced {
            s.repl[id as usize] = 0;
        }
        if !dead.is_empty() {
            for &id in &dead {
                s.def_at[id as usize].1 = u32::MAX;
            }
            for blk in f.blocks.iter_mut() {
                blk.insts.retain(|i| s.def_at.get(i.id as usize).is_none_or(|d| d.1 != u32::MAX));
            }
            for &id in &dead {
                s.def_at[id as usize] = (0, 0);
            }
            gone.extend(dead);
        }
    }
}
