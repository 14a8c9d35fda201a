//! The only call of a helper whose body is one block, replaced by the body (fresh ids,
//! decorations copied): a function and a call cost words and driver work for nothing there.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::builder::{deco, Builder};
use crate::module::{op, Function, Inst};
use crate::ops;

use super::fold::Folder;

/// Inlines the one-block `helpers` called once in `functions`; returns the ids of the removed
/// helpers (theirs and their bodies') and, per caller, the helpers it inlined.
pub(super) fn inline_single_calls(b: &mut Builder, functions: &mut Vec<Function>, helpers: &HashSet<u32>) -> (HashSet<u32>, Vec<(u32, u32)>) {
    let mut inlined = vec![];
    let mut calls: HashMap<u32, u32> = HashMap::default();
    for i in functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|b| b.insts.iter()).filter(|i| i.op == op::FUNCTION_CALL) {
        *calls.entry(i.ops[0]).or_default() += 1;
    }
    let bodies: HashMap<u32, Function> = functions
        .iter()
        .filter(|f| helpers.contains(&f.def.id) && f.blocks.len() == 1 && calls.get(&f.def.id) == Some(&1))
        .map(|f| (f.def.id, f.clone()))
        .collect();
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
                for body in &h.blocks[0].insts {
                    if matches!(body.op, op::RETURN | op::RETURN_VALUE) {
                        if body.op == op::RETURN_VALUE {
                            let v = map.get(&body.ops[0]).copied().unwrap_or(body.ops[0]);
                            out.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![v]));
                        }
                        continue;
                    }
                    let mut c = body.clone();
                    for o in c.ops.iter_mut() {
                        if let Some(&m) = map.get(o) {
                            *o = m;
                        }
                    }
                    if c.id != 0 {
                        let fresh = b.id();
                        if b.has_decoration(c.id, deco::NON_UNIFORM) {
                            b.decorate(fresh, deco::NON_UNIFORM, &[]);
                        }
                        map.insert(c.id, fresh);
                        c.id = fresh;
                    }
                    out.push(c);
                }
            }
            blk.insts = out;
        }
        if inlined.last().is_some_and(|&(caller, _)| caller == f.def.id) {
            // Constant arguments fold into the inlined offset arithmetic.
            Folder::blocks(b, &mut f.blocks);
        }
    }
    let called: HashSet<u32> = functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|b| b.insts.iter()).filter(|i| i.op == op::FUNCTION_CALL).map(|i| i.ops[0]).collect();
    let gone: HashSet<u32> = bodies.keys().copied().filter(|id| !called.contains(id)).collect();
    // The removed bodies' ids (their decorations must go too).
    let mut ids: HashSet<u32> = HashSet::default();
    for f in functions.iter().filter(|f| gone.contains(&f.def.id)) {
        ids.extend(f.params.iter().map(|p| p.id).chain(f.blocks.iter().flat_map(|b| b.insts.iter().map(|i| i.id).chain(std::iter::once(b.label)))));
        ids.insert(f.def.id);
    }
    ids.remove(&0);
    functions.retain(|f| !gone.contains(&f.def.id));
    (ids, inlined)
}
