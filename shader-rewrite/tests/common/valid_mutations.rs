//! Mutations that keep a valid SPIR-V module valid (shared by tests/fuzz_valid.rs and the
//! cargo-fuzz target fuzz/fuzz_targets/rewrite_valid.rs): the rewriter must lower every shape a
//! producer may emit, not only the ones in the corpus. Each one changes the shape, never the
//! validity:
//! - `chain`: OpAccessChain ↔ OpInBoundsAccessChain (and the Ptr forms);
//! - `copy`: `%c = OpCopyObject %t %x` right after `%x`'s definition, every later use of `%x`
//!   in the function reading `%c` instead (pointer arguments of calls excepted: logical
//!   addressing wants a memory object declaration there);
//! - `split`: a block cut in two at an instruction boundary with an OpBranch, the successors'
//!   OpPhi parents renamed (never a loop header, never across an OpSampledImage);
//! - `swap`: two adjacent side-effect-free instructions, the second not using the first;
//! - `constant`: a 32-bit integer constant that only arithmetic, comparisons and stores use gets
//!   another value;
//! - `load`: an OpLoad repeated, later uses reading the repeat;
//! - `commute`: the operands of a commutative operation swapped;
//! - `phi`: a block split after a value's definition, the value passed through a one-entry
//!   OpPhi at the start of the second half, later uses reading the phi;
//! - `select`: `OpSelect %t %true %x %x` after `%x`, later uses reading it;
//! - `call`: the value passed through an identity function, later uses reading its result;
//! - `functions`: two functions swap places (their order in a module is free);
//! - `globals`: two adjacent types/constants/variables swap places when the second does not
//!   refer to the first.
//!
//! The last three only carry types that may flow through phis, selects and calls: pointers only
//! into PhysicalStorageBuffer (or StorageBuffer/Workgroup with VariablePointers, not through
//! calls), images and samplers only with SPV_NV_bindless_texture, never OpSampledImage results.
//!
//! [`fuzz`] is the loop both run: mutate a seed, rewrite it under an option set that rewrote the
//! seed into a valid module, and check that every `Ok` output validates.
#![allow(dead_code)]
use shader_rewrite::module::{leading_id_operands, op, Inst, Module, Ops, MAX_ID_BOUND};
use shader_rewrite::{rewrite, Options, RewriteError};
use std::collections::BTreeMap;

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

pub const KINDS: [&str; 12] = ["chain", "copy", "split", "swap", "constant", "load", "commute", "phi", "select", "call", "functions", "globals"];

/// Applies one mutation of kind `KINDS[kind]` at a place `rng` picks; false when the module
/// has no place for it.
pub fn mutate(m: &mut Module, kind: usize, rng: &mut Rng) -> bool {
    if m.header[3] + 2 >= MAX_ID_BOUND || m.functions.is_empty() {
        return false;
    }
    match KINDS[kind % KINDS.len()] {
        "chain" => chain(m, rng),
        "copy" => copy(m, rng),
        "split" => split(m, rng),
        "swap" => swap(m, rng),
        "constant" => constant(m, rng),
        "load" => load(m, rng),
        "commute" => commute(m, rng),
        "phi" => phi(m, rng),
        "select" => select(m, rng),
        "call" => call(m, rng),
        "functions" => functions(m, rng),
        _ => globals(m, rng),
    }
}

/// (function, block, instruction) positions whose instruction satisfies `pick`.
fn places(m: &Module, pick: impl Fn(&Inst) -> bool) -> Vec<(usize, usize, usize)> {
    let mut v = vec![];
    for (f, func) in m.functions.iter().enumerate() {
        for (b, blk) in func.blocks.iter().enumerate() {
            for (i, inst) in blk.insts.iter().enumerate() {
                if pick(inst) {
                    v.push((f, b, i));
                }
            }
        }
    }
    v
}

fn choose<T: Copy>(v: &[T], rng: &mut Rng) -> Option<T> {
    (!v.is_empty()).then(|| v[rng.below(v.len())])
}

/// The global defining `id`.
fn global(m: &Module, id: u32) -> Option<&Inst> {
    m.globals.iter().find(|g| g.id == id)
}

