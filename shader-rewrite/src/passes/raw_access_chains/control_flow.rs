//! Control flow the lowering adds inside a caller's blocks: loop headers split before bounds
//! checks, and the subgroup waterfall loop of the lavapipe array-length quirk.
use super::*;

/// A loop header whose body needs bounds-check branches: its OpLoopMerge must stay right before
/// its terminator (SPIR-V spec 2.11), so the header keeps its OpPhis and the OpLoopMerge and
/// branches to a new block that holds the rest. The returned instructions go into that block.
pub(super) fn split_loop_header(e: &mut Emitter, b: &mut Builder, mut insts: Vec<Inst>, lm: usize) -> Result<Vec<Inst>, RewriteError> {
    let merge = insts.remove(lm);
    let (merge_block, continue_target) = (merge.ops[0], merge.ops[1]);
    let term = insts.last().expect("a block ends with a terminator");
    let exits_loop = |t: &u32| *t == merge_block || *t == continue_target;
    let ok = match term.op {
        op::BRANCH => true,
        // Moved out of the header, a conditional branch must be a break/continue.
        op::BRANCH_CONDITIONAL => term.ops[1..3].iter().any(exits_loop),
        _ => false,
    };
    if !ok {
        return Err(RewriteError::unsupported(
            format!("OpLoopMerge %{merge_block} %{continue_target}"),
            "a loop header that branches into its body two ways and also needs bounds checks",
        ));
    }
    let phis = insts.iter().take_while(|i| i.op == op::PHI).count();
    let rest = insts.split_off(phis);
    for phi in insts {
        e.push(phi);
    }
    e.push(merge);
    let body = b.id();
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![body]), body);
    Ok(rest)
}

/// The byte length of `array[index]` for a non-uniform `index`, one distinct index at a time:
/// a loop that takes the subgroup's first active index, lets the invocations holding it take a
/// uniform OpArrayLength and leave, and repeats for the rest (a "waterfall" loop). Works
/// around drivers that evaluate OpArrayLength once per subgroup (Target::nonuniform_array_length_broken).
pub(super) fn waterfall_length(e: &mut Emitter, b: &mut Builder, backend: &Backend, storage: u32, array: u32, elem_ty: u32, index: u32) -> u32 {
    let u32t = b.t_u32();
    let bool_t = b.t_bool();
    let (header, body, then, cont, merge) = (b.id(), b.id(), b.id(), b.id(), b.id());
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![header]), header);
    e.stmt(op::LOOP_MERGE, ops![merge, cont, 0]);
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![body]), body);
    let first = if b.m.version() >= (1, 3) {
        // OpGroupNonUniformBroadcastFirst (SPIR-V 1.3), Execution scope Subgroup (3).
        b.m.add_capability(61); // GroupNonUniform
        b.m.add_capability(64); // GroupNonUniformBallot
        let subgroup = b.c_u32(3);
        e.op(b, 338, u32t, ops![subgroup, index])
    } else {
        // OpSubgroupFirstInvocationKHR (SPV_KHR_shader_ballot) before SPIR-V 1.3.
        b.m.add_capability(4423); // SubgroupBallotKHR
        b.m.add_extension("SPV_KHR_shader_ballot");
        e.op(b, 4422, u32t, ops![index])
    };
    let mine = e.op(b, 170 /* OpIEqual */, bool_t, ops![index, first]);
    // Not a selection header: one target is the loop's continue target (SPIR-V spec 2.11).
    e.terminate(Inst::new(op::BRANCH_CONDITIONAL, 0, 0, ops![mine, then, cont]), then);
    let ptr = e.op(b, op::ACCESS_CHAIN, elem_ty, ops![array, first]);
    let len = backend.length_of_view(e, b, storage, ptr);
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![merge]), cont);
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![header]), merge);
    // `then` is the only way into `merge`, so `len` dominates everything after the loop.
    len
}
