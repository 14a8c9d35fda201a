//! Case → SPIR-V assembly, buffers and the CPU reference ([`plan`]).
//!
//! Bindings (set 0): 0 = the 8/16-bit block (source, or store target), 1 = the 32-bit buffer
//! (`uint data[]`: widened output of loads, inputs of stores), 2 = the copy destination (same
//! block type). Push-constant blocks come from `ComputeJob::push_constants`.
//!
//! Each shape yields *slots*: an access path from the block variable (constant member indices
//! and `gid`, the invocation's index) to a value, with the byte offset that value has for
//! invocation 0 and the bytes added per invocation. The shader emits one access per slot per
//! invocation; the CPU reference walks the same slots over the bytes.

use super::asm::{Asm, Declare};
use super::case::*;
use super::f16::{self, Rounding};
use crate::matrix::rng::Rng;
use crate::vk::{BufferSpec, ComputeJob};

pub const B_SMALL: u32 = 0;
pub const B_IO: u32 = 1;
pub const B_DST: u32 = 2;

/// Storage capabilities (number, name, layer setting key) in the order of
/// `shader_rewrite::SmallStorage::CAPS`.
pub const FEATURES: [(u32, &str, &str); 7] = [
    (4433, "StorageBuffer16BitAccess", "storage_buffer_16bit_access"),
    (4434, "UniformAndStorageBuffer16BitAccess", "uniform_and_storage_buffer_16bit_access"),
    (4435, "StoragePushConstant16", "storage_push_constant_16"),
    (4436, "StorageInputOutput16", "storage_input_output_16"),
    (4448, "StorageBuffer8BitAccess", "storage_buffer_8bit_access"),
    (4449, "UniformAndStorageBuffer8BitAccess", "uniform_and_storage_buffer_8bit_access"),
    (4450, "StoragePushConstant8", "storage_push_constant_8"),
];

/// Capability number by name.
pub fn cap_number(name: &str) -> u32 {
    FEATURES.iter().find(|f| f.1 == name).map(|f| f.0).unwrap_or_else(|| panic!("unknown capability {name}"))
}

/// The storage capability a kind of block needs for a width.
pub fn storage_cap(kind: Kind, bits: u32) -> &'static str {
    match (kind, bits) {
        (Kind::Ssbo | Kind::BufferBlock, 16) => "StorageBuffer16BitAccess",
        (Kind::Ubo, 16) => "UniformAndStorageBuffer16BitAccess",
        (Kind::PushConstant, 16) => "StoragePushConstant16",
        (Kind::Ssbo | Kind::BufferBlock, _) => "StorageBuffer8BitAccess",
        (Kind::Ubo, _) => "UniformAndStorageBuffer8BitAccess",
        (Kind::PushConstant, _) => "StoragePushConstant8",
    }
}

fn storage_class(kind: Kind) -> &'static str {
    match kind {
        Kind::Ssbo => "StorageBuffer",
        Kind::BufferBlock | Kind::Ubo => "Uniform",
        Kind::PushConstant => "PushConstant",
    }
}

fn round_up(x: u32, a: u32) -> u32 {
    x.div_ceil(a) * a
}

