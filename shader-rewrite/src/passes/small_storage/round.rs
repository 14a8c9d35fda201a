//! Rounding to binary16 in 32-bit integer code, for conversions whose rounding the module fixes
//! (FPRoundingMode RTE / RTZ, the only modes Vulkan allows) or that must happen without 16-bit
//! types. Works on scalars and vectors alike (every operation is component-wise), exact
//! whatever rounding mode the implementation's float arithmetic uses (no float arithmetic).
use super::*;

/// GLSL.std.450 instructions.
const UMIN: u32 = 38;
const FABS: u32 = 4;
const UNPACK_HALF_2X16: u32 = 62;

const OP_U_GREATER_THAN: u32 = 172;
const OP_BITWISE_XOR: u32 = 198;
const OP_U_LESS_THAN: u32 = 176;
const OP_F_ORD_NOT_EQUAL: u32 = 182;
const OP_F_ORD_GREATER_THAN: u32 = 186;

/// binary16 bits (in the low half of each u32 component) of f32 value(s) `x` with `n`
/// components, rounded to nearest even or toward zero.
pub(super) fn f16_bits(e: &mut Emitter, b: &mut Builder, x: u32, n: u32, rtz: bool) -> u32 {
    let u32t = b.t_u32();
    let ut = b.t_vec(u32t, n);
    let bool_t = b.t_bool();
    let bt = b.t_vec(bool_t, n);
    let glsl = b.glsl_std450();
    let k = |b: &mut Builder, v: u32| b.c_u32_splat(v, n);
    let bits = e.op(b, op::BITCAST, ut, ops![x]);
    let cabs = k(b, 0x7fff_ffff);
    let a = e.op(b, op::BITWISE_AND, ut, ops![bits, cabs]);
    // The sign bit alone, moved to binary16's bit 15.
    let sign_bit = e.op(b, OP_BITWISE_XOR, ut, ops![bits, a]);
    let c16 = k(b, 16);
    let sign = e.op(b, op::SHIFT_RIGHT_LOGICAL, ut, ops![sign_bit, c16]);
    let c13 = k(b, 13);
    let a13 = e.op(b, op::SHIFT_RIGHT_LOGICAL, ut, ops![a, c13]);
    let rebias = k(b, 112 << 10); // (127 - 15) << 10: f32 exponent bias to f16 bias
    // `x >> shift` rounded to nearest even, given `q = x >> shift` and `below_half` = half the
    // unit of the shift less one: `(x + half − 1 + odd(q)) >> shift` carries exactly when the
    // bits shifted out are above half, or half with `q` odd (no overflow: `x` < 2^31 here).
    let shift_to_nearest_even = |e: &mut Emitter, b: &mut Builder, x: u32, q: u32, below_half: u32, shift: u32| {
        let one = k(b, 1);
        let odd = e.op(b, op::BITWISE_AND, ut, ops![q, one]);
        let t = e.op(b, op::I_ADD, ut, ops![x, below_half]);
        let t = e.op(b, op::I_ADD, ut, ops![t, odd]);
        e.op(b, op::SHIFT_RIGHT_LOGICAL, ut, ops![t, shift])
    };

    // Normal results (|x| ≥ 2^-14): drop 13 mantissa bits, rounding; a carry moves into the
    // exponent, and past the largest finite value gives infinity (RTE; infinity itself too:
    // its biased exponent is past that value's) or stays at 0x7bff (RTZ).
    let normal = if rtz {
        let h = e.op(b, op::I_SUB, ut, ops![a13, rebias]);
        let max = k(b, 0x7bff);
        e.op(b, op::EXT_INST, ut, ops![glsl, UMIN, h, max])
    } else {
        let cfff = k(b, 0xfff);
        let t = shift_to_nearest_even(e, b, a, a13, cfff, c13);
        let h = e.op(b, op::I_SUB, ut, ops![t, rebias]);
        let inf = k(b, 0x7c00);
        e.op(b, op::EXT_INST, ut, ops![glsl, UMIN, h, inf])
    };

    // Subnormal results (|x| < 2^-14): the 24-bit significand shifted right by 126 - exponent,
    // at most 31 (larger shifts give 0 either way, and shifts ≥ 32 are undefined). Where
    // |x| ≥ 0.5 (a shift of 0, whose half − 1 below shifts by 32; past it 126 − exponent wraps
    // and is clamped) the value is undefined, and only normal results are selected there.
    let c23 = k(b, 23);
    let exp = e.op(b, op::SHIFT_RIGHT_LOGICAL, ut, ops![a, c23]);
    let cmant = k(b, 0x7f_ffff);
    let mant = e.op(b, op::BITWISE_AND, ut, ops![a, cmant]);
    let implicit = k(b, 0x80_0000);
    let m = e.op(b, op::BITWISE_OR, ut, ops![mant, implicit]);
    let c126 = k(b, 126);
    let s = e.op(b, op::I_SUB, ut, ops![c126, exp]);
    let c31 = k(b, 31);
    let s = e.op(b, op::EXT_INST, ut, ops![glsl, UMIN, s, c31]);
    let q = e.op(b, op::SHIFT_RIGHT_LOGICAL, ut, ops![m, s]);
    let subnormal = if rtz {
        q
    } else {
        // half − 1 = 0x7fffffff >> (32 − s).
        let c32 = k(b, 32);
        let r = e.op(b, op::I_SUB, ut, ops![c32, s]);
        let below_half = e.op(b, op::SHIFT_RIGHT_LOGICAL, ut, ops![cabs, r]);
        shift_to_nearest_even(e, b, m, q, below_half, s)
    };

    let min_normal = k(b, 0x3880_0000);
    let is_sub = e.op(b, OP_U_LESS_THAN, bt, ops![a, min_normal]);
    let finite = e.op(b, op::SELECT, ut, ops![is_sub, subnormal, normal]);
    // NaN keeps its top payload bits and becomes quiet.
    let cinf32 = k(b, 0x7f80_0000);
    let is_nan = e.op(b, OP_U_GREATER_THAN, bt, ops![a, cinf32]);
    let c3ff = k(b, 0x3ff);
    let payload = e.op(b, op::BITWISE_AND, ut, ops![a13, c3ff]);
    let qnan = k(b, 0x7e00);
    let nan = e.op(b, op::BITWISE_OR, ut, ops![payload, qnan]);
    let h = if rtz {
        // Toward zero, infinity stays infinity (the normal path saturates at 0x7bff).
        let is_special = e.op(b, op::U_GREATER_THAN_EQUAL, bt, ops![a, cinf32]);
        let inf16 = k(b, 0x7c00);
        let special = e.op(b, op::SELECT, ut, ops![is_nan, nan, inf16]);
        e.op(b, op::SELECT, ut, ops![is_special, special, finite])
    } else {
        e.op(b, op::SELECT, ut, ops![is_nan, nan, finite])
    };
    e.op(b, op::BITWISE_OR, ut, ops![h, sign])
}

