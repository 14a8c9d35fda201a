//! Function bodies, block by block: each pointer class is located where [`super::roots`]
//! placed it (a call of the `locate` helper on the class's address, re-loaded from its push
//! constant where that is its source), then every instruction is rewritten in place. Accesses
//! are calls, so no block is split.
use super::*;
use crate::ops;
use roots::Source;

impl Cx<'_, '_> {
    /// Lowers `f`'s blocks.
    pub(super) fn lower_blocks(&mut self, f: &mut Function) -> Result<(), RewriteError> {
        self.roots = self.analyze(f);
        self.h.current = f.def.id;
        self.deltas.clear();
        self.shapes.clear();
        self.records.clear();
        for blk in f.blocks.iter_mut() {
            let mut e = Emitter::with_capacity(blk.label, blk.insts.len() + 4);
            for (n, inst) in std::mem::take(&mut blk.insts).into_iter().enumerate() {
                if let Some(classes) = self.roots.place.get(&(blk.label, n)).cloned() {
                    for c in classes {
                        let rec = self.locate(&mut e, c)?;
                        self.records.insert(c, rec);
                        self.stats.physical_located += 1;
                    }
                }
                match self.roots.reused.get(&inst.id) {
                    Some(&earlier) => {
                        e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![earlier]));
                        self.stats.physical_reused_loads += 1;
                    }
                    None => self.rewrite(&mut e, inst)?,
                }
            }
            blk.insts = e.take_insts();
        }
        Ok(())
    }

    /// The record of class `c`, made at the current point.
    fn locate(&mut self, e: &mut Emitter, c: usize) -> Result<u32, RewriteError> {
        let class = &self.roots.classes[c];
        let uniform = class.uniform;
        let a = match class.source.clone() {
            Source::Id(id) => id,
            Source::PushConstant { chain, var, loaded_ty } => {
                let p = match chain {
                    Some(mut chain) => {
                        chain.id = self.b.id();
                        let p = chain.id;
                        e.push(chain);
                        p
                    }
                    None => var,
                };
                let v = e.op(self.b, op::LOAD, loaded_ty, ops![p]);
                if self.ptrs.contains_key(&loaded_ty) {
                    v
                } else {
                    let a = self.b.id();
                    self.addr().value_to_address(e, self.b, v, loaded_ty, a);
                    a
                }
            }
        };
        self.call_locate(e, a, uniform)
    }

    /// `locate(a)`: the record of address `a` (decoded in place where the driver checks bounds).
    fn call_locate(&mut self, e: &mut Emitter, a: u32, uniform: bool) -> Result<u32, RewriteError> {
        if !self.h.checked {
            return Ok(self.h.locate_here(e, self.b, a, uniform));
        }
        let length = match (uniform, self.waterfall) {
            (true, _) => table::Length::Uniform,
            (false, true) => table::Length::Waterfall,
            (false, false) => table::Length::NonUniform,
        };
        // The instruction named in errors (none can arise: locating splits no value).
        let named = Inst::new(op::LOAD, 0, 0, ops![a]);
        let f = self.h.get(self.b, helpers::Kind::Locate { length }, &named)?;
        let rec_ty = self.h.record_ty(self.b);
        Ok(e.op(self.b, op::FUNCTION_CALL, rec_ty, ops![f, a]))
    }

    /// The record and byte offset an access through `ptr` uses (its class's record, or one made
    /// here for an access the analysis did not place: in an unreachable block).
    pub(super) fn record(&mut self, e: &mut Emitter, ptr: u32) -> Result<(u32, u32), RewriteError> {
        let root = self.roots.root_of.get(&ptr).copied().unwrap_or(ptr);
        let placed = self.roots.class_of.get(&root).and_then(|c| self.records.get(c)).copied();
        let rec = match placed {
            Some(rec) if !self.roots.unreachable.contains(&e.label()) => rec,
            _ => self.call_locate(e, root, false)?,
        };
        Ok((rec, self.delta(ptr)))
    }
}