/// Id operand positions of `inst` (after its result type and id): the leading id operands,
/// OpPhi's values and parents.
fn id_positions(inst: &Inst) -> std::ops::Range<usize> {
    let n = if inst.op == op::PHI { inst.ops.len() } else { leading_id_operands(inst.op).min(inst.ops.len()) };
    0..n
}

fn chain(m: &mut Module, rng: &mut Rng) -> bool {
    const PTR: u32 = 67;
    const IN_BOUNDS_PTR: u32 = 70;
    let Some((f, b, i)) = choose(&places(m, |i| matches!(i.op, op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | PTR | IN_BOUNDS_PTR)), rng) else { return false };
    let inst = &mut m.functions[f].blocks[b].insts[i];
    inst.op = match inst.op {
        op::ACCESS_CHAIN => op::IN_BOUNDS_ACCESS_CHAIN,
        op::IN_BOUNDS_ACCESS_CHAIN => op::ACCESS_CHAIN,
        PTR => IN_BOUNDS_PTR,
        _ => PTR,
    };
    true
}

/// Types a copy must not be made of: sampled images (consumed where they are made) and
/// pointers into the Image storage class (only atomics take them).
fn copyable(m: &Module, ty: u32) -> bool {
    const STORAGE_IMAGE_CLASS: u32 = 11;
    match global(m, ty) {
        Some(t) if t.op == op::TYPE_SAMPLED_IMAGE => false,
        Some(t) if t.op == op::TYPE_POINTER => t.ops[0] != STORAGE_IMAGE_CLASS,
        Some(t) => t.op != op::TYPE_VOID,
        None => false,
    }
}

/// Replaces the uses of `old` by `new` in function `f`, but in the instruction at (b, skip)
/// and in pointer arguments of calls.
fn replace_uses(m: &mut Module, f: usize, old: u32, new: u32, skip: (usize, usize)) {
    let pointer_types: Vec<u32> = m.globals.iter().filter(|g| g.op == op::TYPE_POINTER).map(|g| g.id).collect();
    let is_pointer = m.functions[f]
        .blocks
        .iter()
        .flat_map(|b| b.insts.iter())
        .find(|i| i.id == old)
        .is_some_and(|i| pointer_types.contains(&i.ty));
    for (b, blk) in m.functions[f].blocks.iter_mut().enumerate() {
        for (i, inst) in blk.insts.iter_mut().enumerate() {
            if (b, i) == skip || (inst.op == op::FUNCTION_CALL && is_pointer) {
                continue;
            }
            for p in id_positions(inst) {
                if inst.ops[p] == old && !(inst.op == op::PHI && p % 2 == 1) {
                    inst.ops[p] = new;
                }
            }
        }
    }
}

fn copy(m: &mut Module, rng: &mut Rng) -> bool {
    // A raw access chain's result may only be loaded or stored through (SPV_NV_raw_access_chains).
    let candidates = places(m, |i| i.id != 0 && i.ty != 0 && !matches!(i.op, op::PHI | op::VARIABLE | op::SAMPLED_IMAGE | op::RAW_ACCESS_CHAIN_NV));
    let candidates: Vec<_> = candidates.into_iter().filter(|&(f, b, i)| copyable(m, m.functions[f].blocks[b].insts[i].ty)).collect();
    let Some(at) = choose(&candidates, rng) else { return false };
    wrap(m, at, |id, ty, x| Inst::new(op::COPY_OBJECT, ty, id, Ops::from_slice(&[x])));
    true
}

fn load(m: &mut Module, rng: &mut Rng) -> bool {
    let candidates: Vec<_> = places(m, |i| i.op == op::LOAD).into_iter().filter(|&(f, b, i)| copyable(m, m.functions[f].blocks[b].insts[i].ty)).collect();
    let Some((f, b, i)) = choose(&candidates, rng) else { return false };
    let mut again = m.functions[f].blocks[b].insts[i].clone();
    let x = again.id;
    again.id = m.next_id();
    let new = again.id;
    m.functions[f].blocks[b].insts.insert(i + 1, again);
    replace_uses(m, f, x, new, (b, i + 1));
    true
}

