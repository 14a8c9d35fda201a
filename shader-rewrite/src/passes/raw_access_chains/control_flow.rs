//! Control flow the lowering adds inside a caller's blocks: loop headers split before bounds
//! checks, what may not cross the new block boundaries repeated after them, and the subgroup
//! waterfall loop of the lavapipe array-length quirk.
use super::*;
use crate::module::{leading_id_operands, string_is, Block};
use rustc_hash::FxHashMap as HashMap;

/// A loop header whose body needs bounds-check branches: its OpLoopMerge must stay right before
/// its terminator (SPIR-V spec 2.11), so the header keeps its OpPhis and the OpLoopMerge and
/// branches to a new block that holds the rest. The returned instructions go into that block.
pub(crate) fn split_loop_header(e: &mut Emitter, b: &mut Builder, mut insts: Vec<Inst>, lm: usize) -> Result<Vec<Inst>, RewriteError> {
    let mut merge = insts.remove(lm);
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
    let body = b.id();
    if continue_target == e.label() {
        // A loop that is its own continue target: its back edge now leaves the last piece of
        // the body, which must structurally post-dominate the continue target (SPIR-V spec
        // 2.11, continue construct), so the body becomes the continue target.
        merge.ops[1] = body;
    }
    e.push(merge);
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![body]), body);
    Ok(rest)
}

/// Repeats in each new piece of a split block what does not cross a block boundary: the
/// debug location, and image objects that must be made in the block that uses them.
/// `pieces` are the split block's, in order (pieces after the first are new blocks).
pub(crate) fn legalize_split(b: &mut Builder, pieces: &mut [Block], type_of: impl Fn(&Builder, u32) -> u32) {
    if b.has_opaque_types() {
        rematerialize_image_objects(b, pieces, type_of);
    }
    let located = pieces.iter().flat_map(|p| p.insts.iter()).any(|i| matches!(i.op, op::LINE | op::NO_LINE | op::EXT_INST));
    if located {
        carry_debug_location(b, pieces);
    }
}

/// Where instructions can be inserted at the top of a block the lowering made.
fn after_phis(blk: &Block) -> usize {
    blk.insts.iter().take_while(|i| i.op == op::PHI).count()
}

/// NonSemantic.Shader.DebugInfo.100 DebugScope, DebugNoScope, DebugLine, DebugNoLine.
const DEBUG_SCOPE: u32 = 23;
const DEBUG_NO_SCOPE: u32 = 24;
const DEBUG_LINE: u32 = 103;
const DEBUG_NO_LINE: u32 = 104;

/// OpLine applies "up to the first occurrence of ... the next end of block, the next OpLine
/// instruction, or the next OpNoLine instruction" (SPIR-V spec, OpLine), and so do the DebugInfo
/// extended set's DebugScope and DebugLine (NonSemantic.Shader.DebugInfo.100): each new piece
/// starts with the locations in effect where the previous one ended.
fn carry_debug_location(b: &mut Builder, pieces: &mut [Block]) {
    let debug_info = b.m.ext_inst_imports.iter().find(|i| string_is(&i.ops, "NonSemantic.Shader.DebugInfo.100")).map(|i| i.id);
    // Per kind (OpLine, DebugScope, DebugLine): the instruction in effect, if any.
    let mut active: [Option<Inst>; 3] = Default::default();
    for (n, piece) in pieces.iter_mut().enumerate() {
        if n > 0 {
            let at = after_phis(piece);
            let carried = active.iter().flatten().map(|i| Inst { id: if i.id != 0 { b.id() } else { 0 }, ..i.clone() });
            piece.insts.splice(at..at, carried.collect::<Vec<_>>());
        }
        for inst in &piece.insts {
            let (kind, starts) = match (inst.op, inst.ops.first() == debug_info.as_ref(), inst.ops.get(1)) {
                (op::LINE, ..) => (0, true),
                (op::NO_LINE, ..) => (0, false),
                (op::EXT_INST, true, Some(&DEBUG_SCOPE)) => (1, true),
                (op::EXT_INST, true, Some(&DEBUG_NO_SCOPE)) => (1, false),
                (op::EXT_INST, true, Some(&DEBUG_LINE)) => (2, true),
                (op::EXT_INST, true, Some(&DEBUG_NO_LINE)) => (2, false),
                _ => continue,
            };
            active[kind] = starts.then(|| inst.clone());
        }
    }
}

