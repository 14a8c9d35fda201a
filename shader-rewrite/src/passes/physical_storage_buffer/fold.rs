//! Constant folding of the u32 offset arithmetic the lowering emits (access-chain steps, leaf
//! offsets: additions and multiplications of layout constants), so a constant offset costs no
//! instruction. The arithmetic is [`fold_int`]'s, shared with the clean-up pass
//! (`passes::tidy`); this folds as the lowering emits, before the function is whole.
use rustc_hash::FxHashMap as HashMap;

use crate::builder::{Builder, Emitter};
use crate::module::{leading_id_operands, op, Block, Inst};
use crate::passes::fold_int::{fold_int, Folded};

#[derive(Default)]
pub(super) struct Folder {
    /// Folded result → its constant value.
    known: HashMap<u32, u32>,
    /// Folded result → the id it equals (`x + 0`, `x * 1`).
    alias: HashMap<u32, u32>,
}

impl Folder {
    fn value(&self, b: &Builder, id: u32) -> Option<u32> {
        self.known.get(&id).copied().or_else(|| b.const_value(id).map(|v| v as u32))
    }

    /// What `id` became: a constant, the id it equals, or itself.
    pub fn resolve(&self, b: &mut Builder, id: u32) -> u32 {
        match self.known.get(&id) {
            Some(&v) => b.c_u32(v),
            None => self.alias.get(&id).copied().unwrap_or(id),
        }
    }

    /// Rewrites `inst`'s id operands to what they became; None when `inst` folds away.
    pub fn visit(&mut self, b: &mut Builder, mut inst: Inst) -> Option<Inst> {
        self.substitute(b, &mut inst);
        // The offsets' additions and multiplications (other arithmetic stays as emitted).
        if !matches!(inst.op, op::I_ADD | op::I_MUL) || inst.ops.len() != 2 {
            return Some(inst);
        }
        let (x, y) = (inst.ops[0], inst.ops[1]);
        let Some(folded) = fold_int(inst.op, self.value(b, x).map(u64::from), self.value(b, y).map(u64::from), x, y) else { return Some(inst) };
        match folded {
            Folded::Value(v) => self.known.insert(inst.id, v).map(|_| ()),
            Folded::Same(same) => self.alias.insert(inst.id, same).map(|_| ()),
        };
        None
    }

    fn substitute(&self, b: &mut Builder, inst: &mut Inst) {
        if self.known.is_empty() && self.alias.is_empty() {
            return;
        }
        // Only id operands (a literal may equal a folded id); OpPhi's are all ids.
        let n = if inst.op == op::PHI { inst.ops.len() } else { leading_id_operands(inst.op).min(inst.ops.len()) };
        for o in inst.ops[..n].iter_mut() {
            *o = self.resolve(b, *o);
        }
    }

    /// Emits `insts` (integer offset arithmetic on u32 values, and what uses it) into `e`,
    /// folded; returns what `result` became.
    pub fn emit(b: &mut Builder, e: &mut Emitter, insts: Vec<Inst>, result: u32) -> u32 {
        let mut f = Folder::default();
        for inst in insts {
            if let Some(inst) = f.visit(b, inst) {
                e.push(inst);
            }
        }
        f.resolve(b, result)
    }

    /// Folds a function's blocks in place (OpPhi operands naming later results included).
    pub fn blocks(b: &mut Builder, blocks: &mut [Block]) {
        // (A helper's few offsets: room for them at once.)
        let mut f = Folder { known: HashMap::with_capacity_and_hasher(8, Default::default()), alias: HashMap::with_capacity_and_hasher(8, Default::default()) };
        for blk in blocks.iter_mut() {
            blk.insts = std::mem::take(&mut blk.insts).into_iter().filter_map(|i| f.visit(b, i)).collect();
        }
        for i in blocks.iter_mut().flat_map(|blk| blk.insts.iter_mut()).filter(|i| i.op == op::PHI) {
            f.substitute(b, i);
        }
    }
}