/// A type in the 8/16-bit block.
#[derive(Clone, Debug)]
pub enum Node {
    V(VecTy),
    U32,
    Array { elem: Box<Node>, len: Option<u32>, stride: u32 },
    Struct { name: String, members: Vec<(Node, u32)>, block: Option<&'static str> },
}

/// One scalar of a [`Node`] at a byte offset.
#[derive(Clone, Copy, Debug)]
pub struct Lane {
    pub off: u32,
    /// `None`: a 32-bit member.
    pub s: Option<Scalar>,
}

impl Lane {
    pub fn size(&self) -> u32 {
        self.s.map(|s| s.bytes()).unwrap_or(4)
    }
}

impl Node {
    /// Emits the type; returns its id.
    pub fn emit(&self, a: &mut Asm) -> String {
        match self {
            Node::V(t) => {
                let s = scalar_type(a, t.s);
                a.vec(&s, t.n)
            }
            Node::U32 => a.u32(),
            Node::Array { elem, len, stride } => {
                let e = elem.emit(a);
                match len {
                    Some(n) => a.array(&e, *n, *stride),
                    None => a.runtime_array(&e, *stride),
                }
            }
            Node::Struct { name, members, block } => {
                let ms: Vec<(String, u32)> = members.iter().map(|(n, o)| (n.emit(a), *o)).collect();
                a.struct_t(name, &ms, *block)
            }
        }
    }
    /// Every scalar lane at `base` (runtime arrays: none).
    pub fn lanes(&self, base: u32, out: &mut Vec<Lane>) {
        match self {
            Node::V(t) => {
                for c in 0..t.n {
                    out.push(Lane { off: base + c * t.s.bytes(), s: Some(t.s) });
                }
            }
            Node::U32 => out.push(Lane { off: base, s: None }),
            Node::Array { elem, len, stride } => {
                for i in 0..len.unwrap_or(0) {
                    elem.lanes(base + i * stride, out);
                }
            }
            Node::Struct { members, .. } => {
                for (m, o) in members {
                    m.lanes(base + o, out);
                }
            }
        }
    }
}

/// The SPIR-V type of an 8/16-bit scalar (no capability added).
pub fn scalar_type(a: &mut Asm, s: Scalar) -> String {
    match s {
        Scalar::F16 => a.float(16),
        _ => a.int(s.bits(), s.is_signed()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    C(u32),
    Gid,
}

/// One value the shader accesses.
#[derive(Clone, Debug)]
pub struct Slot {
    pub path: Vec<Step>,
    pub node: Node,
    /// Byte offset for invocation 0.
    pub off0: u32,
    /// Bytes added per invocation (0 without `Gid` in the path).
    pub inv_stride: u32,
    /// Only invocation 0 accesses it.
    pub guarded: bool,
    pub desc: String,
}

impl Slot {
    fn comps(&self) -> u32 {
        match &self.node {
            Node::V(t) => t.n,
            _ => 0,
        }
    }
    fn lanes(&self, inv: u32) -> Vec<Lane> {
        let mut v = Vec::new();
        self.node.lanes(self.off0 + inv * self.inv_stride, &mut v);
        v
    }
}

/// One dispatch of a plan's module.
#[derive(Clone, Debug)]
pub struct Run {
    pub label: String,
    pub job: ComputeJob,
    /// Expected contents of every buffer (in `job.buffers` order) after the dispatch.
    pub expected: Vec<Vec<u8>>,
    /// `(buffer, start byte, length, description)` of what the shader writes, for messages.
    pub regions: Vec<(usize, u32, u32, String)>,
    /// The descriptor range of the 8/16-bit block is not a multiple of 4: a lowering through
    /// 32-bit words cannot see where it ends (needs an 8-bit view).
    pub needs_exact_range: bool,
}

impl Run {
    /// What the byte `off` of buffer `buf` holds, for messages.
    pub fn describe(&self, buf: usize, off: usize) -> String {
        for (b, start, len, d) in &self.regions {
            if *b == buf && (*start as usize..(*start + *len) as usize).contains(&off) {
                return format!("{d} (byte {} of it)", off - *start as usize);
            }
        }
        "untouched byte (must keep its initial pattern)".into()
    }
}

/// A generated module and its dispatches.
#[derive(Clone, Debug)]
pub struct Plan {
    pub case: Case,
    pub asm: String,
    pub target_env: &'static str,
    pub val_flags: Vec<&'static str>,
    /// Storage capability numbers the module declares.
    pub storage_caps: Vec<u32>,
    pub runs: Vec<Run>,
}

// ---- values ----------------------------------------------------------------------------------

/// Integer arithmetic of the `Arith` cases: `(x + K) ^ M` in the type's width.
pub fn int_k_m(bits: u32) -> (u32, u32) {
    if bits == 16 {
        (0x1234, 0x5a5a)
    } else {
        (0x35, 0x5a)
    }
}

/// The `Arith` transform of one 8/16-bit value (bits): floats × −2 (exact for the values used),
/// integers `(x + K) ^ M`.
pub fn arith_cpu(s: Scalar, x: u32) -> u32 {
    if s.is_float() {
        f16::from_f32(f16::to_f32(x as u16) * -2.0, Rounding::Rte) as u32
    } else {
        let (k, m) = int_k_m(s.bits());
        let mask = (1u32 << s.bits()) - 1;
        (x.wrapping_add(k) ^ m) & mask
    }
}

/// Widening conversion to the 32-bit bits the shader writes.
pub fn widen_cpu(s: Scalar, x: u32) -> u32 {
    match s {
        Scalar::F16 => f16::to_f32(x as u16).to_bits(),
        Scalar::I16 => x as u16 as i16 as i32 as u32,
        Scalar::I8 => x as u8 as i8 as i32 as u32,
        Scalar::U16 | Scalar::U8 => x,
    }
}

/// Narrowing conversion of the 32-bit input bits.
pub fn narrow_cpu(s: Scalar, x: u32, rounding: Option<Rounding>) -> u32 {
    match s {
        Scalar::F16 => {
            let f = f32::from_bits(x);
            let r = rounding.unwrap_or(Rounding::Rte);
            let h = f16::from_f32(f, r);
            if rounding.is_none() {
                assert!(f16::exact(f), "generator bug: {f} is not exactly representable in f16");
            }
            h as u32
        }
        _ => x & ((1u32 << s.bits()) - 1),
    }
}

/// A "nice" f16: a normal number (exponent ≤ 29, so × −2 stays finite), ±0 or ±∞ — no
/// subnormals or NaNs (Vulkan lets drivers flush/quieten those in conversions).
pub fn nice_f16(rng: &mut Rng) -> u16 {
    let sign = if rng.chance(1, 2) { 0x8000 } else { 0 };
    match rng.below(16) {
        0 => sign,
        1 => sign | 0x7c00,
        _ => sign | ((rng.range(1, 29) as u16) << 10) | (rng.below(1024) as u16),
    }
}

/// f32 inputs for rounding stores: random mantissas in the f16 normal range, ties, overflow.
pub fn rounding_input(rng: &mut Rng) -> f32 {
    let sign = if rng.chance(1, 2) { 0x8000_0000u32 } else { 0 };
    let v = match rng.below(10) {
        0 => {
            // An exact tie between two f16 values.
            let e = rng.range(127 - 14, 127 + 15) as u32;
            (e << 23) | ((rng.below(1024) as u32) << 13) | 0x1000
        }
        1 => [65504.0f32, 65505.0, 65519.0, 65519.996, 65520.0, 65536.0, 1.0e9, f32::MAX][rng.below(8) as usize].to_bits(),
        2 => {
            // Just above / below a tie.
            let e = rng.range(127 - 14, 127 + 15) as u32;
            (e << 23) | ((rng.below(1024) as u32) << 13) | if rng.chance(1, 2) { 0x0fff } else { 0x1001 }
        }
        _ => {
            let e = rng.range(127 - 14, 127 + 15) as u32;
            (e << 23) | (rng.next_u32() & 0x7f_ffff)
        }
    };
    f32::from_bits(sign | v)
}

fn seed_of(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn read_lane(buf: &[u8], l: &Lane) -> u32 {
    let o = l.off as usize;
    match l.size() {
        1 => buf[o] as u32,
        2 => u16::from_le_bytes([buf[o], buf[o + 1]]) as u32,
        _ => u32::from_le_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]),
    }
}

fn write_lane(buf: &mut [u8], l: &Lane, v: u32) {
    let o = l.off as usize;
    let b = v.to_le_bytes();
    buf[o..o + l.size() as usize].copy_from_slice(&b[..l.size() as usize]);
}

/// Source bytes: random, with every f16 lane "nice".
fn fill_source(rng: &mut Rng, len: usize, lanes: &[Lane]) -> Vec<u8> {
    let mut b = rng.bytes(len);
    for l in lanes {
        if l.s == Some(Scalar::F16) {
            write_lane(&mut b, l, nice_f16(rng) as u32);
        }
    }
    b
}

// ---- layouts ---------------------------------------------------------------------------------

/// Offsets for [`Shape::Members`]: for each byte residue inside a word a component can start
/// at, the first offset with that residue the layout allows for `t` (vectors under relaxed /
/// scalar layout then also straddle word boundaries).
pub fn member_offsets(layout: Layout, t: VecTy) -> Vec<u32> {
    let c = t.s.bytes();
    let mut out = Vec::new();
    let mut cursor = 0;
    for r in (0..4).step_by(c as usize) {
        if let Some(o) = (cursor..cursor + 64).find(|&o| o % 4 == r && layout.member_ok(t, o)) {
            out.push(o);
            cursor = o + t.size();
        }
    }
    out
}

fn std140(kind: Kind, layout: Layout) -> bool {
    kind == Kind::Ubo && layout != Layout::Scalar
}

/// (array offset after a head scalar, element stride) of an array of `t`.
fn array_layout(kind: Kind, layout: Layout, t: VecTy) -> (u32, u32) {
    let c = t.s.bytes();
    let (align, stride) = match layout {
        Layout::Scalar => (c, t.size()),
        _ => (t.std_align(), round_up(t.size(), t.std_align())),
    };
    let (align, stride) = if std140(kind, layout) { (round_up(align, 16), round_up(stride, 16)) } else { (align, stride) };
    (round_up(c, align), stride)
}

fn pc_limit(kind: Kind) -> u32 {
    if kind == Kind::PushConstant {
        128
    } else {
        u32::MAX
    }
}

/// Block node, slots, local size, workgroups.
struct ShapeOut {
    block: Node,
    slots: Vec<Slot>,
    local: u32,
    groups: u32,
}

fn shape_members(case: &Case) -> ShapeOut {
    let t = case.ty;
    let offs = member_offsets(case.layout, t);
    let members: Vec<(Node, u32)> = offs.iter().map(|&o| (Node::V(t), o)).collect();
    let block = Node::Struct { name: "Blk".into(), members, block: Some(block_deco(case.kind)) };
    let slots = if case.op == Op::Copy && case.caps == Caps::Arith {
        vec![Slot { path: vec![], node: block.clone(), off0: 0, inv_stride: 0, guarded: false, desc: "whole block".into() }]
    } else {
        offs.iter()
            .enumerate()
            .map(|(i, &o)| Slot {
                path: vec![Step::C(i as u32)],
                node: Node::V(t),
                off0: o,
                inv_stride: 0,
                guarded: false,
                desc: format!("member {i} ({} at offset {o})", t.name()),
            })
            .collect()
    };
    ShapeOut { block, slots, local: 1, groups: 1 }
}

fn shape_array(case: &Case) -> ShapeOut {
    let t = case.ty;
    let head = VecTy { s: t.s, n: 1 };
    let (arr_off, stride) = array_layout(case.kind, case.layout, t);
    let n = 8.min((pc_limit(case.kind) - arr_off) / stride);
    let arr = Node::Array { elem: Box::new(Node::V(t)), len: Some(n), stride };
    let block = Node::Struct { name: "Blk".into(), members: vec![(Node::V(head), 0), (arr.clone(), arr_off)], block: Some(block_deco(case.kind)) };
    let head_slot = Slot { path: vec![Step::C(0)], node: Node::V(head), off0: 0, inv_stride: 0, guarded: true, desc: format!("head ({} at 0)", head.name()) };
    let slots = if case.op == Op::Copy && case.caps == Caps::Arith {
        vec![
            head_slot,
            Slot { path: vec![Step::C(1)], node: arr, off0: arr_off, inv_stride: 0, guarded: true, desc: format!("whole array {}[{n}] stride {stride}", t.name()) },
        ]
    } else {
        vec![
            head_slot,
            Slot {
                path: vec![Step::C(1), Step::Gid],
                node: Node::V(t),
                off0: arr_off,
                inv_stride: stride,
                guarded: false,
                desc: format!("element gid of {}[{n}] at {arr_off} stride {stride}", t.name()),
            },
        ]
    };
    ShapeOut { block, slots, local: n, groups: 1 }
}

fn struct_s(case: &Case) -> (Node, [u32; 4], u32) {
    let t = case.ty;
    let c = t.s.bytes();
    let sc = VecTy { s: t.s, n: 1 };
    let ov = (c..c + 64).find(|&o| case.layout.member_ok(t, o)).unwrap();
    let oy = ov + t.size();
    let mut members = vec![(Node::V(sc), 0), (Node::V(t), ov), (Node::V(sc), oy)];
    let (size, mut align) = if case.layout == Layout::Scalar {
        (oy + c, c)
    } else {
        let oz = round_up(oy + c, 4);
        members.push((Node::U32, oz));
        (oz + 4, t.std_align().max(4))
    };
    if std140(case.kind, case.layout) {
        align = round_up(align, 16);
    }
    let mut stride = round_up(size, align);
    if case.layout == Layout::Relaxed {
        // spirv-val checks the straddling rule at every element's absolute offset: keep each
        // element at the same position inside a 16-byte chunk.
        stride = round_up(stride, 16);
    }
    let oz = members.get(3).map(|m| m.1).unwrap_or(0);
    (Node::Struct { name: "S".into(), members, block: None }, [0, ov, oy, oz], stride)
}

fn shape_struct_array(case: &Case) -> ShapeOut {
    let t = case.ty;
    let sc = VecTy { s: t.s, n: 1 };
    let (s, offs, stride) = struct_s(case);
    let has_z = matches!(&s, Node::Struct { members, .. } if members.len() == 4);
    let n = 8.min(pc_limit(case.kind) / stride);
    let block = Node::Struct {
        name: "Blk".into(),
        members: vec![(Node::Array { elem: Box::new(s.clone()), len: Some(n), stride }, 0)],
        block: Some(block_deco(case.kind)),
    };
    let el = |m: u32, node: Node, d: String| Slot {
        path: vec![Step::C(0), Step::Gid, Step::C(m)],
        node,
        off0: offs[m as usize],
        inv_stride: stride,
        guarded: false,
        desc: format!("data[gid].{d} (S stride {stride})"),
    };
    let slots = if case.op == Op::Copy && case.caps == Caps::Arith {
        vec![Slot { path: vec![Step::C(0), Step::Gid], node: s, off0: 0, inv_stride: stride, guarded: false, desc: format!("whole struct data[gid] (stride {stride})") }]
    } else {
        let mut v = vec![
            el(0, Node::V(sc), format!("x ({} at 0)", sc.name())),
            el(1, Node::V(t), format!("v ({} at {})", t.name(), offs[1])),
            el(2, Node::V(sc), format!("y ({} at {})", sc.name(), offs[2])),
        ];
        if case.op == Op::Copy && has_z {
            v.push(el(3, Node::U32, format!("z (uint at {})", offs[3])));
        }
        v
    };
    ShapeOut { block, slots, local: n, groups: 1 }
}

fn block_deco(kind: Kind) -> &'static str {
    if kind == Kind::BufferBlock {
        "BufferBlock"
    } else {
        "Block"
    }
}

// ---- shader emission ---------------------------------------------------------------------------

struct Emit<'a> {
    a: Asm,
    case: &'a Case,
    sc: &'static str,
    io_sc: &'static str,
    blk: String,
    dst: String,
    dst_sc: &'static str,
    io: String,
    gid: String,
}

