//! Clean-up of what the lowering emitted, so it costs no words the driver must compile:
//! - an OpCopyObject (which the lowering emits for the result id of an instruction it replaced
//!   by a value it already had) is folded into its uses;
//! - u32 scalar arithmetic of constants the lowering emitted (offsets of members at constant
//!   positions) becomes the constant, and `x + 0`, `x * 1`, shifts by 0 become `x`;
//! - pure instructions the lowering emitted whose result nothing uses are dropped.
//!
//! Uses are rewritten only where an operand is certainly an id (leading id operands, OpPhi,
//! GLSL.std.450 operands, instructions whose trailing operands are literals only). A folded id
//! appearing anywhere else (where it might be an id, say an image operand) keeps its
//! instruction, so no use is ever left without a definition.
use super::*;
use crate::module::leading_id_operands;

/// GLSL.std.450 instructions the lowering emits that have no side effect.
const OP_NOT: u32 = 200;
const OP_SHIFT_RIGHT_ARITHMETIC: u32 = 195;

/// Memory operand bits whose operands are literals: Volatile, Aligned, Nontemporal.
const LITERAL_MEMORY_OPERANDS: u32 = 0x1 | 0x2 | 0x4;

/// Where `inst`'s id operands are: `Some(n)` when they are exactly the first `n` operands
/// (the rest literals), `None` when operands after the leading ids may be ids too.
fn id_operands(inst: &Inst) -> Option<usize> {
    let len = inst.ops.len();
    let lead = leading_id_operands(inst.op).min(len);
    match inst.op {
        _ if lead == len => Some(len),
        op::PHI => Some(len),
        op::COMPOSITE_EXTRACT | op::COMPOSITE_INSERT | op::VECTOR_SHUFFLE => Some(lead),
        op::LOAD | op::STORE if inst.ops[lead] & !LITERAL_MEMORY_OPERANDS == 0 => Some(lead),
        _ => None,
    }
}

/// Calls `f` on every operand of `inst` that is certainly an id; returns false when some
/// other operand may be an id as well.
fn for_ids(inst: &mut Inst, glsl: Option<u32>, f: &mut impl FnMut(&mut u32)) -> bool {
    if inst.op == op::EXT_INST && glsl.is_some() && inst.ops.first().copied() == glsl {
        // Set, instruction number (a literal), then ids.
        for (k, o) in inst.ops.iter_mut().enumerate() {
            if k != 1 {
                f(o);
            }
        }
        return true;
    }
    match id_operands(inst) {
        Some(n) => {
            inst.ops[..n].iter_mut().for_each(f);
            true
        }
        None => {
            let lead = leading_id_operands(inst.op).min(inst.ops.len());
            inst.ops[..lead].iter_mut().for_each(f);
            false
        }
    }
}

/// Is an instruction with this opcode free of side effects (dropped when unused)?
fn is_pure(opcode: u32) -> bool {
    matches!(
        opcode,
        op::COPY_OBJECT
            | op::BITCAST
            | op::I_ADD
            | op::I_SUB
            | op::I_MUL
            | op::U_DIV
            | op::SHIFT_LEFT_LOGICAL
            | op::SHIFT_RIGHT_LOGICAL
            | OP_SHIFT_RIGHT_ARITHMETIC
            | op::BITWISE_AND
            | op::BITWISE_OR
            | OP_NOT
            | op::COMPOSITE_CONSTRUCT
            | op::COMPOSITE_EXTRACT
            | op::SELECT
            | op::I_EQUAL
            | op::U_LESS_THAN
            | op::U_GREATER_THAN_EQUAL
            | op::ACCESS_CHAIN
    )
}

/// Folds the module's functions (`first_new`: the first id the lowering allocated; only its
/// own arithmetic is folded or dropped, the module's is left as it was). True when something
/// was dropped.
pub(super) fn fold(m: &mut Module, first_new: u32) -> bool {
    let glsl = m.ext_inst_imports.iter().find(|i| crate::module::string_is(&i.ops, "GLSL.std.450")).map(|i| i.id);
    let mut functions = std::mem::take(&mut m.functions);
    let mut gone: HashSet<u32> = HashSet::with_capacity_and_hasher(128, Default::default());
    let bound = m.header[3] as usize;
    // A builder (for the folded constants) only where there is u32 arithmetic to fold.
    let u32t = m.globals.iter().find(|g| g.op == op::TYPE_INT && g.ops[..] == [32, 0]).map_or(0, |g| g.id);
    let foldable = |i: &Inst| i.id >= first_new && i.ty == u32t && u32t != 0 && (i.op == OP_NOT || is_u32_arith(i.op));
    let any_foldable = functions.iter().flat_map(|f| f.blocks.iter().flat_map(|blk| blk.insts.iter())).any(foldable);
    let mut cx = Globals::of(m, glsl, first_new, bound);
    {
        let mut b = any_foldable.then(|| Builder::new(m));
        for f in functions.iter_mut() {
            fold_function(&mut b, bound, f, u32t, &mut cx, &mut gone);
        }
    }
    m.functions = functions;
    forget_ids(m, &gone);
    !gone.is_empty()
}

