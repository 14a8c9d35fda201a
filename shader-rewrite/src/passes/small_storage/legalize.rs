//! After the storage capabilities are gone, a module without Float16 / Int16 / Int8 arithmetic
//! may not declare 16-bit floats / 16-bit ints / 8-bit ints at all (SPV_KHR_16bit_storage: the
//! storage capabilities are what allowed the types). Such values then only ever were loaded,
//! stored, copied, put in composites or width-converted, so each of those types is replaced by
//! its 32-bit twin holding the same value:
//! - floats: the f32 with the same value (f16 → f32 is exact);
//! - ints: sign-extended for signed types, zero-extended for unsigned ones.
//!
//! Width conversions are rewritten to keep those meanings: f32 → f16 rounds in integer code (to
//! nearest even, or toward zero under FPRoundingMode RTZ or a 16-bit RoundingModeRTZ execution
//! mode), conversions to wider types and conversions of values known to be exact become copies,
//! int truncations re-extend.
//!
//! With the arithmetic capability present the types stay; FConvert decorated FPRoundingMode
//! still gets its rounding done in integer code (the decoration is only valid on conversions
//! stored through 16-bit pointers, which the lowering removed).
use crate::builder::cap;
use super::round::{round_to_f16_const, RoundKey, Rounders};
use super::*;

const FP_ROUNDING_MODE: u32 = 39;
const ROUNDING_RTZ: u32 = 1;
const OP_SHIFT_RIGHT_ARITHMETIC: u32 = 195;
const OP_SPEC_CONSTANT: u32 = 50;
const OP_SPEC_CONSTANT_OP: u32 = 52;
/// Float-controls execution mode RoundingModeRTZ (SPV_KHR_float_controls), with a target width.
const ROUNDING_MODE_RTZ: u32 = 4463;

/// Which small types are still legal in the module.
struct Legal {
    f16: bool,
    i16: bool,
    i8: bool,
}

impl Legal {
    fn of(m: &Module) -> Self {
        let any = |caps: &[u32]| caps.iter().any(|&c| m.has_capability(c));
        let storage16 = any(&[4433, 4434, 4435, 4436]);
        Legal { f16: storage16 || any(&[cap::FLOAT16]), i16: storage16 || any(&[cap::INT16]), i8: any(&[cap::INT8, 4448, 4449, 4450]) }
    }
    /// Is scalar type instruction `t` an 8/16-bit type that must go?
    fn replaced(&self, t: &Inst) -> bool {
        match (t.op, t.ops.first()) {
            (op::TYPE_FLOAT, Some(16)) => !self.f16,
            (op::TYPE_INT, Some(16)) => !self.i16,
            (op::TYPE_INT, Some(8)) => !self.i8,
            _ => false,
        }
    }
}

/// A widened scalar or vector type, as it was.
#[derive(Debug, Clone, Copy)]
struct Small {
    float: bool,
    signed: bool,
    width: u32,
    n: u32,
}

