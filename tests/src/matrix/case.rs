//! The dimensions of the conformance matrix and one case (a point in it).

use super::model::Robustness;
use std::fmt;

/// Load through the raw chain, or store through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Load,
    Store,
}
impl Op {
    pub const ALL: [Op; 2] = [Op::Load, Op::Store];
}

/// How the chain's Base is formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Addressing {
    /// The SSBO variable itself.
    Plain,
    /// A SPIR-V 1.0 style SSBO: `Uniform` storage class, `BufferBlock` struct.
    BufferBlock,
    /// Variable pointers: `OpSelect` (per invocation) between the SSBO variable and an
    /// `OpCopyObject` of it. (Selecting between two different variables is invalid SPIR-V:
    /// "Variable pointers must point into the same structure (or OpConstantNull)".)
    SelectPtr,
    /// Variable pointers: `OpSelect` between the SSBO variable and `OpConstantNull` (the null
    /// side is never taken at run time: the condition is `gid != 0xFFFFFFFF`).
    SelectNullPtr,
    /// Variable pointers: `OpPhi` of the SSBO variable and a copy of it after a per-invocation
    /// branch.
    PhiPtr,
    /// Sized descriptor array, dynamically uniform index (workgroup id).
    DescArray,
    /// Runtime descriptor array, per-invocation index decorated `NonUniform`.
    DescArrayNonUniform,
    /// Both: `OpSelect` between two elements of a descriptor array.
    DescArraySelect,
    /// The SSBO variable passed through a function parameter.
    FuncParam,
    /// PhysicalStorageBuffer pointer to a Block, `OpConvertUToPtr` of a u64 push constant.
    Psb,
    /// PhysicalStorageBuffer pointer to a scalar `uint`: `OpBitcast` of a uvec2 push constant
    /// (SPIR-V ≥ 1.5) or `OpConvertUToPtr` of a u64 (SPIR-V 1.3).
    PsbScalar,
}
impl Addressing {
    pub const ALL: [Addressing; 11] = [
        Addressing::Plain,
        Addressing::BufferBlock,
        Addressing::SelectPtr,
        Addressing::SelectNullPtr,
        Addressing::PhiPtr,
        Addressing::DescArray,
        Addressing::DescArrayNonUniform,
        Addressing::DescArraySelect,
        Addressing::FuncParam,
        Addressing::Psb,
        Addressing::PsbScalar,
    ];
    pub fn is_psb(self) -> bool {
        matches!(self, Addressing::Psb | Addressing::PsbScalar)
    }
    /// Number of distinct target buffers the base can point into.
    pub fn target_count(self) -> usize {
        match self {
            Addressing::DescArray
            | Addressing::DescArrayNonUniform
            | Addressing::DescArraySelect => 3,
            _ => 1,
        }
    }
    /// Which target buffer invocation `gid` (local size [`LOCAL_SIZE`]) accesses, as the
    /// generated shader computes it.
    pub fn target_of(self, gid: u32) -> usize {
        match self {
            Addressing::DescArray => ((gid / LOCAL_SIZE) % 3) as usize,
            Addressing::DescArrayNonUniform => (gid % 3) as usize,
            Addressing::DescArraySelect => ((gid & 1) * 2) as usize,
            _ => 0,
        }
    }
}

/// Component type of the accessed element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CompType {
    I8,
    I16,
    I32,
    I64,
    F16,
    F32,
    F64,
}
impl CompType {
    pub const ALL: [CompType; 7] = [
        CompType::I8,
        CompType::I16,
        CompType::I32,
        CompType::I64,
        CompType::F16,
        CompType::F32,
        CompType::F64,
    ];
    pub fn bytes(self) -> u32 {
        match self {
            CompType::I8 => 1,
            CompType::I16 | CompType::F16 => 2,
            CompType::I32 | CompType::F32 => 4,
            CompType::I64 | CompType::F64 => 8,
        }
    }
    pub fn bits(self) -> u32 {
        self.bytes() * 8
    }
    pub fn is_float(self) -> bool {
        matches!(self, CompType::F16 | CompType::F32 | CompType::F64)
    }
    pub fn name(self) -> &'static str {
        match self {
            CompType::I8 => "int8",
            CompType::I16 => "int16",
            CompType::I32 => "int32",
            CompType::I64 => "int64",
            CompType::F16 => "float16",
            CompType::F32 => "float32",
            CompType::F64 => "float64",
        }
    }
}

