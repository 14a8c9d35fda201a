//! Function bodies, block by block: memory accesses branch (bounds checks), splitting their
//! block. A loop header first hands its body to a new block (its OpLoopMerge must stay right
//! before its terminator, SPIR-V spec 2.11), the pieces get what may not cross a block boundary,
//! and successors' OpPhis name the last piece.
use super::*;
use crate::passes::raw_access_chains::control_flow::{legalize_split, split_loop_header};

impl Cx<'_, '_> {
    /// Lowers `f`'s blocks.
    pub(super) fn lower_blocks(&mut self, f: &mut Function) -> Result<(), RewriteError> {
        let original: HashSet<u32> = f.blocks.iter().map(|blk| blk.label).collect();
        let mut relabel: HashMap<u32, u32> = HashMap::default();
        let mut blocks = vec![];
        for blk in std::mem::take(&mut f.blocks) {
            let mut e = Emitter::with_capacity(blk.label, blk.insts.len() * 2);
            let mut insts = blk.insts;
            if insts.iter().any(|i| self.accesses_memory(i)) {
                if let Some(lm) = insts.iter().position(|i| i.op == op::LOOP_MERGE) {
                    insts = split_loop_header(&mut e, self.b, insts, lm)?;
                }
            }
            for inst in insts {
                self.rewrite(&mut e, inst)?;
            }
            let mut pieces = e.finish();
            if pieces.len() > 1 {
                let types = self.types;
                legalize_split(self.b, &mut pieces, |b, id| types.get(&id).copied().or_else(|| b.global(id).map(|g| g.ty)).unwrap_or(0));
                relabel.insert(blk.label, pieces[pieces.len() - 1].label);
            }
            blocks.extend(pieces);
        }
        // Only the function's own OpPhis: the backend's may name an original label as the
        // parent that really branches to them.
        for phi in blocks.iter_mut().filter(|blk| original.contains(&blk.label)).flat_map(|blk| blk.insts.iter_mut()).filter(|i| i.op == op::PHI) {
            for parent in phi.ops.iter_mut().skip(1).step_by(2) {
                if let Some(&l) = relabel.get(parent) {
                    *parent = l;
                }
            }
        }
        f.blocks = blocks;
        Ok(())
    }

    /// Does `inst` access memory through an address (and so branch)?
    fn accesses_memory(&self, inst: &Inst) -> bool {
        let through = |k: usize| inst.ops.get(k).is_some_and(|&id| self.phys(id).is_some());
        match inst.op {
            op::LOAD | op::STORE => through(0),
            op::COPY_MEMORY => through(0) || through(1),
            opcode => is_atomic(opcode) && through(0),
        }
    }
}
