//! Calls of helpers replaced by their bodies (fresh ids, decorations copied): the only call of
//! a helper (a function and a call cost words and driver work for nothing there), and every
//! call of a helper whose body is a few instructions in one block ([`SMALL_BODY`]).
//!
//! Why the small ones everywhere: the drivers inline every call anyway (Mesa's NIR does,
//! before it optimizes), and a call costs them more than the instructions it saves. Measured on
//! lavapipe (`corpus_pipelines`, 31 rounds, 2026-12-02), the unchecked leaf and `locate`
//! helpers inlined at every call against only where called once (the code the lowering now
//! emits in place): pipeline creation mixed 0.59×, linked-list 0.87×, pointer-chain-3
//! 0.81×, for 675 / 394 / 3 048 words against 676 / 416 / 2 124 (the record's members, the
//! bitcasts between a load and a store of the same bits and a store's access chain merge with
//! the load's once they meet in one function, `passes::tidy`). A helper that checks bounds
//! itself (11–13 instructions, no robustBufferAccess2) stays a function: inlined everywhere it
//! grows mixed to 1 059 words (814) and pointer-chain-3 to 5 063 (2 413).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::{deco, Builder};
use crate::module::{op, Block, Function, Inst};
use crate::ops;

use super::fold::Folder;

/// Instructions (but the return) a one-block helper may hold and be inlined at every call: an
/// atomic's where the driver checks bounds (the leaf accesses and `locate`, 7 instructions
/// each, are emitted in place there already, `Helpers::call_access`), a composite's of a few
/// leaves (their calls); not a leaf's that checks bounds itself (11 and more).
const SMALL_BODY: usize = 8;

/// Inlines the one-block `helpers` called once in `functions`, and every call of the small
/// ones; returns the ids of the removed helpers (theirs and their bodies') and, per caller, the
/// helpers it inlined. (A body inlined into another body keeps its calls: the next round
/// inlines them.)
pub(super) fn inline_single_calls(b: &mut Builder, functions: &mut Vec<Function>, helpers: &HashSet<u32>) -> (HashSet<u32>, Vec<(u32, u32)>) {
    let mut inlined = vec![];
    let bodies = to_inline(functions, helpers, |f, calls| f.blocks.len() == 1 && (calls == 1 || f.blocks[0].insts.len() <= SMALL_BODY + 1));
    if bodies.is_empty() {
        return (HashSet::default(), inlined);
    }
    for f in functions.iter_mut().filter(|f| !bodies.contains_key(&f.def.id)) {
        for blk in f.blocks.iter_mut() {
            if !blk.insts.iter().any(|i| i.op == op::FUNCTION_CALL && bodies.contains_key(&i.ops[0])) {
                continue;
            }
            let mut out = Vec::with_capacity(blk.insts.len() * 4);
            for inst in std::mem::take(&mut blk.insts) {
                let Some(h) = (inst.op == op::FUNCTION_CALL).then(|| bodies.get(&inst.ops[0])).flatten() else {
                    out.push(inst);
                    continue;
                };
                inlined.push((f.def.id, inst.ops[0]));
                let mut map: HashMap<u32, u32> = h.params.iter().map(|p| p.id).zip(inst.ops[1..].iter().copied()).collect();
                fresh_results(b, h, &mut map);
                // Constant arguments fold into the inlined offset arithmetic (its results are
                // named only in the body and by the call's result).
                let mut folder = Folder::default();
                for body in &h.blocks[0].insts {
                    if matches!(body.op, op::RETURN | op::RETURN_VALUE) {
                        if body.op == op::RETURN_VALUE {
                            let v = map.get(&body.ops[0]).copied().unwrap_or(body.ops[0]);
                            out.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![folder.resolve(b, v)]));
                        }
                        continue;
                    }
                    out.extend(folder.visit(b, renamed(&map, body)));
                }
            }
            blk.insts = out;
        }
    }
    (remove_uncalled(functions, bodies), inlined)
}

