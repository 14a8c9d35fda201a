//! The dimensions of the 8/16-bit storage differential matrix and one [`Case`].

use super::f16::Rounding;
use std::fmt;

/// Where the 8/16-bit data lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `StorageBuffer` storage class, `Block` (SPIR-V 1.3+).
    Ssbo,
    /// `Uniform` storage class, `BufferBlock` (SPIR-V 1.0; the pre-1.3 storage buffer).
    BufferBlock,
    /// `Uniform` storage class, `Block` (std140 offsets unless the layout is scalar).
    Ubo,
    /// `PushConstant` storage class, `Block`.
    PushConstant,
}

/// The 8/16-bit scalar type (8-bit floats do not exist).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    F16,
    I16,
    U16,
    I8,
    U8,
}

/// Offset rules the generated blocks follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// std430 (storage buffers, push constants) / std140 (uniform buffers).
    Std,
    /// Std plus VK_KHR_relaxed_block_layout (core 1.1): a vector member only needs its
    /// component alignment as long as it does not straddle a 16-byte boundary — vectors then
    /// start at any component offset inside a word and may cross word boundaries.
    Relaxed,
    /// VK_EXT_scalar_block_layout: everything aligned to its component; arrays of vec3 with
    /// stride 3 or 6, structs with odd strides (spirv-val `--scalar-block-layout`).
    Scalar,
}

/// How the accessed values are arranged in the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Shape {
    /// Several struct members of the type, one at each byte offset inside a word the layout
    /// allows (one invocation).
    Members,
    /// A small-type scalar head member, then an array of the type (ArrayStride per layout),
    /// element `gid` accessed by invocation `gid` (dynamic index).
    Array,
    /// An array of `struct S { scalar x; T v; scalar y; [uint z;] }`, element `gid` per
    /// invocation.
    StructArray,
    /// A head member and a runtime array of the type, with `OpArrayLength`.
    RuntimeArray,
    /// A packed runtime array stored by many invocations at once (neighbouring sub-word
    /// elements in one word belong to different invocations and workgroups).
    Packed,
}

/// What the shader does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Load the values, widen them to 32 bits (OpFConvert / OpSConvert / OpUConvert), write
    /// them to a 32-bit output storage buffer.
    Load,
    /// Read 32-bit values, narrow them, store them into the 8/16-bit block (the buffer is
    /// pre-filled with a pattern; every byte is compared).
    Store,
    /// Copy the values (or, with arithmetic capabilities, whole structs / arrays / blocks via
    /// OpLoad + OpStore of the composite) into a storage buffer with the same layout.
    Copy,
    /// `OpArrayLength` of a runtime array of the type, plus guarded loads of its elements,
    /// under several descriptor ranges.
    ArrayLength,
    /// Many invocations store their own element of a packed array, repeatedly.
    Concurrent,
}

/// Capabilities beyond the storage ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Caps {
    /// Only the storage capability: 8/16-bit values are loaded, stored, copied, width-converted.
    StorageOnly,
    /// Float16 / Int16 / Int8 too: the values go through 8/16-bit arithmetic (wrapping integer
    /// add/xor, exact float multiply), composites are loaded and stored whole.
    Arith,
}

/// How a vector is accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// The whole vector (one OpLoad/OpStore of the vector type).
    Whole,
    /// One component at a time (OpAccessChain with a component index).
    PerComponent,
}

/// SPIR-V version of the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    V10,
    V13,
    V16,
}

impl Version {
    pub fn minor(self) -> u32 {
        match self {
            Version::V10 => 0,
            Version::V13 => 3,
            Version::V16 => 6,
        }
    }
    /// spirv-as / spirv-val target environment.
    pub fn target_env(self) -> &'static str {
        match self {
            Version::V10 => "vulkan1.0",
            Version::V13 => "vulkan1.1",
            Version::V16 => "vulkan1.3",
        }
    }
}

/// Which invocation stores which element ([`Op::Concurrent`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mapping {
    /// Element = global invocation index (neighbours in the same workgroup / SIMD batch).
    Linear,
    /// Element = local index × groups + a permutation of the workgroup: neighbours come from
    /// workgroups in different halves of the grid, which lavapipe runs on different threads.
    /// (Races between threads are probabilistic; races between the SIMD lanes of one workgroup
    /// under [`Mapping::Linear`] are what reliably catch a non-atomic read-modify-write.)
    Interleaved,
}

