//! StorageInputOutput16 graphics case: a vertex shader with 16-bit vertex inputs and 16-bit
//! outputs (f16vec4, flat i16/u16, an f16 array, a struct, an output block, f16 results of
//! f32 → f16 conversions decorated RTE / RTZ / undecorated, an interpolated f16vec2) and a
//! fragment shader with the matching 16-bit inputs writing 16-bit outputs into
//! R16G16B16A16_SFLOAT / R16_SINT / R16_UINT / R16G16B16A16_SINT / R16G16B16A16_UINT
//! attachments and widened values into an R32G32B32A32_SFLOAT attachment.
//!
//! The same shaders can be generated with 32-bit interface types ([`Variant::bits16`] false),
//! which lavapipe runs natively: that proves the rendering path and the reference.
//!
//! Scene: four axis-aligned quads, one per quadrant of a 32×32 target, each with its own
//! constant attributes (so flat and smooth interpolation give the same exact values), plus the
//! vertex position passed through as an interpolated f16vec2.

use super::asm::{Asm, Declare};
use super::f16::{self, Rounding};
use crate::graphics::{DrawJob, VertexAttribute};
use ash::vk;

pub const WIDTH: u32 = 32;
pub const HEIGHT: u32 = 32;

/// Which shaders to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// 16-bit interface types (needs StorageInputOutput16); false: the same with 32-bit types.
    pub bits16: bool,
    /// SPIR-V minor version (3: interface lists name Input/Output only; 6: every global).
    pub minor: u32,
    /// The fragment shader does arithmetic on its inputs (Float16 / Int16 capabilities in the
    /// 16-bit variant): color × 2, i + 1, u + 3.
    pub arith: bool,
}

impl Variant {
    pub fn name(&self) -> String {
        format!("{}-spv1.{}{}", if self.bits16 { "16bit" } else { "32bit" }, self.minor, if self.arith { "-arith" } else { "" })
    }
    pub fn target_env(&self) -> &'static str {
        if self.minor >= 6 {
            "vulkan1.3"
        } else {
            "vulkan1.1"
        }
    }
}

/// Attributes of one quad (all six vertices).
#[derive(Clone, Copy, Debug)]
pub struct Quad {
    /// f16 bits.
    pub color: [u16; 4],
    pub ints: [i16; 2],
    pub u: u16,
    /// Converted to f16 in the vertex shader (not exactly representable; RTE ≠ RTZ).
    pub val: f32,
}

/// The four quads (quadrant q = row × 2 + column).
pub fn quads() -> [Quad; 4] {
    let h = |x: f32| {
        assert!(f16::exact(x), "{x}");
        f16::from_f32(x, Rounding::Rte)
    };
    let vals: Vec<f32> = [2.0f32 / 3.0, 1000.3, -7.77, 0.7, 12345.67, 3.3, -0.3, 0.1, 0.2, 1.1, -2.9, 5.55, 100.7]
        .into_iter()
        .filter(|&v| f16::from_f32(v, Rounding::Rte) != f16::from_f32(v, Rounding::Rtz))
        .collect();
    assert!(vals.len() >= 4, "{vals:?}");
    std::array::from_fn(|q| {
        let qf = q as f32;
        Quad {
            color: [h(0.5 + qf), h(-1.25 * (qf + 1.0)), h(3.0 + 0.125 * qf), h(1000.5 - 100.0 * qf)],
            ints: [-1234 + 1000 * q as i16, 32767 - q as i16],
            u: 0xfedc - q as u16,
            val: vals[q],
        }
    })
}

pub const VERTEX_STRIDE: u32 = 24;