/// Inlines the many-block `helpers` (an atomic's branch around, the array-length waterfall
/// loop) called once in `functions`, where the calling block may be split: it is no loop's
/// continue target, so its first part (keeping its label) starts the helper's body and the
/// helper's returning block goes on with the rest of it (SPIR-V structure: the helper's
/// constructs nest inside the block's). A selection header's OpSelectionMerge goes on with its
/// branch, into the last part; a loop header is first cut after its OpLoopMerge
/// ([`split_loop_header`]). Returns what [`inline_single_calls`] does.
pub(super) fn inline_branching_single_calls(b: &mut Builder, functions: &mut Vec<Function>, helpers: &HashSet<u32>) -> (HashSet<u32>, Vec<(u32, u32)>) {
    let mut inlined = vec![];
    let returns = |blk: &Block| blk.insts.last().is_some_and(|t| matches!(t.op, op::RETURN | op::RETURN_VALUE));
    // One return, in the last block.
    let bodies = to_inline(functions, helpers, |f, calls| calls == 1 && f.blocks.len() > 1 && f.blocks.iter().filter(|blk| returns(blk)).count() == 1 && f.blocks.last().is_some_and(returns));
    if bodies.is_empty() {
        return (HashSet::default(), inlined);
    }
    for f in functions.iter_mut().filter(|f| !bodies.contains_key(&f.def.id)) {
        let continue_targets: HashSet<u32> = f.blocks.iter().flat_map(|blk| blk.insts.iter()).filter(|i| i.op == op::LOOP_MERGE).map(|i| i.ops[1]).collect();
        // The blocks cut off loop headers.
        let mut cut: Vec<u32> = vec![];
        let mut k = 0;
        while k < f.blocks.len() {
            let blk = &f.blocks[k];
            let at = blk.insts.iter().position(|i| i.op == op::FUNCTION_CALL && bodies.contains_key(&i.ops[0]));
            let Some(at) = at.filter(|_| !continue_targets.contains(&blk.label)) else {
                k += 1;
                continue;
            };
            if blk.insts.iter().any(|i| i.op == op::LOOP_MERGE) {
                split_loop_header(b, f, k, at);
                cut.push(f.blocks[k + 1].label);
                k += 1;
                continue;
            }
            let call = blk.insts[at].clone();
            let h = &bodies[&call.ops[0]];
            inlined.push((f.def.id, call.ops[0]));
            // Fresh ids for the body's results and labels; its entry label is the block's own.
            let mut map: HashMap<u32, u32> = h.params.iter().map(|p| p.id).zip(call.ops[1..].iter().copied()).collect();
            map.insert(h.blocks[0].label, blk.label);
            for hb in &h.blocks[1..] {
                map.insert(hb.label, b.id());
            }
            fresh_results(b, h, &mut map);
            let mut rest = f.blocks[k].insts.split_off(at);
            rest.remove(0); // the call
            let last_label = map[&h.blocks.last().expect("blocks").label];
            let mut new_blocks: Vec<Block> = vec![];
            for (n, hb) in h.blocks.iter().enumerate() {
                let mut insts: Vec<Inst> = hb.insts.iter().map(|i| renamed(&map, i)).collect();
                if n + 1 == h.blocks.len() {
                    let ret = insts.pop().expect("a return");
                    if ret.op == op::RETURN_VALUE {
                        insts.push(Inst::new(op::COPY_OBJECT, call.ty, call.id, ops![ret.ops[0]]));
                    }
                    insts.append(&mut rest);
                }
                if n == 0 {
                    f.blocks[k].insts.extend(insts);
                } else {
                    new_blocks.push(Block { label: map[&hb.label], insts });
                }
            }
            // The block's successors now follow the helper's last block.
            let old_label = f.blocks[k].label;
            let succs: HashSet<u32> = new_blocks.last().and_then(|blk| blk.insts.last()).map(|t| t.ops.iter().copied().collect()).unwrap_or_default();
            repoint_phis(f, &succs, old_label, last_label);
            let n = new_blocks.len();
            f.blocks.splice(k + 1..k + 1, new_blocks);
            // On to the block holding the rest (another call may follow).
            k += n;
        }
        for label in cut {
            rejoin_loop_header(f, label);
        }
    }
    (remove_uncalled(functions, bodies), inlined)
}