impl Scalar {
    pub const ALL: [Scalar; 5] = [Scalar::F16, Scalar::I16, Scalar::U16, Scalar::I8, Scalar::U8];
    pub fn bytes(self) -> u32 {
        match self {
            Scalar::F16 | Scalar::I16 | Scalar::U16 => 2,
            Scalar::I8 | Scalar::U8 => 1,
        }
    }
    pub fn bits(self) -> u32 {
        self.bytes() * 8
    }
    pub fn is_float(self) -> bool {
        self == Scalar::F16
    }
    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I16 | Scalar::I8)
    }
    pub fn name(self) -> &'static str {
        match self {
            Scalar::F16 => "f16",
            Scalar::I16 => "i16",
            Scalar::U16 => "u16",
            Scalar::I8 => "i8",
            Scalar::U8 => "u8",
        }
    }
}

/// An 8/16-bit scalar or vector type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VecTy {
    pub s: Scalar,
    pub n: u32,
}

impl VecTy {
    pub fn size(self) -> u32 {
        self.s.bytes() * self.n
    }
    /// std430/std140 base alignment of a scalar/vector.
    pub fn std_align(self) -> u32 {
        self.s.bytes() * if self.n == 1 { 1 } else if self.n == 2 { 2 } else { 4 }
    }
    pub fn name(self) -> String {
        if self.n == 1 {
            self.s.name().to_string()
        } else {
            format!("{}vec{}", self.s.name(), self.n)
        }
    }
}

impl Layout {
    /// May a member of type `t` sit at `off` inside a struct?
    pub fn member_ok(self, t: VecTy, off: u32) -> bool {
        let c = t.s.bytes();
        match self {
            Layout::Std => off.is_multiple_of(t.std_align()),
            Layout::Relaxed => off.is_multiple_of(c) && (t.size() > 16 || off / 16 == (off + t.size() - 1) / 16),
            Layout::Scalar => off.is_multiple_of(c),
        }
    }
    /// Spirv-val flags this layout needs beyond the target environment's defaults.
    pub fn val_flags(self, version: Version) -> Vec<&'static str> {
        match (self, version) {
            (Layout::Scalar, _) => vec!["--scalar-block-layout"],
            (Layout::Relaxed, Version::V10) => vec!["--relax-block-layout"],
            _ => vec![],
        }
    }
}

/// The f32 inputs of f16 stores and the rounding of their narrowing conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum F16Store {
    /// Inputs exactly representable in f16 (any rounding gives the same bits).
    Exact,
    /// Inexact inputs (random mantissas, ties, overflow), undecorated OpFConvert: Vulkan lets
    /// the implementation round either way; the emulation must round like the native run
    /// (lavapipe: to nearest even, which the reference uses).
    Undecorated,
    /// Inexact inputs, `FPRoundingMode RTE`.
    Rte,
    /// Inexact inputs, `FPRoundingMode RTZ`.
    Rtz,
}

impl F16Store {
    /// The FPRoundingMode decoration of the conversion.
    pub fn decoration(self) -> Option<Rounding> {
        match self {
            F16Store::Rte => Some(Rounding::Rte),
            F16Store::Rtz => Some(Rounding::Rtz),
            _ => None,
        }
    }
    /// Rounding of the CPU reference (`None`: inputs are exact).
    pub fn reference(self) -> Option<Rounding> {
        match self {
            F16Store::Exact => None,
            F16Store::Undecorated | F16Store::Rte => Some(Rounding::Rte),
            F16Store::Rtz => Some(Rounding::Rtz),
        }
    }
}

/// One generated module (and its runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Case {
    pub kind: Kind,
    pub ty: VecTy,
    pub shape: Shape,
    pub op: Op,
    pub layout: Layout,
    pub caps: Caps,
    pub access: Access,
    pub version: Version,
    /// Inputs and rounding of f16 stores.
    pub rounding: F16Store,
    pub mapping: Mapping,
}