impl Emit<'_> {
    fn small(&mut self, t: VecTy) -> String {
        let s = scalar_type(&mut self.a, t.s);
        self.a.vec(&s, t.n)
    }
    fn wide(&mut self, t: VecTy) -> String {
        let s = if t.s.is_float() {
            self.a.f32()
        } else if t.s.is_signed() {
            self.a.i32()
        } else {
            self.a.u32()
        };
        self.a.vec(&s, t.n)
    }
    fn chain(&mut self, var: &str, sc: &str, path: &[Step], extra: Option<u32>, pointee: &str) -> String {
        if path.is_empty() && extra.is_none() {
            return var.to_string();
        }
        let p = self.a.ptr(sc, pointee);
        let mut idx = Vec::new();
        for s in path {
            idx.push(match s {
                Step::C(i) => self.a.c_u32(*i),
                Step::Gid => self.gid.clone(),
            });
        }
        if let Some(c) = extra {
            idx.push(self.a.c_u32(c));
        }
        self.a.val(format!("OpAccessChain {p} {var} {}", idx.join(" ")))
    }
    /// Pointer to `io[index]` (`index`: a u32 id).
    fn io_ptr(&mut self, index: &str) -> String {
        let u = self.a.u32();
        let p = self.a.ptr(self.io_sc, &u);
        let c0 = self.a.c_u32(0);
        let io = self.io.clone();
        self.a.val(format!("OpAccessChain {p} {io} {c0} {index}"))
    }
    fn index(&mut self, base: &str, k: u32) -> String {
        let u = self.a.u32();
        let ck = self.a.c_u32(k);
        self.a.val(format!("OpIAdd {u} {base} {ck}"))
    }
    fn arith(&mut self, t: VecTy, v: &str) -> String {
        let ty = self.small(t);
        let s = scalar_type(&mut self.a, t.s);
        if t.s.is_float() {
            let m = self.a.constant(&s, "-2");
            let m = self.a.splat(&ty, &m, t.n);
            self.a.val(format!("OpFMul {ty} {v} {m}"))
        } else {
            let (k, m) = int_k_m(t.s.bits());
            let k = self.a.constant(&s, &k.to_string());
            let m = self.a.constant(&s, &m.to_string());
            let k = self.a.splat(&ty, &k, t.n);
            let m = self.a.splat(&ty, &m, t.n);
            let x = self.a.val(format!("OpIAdd {ty} {v} {k}"));
            self.a.val(format!("OpBitwiseXor {ty} {x} {m}"))
        }
    }
    /// Small → 32-bit bits (u32 scalar/vector).
    fn widen(&mut self, t: VecTy, v: &str) -> String {
        let w = self.wide(t);
        let op = width_convert(t);
        let x = self.a.val(format!("{op} {w} {v}"));
        if t.s.is_float() || t.s.is_signed() {
            let u = self.a.u32();
            let uv = self.a.vec(&u, t.n);
            self.a.val(format!("OpBitcast {uv} {x}"))
        } else {
            x
        }
    }
    /// 32-bit bits (u32 ids, one per component) → small value.
    fn narrow(&mut self, t: VecTy, bits: &[String]) -> String {
        let ws = {
            let w = self.wide(VecTy { s: t.s, n: 1 });
            bits.iter()
                .map(|b| if t.s.is_float() || t.s.is_signed() { self.a.val(format!("OpBitcast {w} {b}")) } else { b.clone() })
                .collect::<Vec<_>>()
        };
        let w = if t.n == 1 {
            ws[0].clone()
        } else {
            let wt = self.wide(t);
            self.a.val(format!("OpCompositeConstruct {wt} {}", ws.join(" ")))
        };
        let st = self.small(t);
        let op = width_convert(t);
        let v = self.a.val(format!("{op} {st} {w}"));
        if let Some(r) = self.case.rounding.decoration() {
            self.a.deco(format!("OpDecorate {v} FPRoundingMode {}", if r == Rounding::Rte { "RTE" } else { "RTZ" }));
        }
        v
    }
    fn load_io(&mut self, base: &str, k: u32) -> String {
        let i = self.index(base, k);
        let p = self.io_ptr(&i);
        let u = self.a.u32();
        self.a.val(format!("OpLoad {u} {p}"))
    }
    fn store_io(&mut self, base: &str, k: u32, v: &str) {
        let i = self.index(base, k);
        let p = self.io_ptr(&i);
        self.a.op(format!("OpStore {p} {v}"));
    }

    /// Load slot: values widened into io[base + k ..].
    fn load_slot(&mut self, slot: &Slot, base: &str, k: u32) {
        let Node::V(t) = slot.node else { unreachable!() };
        let arith = self.case.caps == Caps::Arith;
        let (blk, sc) = (self.blk.clone(), self.sc);
        if self.case.access == Access::Whole || t.n == 1 {
            let ty = self.small(t);
            let p = self.chain(&blk, sc, &slot.path, None, &ty);
            let mut v = self.a.val(format!("OpLoad {ty} {p}"));
            if arith {
                v = self.arith(t, &v);
            }
            let bits = self.widen(t, &v);
            for c in 0..t.n {
                let x = if t.n == 1 {
                    bits.clone()
                } else {
                    let u = self.a.u32();
                    self.a.val(format!("OpCompositeExtract {u} {bits} {c}"))
                };
                self.store_io(base, k + c, &x);
            }
        } else {
            let st = VecTy { s: t.s, n: 1 };
            for c in 0..t.n {
                let ty = self.small(st);
                let p = self.chain(&blk, sc, &slot.path, Some(c), &ty);
                let mut v = self.a.val(format!("OpLoad {ty} {p}"));
                if arith {
                    v = self.arith(st, &v);
                }
                let bits = self.widen(st, &v);
                self.store_io(base, k + c, &bits);
            }
        }
    }

    /// Store slot: io[base + k ..] narrowed into the block.
    fn store_slot(&mut self, slot: &Slot, base: &str, k: u32) {
        let Node::V(t) = slot.node else { unreachable!() };
        let arith = self.case.caps == Caps::Arith;
        let (blk, sc) = (self.blk.clone(), self.sc);
        if self.case.access == Access::Whole || t.n == 1 {
            let bits: Vec<String> = (0..t.n).map(|c| self.load_io(base, k + c)).collect();
            let mut v = self.narrow(t, &bits);
            if arith {
                v = self.arith(t, &v);
            }
            let ty = self.small(t);
            let p = self.chain(&blk, sc, &slot.path, None, &ty);
            self.a.op(format!("OpStore {p} {v}"));
        } else {
            let st = VecTy { s: t.s, n: 1 };
            for c in 0..t.n {
                let b = self.load_io(base, k + c);
                let mut v = self.narrow(st, &[b]);
                if arith {
                    v = self.arith(st, &v);
                }
                let ty = self.small(st);
                let p = self.chain(&blk, sc, &slot.path, Some(c), &ty);
                self.a.op(format!("OpStore {p} {v}"));
            }
        }
    }

    fn copy_slot(&mut self, slot: &Slot) {
        let (blk, sc, dst, dsc) = (self.blk.clone(), self.sc, self.dst.clone(), self.dst_sc);
        match slot.node {
            Node::V(t) if self.case.access == Access::PerComponent && t.n > 1 => {
                let st = VecTy { s: t.s, n: 1 };
                for c in 0..t.n {
                    let ty = self.small(st);
                    let p = self.chain(&blk, sc, &slot.path, Some(c), &ty);
                    let v = self.a.val(format!("OpLoad {ty} {p}"));
                    let q = self.chain(&dst, dsc, &slot.path, Some(c), &ty);
                    self.a.op(format!("OpStore {q} {v}"));
                }
            }
            _ => {
                let ty = slot.node.emit(&mut self.a);
                let p = self.chain(&blk, sc, &slot.path, None, &ty);
                let v = self.a.val(format!("OpLoad {ty} {p}"));
                let q = self.chain(&dst, dsc, &slot.path, None, &ty);
                self.a.op(format!("OpStore {q} {v}"));
            }
        }
    }
}