fn commute(m: &mut Module, rng: &mut Rng) -> bool {
    // OpIAdd, OpFAdd, OpIMul, OpFMul, OpIEqual, OpINotEqual, OpLogicalOr, OpLogicalAnd,
    // OpBitwiseOr, OpBitwiseXor, OpBitwiseAnd.
    let Some((f, b, i)) = choose(&places(m, |i| matches!(i.op, 128 | 129 | 132 | 133 | 170 | 171 | 166 | 167 | 197 | 198 | 199) && i.ops.len() == 2), rng) else {
        return false;
    };
    m.functions[f].blocks[b].insts[i].ops.swap(0, 1);
    true
}

/// Instructions without side effects or ordering constraints (arithmetic, conversions,
/// composites, comparisons; no memory, image, control flow or debug instructions).
fn pure(opcode: u32) -> bool {
    matches!(opcode, 79..=84 | 109..=124 | 126..=204 | 400)
}

fn swap(m: &mut Module, rng: &mut Rng) -> bool {
    let candidates: Vec<_> = places(m, |i| pure(i.op) && i.id != 0)
        .into_iter()
        .filter(|&(f, b, i)| {
            let insts = &m.functions[f].blocks[b].insts;
            insts.get(i + 1).is_some_and(|n| pure(n.op) && !n.ops.contains(&insts[i].id))
        })
        .collect();
    let Some((f, b, i)) = choose(&candidates, rng) else { return false };
    m.functions[f].blocks[b].insts.swap(i, i + 1);
    true
}

/// Where a block may be cut: (function, block, index of the first instruction of the second
/// half). After OpPhi / OpVariable (which lead their block), before the merge instruction and
/// terminator, not after an OpSampledImage (used in its own block); never a loop header (the
/// back edge's target) or an OpSwitch block (its targets are not renamed here).
fn split_points(m: &Module) -> Vec<(usize, usize, usize)> {
    const LOOP_MERGE: u32 = 246;
    const SELECTION_MERGE: u32 = 247;
    const SWITCH: u32 = 251;
    const LINE: u32 = 8;
    const NO_LINE: u32 = 317;
    let mut v = vec![];
    for (f, func) in m.functions.iter().enumerate() {
        for (b, blk) in func.blocks.iter().enumerate() {
            if blk.insts.iter().any(|i| i.op == LOOP_MERGE || i.op == SWITCH) {
                continue;
            }
            let first = blk.insts.iter().position(|i| !matches!(i.op, op::PHI | op::VARIABLE | LINE | NO_LINE)).unwrap_or(blk.insts.len());
            let last = blk.insts.len().saturating_sub(if blk.insts.iter().rev().nth(1).is_some_and(|i| i.op == SELECTION_MERGE) { 2 } else { 1 });
            let sampled = blk.insts.iter().position(|i| i.op == op::SAMPLED_IMAGE).unwrap_or(usize::MAX);
            for at in first..=last.min(sampled) {
                v.push((f, b, at));
            }
        }
    }
    v
}

/// Cuts block `b` of function `f` before instruction `at`; returns (old label, new label).
fn split_at(m: &mut Module, f: usize, b: usize, at: usize) -> (u32, u32) {
    let label = m.next_id();
    let func = &mut m.functions[f];
    let old = func.blocks[b].label;
    let tail: Vec<Inst> = func.blocks[b].insts.split_off(at);
    func.blocks[b].insts.push(Inst::new(op::BRANCH, 0, 0, Ops::from_slice(&[label])));
    // The successors now come from `label`: rename the OpPhi parents.
    let term = tail.last().unwrap();
    let succ: Vec<u32> = match term.op {
        op::BRANCH => vec![term.ops[0]],
        op::BRANCH_CONDITIONAL => term.ops[1..3].to_vec(),
        _ => vec![],
    };
    func.blocks.insert(b + 1, shader_rewrite::module::Block { label, insts: tail });
    for blk in func.blocks.iter_mut().filter(|blk| succ.contains(&blk.label)) {
        for phi in blk.insts.iter_mut().filter(|i| i.op == op::PHI) {
            for p in (1..phi.ops.len()).step_by(2) {
                if phi.ops[p] == old {
                    phi.ops[p] = label;
                }
            }
        }
    }
    (old, label)
}

