//! Case generator: for one [`Case`], the SPIR-V assembly of the shader, the buffers to bind
//! (random input bytes, 0xCC-filled outputs/targets), the per-invocation Index/Offset, and the
//! expected contents of every buffer after the dispatch (from [`super::model`]).
//!
//! Shader shape (local size [`LOCAL_SIZE`], [`GROUPS`] workgroups): invocation `gid` computes
//! Index and Offset (params SSBO, push constants or constants), picks its Base (per
//! [`Addressing`]) and
//! - load: reads one element through the raw chain and writes its bits (as unsigned integers
//!   of the component width, via `OpBitcast` for floats) to `out[gid·N + k]`;
//! - store: reads N unsigned components from `values[gid·N + k]` (`values[k]` for constant
//!   params), bitcasts them to the element type and writes them through the raw chain.
//!
//! Bindings (set 0): 0 = target (or descriptor array of targets), 1 = second target (variable
//! pointers), 2 = output (loads), 3 = values (stores), 4 = params. Push constants:
//! `uvec4` (i0, di, o0, do) at 0, the device address (u64 / uvec2) at 16.

use super::asm::{Asm, Declare};
use super::case::*;
use super::model::{self, Access, Robustness};
use super::rng::Rng;
use crate::vk::{BufferKind, BufferSpec};

pub const BINDING_TARGET: u32 = 0;
/// (binding 1 is unused: variable pointers select within one buffer)
pub const BINDING_OUT: u32 = 2;
pub const BINDING_VALUES: u32 = 3;
pub const BINDING_PARAMS: u32 = 4;
/// Push-constant offset of the device address for PhysicalStorageBuffer cases.
pub const PC_ADDRESS_OFFSET: u32 = 16;

/// What a buffer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The raw chain's target number `n` (see [`Addressing::target_of`]).
    Target(usize),
    Params,
    Output,
    Values,
}

#[derive(Clone, Debug)]
pub struct PlanBuffer {
    pub role: Role,
    /// How the job binds it (a storage buffer, or its device address in the push constants),
    /// with its initial contents (the whole VkBuffer).
    pub spec: BufferSpec,
    /// Expected contents after the dispatch.
    pub expected: Vec<u8>,
}

impl PlanBuffer {
    /// A buffer expected to keep its initial contents.
    fn unchanged(role: Role, spec: BufferSpec) -> PlanBuffer {
        PlanBuffer { role, expected: spec.data.clone(), spec }
    }
    /// Bytes of the bound range.
    pub fn bound_len(&self) -> u64 {
        self.spec.range.unwrap_or(self.spec.data.len() as u64 - self.spec.descriptor_offset)
    }
}

/// One invocation's access.
#[derive(Clone, Copy, Debug)]
pub struct InvAccess {
    pub gid: u32,
    /// Index into [`Plan::buffers`] of the target.
    pub buffer: usize,
    pub access: Access,
}

/// Everything needed to run and check one case.
#[derive(Clone, Debug)]
pub struct Plan {
    pub case: Case,
    pub asm: String,
    pub target_env: &'static str,
    pub buffers: Vec<PlanBuffer>,
    pub push_constants: Vec<u8>,
    pub groups: [u32; 3],
    pub accesses: Vec<InvAccess>,
    /// Human-readable notes about how the parameters were chosen.
    pub notes: Vec<String>,
    /// Expectations assume word-granular bounds (see [`model::checked_len`]).
    pub word_granular: bool,
}