/// Removes the variables of `vars` (alias views the lowering declared) that no instruction
/// uses, from the globals and the entry points' interfaces. True when one was removed.
pub(super) fn drop_unused_variables(m: &mut Module, vars: &[u32], stats: &mut Stats) -> bool {
    if vars.is_empty() {
        return false;
    }
    let mut unused: HashSet<u32> = vars.iter().copied().collect();
    for inst in m.functions.iter().flat_map(|f| f.blocks.iter().flat_map(|blk| blk.insts.iter())) {
        for w in inst.ops.iter() {
            unused.remove(w);
        }
    }
    if unused.is_empty() {
        return false;
    }
    m.globals.retain(|g| !unused.contains(&g.id));
    for ep in m.entry_points.iter_mut() {
        let name_end = ep.ops.len() - blocks::interface_ids(ep).len();
        let kept: crate::module::Ops = ep.ops.iter().enumerate().filter(|(i, id)| *i < name_end || !unused.contains(id)).map(|(_, id)| *id).collect();
        ep.ops = kept;
    }
    stats.alias_variables -= unused.len() as u32;
    forget_ids(m, &unused);
    true
}

/// Opcodes [`fold_u32`] folds.
fn is_u32_arith(opcode: u32) -> bool {
    matches!(opcode, op::I_ADD | op::I_SUB | op::I_MUL | op::U_DIV | op::BITWISE_AND | op::BITWISE_OR | op::SHIFT_LEFT_LOGICAL | op::SHIFT_RIGHT_LOGICAL)
}

/// What folding needs to know of the module's globals, in dense tables by id.
struct Globals {
    glsl: Option<u32>,
    first_new: u32,
    decorated: Vec<bool>,
    /// Pointers into memory the shader cannot write: push constants, uniform buffers (not
    /// BufferBlock): loads of the same pointer give the same value. Variables first, access
    /// chains into them added as the functions are folded.
    read_only: Vec<bool>,
    /// Struct types (u32::MAX) and vector types (their size): an OpCompositeConstruct of those
    /// takes one constituent per member or component when it has that many.
    shape: Vec<u32>,
}

impl Globals {
    fn of(m: &Module, glsl: Option<u32>, first_new: u32, bound: usize) -> Self {
        let mut decorated = vec![false; bound];
        let mut buffer_block = vec![false; bound];
        for a in m.annotations.iter().filter(|a| matches!(a.op, op::DECORATE | op::DECORATE_ID | op::DECORATE_STRING)) {
            if let Some(&t) = a.ops.first().filter(|&&t| (t as usize) < bound) {
                decorated[t as usize] = true;
                buffer_block[t as usize] |= a.op == op::DECORATE && a.ops.get(1) == Some(&deco::BUFFER_BLOCK);
            }
        }
        let mut shape = vec![0u32; bound];
        // Position + 1 of each global.
        let mut index = vec![0u32; bound];
        for (n, g) in m.globals.iter().enumerate() {
            let Some(slot) = index.get_mut(g.id as usize).filter(|_| g.id != 0) else { continue };
            *slot = n as u32 + 1;
            match g.op {
                op::TYPE_STRUCT => shape[g.id as usize] = u32::MAX,
                op::TYPE_VECTOR => shape[g.id as usize] = g.ops[1],
                _ => {}
            }
        }
        let global = |id: u32| index.get(id as usize).filter(|&&n| n != 0).map(|&n| &m.globals[n as usize - 1]);
        let mut read_only = vec![false; bound];
        for g in m.globals.iter().filter(|g| g.op == op::VARIABLE && (g.id as usize) < bound) {
            let Some(ptr) = global(g.ty).filter(|p| p.op == op::TYPE_POINTER) else { continue };
            read_only[g.id as usize] = match ptr.ops[0] {
                sc::PUSH_CONSTANT => true,
                sc::UNIFORM => {
                    let mut t = ptr.ops[1];
                    for _ in 0..8 {
                        match global(t) {
                            Some(a) if matches!(a.op, op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY) => t = a.ops[0],
                            _ => break,
                        }
                    }
                    shape.get(t as usize) == Some(&u32::MAX) && !buffer_block[t as usize]
                }
                _ => false,
            };
        }
        Globals { glsl, first_new, decorated, read_only, shape }
    }