/// Sets up capabilities, the block variables and `gid`; returns the emitter.
fn emitter<'a>(case: &'a Case, block: &Node, needs_io: bool, needs_dst: bool) -> Emit<'a> {
    let mut a = Asm::new(case.version.minor());
    let bits = case.ty.s.bits();
    let cap = storage_cap(case.kind, bits);
    a.cap(cap);
    if needs_dst && matches!(case.kind, Kind::PushConstant) {
        a.cap(storage_cap(Kind::Ssbo, bits));
    }
    a.ext(if bits == 16 { "SPV_KHR_16bit_storage" } else { "SPV_KHR_8bit_storage" });
    if case.caps == Caps::Arith {
        a.cap(match case.ty.s {
            Scalar::F16 => "Float16",
            Scalar::I16 | Scalar::U16 => "Int16",
            _ => "Int8",
        });
    }
    let v10 = case.version == Version::V10;
    let sc = storage_class(case.kind);
    let blk_ty = block.emit(&mut a);
    let p = a.ptr(sc, &blk_ty);
    let blk = a.var("blk", &p, sc);
    if case.kind != Kind::PushConstant {
        a.binding(&blk, B_SMALL);
    }
    let io_sc = if v10 { "Uniform" } else { "StorageBuffer" };
    let mut io = String::new();
    if needs_io {
        let u = a.u32();
        let rt = a.runtime_array(&u, 4);
        let io_t = a.struct_t("IO", &[(rt, 0)], Some(if v10 { "BufferBlock" } else { "Block" }));
        let p = a.ptr(io_sc, &io_t);
        io = a.var("io", &p, io_sc);
        a.binding(&io, B_IO);
    }
    let dst_sc = if v10 { "Uniform" } else { "StorageBuffer" };
    let mut dst = String::new();
    if needs_dst {
        let p = a.ptr(dst_sc, &blk_ty);
        dst = a.var("dst", &p, dst_sc);
        a.binding(&dst, B_DST);
    }
    let u = a.u32();
    let v3 = a.vec(&u, 3);
    let gid_var = a.builtin_input("gl_GlobalInvocationID", "GlobalInvocationId", &v3);
    let gv = a.val(format!("OpLoad {v3} {gid_var}"));
    let gid = a.val(format!("OpCompositeExtract {u} {gv} 0"));
    Emit { a, case, sc, io_sc, blk, dst, dst_sc, io, gid }
}