impl Case {
    /// Does this combination make sense (and validate)?
    pub fn is_valid(&self) -> bool {
        let c = self;
        let sixteen = c.ty.s.bytes() == 2;
        if c.ty.n == 0 || c.ty.n > 4 {
            return false;
        }
        // BufferBlock is the SPIR-V 1.0 storage buffer; only 16-bit data has a Vulkan feature
        // for it (storageBuffer16BitAccess covers BufferBlock; the 8-bit features do not).
        if (c.kind == Kind::BufferBlock) != (c.version == Version::V10) || (c.kind == Kind::BufferBlock && !sixteen) {
            return false;
        }
        let writable = matches!(c.kind, Kind::Ssbo | Kind::BufferBlock);
        match c.op {
            Op::Load | Op::Copy => {
                if !matches!(c.shape, Shape::Members | Shape::Array | Shape::StructArray) {
                    return false;
                }
            }
            Op::Store => {
                if !writable || !matches!(c.shape, Shape::Members | Shape::Array | Shape::StructArray) {
                    return false;
                }
            }
            Op::ArrayLength => {
                if !writable || c.shape != Shape::RuntimeArray || c.layout == Layout::Relaxed {
                    return false;
                }
            }
            Op::Concurrent => {
                if !writable || c.shape != Shape::Packed || c.layout != Layout::Std || c.access != Access::Whole {
                    return false;
                }
                if !(c.ty.n == 1 || (c.ty.n == 2 && !sixteen)) {
                    return false;
                }
            }
        }
        if c.mapping == Mapping::Interleaved && c.op != Op::Concurrent {
            return false;
        }
        // Arrays ignore relaxed layout (it only moves vector members of structs).
        if c.shape == Shape::Array && c.layout == Layout::Relaxed {
            return false;
        }
        if c.ty.n == 1 && c.access == Access::PerComponent {
            return false;
        }
        // With arithmetic capabilities a copy moves whole composites.
        if c.op == Op::Copy && c.caps == Caps::Arith && c.access == Access::PerComponent {
            return false;
        }
        // Inexact f16 stores: the conversion's result is stored directly (the rounding
        // decoration is only allowed there).
        if c.rounding != F16Store::Exact && !(c.op == Op::Store && c.ty.s == Scalar::F16 && c.caps == Caps::StorageOnly) {
            return false;
        }
        true
    }

    /// Short unique name, e.g. `ssbo-f16vec3-members-store-relaxed-storage-whole-spv1.3`.
    pub fn slug(&self) -> String {
        let kind = match self.kind {
            Kind::Ssbo => "ssbo",
            Kind::BufferBlock => "bufferblock",
            Kind::Ubo => "ubo",
            Kind::PushConstant => "pc",
        };
        let shape = match self.shape {
            Shape::Members => "members",
            Shape::Array => "array",
            Shape::StructArray => "structarray",
            Shape::RuntimeArray => "rta",
            Shape::Packed => "packed",
        };
        let op = match self.op {
            Op::Load => "load",
            Op::Store => "store",
            Op::Copy => "copy",
            Op::ArrayLength => "arraylength",
            Op::Concurrent => "concurrent",
        };
        let layout = match self.layout {
            Layout::Std => "std",
            Layout::Relaxed => "relaxed",
            Layout::Scalar => "scalar",
        };
        let caps = match self.caps {
            Caps::StorageOnly => "storage",
            Caps::Arith => "arith",
        };
        let access = match self.access {
            Access::Whole => "whole",
            Access::PerComponent => "percomp",
        };
        let version = match self.version {
            Version::V10 => "spv1.0",
            Version::V13 => "spv1.3",
            Version::V16 => "spv1.6",
        };
        let mut s = format!("{kind}-{}-{shape}-{op}-{layout}-{caps}-{access}-{version}", self.ty.name());
        match self.rounding {
            F16Store::Rte => s += "-rte",
            F16Store::Rtz => s += "-rtz",
            F16Store::Undecorated => s += "-inexact",
            F16Store::Exact => {}
        }
        if self.mapping == Mapping::Interleaved {
            s += "-interleaved";
        }
        s
    }

    /// (dimension, value) pairs, for coverage.
    pub fn features(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kind", format!("{:?}", self.kind)),
            ("scalar", format!("{:?}", self.ty.s)),
            ("comps", self.ty.n.to_string()),
            ("shape", format!("{:?}", self.shape)),
            ("op", format!("{:?}", self.op)),
            ("layout", format!("{:?}", self.layout)),
            ("caps", format!("{:?}", self.caps)),
            ("access", format!("{:?}", self.access)),
            ("version", format!("{:?}", self.version)),
            ("rounding", format!("{:?}", self.rounding)),
            ("mapping", format!("{:?}", self.mapping)),
        ]
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.slug())
    }
}

