//! The case sets: the default representative slice and the full sweep.
//!
//! Dimensions (see [`super::case`]): op, robustness, addressing, component type (primary) ×
//! components, alignment, stride, decoration, param source, SPIR-V version, range kind,
//! descriptor offset, poison (secondary).
//!
//! - [`slice`]: every valid combination of robustness × addressing × op × component type ×
//!   component count (the important dimensions, all 5-way combinations), with the other
//!   dimensions chosen
//!   greedily so that every pair of values of any two dimensions that can occur together does
//!   occur (all-pairs), plus extra cases for pairs the greedy pass left out.
//! - [`full_sweep`]: the cartesian product of op × robustness × addressing × component type ×
//!   components × alignment × stride (every valid combination; misaligned scalars are the same
//!   as aligned ones and are left out), with the remaining dimensions rotated across it.

use super::case::*;
use super::model::Robustness;
use super::rng::Rng;
use std::collections::HashSet;

/// Number of dimensions in [`values`].
pub const DIMS: usize = 13;
pub const DIM_NAMES: [&str; DIMS] = [
    "op",
    "robustness",
    "addressing",
    "type",
    "comps",
    "align",
    "stride",
    "deco",
    "params",
    "version",
    "range",
    "desc_offset",
    "poison",
];

/// The value index of each dimension of a case (for coverage bookkeeping).
pub fn values(c: &Case) -> [usize; DIMS] {
    fn pos<T: PartialEq>(xs: &[T], x: &T) -> usize {
        xs.iter().position(|v| v == x).unwrap()
    }
    [
        pos(&Op::ALL, &c.op),
        pos(&Robustness::ALL, &c.robustness),
        pos(&Addressing::ALL, &c.addressing),
        pos(&CompType::ALL, &c.ty),
        (c.comps - 1) as usize,
        pos(&AlignKind::ALL, &c.align),
        pos(&StrideKind::ALL, &c.stride),
        pos(&Deco::ALL, &c.deco),
        pos(&ParamSource::ALL, &c.params),
        pos(&SpirvVersion::ALL, &c.version),
        pos(&RangeKind::ALL, &c.range),
        c.desc_offset as usize,
        c.poison as usize,
    ]
}

/// Number of values of each dimension.
pub const DIM_SIZES: [usize; DIMS] = [2, 3, 11, 7, 4, 2, 3, 5, 3, 3, 4, 2, 2];

/// Sets dimension `d` of `c` to value `v`.
pub fn set_dim(c: &mut Case, d: usize, v: usize) {
    match d {
        0 => c.op = Op::ALL[v],
        1 => c.robustness = Robustness::ALL[v],
        2 => c.addressing = Addressing::ALL[v],
        3 => c.ty = CompType::ALL[v],
        4 => c.comps = v as u32 + 1,
        5 => c.align = AlignKind::ALL[v],
        6 => c.stride = StrideKind::ALL[v],
        7 => c.deco = Deco::ALL[v],
        8 => c.params = ParamSource::ALL[v],
        9 => c.version = SpirvVersion::ALL[v],
        10 => c.range = RangeKind::ALL[v],
        11 => c.desc_offset = v != 0,
        12 => c.poison = v != 0,
        _ => unreachable!(),
    }
}

fn base_case() -> Case {
    Case {
        op: Op::Load,
        robustness: Robustness::None,
        addressing: Addressing::Plain,
        ty: CompType::I32,
        comps: 1,
        align: AlignKind::Natural,
        stride: StrideKind::Zero,
        deco: Deco::None,
        params: ParamSource::Buffer,
        version: SpirvVersion::V1_3,
        range: RangeKind::Whole,
        desc_offset: false,
        poison: false,
        seed: 0,
    }
}

/// A (dimension, value) pair key.
type Pair = (usize, usize, usize, usize);

fn pairs_of(c: &Case) -> Vec<Pair> {
    let v = values(c);
    let mut out = Vec::with_capacity(DIMS * (DIMS - 1) / 2);
    for a in 0..DIMS {
        for b in a + 1..DIMS {
            out.push((a, v[a], b, v[b]));
        }
    }
    out
}

/// Fills secondary dimensions (4..DIMS) of `c` randomly (not necessarily valid).
fn randomize_secondary(c: &mut Case, rng: &mut Rng) {
    for (d, &size) in DIM_SIZES.iter().enumerate().skip(4) {
        set_dim(c, d, rng.below(size as u64) as usize);
    }
}

