//! Loops holding table accesses stay rolled on targets that expand each non-uniformly indexed
//! storage-buffer access per lane (`Target::nonuniform_access_per_lane`, lavapipe): a
//! constant-trip loop the driver unrolls would multiply that code (the chase kernel's 16 hops:
//! a 0.5 s first dispatch on lavapipe, 60 ms rolled). Loop control is a hint (SPIR-V spec
//! 3.23, Loop Control), so DontUnroll changes no result; loops whose control already says
//! something (Unroll, a count, ...) keep what the module asked for.
use rustc_hash::FxHashSet as HashSet;

use super::cfg::Cfg;
use crate::module::{op, Function, Inst};

/// OpLoopMerge's Loop Control DontUnroll bit.
const DONT_UNROLL: u32 = 0x2;

/// Marks DontUnroll every loop of `functions` whose control is None and whose construct holds an
/// instruction `accesses` says touches the table; returns how many.
pub(super) fn keep_rolled(functions: &mut [Function], accesses: impl Fn(&Inst) -> bool) -> u32 {
    let mut marked = 0;
    for f in functions.iter_mut() {
        if !f.blocks.iter().any(|b| b.insts.iter().any(|i| i.op == op::LOOP_MERGE)) {
            continue;
        }
        let cfg = Cfg::new(f);
        let headers: HashSet<usize> = (0..f.blocks.len())
            .filter(|&b| cfg.reachable(b) && f.blocks[b].insts.iter().any(&accesses))
            .flat_map(|b| cfg.loops_holding(b).collect::<Vec<_>>())
            .collect();
        for h in headers {
            let merge = f.blocks[h].insts.iter_mut().rev().find(|i| i.op == op::LOOP_MERGE).expect("a loop header");
            if merge.ops.get(2) == Some(&0) {
                merge.ops[2] = DONT_UNROLL;
                marked += 1;
            }
        }
    }
    marked
}