/// f32 value(s) of binary16 bits (low half of each component): exact, via UnpackHalf2x16.
pub(super) fn f32_of_f16_bits(e: &mut Emitter, b: &mut Builder, bits: u32, n: u32) -> u32 {
    let f32t = b.t_float(32);
    let v2 = b.t_vec(f32t, 2);
    let u32t = b.t_u32();
    let glsl = b.glsl_std450();
    let comps: Vec<u32> = (0..n)
        .map(|i| {
            let c = if n == 1 { bits } else { e.op(b, op::COMPOSITE_EXTRACT, u32t, ops![bits, i]) };
            let pair = e.op(b, op::EXT_INST, v2, ops![glsl, UNPACK_HALF_2X16, c]);
            e.op(b, op::COMPOSITE_EXTRACT, f32t, ops![pair, 0])
        })
        .collect();
    if n == 1 {
        comps[0]
    } else {
        let ty = b.t_vec(f32t, n);
        e.op(b, op::COMPOSITE_CONSTRUCT, ty, comps)
    }
}

/// What makes two roundings the same code: (from f64, components, toward zero).
pub(super) type RoundKey = (bool, u32, bool);

/// The roundings of a module: a rounding the module does more than once is a function its
/// conversions call (one body instead of one per conversion; drivers inline it back), a
/// rounding done once is emitted in place.
#[derive(Default)]
pub(super) struct Rounders {
    counts: Vec<(RoundKey, u32)>,
    made: Vec<(RoundKey, u32)>,
    /// The shared functions, for the caller to append to the module.
    pub functions: Vec<Function>,
}