fn finish(e: &mut Emit, local: u32) -> String {
    e.a.finish("GLCompute", &[format!("LocalSize {local} 1 1")])
}

fn block_size(block: &Node) -> u32 {
    let mut l = Vec::new();
    block.lanes(0, &mut l);
    l.iter().map(|x| x.off + x.size()).max().unwrap_or(4)
}

/// `(buffer spec, push constants)` for the 8/16-bit source block.
fn source(case: &Case, data: Vec<u8>) -> (Option<BufferSpec>, Vec<u8>) {
    match case.kind {
        Kind::PushConstant => (None, data),
        Kind::Ubo => (Some(BufferSpec::uniform(B_SMALL, data)), Vec::new()),
        _ => (Some(BufferSpec::storage(B_SMALL, data)), Vec::new()),
    }
}

fn pattern(rng: &mut Rng, len: usize) -> Vec<u8> {
    rng.bytes(len)
}

// ---- plans -----------------------------------------------------------------------------------

/// The module, buffers and expected results of one case.
pub fn plan(case: &Case) -> Plan {
    assert!(case.is_valid(), "invalid case {case}");
    let mut rng = Rng::new(seed_of(&case.slug()));
    let (asm, runs) = match case.op {
        Op::Load | Op::Store | Op::Copy => plan_slots(case, &mut rng),
        Op::ArrayLength => plan_array_length(case, &mut rng),
        Op::Concurrent => plan_concurrent(case, &mut rng),
    };
    let storage_caps = FEATURES
        .iter()
        .filter(|f| asm.lines().any(|l| l.trim() == format!("OpCapability {}", f.1)))
        .map(|f| f.0)
        .collect();
    Plan { case: *case, asm, target_env: case.version.target_env(), val_flags: case.layout.val_flags(case.version), storage_caps, runs }
}