/// The `Aligned` memory operand and the alignment of the generated addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AlignKind {
    /// `Aligned` = the vector size rounded up to a power of two (vec3 → 4·C); addresses are
    /// multiples of it.
    Natural,
    /// `Aligned` = the component size; addresses are multiples of C but (for vectors) mostly
    /// not of the vector size.
    Misaligned,
}
impl AlignKind {
    pub const ALL: [AlignKind; 2] = [AlignKind::Natural, AlignKind::Misaligned];
}

/// The chain's Stride.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StrideKind {
    /// Stride 0: Offset is the byte address (ByteAddressBuffer).
    Zero,
    /// Stride = element size rounded up to the alignment (StructuredBuffer).
    Tight,
    /// Stride = tight stride + padding (≥ 4 bytes); Offset picks a spot inside the element.
    Padded,
}
impl StrideKind {
    pub const ALL: [StrideKind; 3] = [StrideKind::Zero, StrideKind::Tight, StrideKind::Padded];
}

/// Memory decoration on the raw chain's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Deco {
    None,
    /// Loads only.
    NonWritable,
    /// Stores only.
    NonReadable,
    Coherent,
    Volatile,
}
impl Deco {
    pub const ALL: [Deco; 5] = [
        Deco::None,
        Deco::NonWritable,
        Deco::NonReadable,
        Deco::Coherent,
        Deco::Volatile,
    ];
}

/// Where Index and Offset come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParamSource {
    /// Per invocation from a params SSBO (`uvec4 p[gid]` = index, offset).
    Buffer,
    /// Push constants: index = i0 + gid·di, offset = o0 + gid·do (wrapping).
    Push,
    /// `OpConstant` Index and Offset (every invocation does the same access).
    Const,
}
impl ParamSource {
    pub const ALL: [ParamSource; 3] = [ParamSource::Buffer, ParamSource::Push, ParamSource::Const];
}

/// SPIR-V version of the module (and the spirv-as/spirv-val target env).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SpirvVersion {
    V1_3,
    V1_5,
    V1_6,
}
impl SpirvVersion {
    pub const ALL: [SpirvVersion; 3] = [SpirvVersion::V1_3, SpirvVersion::V1_5, SpirvVersion::V1_6];
    pub fn target_env(self) -> &'static str {
        match self {
            SpirvVersion::V1_3 => "vulkan1.1",
            SpirvVersion::V1_5 => "vulkan1.2",
            SpirvVersion::V1_6 => "vulkan1.3",
        }
    }
    pub fn minor(self) -> u32 {
        match self {
            SpirvVersion::V1_3 => 3,
            SpirvVersion::V1_5 => 5,
            SpirvVersion::V1_6 => 6,
        }
    }
}

/// The bound descriptor range of the target buffer(s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RangeKind {
    /// `VK_WHOLE_SIZE`.
    Whole,
    /// A whole number of elements (11 for robustness cases).
    Elems,
    /// A whole number of elements minus one scalar (C bytes): the last element straddles the end.
    ElemsMinusScalar,
    /// A range that is not a multiple of 4 bytes (ends inside a word / component).
    Unaligned,
}
impl RangeKind {
    pub const ALL: [RangeKind; 4] = [
        RangeKind::Whole,
        RangeKind::Elems,
        RangeKind::ElemsMinusScalar,
        RangeKind::Unaligned,
    ];
}

/// Workgroup size of every generated shader.
pub const LOCAL_SIZE: u32 = 32;
/// Workgroups per dispatch.
pub const GROUPS: u32 = 4;
/// Invocations per case.
pub const INVOCATIONS: u32 = LOCAL_SIZE * GROUPS;
/// Descriptor offset used by the cases that bind at an offset (a multiple of every
/// `minStorageBufferOffsetAlignment` allowed by the spec).
pub const DESC_OFFSET: u64 = 256;
/// The poison byte of the `debug_oob_poison` setting.
pub const POISON: u8 = 0xAB;
/// Fill of output and store-target buffers (catches stray writes).
pub const FILL: u8 = 0xCC;

