//! A function's control-flow graph: immediate dominators (Cooper, Harvey, Kennedy, "A Simple,
//! Fast Dominance Algorithm") and structured loops (the blocks of a loop construct: dominated by
//! its header, not by its merge block; SPIR-V spec 2.11).
use rustc_hash::FxHashMap as HashMap;

use crate::module::{op, Function};

const OP_SWITCH: u32 = 251;

pub(crate) struct Cfg {
    /// Block labels in the function's order (index 0 = entry).
    pub labels: Vec<u32>,
    /// Immediate dominator of each block (the entry's is itself; unreachable blocks: usize::MAX).
    idom: Vec<usize>,
    /// Position of each block in reverse postorder (lower = earlier).
    rpo_pos: Vec<usize>,
    /// (header, merge) of each loop.
    loops: Vec<(usize, usize)>,
    /// Predecessors of each reachable block.
    pub preds: Vec<Vec<usize>>,
}

impl Cfg {
    pub fn new(f: &Function) -> Self {
        let labels: Vec<u32> = f.blocks.iter().map(|b| b.label).collect();
        let index: HashMap<u32, usize> = labels.iter().enumerate().map(|(n, &l)| (l, n)).collect();
        let n = labels.len();
        let mut succs: Vec<Vec<usize>> = vec![vec![]; n];
        let mut loops = vec![];
        for (k, blk) in f.blocks.iter().enumerate() {
            let Some(term) = blk.insts.last() else { continue };
            let targets: Vec<u32> = match term.op {
                op::BRANCH => term.ops.first().copied().into_iter().collect(),
                op::BRANCH_CONDITIONAL => term.ops.get(1..3).map(|t| t.to_vec()).unwrap_or_default(),
                // Selector, default, then (literal, label) pairs (one literal word per case for
                // selectors up to 32 bits; wider ones are rare and only lose precision here).
                OP_SWITCH => term.ops.iter().skip(1).step_by(2).copied().collect(),
                _ => vec![],
            };
            succs[k] = targets.iter().filter_map(|t| index.get(t).copied()).collect();
            if let Some(lm) = blk.insts.iter().rev().nth(1).filter(|i| i.op == op::LOOP_MERGE) {
                if let Some(&m) = lm.ops.first().and_then(|m| index.get(m)) {
                    loops.push((k, m));
                }
            }
        }
        // Reverse postorder from the entry (iterative DFS).
        let mut post = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        let mut stack: Vec<(usize, usize)> = vec![];
        if n > 0 {
            seen[0] = true;
            stack.push((0, 0));
        }
        while let Some(&mut (b, ref mut next)) = stack.last_mut() {
            if let Some(&s) = succs[b].get(*next) {
                *next += 1;
                if !seen[s] {
                    seen[s] = true;
                    stack.push((s, 0));
                }
            } else {
                post.push(b);
                stack.pop();
            }
        }
        let mut rpo_pos = vec![usize::MAX; n];
        for (pos, &b) in post.iter().rev().enumerate() {
            rpo_pos[b] = pos;
        }
        let mut preds: Vec<Vec<usize>> = vec![vec![]; n];
        for (b, ss) in succs.iter().enumerate().filter(|(b, _)| seen[*b]) {
            for &s in ss {
                preds[s].push(b);
            }
        }
        let mut idom = vec![usize::MAX; n];
        if n > 0 {
            idom[0] = 0;
        }
        let order: Vec<usize> = post.iter().rev().copied().collect();
        let mut changed = true;
        while changed {
            changed = false;
            for &b in order.iter().skip(1) {
                let mut new = usize::MAX;
                for &p in &preds[b] {
                    if idom[p] == usize::MAX {
                        continue;
                    }
                    new = if new == usize::MAX { p } else { intersect(&idom, &rpo_pos, p, new) };
                }
                if new != idom[b] {
                    idom[b] = new;
                    changed = true;
                }
            }
        }
        Cfg { labels, idom, rpo_pos, loops, preds }
    }

    pub fn reachable(&self, b: usize) -> bool {
        self.idom[b] != usize::MAX
    }

    pub fn idom(&self, b: usize) -> usize {
        self.idom[b]
    }

    /// Does `a` dominate `b` (both reachable)?
    pub fn dominates(&self, a: usize, mut b: usize) -> bool {
        loop {
            if a == b {
                return true;
            }
            if b == 0 || self.idom[b] == usize::MAX {
                return false;
            }
            b = self.idom[b];
        }
    }

    /// The nearest common dominator of two reachable blocks.
    pub fn common_dominator(&self, a: usize, b: usize) -> usize {
        intersect(&self.idom, &self.rpo_pos, a, b)
    }

    /// The headers of every loop construct holding `b`.
    pub fn loops_holding(&self, b: usize) -> impl Iterator<Item = usize> + '_ {
        self.loops.iter().filter(move |&&(h, m)| self.dominates(h, b) && !(self.reachable(m) && self.dominates(m, b))).map(|&(h, _)| h)
    }

    /// The header of the innermost loop construct holding `b`, if any.
    pub fn loop_of(&self, b: usize) -> Option<usize> {
        self.loops_holding(b).max_by_key(|&h| self.rpo_pos[h])
    }
}

fn intersect(idom: &[usize], rpo_pos: &[usize], mut a: usize, mut b: usize) -> usize {
    while a != b {
        while rpo_pos[a] > rpo_pos[b] {
            a = idom[a];
        }
        while rpo_pos[b] > rpo_pos[a] {
            b = idom[b];
        }
    }
    a
}
