//! The one walk over the function bodies the lowering needs: the chains, the loads and stores
//! through them (in body order, which the rewrite follows again), the definitions a chain's
//! Base may be traced through, the calls, and the blocks that hold any of it. Per-id tables are
//! dense vectors (ids are below the module's bound): no hashing per instruction.
use super::*;

/// A parameter's "block" in a [`Loc`].
pub(super) const PARAM: u32 = u32::MAX;

/// Where an instruction is: function, block (or [`PARAM`]), position.
#[derive(Debug, Clone, Copy)]
pub(super) struct Loc {
    pub(super) f: u32,
    pub(super) b: u32,
    pub(super) i: u32,
}

impl Loc {
    pub(super) fn inst<'f>(&self, functions: &'f [Function]) -> &'f Inst {
        let f = &functions[self.f as usize];
        if self.b == PARAM { &f.params[self.i as usize] } else { &f.blocks[self.b as usize].insts[self.i as usize] }
    }
}

/// A load or store through a (non-physical) chain.
#[derive(Debug, Clone, Copy)]
pub(super) struct Access {
    /// Index in [`Walk::chains`].
    pub(super) chain: u32,
    /// Index in [`Walk::shapes`].
    pub(super) shape: u32,
}

pub(super) struct Walk {
    pub(super) chains: Vec<Chain>,
    /// Chain index + 1 by result id.
    chain_at: Vec<u32>,
    /// The distinct shapes of the accesses.
    pub(super) shapes: Vec<AccessShape>,
    pub(super) accesses: Vec<Access>,
    /// Definitions a base may be traced through (access chains, copies, selects, phis,
    /// parameters): index + 1 in `defs` by result id.
    def_at: Vec<u32>,
    /// Where, and the result type.
    pub(super) defs: Vec<(Loc, u32)>,
    pub(super) calls: Vec<Loc>,
    /// First block of each function in `marked`.
    pub(super) block_base: Vec<u32>,
    /// Blocks the rewrite must visit.
    pub(super) marked: Vec<bool>,
}

impl Walk {
    pub(super) fn new(b: &Builder, functions: &[Function]) -> Result<Walk, RewriteError> {
        let bound = b.m.header[3] as usize;
        let blocks: usize = functions.iter().map(|f| f.blocks.len()).sum();
        let mut w = Walk {
            chains: Vec::with_capacity(8),
            chain_at: vec![0; bound],
            shapes: Vec::with_capacity(4),
            accesses: Vec::with_capacity(8),
            def_at: vec![0; bound],
            defs: Vec::with_capacity(32),
            calls: Vec::new(),
            block_base: Vec::with_capacity(functions.len()),
            marked: vec![false; blocks],
        };
        let mut base = 0u32;
        for (fi, f) in functions.iter().enumerate() {
            w.block_base.push(base);
            for (pi, p) in f.params.iter().enumerate() {
                w.record_def(p.id, p.ty, Loc { f: fi as u32, b: PARAM, i: pi as u32 });
            }
            for (bi, blk) in f.blocks.iter().enumerate() {
                for (ii, inst) in blk.insts.iter().enumerate() {
                    let loc = Loc { f: fi as u32, b: bi as u32, i: ii as u32 };
                    match inst.op {
                        op::RAW_ACCESS_CHAIN_NV => {
                            let chain = Chain::of(b, inst)?;
                            if let Some(slot) = w.chain_at.get_mut(inst.id as usize) {
                                *slot = w.chains.len() as u32 + 1;
                            }
                            w.chains.push(chain);
                            w.marked[(base + bi as u32) as usize] = true;
                        }
                        op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::COPY_OBJECT | op::SELECT | op::PHI => w.record_def(inst.id, inst.ty, loc),
                        op::FUNCTION_CALL => w.calls.push(loc),
                        _ => {}
                    }
                    if w.chains.is_empty() {
                        continue; // a chain precedes its uses (SPIR-V spec 2.16: defs dominate uses)
                    }
                    // Only OpLoad and OpStore may consume a chain (SPV_NV_raw_access_chains: "The
                    // result must only be consumed by OpLoad and OpStore").
                    let Some((from, count, step)) = pointer_operand_positions(inst.op) else { continue };
                    for (pos, &id) in inst.ops.iter().enumerate().skip(from).step_by(step).take(count) {
                        let Some(c) = w.chain_index(id) else { continue };
                        if !(matches!(inst.op, op::LOAD | op::STORE) && pos == 0) {
                            return Err(RewriteError::unsupported(
                                describe(inst),
                                format!("uses the result of OpRawAccessChainNV %{id}; the spec allows only OpLoad and OpStore through it"),
                            ));
                        }
                        if w.chains[c].physical() {
                            continue; // plain address arithmetic: the load/store stays
                        }
                        let shape = w.chains[c].access_shape(b, inst)?;
                        let s = match w.shapes.iter().position(|x| *x == shape) {
                            Some(s) => s,
                            None => {
                                w.shapes.push(shape);
                                w.shapes.len() - 1
                            }
                        };
                        w.accesses.push(Access { chain: c as u32, shape: s as u32 });
                        w.marked[(base + bi as u32) as usize] = true;
                    }
                }
            }
            base += f.blocks.len() as u32;
        }
        // An OpPhi may name a chain defined later (a back edge): the uses check above, made in
        // body order, misses those.
        if !w.chains.is_empty() {
            for inst in functions.iter().flat_map(|f| f.blocks.iter()).flat_map(|blk| blk.insts.iter().take_while(|i| i.op == op::PHI)) {
                if let Some(&id) = inst.ops.iter().step_by(2).find(|&&id| w.chain_index(id).is_some()) {
                    return Err(RewriteError::unsupported(
                        describe(inst),
                        format!("uses the result of OpRawAccessChainNV %{id}; the spec allows only OpLoad and OpStore through it"),
                    ));
                }
            }
        }
        Ok(w)
    }

    fn record_def(&mut self, id: u32, ty: u32, loc: Loc) {
        if let Some(slot) = self.def_at.get_mut(id as usize) {
            *slot = self.defs.len() as u32 + 1;
            self.defs.push((loc, ty));
        }
    }

    pub(super) fn chain_index(&self, id: u32) -> Option<usize> {
        match self.chain_at.get(id as usize) {
            Some(&n) if n != 0 => Some(n as usize - 1),
            _ => None,
        }
    }

    pub(super) fn def(&self, id: u32) -> Option<Loc> {
        match self.def_at.get(id as usize) {
            Some(&n) if n != 0 => Some(self.defs[n as usize - 1].0),
            _ => None,
        }
    }

    /// The type of a global, or of a definition the walk recorded (0: neither).
    pub(super) fn type_of(&self, b: &Builder, id: u32) -> u32 {
        if let Some(g) = b.global(id) {
            return g.ty;
        }
        match self.def_at.get(id as usize) {
            Some(&n) if n != 0 => self.defs[n as usize - 1].1,
            _ => 0,
        }
    }

    pub(super) fn mark(&mut self, loc: Loc) {
        if loc.b != PARAM {
            self.marked[(self.block_base[loc.f as usize] + loc.b) as usize] = true;
        }
    }

    pub(super) fn is_marked(&self, f: usize, b: usize) -> bool {
        self.marked[self.block_base[f] as usize + b]
    }
}