/// `float16`: the target has shaderFloat16, so a rounding to binary16 with the implementation's
/// default rounding may be the driver's own conversion ([`native_rounding`]).
pub(super) fn legalize(m: &mut Module, exact: &HashSet<u32>, float16: bool, stats: &mut Stats) -> Result<(), RewriteError> {
    let legal = Legal::of(m);
    let rounding: HashMap<u32, u32> = m
        .annotations
        .iter()
        .filter(|a| a.op == op::DECORATE && a.ops.len() >= 3 && a.ops[1] == FP_ROUNDING_MODE)
        .map(|a| (a.ops[0], a.ops[2]))
        .collect();
    let replaced_any = m.globals.iter().any(|g| legal.replaced(g));
    if !replaced_any && rounding.is_empty() {
        return Ok(());
    }

    // Before any change: what every small type was, and the type of every value (dense tables
    // by id: every instruction is looked at).
    let bound = m.header[3] as usize;
    let mut small: Vec<Option<Small>> = vec![None; bound];
    let mut scalar: Vec<Option<Small>> = vec![None; bound];
    let mut value_ty: Vec<u32> = vec![0; bound];
    let at = |v: &Vec<Option<Small>>, id: u32| v.get(id as usize).copied().flatten();
    for g in &m.globals {
        let id = g.id as usize;
        match g.op {
            op::TYPE_INT | op::TYPE_FLOAT if id < bound => {
                let s = Small { float: g.op == op::TYPE_FLOAT, signed: g.ops.get(1).is_some_and(|&x| x != 0), width: g.ops[0], n: 1 };
                if legal.replaced(g) { small[id] = Some(s) } else { scalar[id] = Some(s) }
            }
            op::TYPE_VECTOR if id < bound => {
                if let Some(c) = at(&small, g.ops[0]) {
                    small[id] = Some(Small { n: g.ops[1], ..c });
                } else if let Some(c) = at(&scalar, g.ops[0]) {
                    scalar[id] = Some(Small { n: g.ops[1], ..c });
                }
            }
            _ => {}
        }
        if g.id != 0 && id < bound {
            value_ty[id] = g.ty;
        }
        if matches!(g.op, OP_SPEC_CONSTANT | OP_SPEC_CONSTANT_OP) && at(&small, g.ty).is_some() {
            return Err(RewriteError::unsupported(
                format!("%{} = OpSpecConstant", g.id),
                "an 8/16-bit specialization constant in a module without 8/16-bit arithmetic (its specialization data size would change)",
            ));
        }
    }
    for f in &m.functions {
        for i in f.params.iter().chain(f.blocks.iter().flat_map(|b| b.insts.iter())) {
            if let Some(t) = value_ty.get_mut(i.id as usize).filter(|_| i.id != 0) {
                *t = i.ty;
            }
        }
    }
    let is_small = |ty: u32| at(&small, ty).is_some();
    let kind_of = |ty: u32| -> Option<Small> { at(&small, ty).or_else(|| at(&scalar, ty)) };
    let ty_of = |id: u32| value_ty.get(id as usize).copied().unwrap_or(0);

    // 1. Types: replace, then drop non-aggregate duplicates (SPIR-V spec 2.8). The first
    //    declaration of a shape wins, so every use still follows its definition.
    let mut sub: Vec<u32> = vec![];
    if replaced_any {
        sub = (0..bound as u32).collect();
        let mut canon: HashMap<(u32, crate::module::Ops), u32> = HashMap::default();
        let mut removed: HashSet<u32> = HashSet::default();
        let s = |sub: &Vec<u32>, id: u32| sub.get(id as usize).copied().unwrap_or(id);
        for g in m.globals.iter_mut() {
            if g.ty != 0 {
                g.ty = s(&sub, g.ty);
            }
            match g.op {
                op::TYPE_VECTOR | op::TYPE_MATRIX | op::TYPE_ARRAY | op::TYPE_RUNTIME_ARRAY | TYPE_IMAGE | TYPE_SAMPLED_IMAGE => g.ops[0] = s(&sub, g.ops[0]),
                op::TYPE_POINTER => g.ops[1] = s(&sub, g.ops[1]),
                op::TYPE_STRUCT | op::TYPE_FUNCTION => {
                    for o in g.ops.iter_mut() {
                        *o = s(&sub, *o);
                    }
                }
                _ => {}
            }
            if let Some(k) = at(&small, g.id).filter(|k| k.n == 1) {
                g.ops = if k.float { ops![32] } else { ops![32, k.signed as u32] };
                stats.widened_types += 1;
            }
            if matches!(g.op, op::TYPE_VOID | op::TYPE_BOOL | op::TYPE_INT | op::TYPE_FLOAT | op::TYPE_VECTOR | op::TYPE_MATRIX | op::TYPE_POINTER | op::TYPE_FUNCTION) {
                match canon.get(&(g.op, g.ops.clone())) {
                    Some(&first) => {
                        if let Some(x) = sub.get_mut(g.id as usize) {
                            *x = first;
                        }
                        removed.insert(g.id);
                    }
                    None => {
                        canon.insert((g.op, g.ops.clone()), g.id);
                    }
                }
            }
            // Constants of a replaced type: the same value in 32 bits.
            if g.op == op::CONSTANT {
                if let Some(k) = at(&small, ty_of(g.id)) {
                    let lit = g.ops.first().copied().unwrap_or(0);
                    g.ops = ops![widen_literal(lit, k)];
                }
            }
        }
        m.globals.retain(|g| !removed.contains(&g.id));
        forget_ids(m, &removed);
    }
    let sub_of = |id: u32| sub.get(id as usize).copied().unwrap_or(id);

    // 2. Function bodies: retype in place, and rebuild the blocks holding a width conversion
    //    (or a bitcast) of an 8/16-bit value.
    let needs_rewrite = |inst: &Inst| -> bool {
        matches!(inst.op, op::F_CONVERT | op::U_CONVERT | op::S_CONVERT | op::BITCAST)
            && (is_small(inst.ty) || inst.ops.first().is_some_and(|&s| is_small(ty_of(s))) || rounding.contains_key(&inst.id))
    };
    let mut functions = std::mem::take(&mut m.functions);
    let mut b = Builder::new(m);
    let u32t = b.t_u32();
    // An undecorated conversion rounds as a float-controls execution mode says
    // (SPV_KHR_float_controls RoundingModeRTZ with width 16), else to nearest even.
    let rtz_mode = b.m.execution_modes.iter().any(|e| e.ops.get(1) == Some(&ROUNDING_MODE_RTZ) && e.ops.get(2) == Some(&16));
    let rtz_of = |id: u32| rounding.get(&id).map_or(rtz_mode, |&r| r == ROUNDING_RTZ);
    // How an FConvert to a 16-bit float that is not exact rounds (None: a constant, rounded
    // here), given its source, original result type and id.
    let round_key = |b: &Builder, src: u32, orig_ty: u32, id: u32| -> Option<RoundKey> {
        let (fk, tk) = (kind_of(ty_of(src))?, kind_of(orig_ty)?);
        let small_to = is_small(orig_ty);
        let rounds = small_to || (tk.width == 16 && rounding.contains_key(&id));
        let constant = fk.width == 32 && tk.n == 1 && b.global(src).is_some_and(|c| c.op == op::CONSTANT);
        (rounds && !(exact.contains(&id) && small_to) && !constant).then(|| (fk.width == 64, tk.n, rtz_of(id)))
    };
    // An undecorated rounding with no rounding execution mode is the conversion the driver
    // would make natively: on a target with shaderFloat16, that conversion itself.
    let native = |id: u32| float16 && !rounding.contains_key(&id) && !rtz_mode;
    let mut rounders = Rounders::default();
    for inst in functions.iter().flat_map(|f| f.blocks.iter().flat_map(|blk| blk.insts.iter())) {
        if inst.op == op::F_CONVERT {
            let key = round_key(&b, inst.ops.first().copied().unwrap_or(0), inst.ty, inst.id);
            if let Some(key) = key.filter(|_| !native(inst.id)) {
                rounders.count(key);
            }
        }
    }
    for f in functions.iter_mut() {
        f.def.ty = sub_of(f.def.ty);
        if let Some(t) = f.def.ops.get_mut(1) {
            *t = sub_of(*t);
        }
        for p in f.params.iter_mut() {
            p.ty = sub_of(p.ty);
        }
        for blk in f.blocks.iter_mut() {
            if !blk.insts.iter().any(needs_rewrite) {
                if !sub.is_empty() {
                    for inst in blk.insts.iter_mut() {
                        inst.ty = sub_of(inst.ty);
                    }
                }
                continue;
            }
            let mut e = Emitter::new(blk.label);
            for mut inst in std::mem::take(&mut blk.insts) {
                let orig_ty = inst.ty;
                inst.ty = sub_of(inst.ty);
                let src = inst.ops.first().copied().unwrap_or(0);
                let from = kind_of(ty_of(src));
                let to = kind_of(orig_ty);
                let small_from = is_small(ty_of(src));
                let small_to = is_small(orig_ty);
                match (inst.op, from, to) {
                    (op::F_CONVERT, Some(_), Some(tk)) if small_to || (tk.width == 16 && rounding.contains_key(&inst.id)) => {
                        let rtz = rtz_of(inst.id);
                        let v = if exact.contains(&inst.id) && small_to {
                            src
                        } else {
                            // No FPRoundingMode: round to nearest even.
                            let key = round_key(&b, src, orig_ty, inst.id);
                            let f = match key {
                                Some((_, n, _)) if native(inst.id) => native_rounding(&mut e, &mut b, src, n),
                                Some(key) => rounders.round(&mut e, &mut b, src, key),
                                None => {
                                    let x = b.global(src).map_or(0, |c| c.ops[0]);
                                    b.c_f32(round_to_f16_const(f32::from_bits(x), rtz))
                                }
                            };
                            stats.rounded_conversions += 1;
                            if small_to { f } else { e.op(&mut b, op::F_CONVERT, inst.ty, ops![f]) } // exact
                        };
                        if !e.rename_last(v, inst.id) {
                            e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![v]));
                        }
                    }
                    (op::F_CONVERT, Some(_), Some(tk)) if small_from => {
                        if tk.width == 32 {
                            e.push(Inst::new(op::COPY_OBJECT, inst.ty, inst.id, ops![src]));
                        } else {
                            e.push(inst); // f32 → f64: exact
                        }
                    }
                    (op::U_CONVERT | op::S_CONVERT, Some(fk), Some(tk)) if (small_from || small_to) && holds_result(&inst, fk, tk, small_from, small_to, exact) => {
                        // The source's 32 bits are already the result's.
                        let opcode = if sub_of(ty_of(src)) == inst.ty { op::COPY_OBJECT } else { op::BITCAST };
                        e.push(Inst::new(opcode, inst.ty, inst.id, ops![src]));
                    }
                    (op::U_CONVERT | op::S_CONVERT, Some(fk), Some(tk)) if small_from || small_to => {
                        let n = fk.n;
                        let ut = b.t_vec(u32t, n);
                        // The low 32 bits as uint.
                        let low = if fk.width == 64 {
                            e.op(&mut b, op::U_CONVERT, ut, ops![src])
                        } else if fk.signed {
                            e.op(&mut b, op::BITCAST, ut, ops![src])
                        } else {
                            src
                        };
                        // Widening extends the source's bits by the opcode; truncation keeps the low bits.
                        let x = if fk.width < tk.width { extend(&mut e, &mut b, low, fk.width, inst.op == op::S_CONVERT, n) } else { low };
                        let v = if small_to {
                            // A small result holds the extension of its low bits by its own signedness.
                            extend(&mut e, &mut b, x, tk.width, tk.signed, n)
                        } else if tk.width == 64 {
                            let i32t = b.t_int(32, true);
                            let it = b.t_vec(i32t, n);
                            let y = if inst.op == op::S_CONVERT { e.op(&mut b, op::BITCAST, it, ops![x]) } else { x };
                            e.op(&mut b, inst.op, inst.ty, ops![y])
                        } else {
                            x
                        };
                        let opcode = if tk.width <= 32 && tk.signed { op::BITCAST } else { op::COPY_OBJECT };
                        e.push(Inst::new(opcode, inst.ty, inst.id, ops![v]));
                    }
                    (op::BITCAST, _, _) if small_from || small_to => {
                        return Err(RewriteError::unsupported(
                            format!("%{} = OpBitcast", inst.id),
                            "a bitcast of an 8/16-bit value in a module without 8/16-bit arithmetic",
                        ))
                    }
                    _ => e.push(inst),
                }
            }
            blk.insts = e.take_insts();
        }
    }
    functions.append(&mut rounders.functions);
    b.m.functions = functions;
    let m = b.m;
    m.annotations.retain(|a| !(a.op == op::DECORATE && a.ops.len() >= 2 && a.ops[1] == FP_ROUNDING_MODE));
    Ok(())
}

