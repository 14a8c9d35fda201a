//! After a lowering (buffer device addresses, bindless handles), the words it made for nothing
//! go: copies of a value of the same type
//! (re-used loads, inlined helpers' results, pointer-to-address copies), members taken out of
//! a value just constructed, pure instructions computed again where an equal one dominates
//! (a record's members extracted in every block, a push-constant pointer re-loaded where its
//! class is located), and pure instructions nothing uses.
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

/// Tidies every function of `m`; returns the ids no longer defined.
pub(super) fn tidy(m: &mut Module) -> HashSet<u32> {
    let mut decorated: HashMap<u32, Decorated> = HashMap::default();
    for a in m.annotations.iter().filter(|a| matches!(a.op, op::DECORATE | op::DECORATE_ID | op::DECORATE_STRING)) {
        let d = if a.op == op::DECORATE && a.ops.get(1) == Some(&deco::NON_UNIFORM) { Decorated::NonUniform } else { Decorated::Other };
        let e = decorated.entry(a.ops[0]).or_insert(d);
        if *e != d {
            *e = Decorated::Other;
        }
    }
    // Decoration groups decorate through OpGroupDecorate: their targets are left alone.
    for a in m.annotations.iter().filter(|a| matches!(a.op, op::GROUP_DECORATE | op::GROUP_MEMBER_DECORATE)) {
        for &t in &a.ops[1..] {
            decorated.insert(t, Decorated::Other);
        }
    }
    let mut types: HashMap<u32, u32> = m.globals.iter().filter(|g| g.id != 0).map(|g| (g.id, g.ty)).collect();
    // Vector types → component count; pointer types to read-only memory.
    let vectors: HashMap<u32, u32> = m.globals.iter().filter(|g| g.op == op::TYPE_VECTOR).map(|g| (g.id, g.ops[1])).collect();
    let read_only: HashSet<u32> =
        m.globals.iter().filter(|g| g.op == op::TYPE_POINTER && matches!(g.ops[0], sc::PUSH_CONSTANT | sc::UNIFORM_CONSTANT)).map(|g| g.id).collect();
    let glsl_std450: HashSet<u32> = m.ext_inst_imports.iter().filter(|i| crate::module::decode_string(&i.ops) == "GLSL.std.450").map(|i| i.id).collect();
    let mut gone = HashSet::default();
    for f in m.functions.iter_mut() {
        for i in f.params.iter().chain(f.blocks.iter().flat_map(|b| b.insts.iter())).filter(|i| i.id != 0) {
            types.insert(i.id, i.ty);
        }
        let cx = Cx { decorated: &decorated, types: &types, vectors: &vectors, read_only: &read_only, glsl_std450: &glsl_std450 };
        cx.function(f, &mut gone);
    }
    gone
}

struct Cx<'a> {
    decorated: &'a HashMap<u32, Decorated>,
    types: &'a HashMap<u32, u32>,
    vectors: &'a HashMap<u32, u32>,
    read_only: &'a HashSet<u32>,
    /// OpExtInstImport ids of GLSL.std.450 (every operand after the instruction number an id).
    glsl_std450: &'a HashSet<u32>,
}