/// "All OpSampledImage instructions, or instructions that load an image or sampler reference,
/// must be in the same block in which their Result <id> are consumed" (SPIR-V spec 2.16.1):
/// such a result made in an earlier piece and used in a later one is made again there (with a
/// fresh id and the same decorations, e.g. NonUniform) and the later uses take the copy.
fn rematerialize_image_objects(b: &mut Builder, pieces: &mut [Block], type_of: impl Fn(&Builder, u32) -> u32) {
    let defs: HashMap<u32, (usize, Inst)> = pieces
        .iter()
        .enumerate()
        .flat_map(|(n, blk)| blk.insts.iter().map(move |i| (n, i)))
        .filter(|(_, i)| same_block_only(b, i, &type_of))
        .map(|(n, i)| (i.id, (n, i.clone())))
        .collect();
    if defs.is_empty() {
        return;
    }
    for (n, piece) in pieces.iter_mut().enumerate().skip(1) {
        let mut copies = Copies { b: &mut *b, defs: &defs, piece: n, ids: HashMap::default(), insts: vec![] };
        for inst in piece.insts.iter_mut() {
            copies.rename(inst);
        }
        let at = after_phis(piece);
        let insts = copies.insts;
        piece.insts.splice(at..at, insts);
    }
}

/// Is `inst` an OpSampledImage, or a load of an image, sampler or sampled image from a
/// descriptor (UniformConstant: the same value wherever it is loaded again)?
fn same_block_only(b: &Builder, inst: &Inst, type_of: impl Fn(&Builder, u32) -> u32) -> bool {
    match inst.op {
        op::SAMPLED_IMAGE => true,
        op::LOAD => {
            let image_ty = b.global(inst.ty).is_some_and(|t| matches!(t.op, op::TYPE_IMAGE | op::TYPE_SAMPLER | op::TYPE_SAMPLED_IMAGE));
            image_ty && b.pointer(type_of(b, inst.ops[0])).is_some_and(|(storage, _)| storage == sc::UNIFORM_CONSTANT)
        }
        _ => false,
    }
}

/// Copies of same-block-only results made for one piece of a split block.
struct Copies<'a, 'm> {
    b: &'a mut Builder<'m>,
    /// The split block's same-block-only results: id → (piece, definition).
    defs: &'a HashMap<u32, (usize, Inst)>,
    piece: usize,
    /// Original id → its copy in this piece.
    ids: HashMap<u32, u32>,
    /// The copies, in dependency order, for the top of the piece.
    insts: Vec<Inst>,
}

impl Copies<'_, '_> {
    /// Points `inst`'s uses of results made in earlier pieces at copies in this piece (image
    /// objects are only ever leading id operands: the sampled image, image or sampler).
    fn rename(&mut self, inst: &mut Inst) {
        let ids = leading_id_operands(inst.op).min(inst.ops.len());
        for id in inst.ops[..ids].iter_mut() {
            *id = self.copy_of(*id);
        }
    }

    fn copy_of(&mut self, id: u32) -> u32 {
        let defs = self.defs;
        let Some((_, def)) = defs.get(&id).filter(|(n, _)| *n < self.piece) else { return id };
        if let Some(&copy) = self.ids.get(&id) {
            return copy;
        }
        let mut copy = Inst { id: self.b.id(), ..def.clone() };
        self.rename(&mut copy);
        for (d, lits) in self.b.m.decorations_of(id) {
            self.b.decorate(copy.id, d, &lits);
        }
        let new = copy.id;
        self.ids.insert(id, new);
        self.insts.push(copy);
        new
    }
}

/// The byte length of `array[index]` for a non-uniform `index`, one distinct index at a time:
/// a loop that takes the subgroup's first active index, lets the invocations holding it take a
/// uniform OpArrayLength and leave, and repeats for the rest (a "waterfall" loop). Works
/// around drivers that evaluate OpArrayLength once per subgroup (Target::nonuniform_array_length_broken).
pub(crate) fn waterfall_length(e: &mut Emitter, b: &mut Builder, backend: &Backend, kind: AliasKind, array: u32, elem_ty: u32, index: u32) -> u32 {
    let u32t = b.t_u32();
    let bool_t = b.t_bool();
    let (header, then, cont, merge) = (b.id(), b.id(), b.id(), b.id());
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![header]), header);
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
    // The loop header's own branch (its OpLoopMerge is the only merge it needs: one target is
    // the continue target, the other breaks to the merge block; SPIR-V spec 2.11).
    e.stmt(op::LOOP_MERGE, ops![merge, cont, 0]);
    e.terminate(Inst::new(op::BRANCH_CONDITIONAL, 0, 0, ops![mine, then, cont]), then);
    let ptr = e.op(b, op::ACCESS_CHAIN, elem_ty, ops![array, first]);
    let len = backend.length_of_view(e, b, kind, ptr);
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![merge]), cont);
    e.terminate(Inst::new(op::BRANCH, 0, 0, ops![header]), merge);
    // `then` is the only way into `merge`, so `len` dominates everything after the loop.
    len
}