impl Rounders {
    /// Notes one conversion rounding the `key` way (before any [`Rounders::round`]).
    pub fn count(&mut self, key: RoundKey) {
        match self.counts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((key, 1)),
        }
    }

    /// f32 value(s) of `x` (f32, or f64 for `key.0`) rounded to binary16.
    pub fn round(&mut self, e: &mut Emitter, b: &mut Builder, x: u32, key: RoundKey) -> u32 {
        let shared = self.counts.iter().any(|&(k, n)| k == key && n >= 2);
        if !shared {
            return round_inline(e, b, x, key);
        }
        let f = match self.made.iter().find(|(k, _)| *k == key) {
            Some(&(_, f)) => f,
            None => self.function(b, key),
        };
        let f32t = b.t_float(32);
        let ret = b.t_vec(f32t, key.1);
        e.op(b, op::FUNCTION_CALL, ret, ops![f, x])
    }

    fn function(&mut self, b: &mut Builder, key: RoundKey) -> u32 {
        let (from64, n, _) = key;
        let f32t = b.t_float(32);
        let ret = b.t_vec(f32t, n);
        let param_scalar = if from64 { b.t_float(64) } else { f32t };
        let param_ty = b.t_vec(param_scalar, n);
        let fn_ty = b.t_fn(ret, &[param_ty]);
        let (id, param, label) = (b.id(), b.id(), b.id());
        let mut e = Emitter::new(label);
        let r = round_inline(&mut e, b, param, key);
        e.stmt(op::RETURN_VALUE, ops![r]);
        // Function control Inline: a hint (SPIR-V spec 3.24).
        self.functions.push(Function {
            def: Inst::new(op::FUNCTION, ret, id, ops![1, fn_ty]),
            params: vec![Inst::new(op::FUNCTION_PARAMETER, param_ty, param, ops![])],
            blocks: vec![crate::module::Block { label, insts: e.take_insts() }],
            end: vec![Inst::new(op::FUNCTION_END, 0, 0, ops![])],
        });
        self.made.push((key, id));
        id
    }
}

fn round_inline(e: &mut Emitter, b: &mut Builder, x: u32, (from64, n, rtz): RoundKey) -> u32 {
    let x = if from64 { f32_round_to_odd(e, b, x, n) } else { x };
    // The cheaper UnpackHalf2x16(PackHalf2x16(x)) is folded to x by Mesa's NIR, which would
    // skip the rounding a real f16 value undergoes.
    let bits = f16_bits(e, b, x, n, rtz);
    f32_of_f16_bits(e, b, bits, n)
}

/// f64 → f32 rounded to odd (truncate, then set the lowest bit if anything was lost), so a
/// second rounding to binary16 gives the correctly rounded result.
pub(super) fn f32_round_to_odd(e: &mut Emitter, b: &mut Builder, d: u32, n: u32) -> u32 {
    let f32t = b.t_float(32);
    let f64t = b.t_float(64);
    let (ft, dt) = (b.t_vec(f32t, n), b.t_vec(f64t, n));
    let u32t = b.t_u32();
    let ut = b.t_vec(u32t, n);
    let bool_t = b.t_bool();
    let bt = b.t_vec(bool_t, n);
    let glsl = b.glsl_std450();
    let f = e.op(b, op::F_CONVERT, ft, ops![d]);
    let back = e.op(b, op::F_CONVERT, dt, ops![f]);
    // NoContraction: Mesa's NIR folds an inexact f2f64(f2f32(d)) to d (nir_opt_algebraic),
    // which made every conversion look exact and the double rounding this avoids come back.
    for c in [f, back] {
        b.decorate(c, deco::NO_CONTRACTION, &[]);
    }
    let inexact = e.op(b, OP_F_ORD_NOT_EQUAL, bt, ops![back, d]);
    let abs_back = e.op(b, op::EXT_INST, dt, ops![glsl, FABS, back]);
    let abs_d = e.op(b, op::EXT_INST, dt, ops![glsl, FABS, d]);
    let away = e.op(b, OP_F_ORD_GREATER_THAN, bt, ops![abs_back, abs_d]);
    let bits = e.op(b, op::BITCAST, ut, ops![f]);
    let (c0, c1) = (b.c_u32_splat(0, n), b.c_u32_splat(1, n));
    let dec = e.op(b, op::SELECT, ut, ops![away, c1, c0]);
    let t = e.op(b, op::I_SUB, ut, ops![bits, dec]);
    let odd = e.op(b, op::BITWISE_OR, ut, ops![t, c1]);
    let r = e.op(b, op::SELECT, ut, ops![inexact, odd, bits]);
    e.op(b, op::BITCAST, ft, ops![r])
}