/// The draw: vertex buffer (pos R16G16_SFLOAT @0, color R16G16B16A16_SFLOAT @4, ints
/// R16G16_SINT @12, u R16_UINT @16, val R32_SFLOAT @20), seven attachments, push constant z.
pub fn job() -> DrawJob {
    let mut vertices = Vec::new();
    for (q, quad) in quads().iter().enumerate() {
        let (x0, y0) = (-1.0 + (q % 2) as f32, -1.0 + (q / 2) as f32);
        let corners = [(x0, y0), (x0 + 1.0, y0), (x0, y0 + 1.0), (x0 + 1.0, y0), (x0 + 1.0, y0 + 1.0), (x0, y0 + 1.0)];
        for (x, y) in corners {
            let mut v = Vec::new();
            v.extend(f16::from_f32(x, Rounding::Rte).to_le_bytes());
            v.extend(f16::from_f32(y, Rounding::Rte).to_le_bytes());
            for c in quad.color {
                v.extend(c.to_le_bytes());
            }
            for i in quad.ints {
                v.extend(i.to_le_bytes());
            }
            v.extend(quad.u.to_le_bytes());
            v.extend([0xee, 0xee]);
            v.extend(quad.val.to_le_bytes());
            assert_eq!(v.len(), VERTEX_STRIDE as usize);
            vertices.extend(v);
        }
    }
    let attr = |location, format, offset| VertexAttribute { location, format, offset };
    DrawJob {
        width: WIDTH,
        height: HEIGHT,
        vertices,
        vertex_stride: VERTEX_STRIDE,
        attributes: vec![
            attr(0, vk::Format::R16G16_SFLOAT, 0),
            attr(1, vk::Format::R16G16B16A16_SFLOAT, 4),
            attr(2, vk::Format::R16G16_SINT, 12),
            attr(3, vk::Format::R16_UINT, 16),
            attr(4, vk::Format::R32_SFLOAT, 20),
        ],
        vertex_count: 24,
        attachments: ATTACHMENTS.to_vec(),
        clear: vec![[0x5555_5555; 4]; ATTACHMENTS.len()],
        push_constants: 0.25f32.to_le_bytes().to_vec(),
    }
}

pub const ATTACHMENTS: [vk::Format; 7] = [
    vk::Format::R16G16B16A16_SFLOAT,
    vk::Format::R16_SINT,
    vk::Format::R16_UINT,
    vk::Format::R16G16B16A16_SFLOAT,
    vk::Format::R16G16B16A16_SINT,
    vk::Format::R16G16B16A16_UINT,
    vk::Format::R32G32B32A32_SFLOAT,
];

/// What one channel of one texel must hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Want {
    /// Exactly these bits.
    Bits(u32),
    /// Any of these bits (an undecorated f32 → f16 conversion may round either way).
    OneOf(Vec<u32>),
    /// An f32 within `tol` of the value (interpolation of a 32-bit varying).
    Near(f32, f32),
    /// An f32 that is exactly representable in f16 and within one f16 ulp of the value (an
    /// interpolated 16-bit varying: rounded to f16 at the fragment shader's input).
    F16Near(f32),
}

impl Want {
    fn ok(&self, got: u32) -> bool {
        match self {
            Want::Bits(b) => *b == got,
            Want::OneOf(v) => v.contains(&got),
            Want::Near(x, tol) => (f32::from_bits(got) - x).abs() <= *tol,
            Want::F16Near(x) => {
                let g = f32::from_bits(got);
                let ulp = 2f32.powi(x.abs().max(2f32.powi(-14)).log2().floor() as i32 - 10);
                f16::exact(g) && (g - x).abs() <= ulp
            }
        }
    }
}

/// Channels of each attachment: (count, bytes each).
fn channels(f: vk::Format) -> (usize, usize) {
    match f {
        vk::Format::R16_SINT | vk::Format::R16_UINT => (1, 2),
        vk::Format::R32G32B32A32_SFLOAT => (4, 4),
        _ => (4, 2),
    }
}