fn plan_slots(case: &Case, rng: &mut Rng) -> (String, Vec<Run>) {
    let sh = match case.shape {
        Shape::Members => shape_members(case),
        Shape::Array => shape_array(case),
        Shape::StructArray => shape_struct_array(case),
        _ => unreachable!(),
    };
    let op = case.op;
    let mut e = emitter(case, &sh.block, op != Op::Copy, op == Op::Copy);
    let w: u32 = sh.slots.iter().map(|s| s.comps()).sum();
    let invocations = sh.local * sh.groups;
    // io index base = gid × W.
    let base = if op != Op::Copy {
        let u = e.a.u32();
        let cw = e.a.c_u32(w);
        let g = e.gid.clone();
        e.a.val(format!("OpIMul {u} {g} {cw}"))
    } else {
        String::new()
    };
    let is0 = if sh.slots.iter().any(|s| s.guarded) && invocations > 1 {
        let b = e.a.bool_t();
        let c0 = e.a.c_u32(0);
        let g = e.gid.clone();
        Some(e.a.val(format!("OpIEqual {b} {g} {c0}")))
    } else {
        None
    };
    let mut k = 0;
    for slot in &sh.slots {
        let body = |e: &mut Emit| match op {
            Op::Load => e.load_slot(slot, &base, k),
            Op::Store => e.store_slot(slot, &base, k),
            Op::Copy => e.copy_slot(slot),
            _ => unreachable!(),
        };
        match (&is0, slot.guarded) {
            (Some(c), true) => {
                // if (gid == 0) { slot }
                let (then, merge) = (e.a.label(), e.a.label());
                e.a.op(format!("OpSelectionMerge {merge} None"));
                e.a.op(format!("OpBranchConditional {c} {then} {merge}"));
                e.a.op(format!("{then} = OpLabel"));
                body(&mut e);
                e.a.op(format!("OpBranch {merge}"));
                e.a.op(format!("{merge} = OpLabel"));
            }
            _ => body(&mut e),
        }
        k += slot.comps();
    }
    let asm = finish(&mut e, sh.local);

    // CPU side.
    let size = round_up(block_size(&sh.block), 16) as usize;
    let executed = |slot: &Slot, inv: u32| !(slot.guarded && inv != 0);
    let mut all_lanes = Vec::new();
    for inv in 0..invocations {
        for s in &sh.slots {
            if executed(s, inv) {
                all_lanes.extend(s.lanes(inv));
            }
        }
    }
    let mut regions = Vec::new();
    let mut buffers = Vec::new();
    let mut expected = Vec::new();
    let mut push_constants = Vec::new();
    match op {
        Op::Load => {
            let src = fill_source(rng, size, &all_lanes);
            let out_len = (invocations * w) as usize * 4;
            let out = pattern(rng, out_len);
            let mut want = out.clone();
            for inv in 0..invocations {
                let mut k = 0;
                for s in &sh.slots {
                    if executed(s, inv) {
                        for (c, l) in s.lanes(inv).iter().enumerate() {
                            let mut x = read_lane(&src, l);
                            let sc = l.s.unwrap();
                            if case.caps == Caps::Arith {
                                x = arith_cpu(sc, x);
                            }
                            let o = ((inv * w + k) as usize + c) * 4;
                            want[o..o + 4].copy_from_slice(&widen_cpu(sc, x).to_le_bytes());
                            regions.push((1, o as u32, 4, format!("io[{}] = widened {} component {c}, invocation {inv}, src byte {}", o / 4, s.desc, l.off)));
                        }
                    }
                    k += s.comps();
                }
            }
            let (spec, pc) = source(case, src.clone());
            push_constants = pc;
            if let Some(s) = spec {
                buffers.push(s);
                expected.push(src);
            } else {
                // Keep buffer indices stable (regions name them): index 0 is an unused dummy
                // binding for push-constant cases.
                buffers.push(BufferSpec::storage(7, vec![0; 4]));
                expected.push(vec![0; 4]);
            }
            buffers.push(BufferSpec::storage(B_IO, out));
            expected.push(want);
        }
        Op::Store => {
            let blk = pattern(rng, size);
            let mut want = blk.clone();
            let mut inputs = vec![0u32; (invocations * w) as usize];
            for inv in 0..invocations {
                let mut k = 0;
                for s in &sh.slots {
                    if executed(s, inv) {
                        for (c, l) in s.lanes(inv).iter().enumerate() {
                            let sc = l.s.unwrap();
                            let input = match sc {
                                Scalar::F16 => match case.rounding {
                                    F16Store::Exact => f16::to_f32(nice_f16(rng)).to_bits(),
                                    _ => rounding_input(rng).to_bits(),
                                },
                                _ => rng.next_u32(),
                            };
                            let i = (inv * w + k) as usize + c;
                            inputs[i] = input;
                            let mut v = narrow_cpu(sc, input, case.rounding.reference());
                            if case.caps == Caps::Arith {
                                v = arith_cpu(sc, v);
                            }
                            write_lane(&mut want, l, v);
                            regions.push((0, l.off, l.size(), format!("{} component {c}, invocation {inv}, from io[{i}] = {input:#010x}", s.desc)));
                        }
                    }
                    k += s.comps();
                }
            }
            buffers.push(BufferSpec::storage(B_SMALL, blk));
            expected.push(want);
            let io = crate::bytes::from_u32s(&inputs);
            buffers.push(BufferSpec::storage(B_IO, io.clone()));
            expected.push(io);
        }
        Op::Copy => {
            let src = fill_source(rng, size, &all_lanes);
            let dst = pattern(rng, size);
            let mut want = dst.clone();
            for inv in 0..invocations {
                for s in &sh.slots {
                    if executed(s, inv) {
                        for l in s.lanes(inv) {
                            write_lane(&mut want, &l, read_lane(&src, &l));
                            regions.push((2, l.off, l.size(), format!("{}, invocation {inv}", s.desc)));
                        }
                    }
                }
            }
            let (spec, pc) = source(case, src.clone());
            push_constants = pc;
            match spec {
                Some(s) => {
                    buffers.push(s);
                    expected.push(src);
                }
                None => {
                    buffers.push(BufferSpec::storage(7, vec![0; 4]));
                    expected.push(vec![0; 4]);
                }
            }
            // Index 1: an unused dummy binding (copies have no 32-bit buffer), so the
            // destination is index 2 like its binding.
            buffers.push(BufferSpec::storage(6, vec![0; 4]));
            expected.push(vec![0; 4]);
            buffers.push(BufferSpec::storage(B_DST, dst));
            expected.push(want);
        }
        _ => unreachable!(),
    }
    let job = ComputeJob { heap: None, buffers, push_constants, groups: [sh.groups, 1, 1], entry: "main" };
    (asm, vec![Run { label: "dispatch".into(), job, expected, regions, needs_exact_range: false }])
}