impl Cx<'_> {
    fn decorated(&self, id: u32) -> Decorated {
        self.decorated.get(&id).copied().unwrap_or(Decorated::No)
    }

    /// May `inst` be merged with an equal one and removed when unused?
    fn mergeable(&self, inst: &Inst) -> bool {
        if inst.id == 0 || self.decorated(inst.id) == Decorated::Other {
            return false;
        }
        pure(inst.op)
            || (inst.op == op::LOAD && inst.ops.len() == 1 && self.types.get(&inst.ops[0]).is_some_and(|t| self.read_only.contains(t)))
            || (inst.op == op::EXT_INST && self.glsl_std450.contains(&inst.ops[0]) && GLSL_INTEGER_MIN_MAX.contains(&inst.ops[1]))
    }

    /// Rewrites the id operands of `inst` the pass knows to be ids (the leading ones; a
    /// GLSL.std.450 instruction's operands) through `to`; not OpPhi's (done at the end).
    fn substitute(&self, inst: &mut Inst, to: impl Fn(u32) -> u32) {
        let n = match inst.op {
            op::PHI => 0,
            op::EXT_INST if inst.ops.first().is_some_and(|s| self.glsl_std450.contains(s)) => inst.ops.len(),
            opcode => leading_id_operands(opcode).min(inst.ops.len()),
        };
        for (k, o) in inst.ops[..n].iter_mut().enumerate() {
            // OpExtInst: the set and the instruction number stay.
            if !(inst.op == op::EXT_INST && k < 2) {
                *o = to(*o);
            }
        }
    }

    fn function(&self, f: &mut Function, gone: &mut HashSet<u32>) {
        let cfg = Cfg::new(f);
        let mut repl: HashMap<u32, u32> = HashMap::default();
        let resolve = |repl: &HashMap<u32, u32>, mut id: u32| {
            while let Some(&r) = repl.get(&id) {
                id = r;
            }
            id
        };
        let mut avail: Vec<HashMap<Key, u32>> = vec![HashMap::default(); f.blocks.len()];
        let mut constructs: HashMap<u32, Ops> = HashMap::default();
        for (k, blk) in f.blocks.iter_mut().enumerate() {
            let reachable = cfg.reachable(k);
            let mut out = Vec::with_capacity(blk.insts.len());
            for mut inst in std::mem::take(&mut blk.insts) {
                self.substitute(&mut inst, |id| resolve(&repl, id));
                if !self.mergeable(&inst) {
                    out.push(inst);
                    continue;
                }
                // A member of a value just constructed (every constituent a member, but for a
                // vector built from smaller vectors).
                while inst.op == op::COMPOSITE_EXTRACT && inst.ops.len() >= 2 {
                    let Some(parts) = constructs.get(&inst.ops[0]) else { break };
                    let whole = self.types.get(&inst.ops[0]).copied().unwrap_or(0);
                    if self.vectors.get(&whole).is_some_and(|&c| c as usize != parts.len()) {
                        break;
                    }
                    let Some(&part) = parts.get(inst.ops[1] as usize) else { break };
                    if inst.ops.len() == 2 {
                        inst = Inst::new(op::COPY_OBJECT, inst.ty, inst.id, [part].as_slice());
                    } else {
                        inst.ops.remove(1);
                        inst.ops[0] = part;
                    }
                }
                // A copy of a value of the same type is that value.
                // (Kept until no operand names it: a use the substitution does not reach, in a
                // position after a literal, keeps it defined.)
                if inst.op == op::COPY_OBJECT && self.decorated(inst.id) == Decorated::No && self.types.get(&inst.ops[0]) == Some(&inst.ty) {
                    repl.insert(inst.id, inst.ops[0]);
                    out.push(inst);
                    continue;
                }
                if inst.op == op::COMPOSITE_CONSTRUCT {
                    constructs.insert(inst.id, inst.ops.clone());
                }
                let key: Key = (inst.op, inst.ty, self.decorated(inst.id), inst.ops.clone());
                // An equal instruction in this block or a dominating one.
                let mut at = k;
                let earlier = loop {
                    if let Some(&e) = avail[at].get(&key) {
                        break Some(e);
                    }
                    if !reachable || at == 0 {
                        break None;
                    }
                    at = cfg.idom(at);
                };
                match earlier {
                    Some(e) => {
                        repl.insert(inst.id, e);
                        out.push(inst);
                    }
                    None => {
                        avail[k].insert(key, inst.id);
                        out.push(inst);
                    }
                }
            }
            blk.insts = out;
        }
        if !repl.is_empty() {
            for i in f.blocks.iter_mut().flat_map(|b| b.insts.iter_mut()).filter(|i| i.op == op::PHI) {
                for o in i.ops.iter_mut().step_by(2) {
                    *o = resolve(&repl, *o);
                }
            }
        }
        // Pure instructions nothing uses (any operand word counts as a use: a literal equal to
        // an id only keeps it).
        loop {
            let used: HashSet<u32> = f.blocks.iter().flat_map(|b| b.insts.iter()).flat_map(|i| i.ops.iter().copied()).collect();
            let before = gone.len();
            for blk in f.blocks.iter_mut() {
                blk.insts.retain(|i| {
                    let dead = self.mergeable(i) && !used.contains(&i.id);
                    if dead {
                        gone.insert(i.id);
                    }
                    !dead
                });
            }
            if gone.len() == before {
                break;
            }
        }
    }
}
