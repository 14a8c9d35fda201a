//! Rounding to binary16 in 32-bit code, for conversions whose rounding the module fixes
//! (FPRoundingMode RTE / RTZ, the only modes Vulkan allows) or that must happen without 16-bit
//! types. Works on scalars and vectors alike (every operation is component-wise), exact
//! whatever rounding mode the implementation's float arithmetic uses.
use super::*;

/// GLSL.std.450 instructions.
const ROUND_EVEN: u32 = 2;
const TRUNC: u32 = 3;
const FABS: u32 = 4;
const UMAX: u32 = 41;

const OP_F_MUL: u32 = 133;
const OP_BITWISE_XOR: u32 = 198;
const OP_F_ORD_NOT_EQUAL: u32 = 182;
const OP_F_ORD_GREATER_THAN: u32 = 186;

/// f32 value(s) `x` (`n` components) rounded to binary16 precision and range, as f32: to
/// nearest even, or toward zero. Finite values: the quantum of `x`'s binade (2^(e - 10), the
/// subnormal quantum 2^-24 below 2^-14) comes from the exponent bits; `x` scaled to units of it
/// (exact: a power of two, the product between 2^-102 and 2^11) is rounded to an integer by
/// RoundEven / Trunc (exact, defined without a floating-point rounding mode), and scaled back
/// (exact). What lies past the largest finite binary16 value is chosen in integer code:
/// infinity (RTE from 65520 on), 65504 (RTZ of a finite value from 65536 on); infinities and
/// NaNs come through the scaling unchanged (RTE: UMax with infinity keeps them).
/// The cheaper UnpackHalf2x16(PackHalf2x16(x)) is folded to x by Mesa's NIR, which would skip
/// the rounding a real f16 value undergoes.
pub(super) fn round_to_f16(e: &mut Emitter, b: &mut Builder, x: u32, n: u32, rtz: bool) -> u32 {
    let u32t = b.t_u32();
    let ut = b.t_vec(u32t, n);
    let f32t = b.t_float(32);
    let ft = b.t_vec(f32t, n);
    let bool_t = b.t_bool();
    let bt = b.t_vec(bool_t, n);
    let glsl = b.glsl_std450();
    let k = |b: &mut Builder, v: u32| b.c_u32_splat(v, n);
    let bits = e.op(b, op::BITCAST, ut, ops![x]);
    let cabs = k(b, 0x7fff_ffff);
    let a = e.op(b, op::BITWISE_AND, ut, ops![bits, cabs]);
    // Exponent field of the binade, at least that of 2^-14 (the subnormals' quantum is 2^-24).
    let min_normal = k(b, 113 << 23);
    let floor = e.op(b, op::EXT_INST, ut, ops![glsl, UMAX, a, min_normal]);
    let cexp = k(b, 0x7f80_0000);
    let exp = e.op(b, op::BITWISE_AND, ut, ops![floor, cexp]);
    // 2^(10 - e): exponent field 137 - (E - 127) = 264 - E; 2^(e - 10): field 254 - (264 - E).
    let c264 = k(b, 264 << 23);
    let up_bits = e.op(b, op::I_SUB, ut, ops![c264, exp]);
    let c254 = k(b, 254 << 23);
    let down_bits = e.op(b, op::I_SUB, ut, ops![c254, up_bits]);
    let up = e.op(b, op::BITCAST, ft, ops![up_bits]);
    let down = e.op(b, op::BITCAST, ft, ops![down_bits]);
    let scaled = e.op(b, OP_F_MUL, ft, ops![x, up]);
    let whole = e.op(b, op::EXT_INST, ft, ops![glsl, if rtz { TRUNC } else { ROUND_EVEN }, scaled]);
    let rounded = e.op(b, OP_F_MUL, ft, ops![whole, down]);
    // Past the range: RTE from 65520 (the midpoint to 65536) on gives infinity, which UMax
    // makes of every finite value and keeps for infinities and NaNs; RTZ gives 65504 for finite
    // values from 65536 on (a wrapping subtraction leaves infinities and NaNs out).
    let (past, magnitude) = if rtz {
        let c65536 = k(b, 0x4780_0000);
        let from = e.op(b, op::I_SUB, ut, ops![a, c65536]);
        let span = k(b, 0x7f80_0000 - 0x4780_0000);
        let past = e.op(b, op::U_LESS_THAN, bt, ops![from, span]);
        (past, k(b, 0x477f_e000))
    } else {
        let c65520 = k(b, 0x477f_f000);
        let past = e.op(b, op::U_GREATER_THAN_EQUAL, bt, ops![a, c65520]);
        (past, e.op(b, op::EXT_INST, ut, ops![glsl, UMAX, a, cexp]))
    };
    let sign = e.op(b, OP_BITWISE_XOR, ut, ops![bits, a]);
    let big_bits = e.op(b, op::BITWISE_OR, ut, ops![sign, magnitude]);
    let big = e.op(b, op::BITCAST, ft, ops![big_bits]);
    e.op(b, op::SELECT, ft, ops![past, big, rounded])
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
    round_to_f16(e, b, x, n, rtz)
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

/// The same rounding in Rust (the same steps on f32 and u32): conversions of constants are
/// rounded at rewrite time, and the unit tests hold it to IEEE 754.
pub(super) fn round_to_f16_const(x: f32, rtz: bool) -> f32 {
    let bits = x.to_bits();
    let a = bits & 0x7fff_ffff;
    let exp = a.max(113 << 23) & 0x7f80_0000;
    let up = (264u32 << 23).wrapping_sub(exp);
    let down = (254u32 << 23).wrapping_sub(up);
    let scaled = x * f32::from_bits(up);
    let whole = if rtz { scaled.trunc() } else { scaled.round_ties_even() };
    let rounded = whole * f32::from_bits(down);
    let (past, magnitude) = if rtz {
        (a.wrapping_sub(0x4780_0000) < 0x7f80_0000 - 0x4780_0000, 0x477f_e000)
    } else {
        (a >= 0x477f_f000, a.max(0x7f80_0000))
    };
    if past {
        f32::from_bits((bits ^ a) | magnitude)
    } else {
        rounded
    }
}

#[cfg(test)]
mod tests {
    use super::round_to_f16_const;

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