/// f32 value(s) of `x` (f32 or f64, `n` components) rounded to binary16 by the driver: an
/// `OpFConvert` to a 16-bit float and one back, the first decorated NoContraction (Float16 is
/// added). Without the decoration Mesa's NIR folds the pair to `x` (an inexact rule, which
/// NoContraction's `exact` stops; seen on lavapipe, `small_storage_io16`). The rounding is the
/// implementation's default, as the module's own conversion would be natively.
fn native_rounding(e: &mut Emitter, b: &mut Builder, x: u32, n: u32) -> u32 {
    b.m.add_capability(cap::FLOAT16);
    let (f16t, f32t) = (b.t_float(16), b.t_float(32));
    let (h_ty, f_ty) = (b.t_vec(f16t, n), b.t_vec(f32t, n));
    let h = e.op(b, op::F_CONVERT, h_ty, ops![x]);
    b.decorate(h, deco::NO_CONTRACTION, &[]);
    e.op(b, op::F_CONVERT, f_ty, ops![h])
}

const TYPE_IMAGE: u32 = 25;
const TYPE_SAMPLED_IMAGE: u32 = 27;

/// The 32-bit literal holding the value of an 8/16-bit constant's literal.
fn widen_literal(lit: u32, k: Small) -> u32 {
    if k.float {
        f16_to_f32(lit as u16).to_bits()
    } else {
        let shift = 32 - k.width;
        if k.signed { (((lit << shift) as i32) >> shift) as u32 } else { (lit << shift) >> shift }
    }
}