/// The expected channels of attachment `a` at pixel (x, y).
pub fn expected(v: &Variant, a: usize, x: u32, y: u32) -> Vec<Want> {
    let q = quads()[((y / 16) * 2 + x / 16) as usize];
    let h = |bits: u16| Want::Bits(bits as u32);
    let f16x2 = |bits: u16| f16::from_f32(f16::to_f32(bits) * 2.0, Rounding::Rte);
    let i16b = |i: i16| Want::Bits(i as u16 as u32);
    let u16b = |u: u16| Want::Bits(u as u32);
    let [cx, cy, cz, cw] = q.color;
    match a {
        0 => {
            if v.arith {
                q.color.iter().map(|&c| h(f16x2(c))).collect()
            } else {
                q.color.iter().map(|&c| h(c)).collect()
            }
        }
        1 => vec![i16b(if v.arith { q.ints[0].wrapping_add(1) } else { q.ints[0] })],
        2 => vec![u16b(if v.arith { q.u.wrapping_add(3) } else { q.u })],
        3 => vec![h(cw), h(cz), h(cx), h(cy)],
        4 => vec![i16b(q.ints[0]), i16b(q.ints[1]), i16b(q.ints[0]), i16b(q.ints[0])],
        5 => vec![u16b(q.u); 4],
        6 => {
            let x_ndc = (x as f32 + 0.5) / 16.0 - 1.0;
            if v.bits16 {
                let rte = f16::to_f32(f16::from_f32(q.val, Rounding::Rte)).to_bits();
                let rtz = f16::to_f32(f16::from_f32(q.val, Rounding::Rtz)).to_bits();
                vec![Want::Bits(rte), Want::Bits(rtz), Want::OneOf(vec![rte, rtz]), Want::F16Near(x_ndc)]
            } else {
                let b = q.val.to_bits();
                vec![Want::Bits(b), Want::Bits(b), Want::Bits(b), Want::Near(x_ndc, 1e-5)]
            }
        }
        _ => unreachable!(),
    }
}

/// What each attachment channel holds, for messages.
pub const CHANNEL_NAMES: [&[&str]; 7] = [
    &["color.x", "color.y", "color.z", "color.w"],
    &["flat i16 (ints.x)"],
    &["flat u16 (u)"],
    &["f16 array[0] (color.w)", "f16 array[1] (color.z)", "struct.a (color.x)", "block.p.y (color.y)"],
    &["struct.b.x (ints.x)", "struct.b.y (ints.y)", "flat i16", "flat i16"],
    &["block.q (u)", "u", "u", "u"],
    &["f16(val) RTE → f32", "f16(val) RTZ → f32", "f16(val) undecorated → f32", "interpolated f16 pos.x → f32"],
];

/// Compares the read-back attachments with the reference; problems, at most a few per
/// attachment.
pub fn check(v: &Variant, out: &[Vec<u8>]) -> Vec<String> {
    let mut problems = Vec::new();
    for (a, &f) in ATTACHMENTS.iter().enumerate() {
        let (n, size) = channels(f);
        let mut bad = 0;
        for y in 0..HEIGHT {
            for x in 0..WIDTH {
                let want = expected(v, a, x, y);
                let base = ((y * WIDTH + x) as usize) * n * size;
                for (c, w) in want.iter().enumerate() {
                    let o = base + c * size;
                    let got = if size == 2 { u16::from_le_bytes([out[a][o], out[a][o + 1]]) as u32 } else { u32::from_le_bytes(out[a][o..o + 4].try_into().unwrap()) };
                    if !w.ok(got) {
                        bad += 1;
                        if bad <= 3 {
                            problems.push(format!("attachment {a} ({f:?}) pixel ({x},{y}) {}: got {got:#x} want {w:?}", CHANNEL_NAMES[a][c]));
                        }
                    }
                }
            }
        }
        if bad > 3 {
            problems.push(format!("attachment {a}: {bad} wrong channels in all"));
        }
    }
    problems
}

// ---- shaders --------------------------------------------------------------------------------

struct Types {
    h: String,
    s: String,
    w: String,
    f32: String,
}

fn types(a: &mut Asm, v: &Variant) -> Types {
    let f32 = a.f32();
    if v.bits16 {
        a.cap("StorageInputOutput16");
        a.ext("SPV_KHR_16bit_storage");
        Types { h: a.float(16), s: a.int(16, true), w: a.int(16, false), f32 }
    } else {
        let (i32, u32) = (a.i32(), a.u32());
        Types { h: f32.clone(), s: i32, w: u32, f32 }
    }
}

/// An Input/Output variable with a Location (and Flat).
fn io_var(a: &mut Asm, name: &str, ty: &str, sc: &str, loc: Option<u32>, flat: bool) -> String {
    let p = a.ptr(sc, ty);
    let v = a.var(name, &p, sc);
    if let Some(l) = loc {
        a.deco(format!("OpDecorate {v} Location {l}"));
    }
    if flat {
        a.deco(format!("OpDecorate {v} Flat"));
    }
    v
}

