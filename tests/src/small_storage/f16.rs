//! IEEE binary16 on the CPU: exact f16 → f32, and f32 → f16 with round-to-nearest-even (RTE) or
//! round-toward-zero (RTZ) — the two `FPRoundingMode`s Vulkan allows.

/// Rounding of a narrowing float conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rounding {
    /// Round to nearest, ties to even.
    Rte,
    /// Round toward zero.
    Rtz,
}

/// f16 bits → f32 (exact; NaNs become a quiet NaN with the payload shifted up).
pub fn to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as i32;
    let man = (h & 0x3ff) as u32;
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            // Subnormal: man × 2^-24.
            let v = man as f32 * f32::from_bits(0x3380_0000); // 2^-24
            return if sign != 0 { -v } else { v };
        }
        31 => sign | 0x7f80_0000 | (man << 13),
        _ => sign | (((exp - 15 + 127) as u32) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// f32 → f16 bits with the given rounding (subnormal results are produced, not flushed).
pub fn from_f32(x: f32, mode: Rounding) -> u16 {
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_nan() {
        return sign | 0x7e00;
    }
    let a = x.abs() as f64;
    if a.is_infinite() {
        return sign | 0x7c00;
    }
    if a == 0.0 {
        return sign;
    }
    // Exponent of the result's unit in the last place: normal numbers have 10 fraction bits.
    let e = a.log2().floor() as i32;
    let e = if 2f64.powi(e) > a { e - 1 } else if 2f64.powi(e + 1) <= a { e + 1 } else { e };
    let ulp_exp = e.max(-14) - 10;
    let scaled = a / 2f64.powi(ulp_exp); // exact (power-of-two division of an f32 in f64)
    let mut m = scaled.floor();
    let frac = scaled - m;
    if mode == Rounding::Rte && (frac > 0.5 || (frac == 0.5 && (m as u64) % 2 == 1)) {
        m += 1.0;
    }
    let value = m * 2f64.powi(ulp_exp);
    if value > 65504.0 {
        // Overflow: RTE rounds to infinity, RTZ stays at the largest finite value.
        return sign | if mode == Rounding::Rte { 0x7c00 } else { 0x7bff };
    }
    // Re-encode `value` (now exactly representable).
    let bits = if value < 2f64.powi(-14) {
        (value / 2f64.powi(-24)) as u16
    } else {
        let e = value.log2().floor() as i32;
        let e = if 2f64.powi(e) > value { e - 1 } else if 2f64.powi(e + 1) <= value { e + 1 } else { e };
        let man = ((value / 2f64.powi(e) - 1.0) * 1024.0) as u16;
        (((e + 15) as u16) << 10) | man
    };
    sign | bits
}

/// True if `x` converts to f16 without rounding (and is not a NaN).
pub fn exact(x: f32) -> bool {
    !x.is_nan() && to_f32(from_f32(x, Rounding::Rte)) == x && from_f32(x, Rounding::Rte) == from_f32(x, Rounding::Rtz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_f16() {
        for h in 0..=u16::MAX {
            let f = to_f32(h);
            if f.is_nan() {
                continue;
            }
            assert_eq!(from_f32(f, Rounding::Rte), h, "{h:#06x}");
            assert_eq!(from_f32(f, Rounding::Rtz), h, "{h:#06x}");
        }
    }

    #[test]
    fn rounding() {
        let one = 0x3c00;
        let ulp = 2f32.powi(-10);
        assert_eq!(from_f32(1.0 + ulp / 2.0, Rounding::Rte), one); // tie → even
        assert_eq!(from_f32(1.0 + ulp * 1.5, Rounding::Rte), one + 2); // tie → even (up)
        assert_eq!(from_f32(1.0 + ulp * 0.75, Rounding::Rte), one + 1);
        assert_eq!(from_f32(1.0 + ulp * 0.75, Rounding::Rtz), one);
        assert_eq!(from_f32(-(1.0 + ulp * 0.75), Rounding::Rtz), 0x8000 | one);
        assert_eq!(from_f32(65519.0, Rounding::Rte), 0x7bff);
        assert_eq!(from_f32(65520.0, Rounding::Rte), 0x7c00);
        assert_eq!(from_f32(1e9, Rounding::Rtz), 0x7bff);
        assert_eq!(from_f32(0.1, Rounding::Rte), 0x2e66);
        assert_eq!(from_f32(0.1, Rounding::Rtz), 0x2e66);
        assert_eq!(from_f32(1.0 / 3.0, Rounding::Rte), 0x3555);
        assert_eq!(from_f32(2.0 / 3.0, Rounding::Rte), 0x3955);
        assert_eq!(from_f32(2.0 / 3.0, Rounding::Rtz), 0x3955);
        // 1000.3: between 1000.0 (0x63d0) and 1000.5 (0x63d1), nearer the latter (lavapipe's
        // PackHalf2x16 gives 0x63d1).
        assert_eq!(from_f32(1000.3, Rounding::Rte), 0x63d1);
        assert_eq!(from_f32(1000.3, Rounding::Rtz), 0x63d0);
        assert_eq!(from_f32(-1000.3, Rounding::Rtz), 0xe3d0);
    }
}