/// One case of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Case {
    pub op: Op,
    pub robustness: Robustness,
    pub addressing: Addressing,
    pub ty: CompType,
    pub comps: u32,
    pub align: AlignKind,
    pub stride: StrideKind,
    pub deco: Deco,
    pub params: ParamSource,
    pub version: SpirvVersion,
    pub range: RangeKind,
    /// Bind the target(s) at [`DESC_OFFSET`].
    pub desc_offset: bool,
    /// Run with the layer's out-of-bounds poison setting (0xAB).
    pub poison: bool,
    /// Seed of the case's data and parameters.
    pub seed: u64,
}

impl Case {
    /// Why the case is not a valid combination (None if it is).
    pub fn invalid_reason(&self) -> Option<&'static str> {
        if !(1..=4).contains(&self.comps) {
            return Some("comps must be 1..4");
        }
        if self.robustness == Robustness::PerElement && self.stride == StrideKind::Zero {
            return Some("RobustnessPerElementNV needs a non-zero stride");
        }
        if self.addressing.is_psb() {
            if self.robustness != Robustness::None {
                return Some("robustness is not allowed on PhysicalStorageBuffer");
            }
            if self.range != RangeKind::Whole || self.desc_offset {
                return Some("PhysicalStorageBuffer has no descriptor range");
            }
        }
        if self.addressing == Addressing::BufferBlock && self.version != SpirvVersion::V1_3 {
            return Some("BufferBlock is SPIR-V ≤ 1.3");
        }
        match (self.op, self.deco) {
            (Op::Store, Deco::NonWritable) => return Some("NonWritable on a store"),
            (Op::Load, Deco::NonReadable) => return Some("NonReadable on a load"),
            _ => {}
        }
        None
    }
    pub fn is_valid(&self) -> bool {
        self.invalid_reason().is_none()
    }

    pub fn comp_bytes(&self) -> u32 {
        self.ty.bytes()
    }
    pub fn elem_bytes(&self) -> u32 {
        self.ty.bytes() * self.comps
    }
    /// The `Aligned` operand.
    pub fn aligned(&self) -> u32 {
        match self.align {
            AlignKind::Natural => self.elem_bytes().next_power_of_two(),
            AlignKind::Misaligned => self.comp_bytes(),
        }
    }
    /// The Stride operand.
    pub fn stride_value(&self) -> u32 {
        let a = self.aligned();
        let tight = round_up(self.elem_bytes(), a);
        match self.stride {
            StrideKind::Zero => 0,
            StrideKind::Tight => tight,
            StrideKind::Padded => tight + round_up(4, a),
        }
    }
    /// Robustness cases need a poison-enabled context.
    pub fn uses_poison(&self) -> bool {
        self.poison
    }
    /// Short id usable in file names.
    pub fn slug(&self) -> String {
        format!(
            "{:?}-{}-{:?}-{}x{}-{:?}-{:?}-{:?}-{:?}-{:?}-{:?}{}{}-{:x}",
            self.op,
            self.robustness.name(),
            self.addressing,
            self.ty.name(),
            self.comps,
            self.align,
            self.stride,
            self.deco,
            self.params,
            self.version,
            self.range,
            if self.desc_offset { "-doff" } else { "" },
            if self.poison { "-poison" } else { "" },
            self.seed
        )
        .to_lowercase()
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} robustness={} addressing={:?} type={}x{} (C={} N={}) align={:?} (Aligned {}) stride={:?} ({}) \
             deco={:?} params={:?} spirv={:?} ({}) range={:?} desc_offset={} poison={} seed={:#x}",
            self.op,
            self.robustness.name(),
            self.addressing,
            self.ty.name(),
            self.comps,
            self.comp_bytes(),
            self.comps,
            self.align,
            self.aligned(),
            self.stride,
            self.stride_value(),
            self.deco,
            self.params,
            self.version,
            self.version.target_env(),
            self.range,
            if self.desc_offset { DESC_OFFSET } else { 0 },
            self.poison,
            self.seed
        )
    }
}

pub fn round_up(v: u32, a: u32) -> u32 {
    v.div_ceil(a) * a
}