/// The same rounding in Rust (the same integer steps as [`f16_bits`]): conversions of constants
/// are rounded at rewrite time, and the unit tests hold it to IEEE 754.
fn f16_bits_const(x: f32, rtz: bool) -> u16 {
    let bits = x.to_bits();
    let a = bits & 0x7fff_ffff;
    let sign = ((bits ^ a) >> 16) as u16;
    let h = if a > 0x7f80_0000 {
        0x7e00 | ((a >> 13) & 0x3ff)
    } else if a == 0x7f80_0000 {
        0x7c00
    } else if a < 0x3880_0000 {
        let exp = a >> 23;
        let m = (a & 0x7f_ffff) | 0x80_0000;
        let s = 126u32.wrapping_sub(exp).min(31);
        let q = m >> s;
        if rtz {
            q
        } else {
            (m + (0x7fff_ffff >> (32 - s)) + (q & 1)) >> s
        }
    } else if rtz {
        ((a >> 13) - (112 << 10)).min(0x7bff)
    } else {
        (((a + 0xfff + ((a >> 13) & 1)) >> 13) - (112 << 10)).min(0x7c00)
    };
    h as u16 | sign
}

/// f32 value of `x` rounded to binary16 as [`f16_bits`] then [`f32_of_f16_bits`] round it.
pub(super) fn round_to_f16_const(x: f32, rtz: bool) -> f32 {
    super::legalize::f16_to_f32(f16_bits_const(x, rtz))
}

#[cfg(test)]
mod tests {
    use super::{f16_bits_const, round_to_f16_const};

    /// binary16 of `x` rounded toward zero (IEEE 754; a finite value saturates at 65504).
    fn f16_rtz(x: f32) -> f32 {
        let h = half::f16::from_f32(x);
        if !x.is_finite() {
            return h.to_f32();
        }
        let mut bits = h.to_bits();
        if h.to_f32().abs() > x.abs() {
            bits -= 1;
        }
        if bits & 0x7fff == 0x7c00 {
            bits -= 1;
        }
        half::f16::from_bits(bits).to_f32()
    }

    fn check(x: f32) {
        // The bits a store writes (NaNs: quiet, with the top payload bits).
        let (got, want) = (f16_bits_const(x, false), half::f16::from_f32(x).to_bits());
        if x.is_nan() {
            assert!(got & 0x7e00 == 0x7e00, "{:#x}", x.to_bits());
        } else {
            assert_eq!(got, want, "{:#010x} ({x:e})", x.to_bits());
        }
        for (rtz, want) in [(false, half::f16::from_f32(x).to_f32()), (true, f16_rtz(x))] {
            let got = round_to_f16_const(x, rtz);
            if x.is_nan() {
                assert!(got.is_nan(), "{:#x}", x.to_bits());
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "{:#010x} ({x:e}) rtz {rtz}", x.to_bits());
            }
        }
    }

    #[test]
    fn reference_rounding_matches_ieee() {
        // Every f32 with a stride that visits all exponents and many rounding cases, every
        // binary16 value, the midpoints between neighbours and their neighbours.
        let mut x: u32 = 0;
        while x < u32::MAX - 9973 {
            check(f32::from_bits(x));
            x += 9973;
        }
        for h in 0..=u16::MAX {
            let v = half::f16::from_bits(h).to_f32();
            check(v);
            let next = half::f16::from_bits(h.wrapping_add(1)).to_f32();
            if v.is_finite() && next.is_finite() && (h & 0x7fff) < 0x7bff {
                let mid = ((v as f64 + next as f64) / 2.0) as f32;
                for m in [mid, f32::from_bits(mid.to_bits() - 1), f32::from_bits(mid.to_bits() + 1)] {
                    check(m);
                }
            }
        }
        for x in [65504.0, 65519.99, 65520.0, 65536.0, 1e10, f32::MAX, -65520.0, f32::MIN_POSITIVE, 1e-40, -1e-45, 2.98e-8, 2.99e-8, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -0.0] {
            check(x);
        }
    }
}