    fn decorated(&self, id: u32) -> bool {
        self.decorated.get(id as usize).copied().unwrap_or(false)
    }
}

/// GLSL.std.450 instructions without side effects or pointer operands that the lowering emits.
fn pure_glsl(number: u32) -> bool {
    matches!(number, 2 | 3 | 4 | 38 | 41 | 58 | 62)
}

fn fold_function(b: &mut Option<Builder>, bound: usize, f: &mut Function, u32t: u32, cx: &mut Globals, gone: &mut HashSet<u32>) {
    let (glsl, first_new) = (cx.glsl, cx.first_new);
    // The constituents of composite constructs.
    let mut constructs: HashMap<u32, crate::module::Ops> = HashMap::with_capacity_and_hasher(16, Default::default());
    // The lowering's pure instructions (up to four operands) of the current block, for reuse.
    let mut seen: HashMap<(u32, u32, [u32; 4]), u32> = HashMap::with_capacity_and_hasher(64, Default::default());
    // Id → what it stands for (0: itself).
    let mut alias: Vec<u32> = vec![0; bound];
    let resolve = |alias: &Vec<u32>, id: u32| match alias.get(id as usize) {
        Some(&a) if a != 0 => a,
        _ => id,
    };
    let mut any = false;
    for blk in f.blocks.iter_mut() {
        seen.clear();
        for inst in blk.insts.iter_mut() {
            if inst.op == op::PHI {
                continue; // operands may be defined later: rewritten below
            }
            for_ids(inst, glsl, &mut |o| *o = resolve(&alias, *o));
            // An extract from a construct: the constituent, or an extract from it.
            let mut part_of = 0;
            if inst.op == op::COMPOSITE_EXTRACT && inst.ops.len() >= 2 {
                if let Some(&part) = constructs.get(&inst.ops[0]).and_then(|parts| parts.get(inst.ops[1] as usize)) {
                    if inst.ops.len() == 2 {
                        part_of = part;
                    } else {
                        let rest: crate::module::Ops = inst.ops[2..].iter().copied().collect();
                        inst.ops = std::iter::once(part).chain(rest).collect();
                    }
                }
            }
            if inst.op == op::COMPOSITE_CONSTRUCT && cx.shape.get(inst.ty as usize).is_some_and(|&k| k == u32::MAX || k == inst.ops.len() as u32) {
                constructs.insert(inst.id, inst.ops.clone());
            }
            if matches!(inst.op, op::ACCESS_CHAIN | op::IN_BOUNDS_ACCESS_CHAIN | op::COPY_OBJECT)
                && inst.ops.first().is_some_and(|&p| cx.read_only.get(p as usize) == Some(&true))
            {
                if let Some(r) = cx.read_only.get_mut(inst.id as usize) {
                    *r = true;
                }
            }
            let (x, y) = (inst.ops.first().copied().unwrap_or(0), inst.ops.get(1).copied().unwrap_or(0));
            let to = match (inst.op, b.as_mut()) {
                _ if part_of != 0 && !cx.decorated(inst.id) => part_of,
                (op::COPY_OBJECT, _) if inst.ops.len() == 1 && !cx.decorated(inst.id) => x,
                (OP_NOT, Some(b)) if inst.id >= first_new && inst.ty == u32t && inst.ops.len() == 1 => u32_value(b, x).map_or(0, |v| b.c_u32(!v)),
                (_, Some(b)) if inst.id >= first_new && inst.ty == u32t && inst.ops.len() == 2 && is_u32_arith(inst.op) => {
                    match fold_u32(inst.op, u32_value(b, x), u32_value(b, y), x, y) {
                        Some(Ok(v)) => b.c_u32(v),
                        Some(Err(same)) => same,
                        None => 0,
                    }
                }
                _ => 0,
            };
            // The same pure instruction (or load of read-only memory) earlier in the block.
            let cse = inst.id >= first_new
                && !cx.decorated(inst.id)
                && match inst.op {
                    op::COPY_OBJECT => false,
                    op::EXT_INST => inst.ops.first().copied() == glsl && glsl.is_some() && inst.ops.get(1).is_some_and(|&n| pure_glsl(n)),
                    op::LOAD => inst.ops.len() == 1 && cx.read_only.get(inst.ops[0] as usize) == Some(&true),
                    opcode => is_pure(opcode),
                };
            let to = if to == 0 && cse && inst.ops.len() <= 4 {
                let mut key_ops = [u32::MAX; 4];
                key_ops[..inst.ops.len()].copy_from_slice(&inst.ops);
                match seen.entry((inst.op, inst.ty, key_ops)) {
                    std::collections::hash_map::Entry::Occupied(o) => *o.get(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(inst.id);
                        0
                    }
                }
            } else {
                to
            };
            if to != 0 && (inst.id as usize) < bound {
                alias[inst.id as usize] = to;
                any = true;
            }
        }
    }
    // Uses where an alias may stand in an unknown operand position keep its definition.
    let mut kept: Vec<bool> = vec![false; if any { bound } else { 0 }];
    if any {
        for inst in f.blocks.iter_mut().flat_map(|blk| blk.insts.iter_mut()) {
            let lead = leading_id_operands(inst.op).min(inst.ops.len());
            let complete = for_ids(inst, glsl, &mut |o| *o = resolve(&alias, *o));
            if !complete {
                for &w in &inst.ops[lead..] {
                    if alias.get(w as usize).is_some_and(|&a| a != 0) {
                        kept[w as usize] = true;
                    }
                }
            }
        }
    }
    // Uses of the lowering's own pure results, to drop the unused ones.
    let mut used: Vec<u32> = vec![0; bound];
    for inst in f.blocks.iter().flat_map(|blk| blk.insts.iter()) {
        for &w in inst.ops.iter() {
            if let Some(u) = used.get_mut(w as usize) {
                *u += 1;
            }
        }
    }
    for blk in f.blocks.iter_mut().rev() {
        let mut keep: Vec<bool> = Vec::with_capacity(blk.insts.len());
        for inst in blk.insts.iter().rev() {
            let id = inst.id as usize;
            let folded = alias.get(id).is_some_and(|&a| a != 0) && !kept.get(id).copied().unwrap_or(false);
            let dead = inst.id >= first_new && is_pure(inst.op) && used.get(id) == Some(&0) && !cx.decorated(inst.id);
            let drop = inst.id != 0 && (folded || dead);
            if drop {
                gone.insert(inst.id);
                for &w in inst.ops.iter() {
                    if let Some(u) = used.get_mut(w as usize) {
                        *u = u.saturating_sub(1);
                    }
                }
            }
            keep.push(!drop);
        }
        keep.reverse();
        let mut k = keep.into_iter();
        blk.insts.retain(|_| k.next().unwrap_or(true));
    }
}