/// Makes a case valid by adjusting secondary dimensions where a rule forces them.
fn repair(c: &mut Case) {
    if c.robustness == Robustness::PerElement && c.stride == StrideKind::Zero {
        c.stride = StrideKind::Tight;
    }
    if c.addressing.is_psb() {
        c.range = RangeKind::Whole;
        c.desc_offset = false;
    }
    if c.addressing == Addressing::BufferBlock {
        c.version = SpirvVersion::V1_3;
    }
    match (c.op, c.deco) {
        (Op::Store, Deco::NonWritable) => c.deco = Deco::NonReadable,
        (Op::Load, Deco::NonReadable) => c.deco = Deco::NonWritable,
        _ => {}
    }
}

fn primary_valid(op: Op, r: Robustness, a: Addressing) -> bool {
    let _ = op;
    !(a.is_psb() && r != Robustness::None)
}

/// Stable per-case seed from its dimensions.
fn seed_of(c: &Case, salt: u64) -> u64 {
    let v = values(c);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    for x in v {
        h ^= x as u64 + 1;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The default representative slice.
pub fn slice() -> Vec<Case> {
    let mut rng = Rng::new(0x0005_11CE_5EED);
    let mut covered: HashSet<Pair> = HashSet::new();
    let mut out = Vec::new();
    for &r in &Robustness::ALL {
        for &a in &Addressing::ALL {
            for &op in &Op::ALL {
                if !primary_valid(op, r, a) {
                    continue;
                }
                for &ty in &CompType::ALL {
                    for comps in 1..=4u32 {
                        let mut best: Option<(usize, Case)> = None;
                        for _ in 0..300 {
                            let mut c = Case {
                                op,
                                robustness: r,
                                addressing: a,
                                ty,
                                ..base_case()
                            };
                            randomize_secondary(&mut c, &mut rng);
                            c.comps = comps;
                            repair(&mut c);
                            if !c.is_valid() {
                                continue;
                            }
                            let gain = pairs_of(&c).iter().filter(|p| !covered.contains(p)).count();
                            if best.as_ref().is_none_or(|(g, _)| gain > *g) {
                                best = Some((gain, c));
                            }
                        }
                        let (_, mut c) = best.expect("a valid completion exists");
                        c.seed = seed_of(&c, out.len() as u64);
                        covered.extend(pairs_of(&c));
                        out.push(c);
                    }
                }
            }
        }
    }
    // Pairs the greedy pass did not reach: add a case for each that can exist.
    for (a, &size_a) in DIM_SIZES.iter().enumerate() {
        for (b, &size_b) in DIM_SIZES.iter().enumerate().skip(a + 1) {
            for va in 0..size_a {
                for vb in 0..size_b {
                    if covered.contains(&(a, va, b, vb)) {
                        continue;
                    }
                    let mut found = None;
                    for _ in 0..2000 {
                        let mut c = base_case();
                        for (d, &size) in DIM_SIZES.iter().enumerate() {
                            set_dim(&mut c, d, rng.below(size as u64) as usize);
                        }
                        set_dim(&mut c, a, va);
                        set_dim(&mut c, b, vb);
                        if c.is_valid() {
                            found = Some(c);
                            break;
                        }
                    }
                    if let Some(mut c) = found {
                        c.seed = seed_of(&c, out.len() as u64);
                        covered.extend(pairs_of(&c));
                        out.push(c);
                    }
                }
            }
        }
    }
    out
}

/// Per-component vectors at the end of their range: for every type, 2–4 components (2 and 4
/// 32/64-bit components with both alignments, [`AlignKind`]), load and store, a case (plain
/// base, whose two accesses share the rewriter's out-of-line edge path; see `gen`) whose
/// invocations include at least `STRADDLING` accesses (one for naturally aligned vectors) with
/// some components in bounds and some out, so the per-component edge path decides bytes the
/// run compares (the default slice gets them only by chance).
pub fn straddling() -> Vec<Case> {
    const STRADDLING: usize = 3;
    let mut rng = Rng::new(0x057A_DD1E_5EED);
    let mut out = Vec::new();
    for &op in &Op::ALL {
        for &ty in &CompType::ALL {
            // Vectors of 2 or 4 32/64-bit components with both alignments: whole vectors in
            // wide pieces (Natural), one piece per component (Misaligned). Others straddle the
            // end with whichever alignment the search finds: a 3-byte vector Aligned 4, or a
            // 3-component vector whose natural element's padding holds the end of every range
            // the generator makes, cannot with Natural.
            let aligns = |n: u32| if ty.bytes() >= 4 && n != 3 { vec![Some(AlignKind::Natural), Some(AlignKind::Misaligned)] } else { vec![None] };
            for (comps, align) in (2..=4u32).flat_map(|n| aligns(n).into_iter().map(move |a| (n, a))) {
                let found = (0..2000).find_map(|k| {
                    let mut c = Case { op, robustness: Robustness::PerComponent, addressing: Addressing::Plain, ty, ..base_case() };
                    randomize_secondary(&mut c, &mut rng);
                    c.comps = comps;
                    c.align = align.unwrap_or(c.align);
                    repair(&mut c);
                    if !c.is_valid() {
                        return None;
                    }
                    c.seed = seed_of(&c, k);
                    let p = super::gen::plan(&c);
                    let partial = p
                        .accesses
                        .iter()
                        .filter(|a| {
                            let comps = a.access.component_addresses(p.checked_len(a.buffer));
                            comps.iter().any(Option::is_some) && comps.iter().any(Option::is_none)
                        })
                        .count();
                    // Naturally aligned vectors do not overlap: one of them straddles an end.
                    let needed = if align == Some(AlignKind::Natural) { 1 } else { STRADDLING };
                    (partial >= needed).then_some(c)
                });
                out.push(found.unwrap_or_else(|| panic!("no straddling {op:?} {ty:?}x{comps} {align:?} case found")));
            }
        }
    }
    out
}

/// Pairs (of values of two dimensions) that no valid case can have.
pub fn impossible_pairs() -> Vec<String> {
    let mut rng = Rng::new(7);
    let mut out = Vec::new();
    for (a, &size_a) in DIM_SIZES.iter().enumerate() {
        for (b, &size_b) in DIM_SIZES.iter().enumerate().skip(a + 1) {
            for va in 0..size_a {
                for vb in 0..size_b {
                    let possible = (0..3000).any(|_| {
                        let mut c = base_case();
                        for (d, &size) in DIM_SIZES.iter().enumerate() {
                            set_dim(&mut c, d, rng.below(size as u64) as usize);
                        }
                        set_dim(&mut c, a, va);
                        set_dim(&mut c, b, vb);
                        c.is_valid()
                    });
                    if !possible {
                        out.push(format!("{}={} × {}={}", DIM_NAMES[a], va, DIM_NAMES[b], vb));
                    }
                }
            }
        }
    }
    out
}

/// Coverage report of a case set: (values never used, pairs never used but possible).
pub fn coverage(cases: &[Case]) -> (Vec<String>, Vec<String>) {
    let mut seen_vals = HashSet::new();
    let mut seen_pairs = HashSet::new();
    for c in cases {
        let v = values(c);
        for (d, &value) in v.iter().enumerate() {
            seen_vals.insert((d, value));
        }
        seen_pairs.extend(pairs_of(c));
    }
    let mut missing_vals = Vec::new();
    for d in 0..DIMS {
        for v in 0..DIM_SIZES[d] {
            if !seen_vals.contains(&(d, v)) {
                missing_vals.push(format!("{}={}", DIM_NAMES[d], v));
            }
        }
    }
    let impossible: HashSet<String> = impossible_pairs().into_iter().collect();
    let mut missing_pairs = Vec::new();
    for (a, &size_a) in DIM_SIZES.iter().enumerate() {
        for (b, &size_b) in DIM_SIZES.iter().enumerate().skip(a + 1) {
            for va in 0..size_a {
                for vb in 0..size_b {
                    let name = format!("{}={} × {}={}", DIM_NAMES[a], va, DIM_NAMES[b], vb);
                    if !seen_pairs.contains(&(a, va, b, vb)) && !impossible.contains(&name) {
                        missing_pairs.push(name);
                    }
                }
            }
        }
    }
    (missing_vals, missing_pairs)
}

/// The full sweep: op × robustness × addressing × type × comps × align × stride, every valid
/// combination; the other dimensions rotate.
pub fn full_sweep() -> Vec<Case> {
    let mut out = Vec::new();
    let mut k: usize = 0;
    for &op in &Op::ALL {
        for &r in &Robustness::ALL {
            for &a in &Addressing::ALL {
                if !primary_valid(op, r, a) {
                    continue;
                }
                for &ty in &CompType::ALL {
                    for comps in 1..=4u32 {
                        for &align in &AlignKind::ALL {
                            if comps == 1 && align == AlignKind::Misaligned {
                                continue;
                            }
                            for &stride in &StrideKind::ALL {
                                if r == Robustness::PerElement && stride == StrideKind::Zero {
                                    continue;
                                }
                                let mut c = Case {
                                    op,
                                    robustness: r,
                                    addressing: a,
                                    ty,
                                    comps,
                                    align,
                                    stride,
                                    ..base_case()
                                };
                                // Rotate the secondary dimensions with co-prime periods.
                                c.deco = Deco::ALL[k % 5];
                                c.params = ParamSource::ALL[(k / 2) % 3];
                                c.version = SpirvVersion::ALL[(k / 3) % 3];
                                c.range = RangeKind::ALL[(k / 7) % 4];
                                c.desc_offset = (k / 11) % 2 == 1;
                                c.poison = (k / 13) % 2 == 1;
                                repair(&mut c);
                                debug_assert!(c.is_valid(), "{c}");
                                c.seed = seed_of(&c, k as u64);
                                out.push(c);
                                k += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    out
}