fn split(m: &mut Module, rng: &mut Rng) -> bool {
    let Some((f, b, at)) = choose(&split_points(m), rng) else { return false };
    split_at(m, f, b, at);
    true
}

/// Where a value of type `ty` may go: through an OpPhi / OpSelect (`through_call` false) or
/// through a call's parameter and result (`through_call` true).
fn flows(m: &Module, ty: u32, through_call: bool) -> bool {
    const PHYSICAL: u32 = 5349;
    const STORAGE_BUFFER: u32 = 12;
    const WORKGROUP: u32 = 4;
    const VARIABLE_POINTERS_STORAGE_BUFFER: u32 = 4441;
    const VARIABLE_POINTERS: u32 = 4442;
    const BINDLESS: u32 = 5390;
    match global(m, ty) {
        Some(t) if t.op == op::TYPE_POINTER => match t.ops[0] {
            PHYSICAL => true,
            STORAGE_BUFFER if !through_call => m.has_capability(VARIABLE_POINTERS_STORAGE_BUFFER) || m.has_capability(VARIABLE_POINTERS),
            WORKGROUP if !through_call => m.has_capability(VARIABLE_POINTERS),
            _ => false,
        },
        Some(t) if matches!(t.op, op::TYPE_IMAGE | op::TYPE_SAMPLER | op::TYPE_SAMPLED_IMAGE) => m.has_capability(BINDLESS),
        Some(t) => t.op != op::TYPE_VOID && !small_storage_only(m, ty),
        None => false,
    }
}

/// An 8/16-bit scalar or vector type that only the storage capabilities allow: such values may
/// only be loaded, stored, copied and converted ("Invalid use of 8- or 16-bit result").
fn small_storage_only(m: &Module, ty: u32) -> bool {
    const FLOAT16: u32 = 9;
    const INT16: u32 = 22;
    const INT8: u32 = 39;
    let Some(mut t) = global(m, ty) else { return false };
    if t.op == op::TYPE_VECTOR {
        match global(m, t.ops[0]) {
            Some(c) => t = c,
            None => return false,
        }
    }
    match (t.op, t.ops.first()) {
        (op::TYPE_INT, Some(8)) => !m.has_capability(INT8),
        (op::TYPE_INT, Some(16)) => !m.has_capability(INT16),
        (op::TYPE_FLOAT, Some(16)) => !m.has_capability(FLOAT16),
        _ => false,
    }
}

/// Values (function, block, index) that `flows` lets through, defined by anything but OpPhi,
/// OpVariable, OpSampledImage and raw access chains.
fn flowing_values(m: &Module, through_call: bool) -> Vec<(usize, usize, usize)> {
    places(m, |i| i.id != 0 && i.ty != 0 && !matches!(i.op, op::PHI | op::VARIABLE | op::SAMPLED_IMAGE | op::RAW_ACCESS_CHAIN_NV))
        .into_iter()
        .filter(|&(f, b, i)| flows(m, m.functions[f].blocks[b].insts[i].ty, through_call))
        .collect()
}

fn phi(m: &mut Module, rng: &mut Rng) -> bool {
    let values = flowing_values(m, false);
    let points = split_points(m);
    // A value defined in the block before the cut.
    let pairs: Vec<((usize, usize, usize), usize)> =
        values.iter().flat_map(|&(f, b, i)| points.iter().filter(move |&&(pf, pb, at)| (pf, pb) == (f, b) && at > i).map(move |&(_, _, at)| ((f, b, i), at))).collect();
    let Some(((f, b, i), at)) = choose(&pairs, rng) else { return false };
    let (x, ty) = {
        let inst = &m.functions[f].blocks[b].insts[i];
        (inst.id, inst.ty)
    };
    let (old, label) = split_at(m, f, b, at);
    let p = m.next_id();
    m.functions[f].blocks[b + 1].insts.insert(0, Inst::new(op::PHI, ty, p, Ops::from_slice(&[x, old])));
    // Every use after the cut: the new block dominates all of them.
    let _ = label;
    for (bb, blk) in m.functions[f].blocks.iter_mut().enumerate().skip(b + 1) {
        for (ii, inst) in blk.insts.iter_mut().enumerate() {
            if (bb, ii) == (b + 1, 0) {
                continue;
            }
            for q in id_positions(inst) {
                if inst.ops[q] == x && !(inst.op == op::PHI && q % 2 == 1) {
                    inst.ops[q] = p;
                }
            }
        }
    }
    // Uses in blocks laid out before `b` (loop back edges' phis) stay valid as they were.
    true
}