/// Every valid case (the full sweep), in a fixed order.
pub fn full_sweep() -> Vec<Case> {
    let mut out = Vec::new();
    for kind in [Kind::Ssbo, Kind::BufferBlock, Kind::Ubo, Kind::PushConstant] {
        for s in Scalar::ALL {
            for n in 1..=4 {
                for (shape, op) in [
                    (Shape::Members, Op::Load),
                    (Shape::Array, Op::Load),
                    (Shape::StructArray, Op::Load),
                    (Shape::Members, Op::Store),
                    (Shape::Array, Op::Store),
                    (Shape::StructArray, Op::Store),
                    (Shape::Members, Op::Copy),
                    (Shape::Array, Op::Copy),
                    (Shape::StructArray, Op::Copy),
                    (Shape::RuntimeArray, Op::ArrayLength),
                    (Shape::Packed, Op::Concurrent),
                ] {
                    for layout in [Layout::Std, Layout::Relaxed, Layout::Scalar] {
                        for caps in [Caps::StorageOnly, Caps::Arith] {
                            for access in [Access::Whole, Access::PerComponent] {
                                for version in [Version::V10, Version::V13, Version::V16] {
                                    for rounding in [F16Store::Exact, F16Store::Undecorated, F16Store::Rte, F16Store::Rtz] {
                                        for mapping in [Mapping::Linear, Mapping::Interleaved] {
                                            let c = Case { kind, ty: VecTy { s, n }, shape, op, layout, caps, access, version, rounding, mapping };
                                            if c.is_valid() {
                                                out.push(c);
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The default slice: one case per (kind, type, shape, op, mapping) chosen greedily to cover
/// new pairs of dimension values, then more cases until every pair of values that occurs in
/// the full sweep occurs in the slice.
pub fn slice() -> Vec<Case> {
    use std::collections::{BTreeMap, HashSet};
    let full = full_sweep();
    let pairs_of = |c: &Case| -> Vec<(String, String)> {
        let f = c.features();
        let mut v = Vec::new();
        for i in 0..f.len() {
            for j in i + 1..f.len() {
                v.push((format!("{}={}", f[i].0, f[i].1), format!("{}={}", f[j].0, f[j].1)));
            }
        }
        v
    };
    let mut groups: BTreeMap<(Kind, VecTy, Shape, Op, Mapping), Vec<usize>> = BTreeMap::new();
    for (i, c) in full.iter().enumerate() {
        groups.entry((c.kind, c.ty, c.shape, c.op, c.mapping)).or_default().push(i);
    }
    let case_pairs: Vec<Vec<(String, String)>> = full.iter().map(pairs_of).collect();
    let mut covered: HashSet<(String, String)> = HashSet::new();
    let mut chosen = Vec::new();
    let mut taken = vec![false; full.len()];
    // How often each dimension value was chosen: ties go to the least used values, so the
    // free dimensions (layout, capabilities, access, version, rounding) stay balanced.
    let mut used: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let feats: Vec<Vec<String>> = full.iter().map(|c| c.features().iter().map(|(d, v)| format!("{d}={v}")).collect()).collect();
    for idx in groups.values() {
        let best = *idx
            .iter()
            .max_by_key(|&&i| {
                let gain = case_pairs[i].iter().filter(|p| !covered.contains(*p)).count();
                let usage: usize = feats[i].iter().map(|f| used.get(f).copied().unwrap_or(0)).sum();
                (gain, std::cmp::Reverse(usage), std::cmp::Reverse(i))
            })
            .unwrap();
        covered.extend(case_pairs[best].iter().cloned());
        for f in &feats[best] {
            *used.entry(f.clone()).or_default() += 1;
        }
        taken[best] = true;
        chosen.push(best);
    }
    loop {
        let (best, gain) = (0..full.len())
            .filter(|&i| !taken[i])
            .map(|i| (i, case_pairs[i].iter().filter(|p| !covered.contains(*p)).count()))
            .max_by_key(|&(i, g)| (g, std::cmp::Reverse(i)))
            .unwrap_or((0, 0));
        if gain == 0 {
            break;
        }
        covered.extend(case_pairs[best].iter().cloned());
        taken[best] = true;
        chosen.push(best);
    }
    chosen.sort();
    chosen.into_iter().map(|i| full[i]).collect()
}

/// Every (dimension=value) pair of the full sweep the given cases miss.
pub fn uncovered_pairs(cases: &[Case]) -> Vec<(String, String)> {
    use std::collections::BTreeSet;
    let pairs = |cs: &[Case]| -> BTreeSet<(String, String)> {
        let mut s = BTreeSet::new();
        for c in cs {
            let f = c.features();
            for i in 0..f.len() {
                for j in i + 1..f.len() {
                    s.insert((format!("{}={}", f[i].0, f[i].1), format!("{}={}", f[j].0, f[j].1)));
                }
            }
        }
        s
    };
    let have = pairs(cases);
    pairs(&full_sweep()).into_iter().filter(|p| !have.contains(p)).collect()
}