/// Cuts loop header `f.blocks[k]` before instruction `at` (after its phis): the header keeps
/// what comes before, its OpLoopMerge and a branch to a new block holding the rest (the loop's
/// body may start with any block the header branches to unconditionally; the header's
/// conditional branch, now in that block, targets only the loop's merge block, its continue
/// target or blocks of the body, which need no merge instruction: SPIR-V spec 2.11).
fn split_loop_header(b: &mut Builder, f: &mut Function, k: usize, at: usize) {
    let next = b.id();
    let mut rest = f.blocks[k].insts.split_off(at);
    let merge = rest.iter().position(|i| i.op == op::LOOP_MERGE).expect("a loop header");
    let loop_merge = rest.remove(merge);
    let old_label = f.blocks[k].label;
    let succs: HashSet<u32> = rest.last().map(|t| t.ops.iter().copied().collect()).unwrap_or_default();
    f.blocks[k].insts.extend([loop_merge, Inst::new(op::BRANCH, 0, 0, ops![next])]);
    f.blocks.insert(k + 1, Block { label: next, insts: rest });
    repoint_phis(f, &succs, old_label, next);
}

/// Block `label`, cut off the loop header before it by [`split_loop_header`], back into the
/// header where it now only branches on (the start of the inlined body, before a loop of its
/// own): its instructions go before the header's OpLoopMerge, and the header branches where it
/// did.
fn rejoin_loop_header(f: &mut Function, label: u32) {
    let Some(j) = f.blocks.iter().position(|blk| blk.label == label).filter(|&j| j > 0) else { return };
    let blk = &f.blocks[j];
    let header = &f.blocks[j - 1];
    let merges = blk.insts.iter().any(|i| matches!(i.op, op::LOOP_MERGE | op::SELECTION_MERGE));
    let n = header.insts.len();
    let to_it = n >= 2 && header.insts[n - 2].op == op::LOOP_MERGE && header.insts[n - 1].op == op::BRANCH && header.insts[n - 1].ops[0] == label;
    if merges || !to_it || blk.insts.last().is_none_or(|t| t.op != op::BRANCH) {
        return;
    }
    let mut insts = f.blocks.remove(j).insts;
    let branch = insts.pop().expect("a branch");
    let header = &mut f.blocks[j - 1];
    let merge_at = header.insts.len() - 2;
    header.insts.splice(merge_at..merge_at, insts);
    let (old, new) = (label, header.label);
    *header.insts.last_mut().expect("a branch") = branch.clone();
    repoint_phis(f, &[branch.ops[0]].into_iter().collect(), old, new);
}

/// The phis of the blocks in `succs` take their value from `new` where they took it from `old`.
fn repoint_phis(f: &mut Function, succs: &HashSet<u32>, old: u32, new: u32) {
    for other in f.blocks.iter_mut().filter(|blk| succs.contains(&blk.label)) {
        for phi in other.insts.iter_mut().filter(|i| i.op == op::PHI) {
            for pair in phi.ops.chunks_mut(2) {
                if pair.len() == 2 && pair[1] == old {
                    pair[1] = new;
                }
            }
        }
    }
}

/// The `helpers` called in `functions` whose body `fits` (given how many calls name it), taken
/// out of `functions`, by id, with the position each had there ([`remove_uncalled`] puts back
/// those still called).
fn to_inline(functions: &mut Vec<Function>, helpers: &HashSet<u32>, fits: impl Fn(&Function, u32) -> bool) -> Bodies {
    let mut calls: HashMap<u32, u32> = HashMap::with_capacity_and_hasher(helpers.len(), Default::default());
    for i in functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|b| b.insts.iter()).filter(|i| i.op == op::FUNCTION_CALL && helpers.contains(&i.ops[0])) {
        *calls.entry(i.ops[0]).or_default() += 1;
    }
    let taken = |f: &Function| helpers.contains(&f.def.id) && calls.get(&f.def.id).is_some_and(|&n| fits(f, n));
    let mut bodies = Bodies::default();
    if !functions.iter().any(taken) {
        return bodies;
    }
    for (k, f) in std::mem::take(functions).into_iter().enumerate() {
        if taken(&f) {
            bodies.at.push((k, f.def.id));
            bodies.map.insert(f.def.id, f);
        } else {
            functions.push(f);
        }
    }
    bodies
}