/// `%id = OpConstantTrue %bool`, declared if missing.
fn constant_true(m: &mut Module) -> u32 {
    const CONSTANT_TRUE: u32 = 41;
    let bool_ty = match m.globals.iter().find(|g| g.op == op::TYPE_BOOL) {
        Some(g) => g.id,
        None => {
            let id = m.next_id();
            m.globals.push(Inst::new(op::TYPE_BOOL, 0, id, Ops::new()));
            id
        }
    };
    if let Some(g) = m.globals.iter().find(|g| g.op == CONSTANT_TRUE && g.ty == bool_ty) {
        return g.id;
    }
    let id = m.next_id();
    m.globals.push(Inst::new(CONSTANT_TRUE, bool_ty, id, Ops::new()));
    id
}

/// Inserts `make(id)` right after the definition at (f, b, i) and points every other use of
/// that value in the function at it.
fn wrap(m: &mut Module, (f, b, i): (usize, usize, usize), make: impl FnOnce(u32, u32, u32) -> Inst) {
    let (x, ty) = {
        let inst = &m.functions[f].blocks[b].insts[i];
        (inst.id, inst.ty)
    };
    let id = m.next_id();
    m.functions[f].blocks[b].insts.insert(i + 1, make(id, ty, x));
    replace_uses(m, f, x, id, (b, i + 1));
}

fn select(m: &mut Module, rng: &mut Rng) -> bool {
    // Before SPIR-V 1.4 only scalars, vectors (with a vector condition) and pointers: scalars
    // and pointers here.
    let old = m.version() < (1, 4);
    let scalar = |m: &Module, ty: u32| global(m, ty).is_some_and(|t| matches!(t.op, op::TYPE_INT | op::TYPE_FLOAT | op::TYPE_BOOL | op::TYPE_POINTER));
    let values: Vec<_> = flowing_values(m, false).into_iter().filter(|&(f, b, i)| !old || scalar(m, m.functions[f].blocks[b].insts[i].ty)).collect();
    let Some(at) = choose(&values, rng) else { return false };
    let t = constant_true(m);
    wrap(m, at, |id, ty, x| Inst::new(op::SELECT, ty, id, Ops::from_slice(&[t, x, x])));
    true
}

fn call(m: &mut Module, rng: &mut Rng) -> bool {
    let Some(at) = choose(&flowing_values(m, true), rng) else { return false };
    let ty = m.functions[at.0].blocks[at.1].insts[at.2].ty;
    // OpTypeFunction %ty %ty (unique, like every non-aggregate type).
    let fn_ty = match m.globals.iter().find(|g| g.op == op::TYPE_FUNCTION && g.ops.as_slice() == [ty, ty]) {
        Some(g) => g.id,
        None => {
            let id = m.next_id();
            m.globals.push(Inst::new(op::TYPE_FUNCTION, 0, id, Ops::from_slice(&[ty, ty])));
            id
        }
    };
    let (fid, param, label) = (m.next_id(), m.next_id(), m.next_id());
    m.functions.push(shader_rewrite::module::Function {
        def: Inst::new(op::FUNCTION, ty, fid, Ops::from_slice(&[0, fn_ty])),
        params: vec![Inst::new(op::FUNCTION_PARAMETER, ty, param, Ops::new())],
        blocks: vec![shader_rewrite::module::Block { label, insts: vec![Inst::new(op::RETURN_VALUE, 0, 0, Ops::from_slice(&[param]))] }],
        end: vec![Inst::new(op::FUNCTION_END, 0, 0, Ops::new())],
    });
    wrap(m, at, |id, ty, x| Inst::new(op::FUNCTION_CALL, ty, id, Ops::from_slice(&[fid, x])));
    true
}