/// `f16 arr[2]` (no ArrayStride: interface arrays have none), `struct S { f16 a; i16vec2 b; }`,
/// `Blk { f16vec2 p (Location 7); u16 q (Location 8) }`.
fn interface_types(a: &mut Asm, t: &Types, sc: &str, fragment: bool) -> (String, String, String) {
    let c2 = a.c_u32(2);
    let h = t.h.clone();
    let arr = a.def("arr_h_2", |_| format!("OpTypeArray {h} {c2}"));
    let s2 = a.vec(&t.s, 2);
    let h2 = a.vec(&t.h, 2);
    let h = t.h.clone();
    let st = a.def("S", |_| format!("OpTypeStruct {h} {s2}"));
    let w = t.w.clone();
    let name = format!("Blk{sc}");
    let blk = a.def(&name, |_| format!("OpTypeStruct {h2} {w}"));
    a.deco(format!("OpDecorate {blk} Block"));
    a.deco(format!("OpMemberDecorate {blk} 0 Location 7"));
    a.deco(format!("OpMemberDecorate {blk} 1 Location 8"));
    if fragment {
        a.deco(format!("OpMemberDecorate {blk} 1 Flat"));
    }
    (arr, st, blk)
}

/// What the vertex shader writes and the fragment shader reads, at the same locations.
struct Varyings {
    col: String,
    i: String,
    u: String,
    arr: String,
    s: String,
    blk: String,
    rte: String,
    rtz: String,
    def: String,
    pos: String,
}

/// The [`Varyings`] in `sc`: "Output", the vertex shader's `%o_*`; "Input", the fragment
/// shader's `%i_*`, the integer ones and some float ones Flat.
fn varyings(a: &mut Asm, t: &Types, sc: &str) -> Varyings {
    let fragment = sc == "Input";
    let (arr, st, blk) = interface_types(a, t, sc, fragment);
    let (h2, h4) = (a.vec(&t.h, 2), a.vec(&t.h, 4));
    let prefix = if fragment { "i" } else { "o" };
    let mut var = |name: &str, ty: &str, loc: Option<u32>, flat: bool| io_var(a, &format!("{prefix}_{name}"), ty, sc, loc, flat && fragment);
    Varyings {
        col: var("col", &h4, Some(0), false),
        i: var("i", &t.s, Some(1), true),
        u: var("u", &t.w, Some(2), true),
        arr: var("arr", &arr, Some(3), false),
        s: var("s", &st, Some(5), true),
        blk: var("blk", &blk, None, false),
        rte: var("rte", &t.h, Some(9), false),
        rtz: var("rtz", &t.h, Some(10), true),
        def: var("def", &t.h, Some(11), true),
        pos: var("pos", &h2, Some(12), false),
    }
}

fn chain(a: &mut Asm, sc: &str, ty: &str, var: &str, idx: &[u32]) -> String {
    let p = a.ptr(sc, ty);
    let ids: Vec<String> = idx.iter().map(|&i| a.c_u32(i)).collect();
    a.val(format!("OpAccessChain {p} {var} {}", ids.join(" ")))
}