/// Helpers to inline (see [`to_inline`]): by id, and (position in the functions, id).
#[derive(Default)]
struct Bodies {
    map: HashMap<u32, Function>,
    at: Vec<(usize, u32)>,
}

impl Bodies {
    fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    fn contains_key(&self, id: &u32) -> bool {
        self.map.contains_key(id)
    }
    fn get(&self, id: &u32) -> Option<&Function> {
        self.map.get(id)
    }
}

impl std::ops::Index<&u32> for Bodies {
    type Output = Function;
    fn index(&self, id: &u32) -> &Function {
        &self.map[id]
    }
}

/// Fresh ids for the results of helper `h`'s body, in its order, into `map` (NonUniform
/// decorations copied to them).
fn fresh_results(b: &mut Builder, h: &Function, map: &mut HashMap<u32, u32>) {
    map.reserve(h.blocks.iter().map(|hb| hb.insts.len()).sum());
    for i in h.blocks.iter().flat_map(|hb| hb.insts.iter()).filter(|i| i.id != 0) {
        let fresh = b.id();
        // (The lowering decorates only the access chains it makes NonUniform, and a helper
        // holds nothing else.)
        if matches!(i.op, op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN) && b.has_decoration(i.id, deco::NON_UNIFORM) {
            b.decorate(fresh, deco::NON_UNIFORM, &[]);
        }
        map.insert(i.id, fresh);
    }
}

/// A copy of body instruction `i` with its result and every operand word renamed by `map`:
/// the helpers' bodies hold no literal equal to one of their ids but constants' ids (globals,
/// never in the map).
fn renamed(map: &HashMap<u32, u32>, i: &Inst) -> Inst {
    let mut c = i.clone();
    for o in c.ops.iter_mut() {
        if let Some(&m) = map.get(o) {
            *o = m;
        }
    }
    if c.id != 0 {
        c.id = map[&i.id];
    }
    c
}

/// Puts back the `bodies` a call still names (a body whose call was in another body), where
/// each was; returns the ids of the others and their bodies' (whose names and decorations
/// must go).
fn remove_uncalled(functions: &mut Vec<Function>, mut bodies: Bodies) -> HashSet<u32> {
    let calls_in = |f: &Function| f.blocks.iter().flat_map(|b| b.insts.iter()).filter(|i| i.op == op::FUNCTION_CALL).map(|i| i.ops[0]).collect::<Vec<u32>>();
    let mut called: HashSet<u32> = functions.iter().flat_map(calls_in).filter(|id| bodies.contains_key(id)).collect();
    // A body kept calls what it calls.
    let mut todo: Vec<u32> = called.iter().copied().collect();
    while let Some(id) = todo.pop() {
        for c in calls_in(&bodies[&id]) {
            if bodies.contains_key(&c) && called.insert(c) {
                todo.push(c);
            }
        }
    }
    let size: usize = bodies.map.values().map(|f| 1 + f.params.len() + f.blocks.iter().map(|b| 1 + b.insts.len()).sum::<usize>()).sum();
    let mut ids: HashSet<u32> = HashSet::with_capacity_and_hasher(size, Default::default());
    let mut gone_before = 0;
    for (k, id) in std::mem::take(&mut bodies.at) {
        let f = bodies.map.remove(&id).expect("a body");
        if called.contains(&id) {
            functions.insert(k - gone_before, f);
            continue;
        }
        gone_before += 1;
        ids.extend(f.params.iter().map(|p| p.id).chain(f.blocks.iter().flat_map(|b| b.insts.iter().map(|i| i.id).chain(std::iter::once(b.label)))));
        ids.insert(f.def.id);
    }
    ids.remove(&0);
    ids
}