/// A 32-bit integer constant that only arithmetic, comparisons and stored values use.
fn constant(m: &mut Module, rng: &mut Rng) -> bool {
    let ints: Vec<u32> = m.globals.iter().filter(|g| g.op == op::TYPE_INT && g.ops[0] == 32).map(|g| g.id).collect();
    let mut consts: Vec<u32> = m.globals.iter().filter(|g| g.op == op::CONSTANT && ints.contains(&g.ty)).map(|g| g.id).collect();
    // Used by anything but a function's arithmetic: keep (types, composites, decorations,
    // access chains, switches, ...).
    let arithmetic = |o: u32| matches!(o, 126..=204);
    let mut used_elsewhere = std::collections::HashSet::new();
    for g in m.globals.iter().chain(&m.annotations).chain(&m.execution_modes).chain(&m.entry_points) {
        used_elsewhere.extend(g.ops.iter().copied());
    }
    for func in &m.functions {
        for i in func.blocks.iter().flat_map(|b| b.insts.iter()) {
            match i.op {
                o if arithmetic(o) => {}
                // The stored value; a raw access chain's Index and Offset (its Stride stays).
                op::STORE => {
                    used_elsewhere.insert(i.ops[0]);
                }
                op::RAW_ACCESS_CHAIN_NV => {
                    used_elsewhere.extend([i.ops[0], i.ops[1]]);
                    used_elsewhere.extend(i.ops.iter().skip(4).copied());
                }
                _ => used_elsewhere.extend(i.ops.iter().copied()),
            }
        }
    }
    consts.retain(|c| !used_elsewhere.contains(c));
    let Some(c) = choose(&consts, rng) else { return false };
    let value = [0u32, 1, 2, 3, 0xffff_ffff, 0x8000_0000, 255, rng.next() as u32][rng.below(8)];
    m.globals.iter_mut().find(|g| g.id == c).unwrap().ops = Ops::from_slice(&[value]);
    true
}

/// A module to mutate: its name, words, and how spirv-val checks it (target environment and
/// extra flags such as `--scalar-block-layout`).
pub struct Seed {
    pub name: String,
    pub words: Vec<u32>,
    pub env: &'static str,
    pub flags: Vec<String>,
}

/// Runs spirv-val on a module the way `seed` says.
pub type Validate<'a> = dyn Fn(&[u32], &Seed) -> Result<(), String> + 'a;

/// What a [`fuzz`] run saw.
#[derive(Default)]
pub struct Report {
    /// (seed, option set) pairs whose unmutated rewrite validates.
    pub pairs: usize,
    pub mutated: usize,
    /// `Ok` outputs, each checked by spirv-val.
    pub validated: usize,
    /// Mutated modules the options left unchanged.
    pub unchanged: usize,
    pub applied: BTreeMap<&'static str, usize>,
    /// `Unsupported` errors by (opcode, reason), ids left out.
    pub refused: BTreeMap<String, usize>,
    pub failures: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} mutated modules from {} seed/option pairs: {} rewritten and validated by spirv-val, {} unchanged, {} refused, {} failures; mutations applied: {:?}",
            self.mutated,
            self.pairs,
            self.validated,
            self.unchanged,
            self.refused.values().sum::<usize>(),
            self.failures.len(),
            self.applied
        )?;
        for (reason, n) in &self.refused {
            writeln!(f, "  refused {n}x: {reason}")?;
        }
        Ok(())
    }
}

fn save(name: &str, words: &[u32]) -> String {
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    path.display().to_string()
}