impl Plan {
    pub fn buffer_index(&self, role: Role) -> Option<usize> {
        self.buffers.iter().position(|b| b.role == role)
    }
    /// The `len` the robustness checks use for buffer `i` (its bound range, rounded down to a
    /// multiple of 4 with word-granular bounds).
    pub fn checked_len(&self, i: usize) -> u64 {
        model::checked_len(self.buffers[i].bound_len(), self.word_granular)
    }
    /// Per buffer, per byte: true where the expected contents are undefined — under
    /// word-granular bounds, the bytes an unchecked access reaches in the last partial word of
    /// its range (see [`model::undefined_bytes`]): the loaded output bytes, and for stores the
    /// target bytes. Empty inner vectors where every byte is defined.
    pub fn undefined_bytes(&self) -> Vec<Vec<bool>> {
        let mut out: Vec<Vec<bool>> = self.buffers.iter().map(|_| Vec::new()).collect();
        let esize = self.case.elem_bytes() as usize;
        let out_buf = self.buffer_index(Role::Output);
        for ia in &self.accesses {
            let tb = &self.buffers[ia.buffer];
            let undef = model::undefined_bytes(&ia.access, tb.bound_len(), self.word_granular);
            if undef.is_empty() {
                continue;
            }
            let (bi, positions): (usize, Vec<usize>) = match (self.case.op, out_buf) {
                (Op::Load, Some(o)) => (
                    o,
                    undef
                        .iter()
                        .map(|&b| ia.gid as usize * esize + b as usize)
                        .collect(),
                ),
                _ => {
                    let base = tb.spec.descriptor_offset as usize + ia.access.address() as usize;
                    (
                        ia.buffer,
                        undef.iter().map(|&b| base + b as usize).collect(),
                    )
                }
            };
            let mask = &mut out[bi];
            if mask.is_empty() {
                *mask = vec![false; self.buffers[bi].expected.len()];
            }
            for p in positions {
                mask[p] = true;
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Geometry of a case's target buffers.

/// Per-case layout numbers.
#[derive(Clone, Copy, Debug)]
struct Geom {
    c: u32,
    n: u32,
    esize: u32,
    a: u32,
    s: u32,
    /// Element extent for stride 0 (slot grid spacing).
    ext: u32,
    /// Slot grid start for stride 0 (C for misaligned vectors, else 0).
    shift: u32,
}

impl Geom {
    fn of(case: &Case) -> Geom {
        let c = case.comp_bytes();
        let n = case.comps;
        let esize = c * n;
        let a = case.aligned();
        let s = case.stride_value();
        let (ext, shift) = if s != 0 {
            (s, 0)
        } else {
            match case.align {
                AlignKind::Natural => (a, 0),
                AlignKind::Misaligned => (esize, if n > 1 { c } else { 0 }),
            }
        };
        Geom {
            c,
            n,
            esize,
            a,
            s,
            ext,
            shift,
        }
    }
    /// Valid in-element offsets for stride > 0: multiples of A with offset + esize ≤ S.
    fn inner_offsets(&self) -> Vec<u32> {
        assert!(self.s != 0);
        (0..=self.s - self.esize)
            .filter(|o| o % self.a == 0)
            .collect()
    }
    /// Nominal size for `elems` elements.
    fn nominal(&self, elems: u32) -> u32 {
        if self.s != 0 {
            elems * self.s
        } else {
            self.shift + elems * self.ext
        }
    }
}

/// Elements in target `t` (robustness cases: 11, 8, 5 for the three targets of a descriptor
/// array; plain cases enough for every invocation to have its own element).
fn base_elems(case: &Case, t: usize) -> u32 {
    if case.robustness == Robustness::None {
        INVOCATIONS + 8
    } else {
        11 - 3 * t as u32
    }
}

fn range_len(case: &Case, g: &Geom, t: usize) -> u32 {
    let nominal = g.nominal(base_elems(case, t));
    match case.range {
        RangeKind::Whole | RangeKind::Elems => nominal,
        RangeKind::ElemsMinusScalar => nominal - g.c,
        RangeKind::Unaligned => {
            let mut s = 1;
            while (nominal - s).is_multiple_of(4) {
                s += 1;
            }
            nominal - s
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Index/offset choice.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    InBounds,
    Boundary,
    Far,
    Wrap,
}

fn mk(case: &Case, g: &Geom, index: u32, offset: u32) -> Access {
    Access {
        stride: g.s,
        index,
        offset,
        comp_bytes: g.c,
        comps: g.n,
        robustness: case.robustness,
    }
}

fn round_down(v: u32, a: u32) -> u32 {
    v / a * a
}

/// A random access of `kind` into a range of `len` bytes.
fn pick_access(case: &Case, g: &Geom, len: u32, kind: Kind, rng: &mut Rng) -> Access {
    if let Some(full) = len.checked_div(g.s) {
        // `full`: elements entirely inside.
        let o = rng.pick(&g.inner_offsets());
        let index = match kind {
            Kind::InBounds => {
                if full == 0 {
                    0
                } else {
                    rng.below(full as u64) as u32
                }
            }
            Kind::Boundary => (full + rng.below(3) as u32).saturating_sub(1),
            Kind::Far => full + 2 + rng.below(100_000) as u32,
            Kind::Wrap => {
                let w = ((1u64 << 32).div_ceil(g.s as u64)) as u32; // first index whose product wraps
                match rng.below(5) {
                    0 => u32::MAX,
                    1 => 0x8000_0000,
                    2 => w.wrapping_sub(1),
                    _ => w.wrapping_add(rng.below(3) as u32),
                }
            }
        };
        mk(case, g, index, o)
    } else {
        // Stride 0: the index must not matter.
        let index = rng.next_u32();
        let a = g.a;
        let offset = match kind {
            Kind::InBounds => {
                if len < g.esize {
                    0
                } else {
                    let max = len - g.esize;
                    // Prefer the slot grid (misaligned for vectors), sometimes any multiple of A.
                    if rng.chance(1, 2) && max >= g.shift {
                        let slots = (max - g.shift) / g.ext + 1;
                        g.shift + rng.below(slots as u64) as u32 * g.ext
                    } else {
                        round_down(rng.below(max as u64 + 1) as u32, a)
                    }
                }
            }
            Kind::Boundary => {
                let last = if len >= g.esize {
                    round_down(len - g.esize, a)
                } else {
                    0
                };
                last + a * (1 + rng.below((g.esize.div_ceil(a) + 1) as u64) as u32)
            }
            Kind::Far => round_down(len + 1 + rng.below(1_000_000) as u32, a).max(round_up(len, a)),
            Kind::Wrap => 0u32.wrapping_sub(a * (1 + rng.below(g.n as u64 + 1) as u32)),
        };
        mk(case, g, index, offset)
    }
}

/// An access that is certainly dropped by the robustness check and does not wrap into range.
fn certainly_out(case: &Case, g: &Geom, len: u32) -> Access {
    if let Some(full) = len.checked_div(g.s) {
        mk(case, g, full + 7, 0)
    } else {
        mk(case, g, 3, round_up(len + 64, g.a))
    }
}

fn pick_kind(case: &Case, rng: &mut Rng) -> Kind {
    if case.robustness == Robustness::None {
        return Kind::InBounds;
    }
    match rng.below(20) {
        0..=8 => Kind::InBounds,
        9..=13 => Kind::Boundary,
        14..=16 => Kind::Far,
        _ => Kind::Wrap,
    }
}

/// Tracks bytes already written per target, to keep stores from different invocations
/// disjoint (so the result is deterministic).
struct WriteSet {
    written: Vec<Vec<bool>>,
}
impl WriteSet {
    fn new(lens: &[u32]) -> Self {
        WriteSet {
            written: lens.iter().map(|&l| vec![false; l as usize]).collect(),
        }
    }
    fn fits(&self, t: usize, acc: &Access) -> bool {
        let len = self.written[t].len() as u64;
        acc.written_bytes(len)
            .iter()
            .all(|&b| !self.written[t][b as usize])
    }
    fn add(&mut self, t: usize, acc: &Access) {
        let len = self.written[t].len() as u64;
        for b in acc.written_bytes(len) {
            self.written[t][b as usize] = true;
        }
    }
}

/// Push-constant parameters: index = i0 + gid·di, offset = o0 + gid·do.
#[derive(Clone, Copy, Debug)]
struct PushParams {
    i0: u32,
    di: u32,
    o0: u32,
    d_o: u32,
}
impl PushParams {
    fn at(&self, gid: u32) -> (u32, u32) {
        (
            self.i0.wrapping_add(gid.wrapping_mul(self.di)),
            self.o0.wrapping_add(gid.wrapping_mul(self.d_o)),
        )
    }
}

// ---------------------------------------------------------------------------------------------

/// Builds the plan of a case. Panics if the case is invalid.
pub fn plan(case: &Case) -> Plan {
    plan_with(case, false)
}

/// [`plan`], with the expected results computed for word-granular bounds when `word_granular`
/// (the lowering without 8-bit storage: the layer's `debug_target=core`). The shader, buffers and
/// accesses are the same as [`plan`]'s.
pub fn plan_with(case: &Case, word_granular: bool) -> Plan {
    if let Some(why) = case.invalid_reason() {
        panic!("invalid case ({why}): {case}");
    }
    let mut rng = Rng::new(case.seed ^ 0x5EED_0000);
    let g = Geom::of(case);
    let ntargets = case.addressing.target_count();
    let lens: Vec<u32> = (0..ntargets).map(|t| range_len(case, &g, t)).collect();
    let desc_off: u64 = if case.desc_offset { DESC_OFFSET } else { 0 };
    let mut notes = Vec::new();

    // Target buffers.
    let mut buffers = Vec::new();
    for (t, &len) in lens.iter().enumerate() {
        let whole = case.range == RangeKind::Whole;
        let tail = if whole { 0 } else { 32 + g.ext as u64 };
        let size = desc_off + len as u64 + tail;
        let data = match case.op {
            Op::Load => rng.bytes(size as usize),
            Op::Store => vec![FILL; size as usize],
        };
        let kind = if case.addressing.is_psb() {
            BufferKind::DeviceAddress {
                push_constant_offset: PC_ADDRESS_OFFSET,
            }
        } else {
            BufferKind::Storage
        };
        let spec = BufferSpec { kind, ..BufferSpec::storage(BINDING_TARGET, data) };
        buffers.push(PlanBuffer::unchanged(
            Role::Target(t),
            spec.element(t as u32).window(desc_off, if whole { None } else { Some(len as u64) }),
        ));
    }
    for (t, len) in lens.iter().enumerate() {
        notes.push(format!(
            "target {t}: bound range {len} bytes at descriptor offset {desc_off}"
        ));
    }

    // Per-invocation accesses.
    let target_of = |gid: u32| case.addressing.target_of(gid);
    let mut accesses: Vec<InvAccess> = Vec::new();
    let mut push = PushParams {
        i0: 0,
        di: 0,
        o0: 0,
        d_o: 0,
    };
    let mut const_params = (0u32, 0u32);
    match case.params {
        ParamSource::Buffer => {
            let mut ws = WriteSet::new(&lens);
            // Plain stores: every invocation gets its own slot.
            let mut perms: Vec<Vec<u32>> = lens
                .iter()
                .map(|&l| {
                    let full = l.checked_div(g.s).unwrap_or_else(|| (l.saturating_sub(g.shift + g.esize)) / g.ext + 1);
                    let mut p: Vec<u32> = (0..full).collect();
                    rng.shuffle(&mut p);
                    p
                })
                .collect();
            for gid in 0..INVOCATIONS {
                let t = target_of(gid);
                let len = lens[t];
                let acc = if case.op == Op::Store && case.robustness == Robustness::None {
                    let slot = perms[t].pop().expect("enough slots for plain stores");
                    if g.s != 0 {
                        mk(case, &g, slot, rng.pick(&g.inner_offsets()))
                    } else {
                        mk(case, &g, rng.next_u32(), g.shift + slot * g.ext)
                    }
                } else {
                    let mut chosen = None;
                    for _ in 0..40 {
                        let kind = pick_kind(case, &mut rng);
                        let a = pick_access(case, &g, len, kind, &mut rng);
                        if case.robustness == Robustness::None && !a.in_range_unchecked(len as u64)
                        {
                            continue;
                        }
                        if case.op == Op::Store && !ws.fits(t, &a) {
                            continue;
                        }
                        chosen = Some(a);
                        break;
                    }
                    chosen.unwrap_or_else(|| {
                        assert!(
                            case.robustness != Robustness::None,
                            "no in-bounds access found: {case}"
                        );
                        certainly_out(case, &g, len)
                    })
                };
                if case.op == Op::Store {
                    assert!(ws.fits(t, &acc), "store overlap: {case}");
                    ws.add(t, &acc);
                }
                accesses.push(InvAccess {
                    gid,
                    buffer: t,
                    access: acc,
                });
            }
        }
        ParamSource::Push => {
            // Candidates in order of preference; the first whose stores are disjoint wins.
            let mut cands: Vec<(PushParams, &'static str)> = Vec::new();
            if g.s != 0 {
                let o = rng.pick(&g.inner_offsets());
                if case.robustness != Robustness::None {
                    let w = ((1u64 << 32).div_ceil(g.s as u64)) as u32;
                    match rng.below(3) {
                        0 => cands.push((
                            PushParams {
                                i0: w - INVOCATIONS / 2,
                                di: 1,
                                o0: o,
                                d_o: 0,
                            },
                            "index walks across 2^32/stride (wrap)",
                        )),
                        1 => cands.push((
                            PushParams {
                                i0: 3,
                                di: 1,
                                o0: o,
                                d_o: 0,
                            },
                            "index 3.. walks past the end",
                        )),
                        _ => cands.push((
                            PushParams {
                                i0: u32::MAX - 40,
                                di: 1,
                                o0: o,
                                d_o: 0,
                            },
                            "index walks across 2^32 (wrap of the index)",
                        )),
                    }
                }
                cands.push((
                    PushParams {
                        i0: 0,
                        di: 1,
                        o0: o,
                        d_o: 0,
                    },
                    "index = gid",
                ));
            } else {
                let i0 = rng.next_u32();
                let di = rng.next_u32() | 1;
                if case.robustness != Robustness::None {
                    match rng.below(2) {
                        0 => cands.push((
                            PushParams {
                                i0,
                                di,
                                o0: g.shift.wrapping_sub((INVOCATIONS / 2) * g.ext),
                                d_o: g.ext,
                            },
                            "offset walks across 2^32 (wrap)",
                        )),
                        _ => cands.push((
                            PushParams {
                                i0,
                                di,
                                o0: g.shift + g.ext,
                                d_o: g.ext,
                            },
                            "offset walks past the end",
                        )),
                    }
                }
                cands.push((
                    PushParams {
                        i0,
                        di,
                        o0: g.shift,
                        d_o: g.ext,
                    },
                    "offset = slot(gid)",
                ));
            }
            let mut done = false;
            for (pp, what) in cands {
                let mut ws = WriteSet::new(&lens);
                let mut acc_list = Vec::new();
                let mut ok = true;
                for gid in 0..INVOCATIONS {
                    let t = target_of(gid);
                    let (i, o) = pp.at(gid);
                    let a = mk(case, &g, i, o);
                    if case.robustness == Robustness::None && !a.in_range_unchecked(lens[t] as u64)
                    {
                        ok = false;
                        break;
                    }
                    if case.op == Op::Store {
                        if !ws.fits(t, &a) {
                            ok = false;
                            break;
                        }
                        ws.add(t, &a);
                    }
                    acc_list.push(InvAccess {
                        gid,
                        buffer: t,
                        access: a,
                    });
                }
                if ok {
                    push = pp;
                    accesses = acc_list;
                    notes.push(format!("push params {pp:?}: {what}"));
                    done = true;
                    break;
                }
            }
            assert!(done, "no valid push-constant parameters: {case}");
        }
        ParamSource::Const => {
            // Every invocation does the same access (stores write the same value).
            let len = lens.iter().copied().min().unwrap();
            let mut a;
            loop {
                let kind = match case.robustness {
                    Robustness::None => Kind::InBounds,
                    _ => rng.pick(&[Kind::InBounds, Kind::Boundary, Kind::Boundary, Kind::Wrap]),
                };
                a = pick_access(case, &g, len, kind, &mut rng);
                if case.robustness != Robustness::None || a.in_range_unchecked(len as u64) {
                    break;
                }
            }
            const_params = (a.index, a.offset);
            for gid in 0..INVOCATIONS {
                let t = target_of(gid);
                accesses.push(InvAccess {
                    gid,
                    buffer: t,
                    access: a,
                });
            }
            notes.push(format!("constant index {} offset {}", a.index, a.offset));
        }
    }

    // Params / output / values buffers.
    let mut push_constants = Vec::new();
    if case.params == ParamSource::Push || case.addressing.is_psb() {
        push_constants = vec![0u8; if case.addressing.is_psb() { 24 } else { 16 }];
        for (k, v) in [push.i0, push.di, push.o0, push.d_o].iter().enumerate() {
            push_constants[k * 4..k * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
    }
    if case.params == ParamSource::Buffer {
        let mut data = vec![0u8; INVOCATIONS as usize * 16];
        for ia in &accesses {
            let p = ia.gid as usize * 16;
            data[p..p + 4].copy_from_slice(&ia.access.index.to_le_bytes());
            data[p + 4..p + 8].copy_from_slice(&ia.access.offset.to_le_bytes());
            data[p + 8..p + 12].copy_from_slice(&(ia.buffer as u32).to_le_bytes());
        }
        buffers.push(PlanBuffer::unchanged(Role::Params, BufferSpec::storage(BINDING_PARAMS, data)));
    }
    let esize = g.esize as usize;
    let poison = if case.poison { Some(POISON) } else { None };
    match case.op {
        Op::Load => {
            let mut out = vec![FILL; INVOCATIONS as usize * esize + 16];
            for ia in &accesses {
                let b = &buffers[ia.buffer];
                let off = b.spec.descriptor_offset as usize;
                let len = b.bound_len() as usize;
                let v =
                    model::load_with(&ia.access, &b.spec.data[off..off + len], poison, word_granular);
                out[ia.gid as usize * esize..][..esize].copy_from_slice(&v);
            }
            let data = vec![FILL; out.len()];
            buffers.push(PlanBuffer {
                role: Role::Output,
                spec: BufferSpec::storage(BINDING_OUT, data),
                expected: out,
            });
        }
        Op::Store => {
            let values = sanitize_floats(case, rng.bytes(INVOCATIONS as usize * esize));
            for ia in &accesses {
                let src = if case.params == ParamSource::Const {
                    0
                } else {
                    ia.gid as usize * esize
                };
                let value = values[src..src + esize].to_vec();
                let b = &mut buffers[ia.buffer];
                let off = b.spec.descriptor_offset as usize;
                let len = b.bound_len() as usize;
                model::store_with(
                    &ia.access,
                    &mut b.expected[off..off + len],
                    &value,
                    word_granular,
                );
            }
            buffers.push(PlanBuffer::unchanged(Role::Values, BufferSpec::storage(BINDING_VALUES, values)));
        }
    }

    if word_granular && case.robustness != Robustness::None {
        notes.push(
            "word-granular bounds: checks use the range rounded down to a multiple of 4".into(),
        );
    }
    let asm = shader(case, &g, const_params);
    Plan {
        case: *case,
        asm,
        target_env: case.version.target_env(),
        buffers,
        push_constants,
        groups: [GROUPS, 1, 1],
        accesses,
        notes,
        word_granular,
    }
}

/// Float values stored through the chain pass through an `OpBitcast` to the float type; keep
/// them clear of NaN payloads, which a driver may legally canonicalise on a float move.
fn sanitize_floats(case: &Case, mut v: Vec<u8>) -> Vec<u8> {
    if !case.ty.is_float() {
        return v;
    }
    let c = case.comp_bytes() as usize;
    for chunk in v.chunks_exact_mut(c) {
        // Clear the top exponent bit (the byte holding the sign and the exponent's top bits is
        // the last one, little endian): the value can then never be Inf/NaN.
        let last = c - 1;
        chunk[last] &= 0xBF;
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Shader text.

/// The module's SPIR-V assembly. `const_params` = (index, offset) for [`ParamSource::Const`].
fn shader(case: &Case, g: &Geom, const_params: (u32, u32)) -> String {
    let minor = case.version.minor();
    let mut m = Asm::new(minor);
    m.cap("RawAccessChainsNV");
    m.ext("SPV_NV_raw_access_chains");

    let psb = case.addressing.is_psb();
    let buffer_block = case.addressing == Addressing::BufferBlock;
    let tsc = if psb {
        "PhysicalStorageBuffer"
    } else if buffer_block {
        "Uniform"
    } else {
        "StorageBuffer"
    };
    if psb {
        m.physical_storage_buffer = true;
        m.cap("PhysicalStorageBufferAddresses");
        if minor < 5 {
            m.ext("SPV_KHR_physical_storage_buffer");
        }
    }
    let bits = case.ty.bits();
    // Storage capabilities for 8/16-bit types: the output/values arrays are always StorageBuffer.
    let need_8bit_ext = |m: &mut Asm| {
        if minor < 5 {
            m.ext("SPV_KHR_8bit_storage");
        }
    };
    match bits {
        8 => {
            m.cap("StorageBuffer8BitAccess");
            if buffer_block {
                m.cap("UniformAndStorageBuffer8BitAccess");
            }
            need_8bit_ext(&mut m);
        }
        16 => {
            m.cap("StorageBuffer16BitAccess");
            if buffer_block {
                m.cap("UniformAndStorageBuffer16BitAccess");
            }
        }
        _ => {}
    }

    let void = m.void();
    let u32t = m.uint(32);
    let v3u = m.vec(&u32t, 3);
    let v4u = m.vec(&u32t, 4);
    let boolt = m.bool_t();
    let c0 = m.c_u32(0);
    let c1 = m.c_u32(1);
    let c2 = m.c_u32(2);
    let c3 = m.c_u32(3);
    let n = g.n;
    let ut = m.uint(bits);
    let ct = if case.ty.is_float() {
        m.float(bits)
    } else {
        ut.clone()
    };
    let et = m.vec(&ct, n);
    let uet = m.vec(&ut, n);

    let gid_var = m.builtin("gid", "GlobalInvocationId", &v3u);
    let wgid_var = if case.addressing == Addressing::DescArray {
        Some(m.builtin("wgid", "WorkgroupId", &v3u))
    } else {
        None
    };

    // Target block type and variables.
    let tblock = if psb && case.addressing == Addressing::PsbScalar {
        u32t.clone()
    } else {
        m.block_rta("TargetBlock", &u32t, 4, buffer_block)
    };
    let p_tblock = m.ptr(tsc, &tblock);
    enum Base {
        Var(String),
        Two(String, String),
        Array(String, String), // variable, pointer-to-block type
        Psb,
    }
    // A descriptor array `%targets` of type `arr` (of the target block).
    let targets = |m: &mut Asm, arr: &str| {
        let parr = m.ptr("StorageBuffer", arr);
        Base::Array(m.buffer_var("targets", &parr, "StorageBuffer", 0, BINDING_TARGET), p_tblock.clone())
    };
    let base_kind = match case.addressing {
        Addressing::Plain | Addressing::FuncParam => {
            if case.addressing == Addressing::FuncParam {
                // spirv-val: a StorageBuffer pointer function argument needs variable pointers.
                m.cap("VariablePointersStorageBuffer");
            }
            Base::Var(m.buffer_var("target", &p_tblock, "StorageBuffer", 0, BINDING_TARGET))
        }
        Addressing::BufferBlock => {
            Base::Var(m.buffer_var("target", &p_tblock, "Uniform", 0, BINDING_TARGET))
        }
        Addressing::SelectPtr | Addressing::SelectNullPtr | Addressing::PhiPtr => {
            m.cap("VariablePointersStorageBuffer");
            // Variable pointers may only select among pointers into the same buffer (spirv-val:
            // "Variable pointers must point into the same structure (or OpConstantNull)"), so
            // the two sides are the variable and a copy of it, plus a null pointer that is never
            // taken at run time.
            let a = m.buffer_var("target", &p_tblock, "StorageBuffer", 0, BINDING_TARGET);
            let null = if case.addressing == Addressing::SelectNullPtr {
                let pt = p_tblock.clone();
                m.def("nullptr", |_| format!("OpConstantNull {pt}"))
            } else {
                String::new()
            };
            Base::Two(a, null)
        }
        Addressing::DescArray | Addressing::DescArraySelect => {
            if case.addressing == Addressing::DescArray {
                m.cap("StorageBufferArrayDynamicIndexing");
            } else {
                m.cap("VariablePointersStorageBuffer");
            }
            let arr = m.def("TargetArray", |_| format!("OpTypeArray {tblock} {c3}"));
            targets(&mut m, &arr)
        }
        Addressing::DescArrayNonUniform => {
            m.cap("RuntimeDescriptorArray");
            m.cap("ShaderNonUniform");
            m.cap("StorageBufferArrayNonUniformIndexing");
            if minor < 5 {
                m.ext("SPV_EXT_descriptor_indexing");
            }
            let arr = m.def("TargetRtArray", |_| format!("OpTypeRuntimeArray {tblock}"));
            targets(&mut m, &arr)
        }
        Addressing::Psb | Addressing::PsbScalar => Base::Psb,
    };

    // Output / values.
    let (io_var, io_elem_ptr) = {
        let blk = m.block_rta("IoBlock", &ut, g.c, false);
        let pblk = m.ptr("StorageBuffer", &blk);
        let (name, binding) = match case.op {
            Op::Load => ("out", BINDING_OUT),
            Op::Store => ("values", BINDING_VALUES),
        };
        let v = m.buffer_var(name, &pblk, "StorageBuffer", 0, binding);
        if case.op == Op::Store {
            m.deco(format!("OpDecorate {v} NonWritable"));
        }
        let pe = m.ptr("StorageBuffer", &ut);
        (v, pe)
    };

    // Params.
    let params_var = if case.params == ParamSource::Buffer {
        let blk = m.block_rta("ParamsBlock", &v4u, 16, false);
        let pblk = m.ptr("StorageBuffer", &blk);
        let v = m.buffer_var("params", &pblk, "StorageBuffer", 0, BINDING_PARAMS);
        m.deco(format!("OpDecorate {v} NonWritable"));
        Some(v)
    } else {
        None
    };
    // Push constants.
    let psb_scalar_bitcast = case.addressing == Addressing::PsbScalar && minor >= 5;
    let addr_ty = if psb {
        if psb_scalar_bitcast {
            Some(m.vec(&u32t, 2))
        } else {
            Some(m.uint(64))
        }
    } else {
        None
    };
    let pc_var = if case.params == ParamSource::Push || psb {
        let v4 = v4u.clone();
        let members = match &addr_ty {
            Some(a) => format!("{v4} {a}"),
            None => v4.clone(),
        };
        let s = m.def("PushBlock", |_| format!("OpTypeStruct {members}"));
        m.deco(format!("OpMemberDecorate {s} 0 Offset 0"));
        if psb {
            m.deco(format!("OpMemberDecorate {s} 1 Offset {PC_ADDRESS_OFFSET}"));
        }
        m.deco(format!("OpDecorate {s} Block"));
        let ps = m.ptr("PushConstant", &s);
        let v = m.def("pc", |_| format!("OpVariable {ps} PushConstant"));
        m.add_iface(&v, false);
        Some(v)
    } else {
        None
    };

    let stride_c = m.c_u32(g.s);
    let p_elem = m.ptr(tsc, &et);
    let p_in_u32 = m.ptr("Input", &u32t);
    let aligned = case.aligned();
    let rob = case.robustness.asm_operand();
    let deco_line = |m: &mut Asm, rc: &str| {
        let d = match case.deco {
            Deco::None => return,
            Deco::NonWritable => "NonWritable",
            Deco::NonReadable => "NonReadable",
            Deco::Coherent => "Coherent",
            Deco::Volatile => "Volatile",
        };
        m.deco(format!("OpDecorate {rc} {d}"));
    };

    // `%{hints.1}N`, a pointer to element `base + k` (`ck`) of the output / values buffer, after
    // `%{hints.0}N` = that index.
    let io_element = |m: &mut Asm, b: &mut Vec<String>, base: &str, ck: &str, hints: (&str, &str)| {
        let i = m.tmp(hints.0);
        let p = m.tmp(hints.1);
        b.push(format!("{i} = OpIAdd {u32t} {base} {ck}"));
        b.push(format!("{p} = OpAccessChain {io_elem_ptr} {io_var} {c0} {i}"));
        p
    };

    // ---------------- main ----------------
    let mut b: Vec<String> = Vec::new();
    b.push("%main = OpFunction %void None %fn_void".into());
    m.fn_type(&void, &[]);
    b.push("%entry = OpLabel".into());
    let gidp = m.tmp("gidp");
    let gid = "%g".to_string();
    b.push(format!("{gidp} = OpAccessChain {p_in_u32} {gid_var} {c0}"));
    b.push(format!("{gid} = OpLoad {u32t} {gidp}"));

    // Index / offset.
    let (idx, off) = match case.params {
        ParamSource::Buffer => {
            let pv = m.load_through(&mut b, "StorageBuffer", &v4u, params_var.as_ref().unwrap(), &format!("{c0} {gid}"), ("pp", "pv"));
            b.push(format!("%idx = OpCompositeExtract {u32t} {pv} 0"));
            b.push(format!("%off = OpCompositeExtract {u32t} {pv} 1"));
            ("%idx".to_string(), "%off".to_string())
        }
        ParamSource::Push => {
            let pv = m.load_through(&mut b, "PushConstant", &v4u, pc_var.as_ref().unwrap(), &c0, ("pcp", "pcv"));
            let names = ["%i0", "%di", "%o0", "%do"];
            for (k, nm) in names.iter().enumerate() {
                b.push(format!("{nm} = OpCompositeExtract {u32t} {pv} {k}"));
            }
            b.push(format!("%gdi = OpIMul {u32t} {gid} %di"));
            b.push(format!("%idx = OpIAdd {u32t} %i0 %gdi"));
            b.push(format!("%gdo = OpIMul {u32t} {gid} %do"));
            b.push(format!("%off = OpIAdd {u32t} %o0 %gdo"));
            ("%idx".to_string(), "%off".to_string())
        }
        ParamSource::Const => (m.c_u32(const_params.0), m.c_u32(const_params.1)),
    };

    // Store value (before the base, so phi blocks stay simple).
    let value = if case.op == Op::Store {
        let nc = m.c_u32(n);
        let vbase = if case.params == ParamSource::Const {
            c0.clone()
        } else {
            b.push(format!("%vbase = OpIMul {u32t} {gid} {nc}"));
            "%vbase".to_string()
        };
        let mut comps = Vec::new();
        for k in 0..n {
            let ck = m.c_u32(k);
            let p = io_element(&mut m, &mut b, &vbase, &ck, ("vi", "vp"));
            let v = m.tmp("vv");
            b.push(format!("{v} = OpLoad {ut} {p}"));
            comps.push(v);
        }
        let uv = if n == 1 {
            comps[0].clone()
        } else {
            let t = m.tmp("uv");
            b.push(format!(
                "{t} = OpCompositeConstruct {uet} {}",
                comps.join(" ")
            ));
            t
        };
        if case.ty.is_float() {
            b.push(format!("%value = OpBitcast {et} {uv}"));
            Some("%value".to_string())
        } else {
            Some(uv)
        }
    } else {
        None
    };

    // Condition for the two-way addressing modes: gid odd → second target.
    let two_way = matches!(
        case.addressing,
        Addressing::SelectPtr | Addressing::PhiPtr | Addressing::DescArraySelect
    );
    if two_way {
        b.push(format!("%gbit = OpBitwiseAnd {u32t} {gid} {c1}"));
        b.push(format!("%odd = OpINotEqual {boolt} %gbit {c0}"));
    }

    let mut functions = Vec::new();
    let emit_access = |m: &mut Asm,
                       b: &mut Vec<String>,
                       base: &str,
                       idx: &str,
                       off: &str,
                       value: Option<&str>,
                       nonuniform: bool|
     -> Option<String> {
        let rc = m.tmp("rc");
        b.push(format!(
            "{rc} = OpRawAccessChainNV {p_elem} {base} {stride_c} {idx} {off}{rob}"
        ));
        deco_line(m, &rc);
        if nonuniform {
            m.deco(format!("OpDecorate {rc} NonUniform"));
        }
        match value {
            Some(v) => {
                b.push(format!("OpStore {rc} {v} Aligned {aligned}"));
                None
            }
            None => {
                let v = m.tmp("ld");
                b.push(format!("{v} = OpLoad {et} {rc} Aligned {aligned}"));
                if nonuniform {
                    m.deco(format!("OpDecorate {v} NonUniform"));
                }
                Some(v)
            }
        }
    };

    let loaded: Option<String> = match (&base_kind, case.addressing) {
        (Base::Var(v), Addressing::FuncParam) => {
            // fn access(ptr base, uint idx, uint off[, value]) -> et / void
            let (ret, params): (String, Vec<&str>) = match case.op {
                Op::Load => (et.clone(), vec![&p_tblock, &u32t, &u32t]),
                Op::Store => (void.clone(), vec![&p_tblock, &u32t, &u32t, &et]),
            };
            let fty = m.fn_type(&ret, &params);
            let mut fb = Vec::new();
            fb.push(format!("%access = OpFunction {ret} None {fty}"));
            fb.push(format!("%fbase = OpFunctionParameter {p_tblock}"));
            fb.push(format!("%fidx = OpFunctionParameter {u32t}"));
            fb.push(format!("%foff = OpFunctionParameter {u32t}"));
            if case.op == Op::Store {
                fb.push(format!("%fval = OpFunctionParameter {et}"));
            }
            fb.push("%fentry = OpLabel".into());
            let fv = if case.op == Op::Store {
                Some("%fval")
            } else {
                None
            };
            let r = emit_access(&mut m, &mut fb, "%fbase", "%fidx", "%foff", fv, false);
            match r {
                Some(v) => fb.push(format!("OpReturnValue {v}")),
                None => fb.push("OpReturn".into()),
            }
            fb.push("OpFunctionEnd".into());
            functions.push(fb.join("\n") + "\n");
            match &value {
                Some(val) => {
                    let t = m.tmp("call");
                    b.push(format!(
                        "{t} = OpFunctionCall {void} %access {v} {idx} {off} {val}"
                    ));
                    None
                }
                None => {
                    let t = m.tmp("call");
                    b.push(format!("{t} = OpFunctionCall {et} %access {v} {idx} {off}"));
                    Some(t)
                }
            }
        }
        (Base::Var(v), Addressing::Plain) if case.robustness == Robustness::PerComponent => {
            // Twice (the same load / the same store again, the second load's value used): two
            // accesses of one shape through one descriptor share the rewriter's out-of-line
            // per-component edge path (shader_rewrite byte_address, Backend::count_edge), which
            // the cases then run; a single access keeps it inline (the other addressings).
            emit_access(&mut m, &mut b, v, &idx, &off, value.as_deref(), false);
            emit_access(&mut m, &mut b, v, &idx, &off, value.as_deref(), false)
        }
        (Base::Var(v), _) => emit_access(&mut m, &mut b, v, &idx, &off, value.as_deref(), false),
        (Base::Two(a, _), Addressing::SelectPtr) => {
            b.push(format!("%copy = OpCopyObject {p_tblock} {a}"));
            b.push(format!("%base = OpSelect {p_tblock} %odd %copy {a}"));
            emit_access(&mut m, &mut b, "%base", &idx, &off, value.as_deref(), false)
        }
        (Base::Two(a, null), Addressing::SelectNullPtr) => {
            let cmax = m.c_u32(u32::MAX);
            b.push(format!("%live = OpINotEqual {boolt} {gid} {cmax}"));
            b.push(format!("%base = OpSelect {p_tblock} %live {a} {null}"));
            emit_access(&mut m, &mut b, "%base", &idx, &off, value.as_deref(), false)
        }
        (Base::Two(a, _null), _) => {
            // PhiPtr
            b.push(format!("%copy = OpCopyObject {p_tblock} {a}"));
            b.push("OpSelectionMerge %merge None".into());
            b.push("OpBranchConditional %odd %lb %la".into());
            b.push("%la = OpLabel".into());
            b.push("OpBranch %merge".into());
            b.push("%lb = OpLabel".into());
            b.push("OpBranch %merge".into());
            b.push("%merge = OpLabel".into());
            b.push(format!("%base = OpPhi {p_tblock} {a} %la %copy %lb"));
            emit_access(&mut m, &mut b, "%base", &idx, &off, value.as_deref(), false)
        }
        (Base::Array(arr, pblk), Addressing::DescArray) => {
            let wp = m.tmp("wgp");
            b.push(format!(
                "{wp} = OpAccessChain {p_in_u32} {} {c0}",
                wgid_var.as_ref().unwrap()
            ));
            b.push(format!("%wg = OpLoad {u32t} {wp}"));
            b.push(format!("%sel = OpUMod {u32t} %wg {c3}"));
            b.push(format!("%base = OpAccessChain {pblk} {arr} %sel"));
            emit_access(&mut m, &mut b, "%base", &idx, &off, value.as_deref(), false)
        }
        (Base::Array(arr, pblk), Addressing::DescArrayNonUniform) => {
            b.push(format!("%sel = OpUMod {u32t} {gid} {c3}"));
            m.deco("OpDecorate %sel NonUniform");
            b.push(format!("%base = OpAccessChain {pblk} {arr} %sel"));
            m.deco("OpDecorate %base NonUniform");
            emit_access(&mut m, &mut b, "%base", &idx, &off, value.as_deref(), true)
        }
        (Base::Array(arr, pblk), _) => {
            // DescArraySelect: elements 0 and 2.
            b.push(format!("%p0 = OpAccessChain {pblk} {arr} {c0}"));
            b.push(format!("%p2 = OpAccessChain {pblk} {arr} {c2}"));
            b.push(format!("%base = OpSelect {pblk} %odd %p2 %p0"));
            emit_access(&mut m, &mut b, "%base", &idx, &off, value.as_deref(), false)
        }
        (Base::Psb, _) => {
            let at = addr_ty.clone().unwrap();
            let pat = m.ptr("PushConstant", &at);
            let ap = m.tmp("ap");
            b.push(format!(
                "{ap} = OpAccessChain {pat} {} {c1}",
                pc_var.as_ref().unwrap()
            ));
            b.push(format!("%addr = OpLoad {at} {ap}"));
            if psb_scalar_bitcast {
                b.push(format!("%base = OpBitcast {p_tblock} %addr"));
            } else {
                b.push(format!("%base = OpConvertUToPtr {p_tblock} %addr"));
            }
            emit_access(&mut m, &mut b, "%base", &idx, &off, value.as_deref(), false)
        }
    };

    if let Some(v) = loaded {
        let bits_v = if case.ty.is_float() {
            let t = m.tmp("bits");
            b.push(format!("{t} = OpBitcast {uet} {v}"));
            t
        } else {
            v
        };
        let nc = m.c_u32(n);
        b.push(format!("%obase = OpIMul {u32t} {gid} {nc}"));
        for k in 0..n {
            let ck = m.c_u32(k);
            let comp = if n == 1 {
                bits_v.clone()
            } else {
                let t = m.tmp("x");
                b.push(format!("{t} = OpCompositeExtract {ut} {bits_v} {k}"));
                t
            };
            let p = io_element(&mut m, &mut b, "%obase", &ck, ("oi", "op"));
            b.push(format!("OpStore {p} {comp}"));
        }
    }
    b.push("OpReturn".into());
    b.push("OpFunctionEnd".into());
    let main_text = b.join("\n") + "\n";
    let mut fns = vec![main_text];
    fns.extend(functions);
    m.finish("%main", LOCAL_SIZE, &fns)
}