fn plan_array_length(case: &Case, rng: &mut Rng) -> (String, Vec<Run>) {
    let t = case.ty;
    let head = VecTy { s: t.s, n: 1 };
    let (arr_off, stride) = array_layout(case.kind, case.layout, t);
    let block = Node::Struct {
        name: "Blk".into(),
        members: vec![(Node::V(head), 0), (Node::Array { elem: Box::new(Node::V(t)), len: None, stride }, arr_off)],
        block: Some(block_deco(case.kind)),
    };
    let local = 8;
    let mut e = emitter(case, &block, true, false);
    let (u, b) = (e.a.u32(), e.a.bool_t());
    let blk = e.blk.clone();
    let len = e.a.val(format!("OpArrayLength {u} {blk} 1"));
    let c0 = e.a.c_u32(0);
    let g = e.gid.clone();
    let is0 = e.a.val(format!("OpIEqual {b} {g} {c0}"));
    let (then, merge) = (e.a.label(), e.a.label());
    e.a.op(format!("OpSelectionMerge {merge} None"));
    e.a.op(format!("OpBranchConditional {is0} {then} {merge}"));
    e.a.op(format!("{then} = OpLabel"));
    e.store_io(&c0, 0, &len);
    e.a.op(format!("OpBranch {merge}"));
    e.a.op(format!("{merge} = OpLabel"));
    let cw = e.a.c_u32(t.n);
    let c1 = e.a.c_u32(1);
    let m = e.a.val(format!("OpIMul {u} {g} {cw}"));
    let base = e.a.val(format!("OpIAdd {u} {m} {c1}"));
    let lt = e.a.val(format!("OpULessThan {b} {g} {len}"));
    let slot = Slot { path: vec![Step::C(1), Step::Gid], node: Node::V(t), off0: arr_off, inv_stride: stride, guarded: false, desc: format!("data[gid] ({}[] at {arr_off} stride {stride})", t.name()) };
    let (then, merge) = (e.a.label(), e.a.label());
    e.a.op(format!("OpSelectionMerge {merge} None"));
    e.a.op(format!("OpBranchConditional {lt} {then} {merge}"));
    e.a.op(format!("{then} = OpLabel"));
    e.load_slot(&slot, &base, 0);
    e.a.op(format!("OpBranch {merge}"));
    e.a.op(format!("{merge} = OpLabel"));
    let asm = finish(&mut e, local);

    let size = (arr_off + local * stride + 16) as usize;
    let mut lanes = Vec::new();
    for inv in 0..local {
        lanes.extend(slot.lanes(inv));
    }
    let src = fill_source(rng, size, &lanes);
    let out_len = (1 + local * t.n) as usize * 4;
    let out = pattern(rng, out_len);
    // Ranges: whole elements (some a multiple of 4 bytes, some not) and partial elements.
    let mut ranges: Vec<u32> = Vec::new();
    for (k, extra) in [(0u32, 0u32), (3, 0), (5, 0), (5, 1), (2, stride - 1)] {
        let r = arr_off + k * stride + extra;
        if r > 0 && !ranges.contains(&r) && k + (extra >= stride) as u32 <= local {
            ranges.push(r);
        }
    }
    // At least one range a multiple of 4 (runs in every configuration, see
    // `Run::needs_exact_range`).
    if ranges.iter().all(|r| r % 4 != 0) {
        ranges.push(round_up(arr_off + 3 * stride, 4));
    }
    let runs = ranges
        .iter()
        .map(|&range| {
            let k = (range - arr_off.min(range)) / stride;
            let k = if range < arr_off { 0 } else { k };
            let mut want = out.clone();
            let mut regions = vec![(1usize, 0u32, 4u32, format!("io[0] = OpArrayLength (range {range} → {k})"))];
            want[0..4].copy_from_slice(&k.to_le_bytes());
            for inv in 0..k.min(local) {
                for (c, l) in slot.lanes(inv).iter().enumerate() {
                    let sc = l.s.unwrap();
                    let mut x = read_lane(&src, l);
                    if case.caps == Caps::Arith {
                        x = arith_cpu(sc, x);
                    }
                    let o = (1 + inv * t.n + c as u32) as usize * 4;
                    want[o..o + 4].copy_from_slice(&widen_cpu(sc, x).to_le_bytes());
                    regions.push((1, o as u32, 4, format!("io[{}] = widened data[{inv}] component {c} (byte {})", o / 4, l.off)));
                }
            }
            let job = ComputeJob {
                heap: None,
                buffers: vec![BufferSpec::storage(B_SMALL, src.clone()).window(0, Some(range as u64)), BufferSpec::storage(B_IO, out.clone())],
                push_constants: Vec::new(),
                groups: [1, 1, 1],
                entry: "main",
            };
            Run { label: format!("range {range} (length {k})"), job, expected: vec![src.clone(), want], regions, needs_exact_range: range % 4 != 0 }
        })
        .collect();
    (asm, runs)
}

/// Workgroup size and count of [`Op::Concurrent`].
pub const CONC_LOCAL: u32 = 64;
pub const CONC_GROUPS: u32 = 8;
pub const CONC_ROUNDS: u32 = 16;

/// Element index of the `e`-th store (every 4th element is skipped and must keep its pattern).
fn conc_elem(e: u32) -> u32 {
    e + e / 3
}

/// 32-bit value component `c` of element `e` gets in round `r`.
pub fn conc_value(s: Scalar, e: u32, r: u32, c: u32) -> u32 {
    if s.is_float() {
        ((e * 4 + (r & 3)) as f32).to_bits()
    } else {
        e.wrapping_mul(0x9e37).wrapping_add(r.wrapping_mul(0x11)).wrapping_add(c * 0x55)
    }
}