/// The vertex shader's assembly.
pub fn vertex_shader(v: &Variant) -> String {
    let mut a = Asm::new(v.minor);
    let t = types(&mut a, v);
    let (h2, h4, s2) = (a.vec(&t.h, 2), a.vec(&t.h, 4), a.vec(&t.s, 2));
    let (f2, f4) = (a.vec(&t.f32, 2), a.vec(&t.f32, 4));
    let in_pos = io_var(&mut a, "in_pos", &h2, "Input", Some(0), false);
    let in_col = io_var(&mut a, "in_col", &h4, "Input", Some(1), false);
    let in_int = io_var(&mut a, "in_int", &s2, "Input", Some(2), false);
    let in_u = io_var(&mut a, "in_u", &t.w, "Input", Some(3), false);
    let in_val = io_var(&mut a, "in_val", &t.f32, "Input", Some(4), false);
    let gl_pos = io_var(&mut a, "gl_Position", &f4, "Output", None, false);
    a.deco(format!("OpDecorate {gl_pos} BuiltIn Position"));
    let o = varyings(&mut a, &t, "Output");
    // Push constants: float z (makes the SPIR-V 1.4+ interface list differ from 1.3's).
    let f32t = t.f32.clone();
    let pc_t = a.def("PC", |_| format!("OpTypeStruct {f32t}"));
    a.deco(format!("OpDecorate {pc_t} Block"));
    a.deco(format!("OpMemberDecorate {pc_t} 0 Offset 0"));
    let pcp = a.ptr("PushConstant", &pc_t);
    let pc = a.var("pc", &pcp, "PushConstant");

    // gl_Position = vec4(vec2(pos), pc.z, 1)
    let p = a.val(format!("OpLoad {h2} {in_pos}"));
    let pf = if v.bits16 { a.val(format!("OpFConvert {f2} {p}")) } else { p.clone() };
    let px = a.val(format!("OpCompositeExtract {} {pf} 0", t.f32));
    let py = a.val(format!("OpCompositeExtract {} {pf} 1", t.f32));
    let zp = chain(&mut a, "PushConstant", &t.f32, &pc, &[0]);
    let z = a.val(format!("OpLoad {} {zp}", t.f32));
    let one = a.constant(&t.f32, "1");
    let gl = a.val(format!("OpCompositeConstruct {f4} {px} {py} {z} {one}"));
    a.op(format!("OpStore {gl_pos} {gl}"));
    // Whole-vector copies.
    let c = a.val(format!("OpLoad {h4} {in_col}"));
    a.op(format!("OpStore {} {c}", o.col));
    a.op(format!("OpStore {} {p}", o.pos));
    // Scalars through access chains into the input vectors.
    let ip = chain(&mut a, "Input", &t.s, &in_int, &[0]);
    let i0 = a.val(format!("OpLoad {} {ip}", t.s));
    a.op(format!("OpStore {} {i0}", o.i));
    let u = a.val(format!("OpLoad {} {in_u}", t.w));
    a.op(format!("OpStore {} {u}", o.u));
    let comp = |a: &mut Asm, i: u32| {
        let p = chain(a, "Input", &t.h, &in_col, &[i]);
        a.val(format!("OpLoad {} {p}", t.h))
    };
    // arr = { color.w, color.z }
    for (e, ci) in [(0, 3), (1, 2)] {
        let x = comp(&mut a, ci);
        let q = chain(&mut a, "Output", &t.h, &o.arr, &[e]);
        a.op(format!("OpStore {q} {x}"));
    }
    // s = { color.x, ints }
    let x = comp(&mut a, 0);
    let q = chain(&mut a, "Output", &t.h, &o.s, &[0]);
    a.op(format!("OpStore {q} {x}"));
    let iv = a.val(format!("OpLoad {s2} {in_int}"));
    let q = chain(&mut a, "Output", &s2, &o.s, &[1]);
    a.op(format!("OpStore {q} {iv}"));
    // blk = { (color.x, color.y), u }
    for c in 0..2 {
        let x = comp(&mut a, c);
        let q = chain(&mut a, "Output", &t.h, &o.blk, &[0, c]);
        a.op(format!("OpStore {q} {x}"));
    }
    let q = chain(&mut a, "Output", &t.w, &o.blk, &[1]);
    a.op(format!("OpStore {q} {u}"));
    // f32 → f16 conversions with explicit rounding (16-bit variant) stored straight to outputs.
    let val = a.val(format!("OpLoad {} {in_val}", t.f32));
    for (out, mode) in [(&o.rte, Some("RTE")), (&o.rtz, Some("RTZ")), (&o.def, None)] {
        let r = if v.bits16 {
            let r = a.val(format!("OpFConvert {} {val}", t.h));
            if let Some(m) = mode {
                a.deco(format!("OpDecorate {r} FPRoundingMode {m}"));
            }
            r
        } else {
            val.clone()
        };
        a.op(format!("OpStore {out} {r}"));
    }
    a.finish("Vertex", &[])
}