/// `iters` mutated modules (1 to 4 mutations each) from `seeds` under `options`, every `Ok`
/// output checked with `validate` (a spirv-val run). Failures: a panic, a `Malformed` error on
/// a well-formed module, an invalid output (inputs and outputs saved to the temporary
/// directory), or a mutation that made a valid seed invalid (a bug of this file).
pub fn fuzz(seeds: &[Seed], options: &[Options], iters: usize, rng_seed: u64, validate: &Validate) -> Report {
    let mut report = Report::default();
    let mut pairs = vec![];
    for (n, s) in seeds.iter().enumerate() {
        for (k, o) in options.iter().enumerate() {
            if let Ok(out) = rewrite(&s.words, o) {
                if out.words != s.words && validate(&out.words, s).is_ok() {
                    pairs.push((n, k));
                }
            }
        }
    }
    report.pairs = pairs.len();
    let mut rng = Rng(rng_seed);
    for it in 0..iters {
        if pairs.is_empty() {
            break;
        }
        let (n, k) = pairs[rng.below(pairs.len())];
        let seed = &seeds[n];
        let Ok(mut m) = Module::parse(&seed.words) else { continue };
        let mut kinds = vec![];
        for _ in 0..1 + rng.below(4) {
            let kind = rng.below(KINDS.len());
            if mutate(&mut m, kind, &mut rng) {
                kinds.push(KINDS[kind]);
                *report.applied.entry(KINDS[kind]).or_default() += 1;
            }
        }
        if kinds.is_empty() {
            continue;
        }
        report.mutated += 1;
        let input = m.assemble();
        let what = format!("mutation {it} of {} ({}) under option set {k}", seed.name, kinds.join(", "));
        let tag = format!("polyfill-valid-{}-{it}", rng_seed);
        match std::panic::catch_unwind(|| rewrite(&input, &options[k])) {
            Err(_) => report.failures.push(format!("{what}: panicked; input {}", save(&format!("{tag}.in.spv"), &input))),
            Ok(Err(RewriteError::Malformed { word_offset, reason })) => {
                report.failures.push(format!("{what}: Malformed at word {word_offset}: {reason}; input {}", save(&format!("{tag}.in.spv"), &input)))
            }
            Ok(Err(RewriteError::Unsupported { instruction, reason })) => {
                let opname = instruction.split(" = ").last().unwrap_or("").split(' ').next().unwrap_or("");
                let key: String = format!("{opname}: {reason}").chars().filter(|c| !c.is_ascii_digit()).take(160).collect();
                *report.refused.entry(key).or_default() += 1;
            }
            Ok(Ok(out)) if out.words == input => report.unchanged += 1,
            Ok(Ok(out)) => {
                report.validated += 1;
                if let Err(e) = validate(&out.words, seed) {
                    // A broken mutation, not the rewriter, when the mutated input of a valid
                    // seed no longer validates itself.
                    match (validate(&seed.words, seed).is_ok(), validate(&input, seed)) {
                        (true, Err(input_err)) => report.failures.push(format!("{what}: the mutation made the input invalid: {input_err}")),
                        _ => report.failures.push(format!(
                            "{what}: output fails spirv-val: {e}\n  input {}\n  output {}",
                            save(&format!("{tag}.in.spv"), &input),
                            save(&format!("{tag}.out.spv"), &out.words)
                        )),
                    }
                }
            }
        }
    }
    report
}

fn functions(m: &mut Module, rng: &mut Rng) -> bool {
    let n = m.functions.len();
    if n < 2 {
        return false;
    }
    let (a, b) = (rng.below(n), rng.below(n));
    m.functions.swap(a, b);
    a != b
}

fn globals(m: &mut Module, rng: &mut Rng) -> bool {
    const TYPE_FORWARD_POINTER: u32 = 39;
    // Adjacent pairs where the second names neither the first nor anything forward-declared.
    let candidates: Vec<usize> = (0..m.globals.len().saturating_sub(1))
        .filter(|&i| {
            let (a, b) = (&m.globals[i], &m.globals[i + 1]);
            a.id != 0 && b.ty != a.id && !b.ops.contains(&a.id) && a.op != TYPE_FORWARD_POINTER && b.op != TYPE_FORWARD_POINTER && a.op != op::EXT_INST && b.op != op::EXT_INST
        })
        .collect();
    let Some(i) = choose(&candidates, rng) else { return false };
    m.globals.swap(i, i + 1);
    true
}