/// The f32 with the value of binary16 bits `h` (exact).
pub(super) fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let mant = (h & 0x3ff) as f32;
    match exp {
        0 => sign * mant * 2f32.powi(-24),
        31 if mant == 0.0 => sign * f32::INFINITY,
        31 => f32::from_bits(0x7f80_0000 | ((h as u32 & 0x8000) << 16) | ((h as u32 & 0x3ff) << 13)),
        _ => sign * (1.0 + mant / 1024.0) * 2f32.powi(exp - 15),
    }
}

/// Does the 32-bit twin of an int conversion's source already hold its result? A small value's
/// twin holds its extension by its own signedness (see the module documentation), and an exact
/// conversion from 8/16-bit memory converts the twin the backend extended that way. Widening by
/// the source's own signedness then changes no bit, up to 32 bits, or to a small result of
/// that signedness.
fn holds_result(inst: &Inst, from: Small, to: Small, small_from: bool, small_to: bool, exact: &HashSet<u32>) -> bool {
    let op_signed = inst.op == op::S_CONVERT;
    (small_to && exact.contains(&inst.id))
        || (small_from && from.width < to.width && op_signed == from.signed && (to.width == 32 || (small_to && to.signed == op_signed)))
}

/// The low `width` bits of uint value(s) `x`, sign- or zero-extended to 32 bits (as uint).
fn extend(e: &mut Emitter, b: &mut Builder, x: u32, width: u32, signed: bool, n: u32) -> u32 {
    if width >= 32 {
        return x;
    }
    let u32t = b.t_u32();
    let ut = b.t_vec(u32t, n);
    if signed {
        let i32t = b.t_int(32, true);
        let it = b.t_vec(i32t, n);
        let s = b.c_u32_splat(32 - width, n);
        let up = e.op(b, op::SHIFT_LEFT_LOGICAL, ut, ops![x, s]);
        let i = e.op(b, op::BITCAST, it, ops![up]);
        let down = e.op(b, OP_SHIFT_RIGHT_ARITHMETIC, it, ops![i, s]);
        e.op(b, op::BITCAST, ut, ops![down])
    } else {
        let mask = b.c_u32_splat((1u32 << width) - 1, n);
        e.op(b, op::BITWISE_AND, ut, ops![x, mask])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn f16_literals_widen_exactly() {
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32();
            let got = super::f16_to_f32(h);
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{h:#06x}: {got:e} vs {want:e}");
        }
    }
}