fn plan_concurrent(case: &Case, rng: &mut Rng) -> (String, Vec<Run>) {
    let t = case.ty;
    let stride = t.size();
    let block = Node::Struct { name: "Blk".into(), members: vec![(Node::Array { elem: Box::new(Node::V(t)), len: None, stride }, 0)], block: Some(block_deco(case.kind)) };
    let mut e = emitter(case, &block, false, false);
    let (u, f) = (e.a.u32(), e.a.f32());
    let v3 = e.a.vec(&u, 3);
    let ev = if case.mapping == Mapping::Interleaved {
        let lid_var = e.a.builtin_input("gl_LocalInvocationID", "LocalInvocationId", &v3);
        let wg_var = e.a.builtin_input("gl_WorkGroupID", "WorkgroupId", &v3);
        let l = e.a.val(format!("OpLoad {v3} {lid_var}"));
        let l = e.a.val(format!("OpCompositeExtract {u} {l} 0"));
        let w = e.a.val(format!("OpLoad {v3} {wg_var}"));
        let w = e.a.val(format!("OpCompositeExtract {u} {w} 0"));
        // e = lid × G + perm(wg), perm(wg) = (wg mod G/2) × 2 + wg / (G/2): the elements
        // sharing a word come from workgroups in different halves of the grid (lavapipe hands
        // its threads contiguous ranges of workgroups).
        let cg = e.a.c_u32(CONC_GROUPS);
        let ch = e.a.c_u32(CONC_GROUPS / 2);
        let c2 = e.a.c_u32(2);
        let m = e.a.val(format!("OpIMul {u} {l} {cg}"));
        let lo = e.a.val(format!("OpUMod {u} {w} {ch}"));
        let lo = e.a.val(format!("OpIMul {u} {lo} {c2}"));
        let hi = e.a.val(format!("OpUDiv {u} {w} {ch}"));
        let p = e.a.val(format!("OpIAdd {u} {lo} {hi}"));
        e.a.val(format!("OpIAdd {u} {m} {p}"))
    } else {
        e.gid.clone()
    };
    let c3 = e.a.c_u32(3);
    let d = e.a.val(format!("OpUDiv {u} {ev} {c3}"));
    let elem = e.a.val(format!("OpIAdd {u} {ev} {d}"));
    let blk = e.blk.clone();
    let sc = e.sc;
    // for r in 0..ROUNDS { data[elem] = narrow(value(e, r)) }
    let b = e.a.bool_t();
    let (c0, c1, cn) = (e.a.c_u32(0), e.a.c_u32(1), e.a.c_u32(CONC_ROUNDS));
    let (pre, header, body, cont, merge) = (e.a.label(), e.a.label(), e.a.label(), e.a.label(), e.a.label());
    let (r, rn) = (e.a.tmp(), e.a.tmp());
    e.a.op(format!("OpBranch {pre}"));
    e.a.op(format!("{pre} = OpLabel"));
    e.a.op(format!("OpBranch {header}"));
    e.a.op(format!("{header} = OpLabel"));
    e.a.op(format!("{r} = OpPhi {u} {c0} {pre} {rn} {cont}"));
    let cond = e.a.val(format!("OpULessThan {b} {r} {cn}"));
    e.a.op(format!("OpLoopMerge {merge} {cont} None"));
    e.a.op(format!("OpBranchConditional {cond} {body} {merge}"));
    e.a.op(format!("{body} = OpLabel"));
    let mut bits = Vec::new();
    for c in 0..t.n {
        let a = &mut e.a;
        let v = if t.s.is_float() {
            let c4 = a.c_u32(4);
            let c3 = a.c_u32(3);
            let x = a.val(format!("OpIMul {u} {ev} {c4}"));
            let rr = a.val(format!("OpBitwiseAnd {u} {r} {c3}"));
            let x = a.val(format!("OpIAdd {u} {x} {rr}"));
            let fx = a.val(format!("OpConvertUToF {f} {x}"));
            a.val(format!("OpBitcast {u} {fx}"))
        } else {
            let k1 = a.c_u32(0x9e37);
            let k2 = a.c_u32(0x11);
            let x = a.val(format!("OpIMul {u} {ev} {k1}"));
            let y = a.val(format!("OpIMul {u} {r} {k2}"));
            let x = a.val(format!("OpIAdd {u} {x} {y}"));
            if c > 0 {
                let kc = a.c_u32(c * 0x55);
                a.val(format!("OpIAdd {u} {x} {kc}"))
            } else {
                x
            }
        };
        bits.push(v);
    }
    let mut v = e.narrow(t, &bits);
    if case.caps == Caps::Arith {
        v = e.arith(t, &v);
    }
    let ty = e.small(t);
    let p = e.a.ptr(sc, &ty);
    let ptr = e.a.val(format!("OpAccessChain {p} {blk} {c0} {elem}"));
    e.a.op(format!("OpStore {ptr} {v}"));
    e.a.op(format!("OpBranch {cont}"));
    e.a.op(format!("{cont} = OpLabel"));
    e.a.op(format!("{rn} = OpIAdd {u} {r} {c1}"));
    e.a.op(format!("OpBranch {header}"));
    e.a.op(format!("{merge} = OpLabel"));
    let asm = finish(&mut e, CONC_LOCAL);

    let n_inv = CONC_LOCAL * CONC_GROUPS;
    let n_elem = conc_elem(n_inv - 1) + 1;
    let size = (n_elem * stride + 16) as usize;
    let blk_data = pattern(rng, size);
    let mut want = blk_data.clone();
    let mut regions = Vec::new();
    for ei in 0..n_inv {
        let el = conc_elem(ei);
        for c in 0..t.n {
            let l = Lane { off: el * stride + c * t.s.bytes(), s: Some(t.s) };
            let mut v = narrow_cpu(t.s, conc_value(t.s, ei, CONC_ROUNDS - 1, c), None);
            if case.caps == Caps::Arith {
                v = arith_cpu(t.s, v);
            }
            write_lane(&mut want, &l, v);
        }
        regions.push((0, el * stride, stride, format!("data[{el}] (store #{ei}; element {} of every 4 is never written)", 3)));
    }
    let job = ComputeJob { heap: None, buffers: vec![BufferSpec::storage(B_SMALL, blk_data)], push_constants: Vec::new(), groups: [CONC_GROUPS, 1, 1], entry: "main" };
    (asm, vec![Run { label: format!("{n_inv} invocations × {CONC_ROUNDS} rounds"), job, expected: vec![want], regions, needs_exact_range: false }])
}

/// The width-only conversion between `t` and its 32-bit twin (either way).
fn width_convert(t: VecTy) -> &'static str {
    if t.s.is_float() {
        "OpFConvert"
    } else if t.s.is_signed() {
        "OpSConvert"
    } else {
        "OpUConvert"
    }
}
