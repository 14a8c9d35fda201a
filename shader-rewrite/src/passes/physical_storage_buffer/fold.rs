//! Constant folding of the u32 offset arithmetic the lowering emits (access-chain steps, leaf
//! offsets: additions and multiplications of layout constants), so a constant offset costs no
//! instruction.
use rustc_hash::FxHashMap as HashMap;

use crate::builder::Builder;
use crate::module::{leading_id_operands, op, Block, Inst};

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
        let (x, y) = (inst.ops.first().copied().unwrap_or(0), inst.ops.get(1).copied().unwrap_or(0));
        let (vx, vy) = (self.value(b, x), self.value(b, y));
        let (zero, one) = (0, 1);
        let folded = match (inst.op, vx, vy) {
            (op::I_ADD, Some(p), Some(q)) => Ok(p.wrapping_add(q)),
            (op::I_MUL, Some(p), Some(q)) => Ok(p.wrapping_mul(q)),
            (op::I_ADD, Some(v), _) | (op::I_MUL, Some(v), _) if v == if inst.op == op::I_ADD { zero } else { one } => Err(y),
            (op::I_ADD, _, Some(v)) | (op::I_MUL, _, Some(v)) if v == if inst.op == op::I_ADD { zero } else { one } => Err(x),
            _ => return Some(inst),
        };
        match folded {
            Ok(v) => self.known.insert(inst.id, v).map(|_| ()),
            Err(same) => self.alias.insert(inst.id, same).map(|_| ()),
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

    /// Folds a function's blocks in place (OpPhi operands naming later results included).
    pub fn blocks(b: &mut Builder, blocks: &mut [Block]) {
        let mut f = Folder::default();
        for blk in blocks.iter_mut() {
            blk.insts = std::mem::take(&mut blk.insts).into_iter().filter_map(|i| f.visit(b, i)).collect();
        }
        for i in blocks.iter_mut().flat_map(|blk| blk.insts.iter_mut()).filter(|i| i.op == op::PHI) {
            f.substitute(b, i);
        }
    }
}