fn u32_value(b: &Builder, id: u32) -> Option<u32> {
    b.const_value(id).and_then(|v| u32::try_from(v).ok())
}

/// `x op y` on u32 scalars: Ok(value) for constants, Err(id) for an identity, None otherwise.
fn fold_u32(opcode: u32, vx: Option<u32>, vy: Option<u32>, x: u32, y: u32) -> Option<Result<u32, u32>> {
    Some(match (opcode, vx, vy) {
        (op::I_ADD, Some(p), Some(q)) => Ok(p.wrapping_add(q)),
        (op::I_SUB, Some(p), Some(q)) => Ok(p.wrapping_sub(q)),
        (op::I_MUL, Some(p), Some(q)) => Ok(p.wrapping_mul(q)),
        (op::U_DIV, Some(p), Some(q)) if q != 0 => Ok(p / q),
        (op::BITWISE_AND, Some(p), Some(q)) => Ok(p & q),
        (op::BITWISE_OR, Some(p), Some(q)) => Ok(p | q),
        // Shifts by 32 or more are undefined (SPIR-V spec OpShiftLeftLogical): left alone.
        (op::SHIFT_LEFT_LOGICAL, Some(p), Some(q)) if q < 32 => Ok(p << q),
        (op::SHIFT_RIGHT_LOGICAL, Some(p), Some(q)) if q < 32 => Ok(p >> q),
        (op::I_ADD | op::BITWISE_OR, Some(0), _) => Err(y),
        (op::I_ADD | op::I_SUB | op::BITWISE_OR | op::SHIFT_LEFT_LOGICAL | op::SHIFT_RIGHT_LOGICAL, _, Some(0)) => Err(x),
        (op::I_MUL, Some(1), _) => Err(y),
        (op::I_MUL | op::U_DIV, _, Some(1)) => Err(x),
        (op::I_MUL | op::BITWISE_AND, Some(0), _) | (op::I_MUL | op::BITWISE_AND, _, Some(0)) => Ok(0),
        (op::SHIFT_LEFT_LOGICAL | op::SHIFT_RIGHT_LOGICAL, Some(0), _) => Ok(0),
        _ => return None,
    })
}