/// The fragment shader's assembly.
pub fn fragment_shader(v: &Variant) -> String {
    let mut a = Asm::new(v.minor);
    let t = types(&mut a, v);
    if v.arith && v.bits16 {
        a.cap("Float16");
        a.cap("Int16");
    }
    // (The f16vec2 is declared first, as the varyings use it.)
    let (_, h4, s4, w4) = (a.vec(&t.h, 2), a.vec(&t.h, 4), a.vec(&t.s, 4), a.vec(&t.w, 4));
    let f4 = a.vec(&t.f32, 4);
    let vin = varyings(&mut a, &t, "Input");
    let f_col = io_var(&mut a, "f_col", &h4, "Output", Some(0), false);
    let f_i = io_var(&mut a, "f_i", &t.s, "Output", Some(1), false);
    let f_u = io_var(&mut a, "f_u", &t.w, "Output", Some(2), false);
    let f_misc = io_var(&mut a, "f_misc", &h4, "Output", Some(3), false);
    let f_ints = io_var(&mut a, "f_ints", &s4, "Output", Some(4), false);
    let f_uns = io_var(&mut a, "f_uns", &w4, "Output", Some(5), false);
    let f_wide = io_var(&mut a, "f_wide", &f4, "Output", Some(6), false);

    let mut c = a.val(format!("OpLoad {h4} {}", vin.col));
    let mut i = a.val(format!("OpLoad {} {}", t.s, vin.i));
    let mut u = a.val(format!("OpLoad {} {}", t.w, vin.u));
    let (i_raw, u_raw) = (i.clone(), u.clone());
    if v.arith {
        let two = a.constant(&t.h, "2");
        let two4 = a.splat(&h4, &two, 4);
        c = a.val(format!("OpFMul {h4} {c} {two4}"));
        let one = a.constant(&t.s, "1");
        i = a.val(format!("OpIAdd {} {i} {one}", t.s));
        let three = a.constant(&t.w, "3");
        u = a.val(format!("OpIAdd {} {u} {three}", t.w));
    }
    a.op(format!("OpStore {f_col} {c}"));
    a.op(format!("OpStore {f_i} {i}"));
    a.op(format!("OpStore {f_u} {u}"));
    // Component copies (no 16-bit composite construction needed).
    let copy = |a: &mut Asm, ty: &str, src: &str, si: &[u32], dst: &str, di: u32| {
        let p = chain(a, "Input", ty, src, si);
        let x = a.val(format!("OpLoad {ty} {p}"));
        let q = chain(a, "Output", ty, dst, &[di]);
        a.op(format!("OpStore {q} {x}"));
    };
    copy(&mut a, &t.h, &vin.arr, &[0], &f_misc, 0);
    copy(&mut a, &t.h, &vin.arr, &[1], &f_misc, 1);
    copy(&mut a, &t.h, &vin.s, &[0], &f_misc, 2);
    copy(&mut a, &t.h, &vin.blk, &[0, 1], &f_misc, 3);
    copy(&mut a, &t.s, &vin.s, &[1, 0], &f_ints, 0);
    copy(&mut a, &t.s, &vin.s, &[1, 1], &f_ints, 1);
    for k in [2, 3] {
        let q = chain(&mut a, "Output", &t.s, &f_ints, &[k]);
        a.op(format!("OpStore {q} {i_raw}"));
    }
    copy(&mut a, &t.w, &vin.blk, &[1], &f_uns, 0);
    for k in [1, 2, 3] {
        let q = chain(&mut a, "Output", &t.w, &f_uns, &[k]);
        a.op(format!("OpStore {q} {u_raw}"));
    }
    // Widened: f16 inputs → f32.
    let mut wide = Vec::new();
    for src in [&vin.rte, &vin.rtz, &vin.def] {
        let x = a.val(format!("OpLoad {} {src}", t.h));
        wide.push(if v.bits16 { a.val(format!("OpFConvert {} {x}", t.f32)) } else { x });
    }
    let p = chain(&mut a, "Input", &t.h, &vin.pos, &[0]);
    let x = a.val(format!("OpLoad {} {p}", t.h));
    wide.push(if v.bits16 { a.val(format!("OpFConvert {} {x}", t.f32)) } else { x });
    let w = a.val(format!("OpCompositeConstruct {f4} {}", wide.join(" ")));
    a.op(format!("OpStore {f_wide} {w}"));
    a.finish("Fragment", &["OriginUpperLeft".to_string()])
}
