//! Image atomics through bindless handles (`OpImageTexelPointer` on an image from a handle),
//! executed through the layer and checked against a CPU model of the atomics.
//!
//! Every shader runs 256 invocations (LocalSize 64, 4 workgroups) over two sets of three 4×2
//! storage images: invocation `i` takes set `k = (i / 8) % 2` (so neighbouring invocations use
//! different descriptors: the handle is not uniform) and texel `(i % 4, (i / 4) % 2)`, so 16
//! invocations from different workgroups hit every texel of every image, and does
//! - `InterlockedAdd`: `OpAtomicIAdd` of `7i + 1` on image A (R32_UINT);
//! - `InterlockedMax`: `OpAtomicSMax` of `(37i mod 101) - 50` on image B (R32_SINT);
//! - `InterlockedCompareExchange`: `OpAtomicCompareExchange(comparator 0, value i + 1)` on
//!   image C (R32_UINT, initially 0),
//!
//! writing the three returned values to `out[3i..3i+3]`. The model checks the final texels and
//! that the returned values are a serialization of the operations: per texel, the adds' old
//! values chain from the initial value to the final one; the max's old values are earlier
//! maxima; exactly one compare-exchange wins (returns 0) and the texel holds its value, every
//! other one returns that value.
//!
//! The shapes ([`Shape`]): OpConvertUToImageNV values (addressing 32), Slang's
//! OpConvertUToSampledImageNV + OpImage (u64 and uvec2 handles), a Function variable holding the
//! image, and images as storage-buffer members (the extension's memory shape). Formats are
//! `Unknown` except in the Function-variable shape (R32ui / R32i declared), so the lowering's
//! format inference is what makes the atomics valid.

use super::cases::dispatch;
use super::checks::Shader;
use super::gpu::{Img, Scope};
use super::shaders::{compute_for, h_ty, store_each, TEXEL_XY};
use super::*;
use crate::tools::Assemble;
use ash::vk;
use spvasm::{Module, GID_X};

/// How the shader reaches the image the atomic works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `OpConvertUToImageNV` of a u32 handle, texel pointer on the image value.
    ImageValue,
    /// Slang: `OpConvertUToSampledImageNV` + `OpImage`, texel pointer on the image value.
    Slang(HandleKind),
    /// `OpConvertUToImageNV` stored to a Function variable, texel pointer on the variable.
    FunctionVariable,
    /// The images are members of a storage buffer (8 bytes each), texel pointer on the member.
    BlockMember,
}

impl Shape {
    pub const ALL: [Shape; 5] = [Shape::ImageValue, Shape::Slang(HandleKind::U64), Shape::Slang(HandleKind::UVec2), Shape::FunctionVariable, Shape::BlockMember];

    pub fn kind(self) -> HandleKind {
        match self {
            Shape::ImageValue => HandleKind::U32,
            Shape::Slang(k) => k,
            Shape::FunctionVariable | Shape::BlockMember => HandleKind::U64,
        }
    }

    pub fn name(self) -> String {
        match self {
            Shape::ImageValue => "image_value_u32".into(),
            Shape::Slang(k) => format!("slang_{}", k.name()),
            Shape::FunctionVariable => "function_variable_u64".into(),
            Shape::BlockMember => "block_member".into(),
        }
    }
}

/// Invocations per dispatch.
pub const N: u32 = 256;
const W: u32 = 4;
const H: u32 = 2;
/// Image sets (three images each).
const SETS: u32 = 2;

/// The module for `shape` (see the module documentation).
pub fn shader(shape: Shape) -> Module {
    let kind = shape.kind();
    let (h, hn) = (h_ty(kind), &h_ty(kind)[1..]);
    let format = |f: &'static str| if shape == Shape::FunctionVariable { f } else { "Unknown" };
    let m = compute_for(kind, 6, (64, 1)).globals(&format!(
        "%uimg = OpTypeImage %u32 2D 0 0 0 2 {}
%iimg = OpTypeImage %i32 2D 0 0 0 2 {}
%pi_u32 = OpTypePointer Image %u32
%pi_i32 = OpTypePointer Image %i32",
        format("R32ui"),
        format("R32i")
    ));
    let names = [("a", "%uimg", "%pi_u32"), ("b", "%iimg", "%pi_i32"), ("c", "%uimg", "%pi_u32")];
    let mut vars = String::new();
    let mut fetch = String::new();
    let m = match shape {
        Shape::BlockMember => {
            for (j, (n, img, pi)) in names.iter().enumerate() {
                fetch += &format!("%m{n} = OpAccessChain %ps_{} %slots %c0 %k %c{j}\n%tp{n} = OpImageTexelPointer {pi} %m{n} %xy %c0\n", &img[1..]);
            }
            m.decorate("OpMemberDecorate %slot_t 0 Offset 0\nOpMemberDecorate %slot_t 1 Offset 8\nOpMemberDecorate %slot_t 2 Offset 16")
                .globals("%slot_t = OpTypeStruct %uimg %iimg %uimg\n%ps_uimg = OpTypePointer StorageBuffer %uimg\n%ps_iimg = OpTypePointer StorageBuffer %iimg")
                .ssbo("slots", "%slot_t", 24, 0, 0)
        }
        _ => {
            let mut m = m.ssbo("handles", h, kind.bytes() as u32, 0, 0);
            if matches!(shape, Shape::Slang(_)) {
                m = m.globals("%suimg = OpTypeSampledImage %uimg\n%siimg = OpTypeSampledImage %iimg");
            }
            if shape == Shape::FunctionVariable {
                m = m.globals("%pf_uimg = OpTypePointer Function %uimg\n%pf_iimg = OpTypePointer Function %iimg");
            }
            for (j, (n, img, pi)) in names.iter().enumerate() {
                fetch += &format!("%hi{n} = OpIAdd %u32 %k3 %c{j}\n%hp{n} = OpAccessChain %ps_{hn} %handles %c0 %hi{n}\n%h{n} = OpLoad {h} %hp{n}\n");
                fetch += &match shape {
                    Shape::ImageValue => format!("%im{n} = OpConvertUToImageNV {img} %h{n}\n%tp{n} = OpImageTexelPointer {pi} %im{n} %xy %c0\n"),
                    Shape::Slang(_) => format!("%si{n} = OpConvertUToSampledImageNV %s{} %h{n}\n%im{n} = OpImage {img} %si{n}\n%tp{n} = OpImageTexelPointer {pi} %im{n} %xy %c0\n", &img[1..]),
                    _ => {
                        vars += &format!("%var{n} = OpVariable %pf_{} Function\n", &img[1..]);
                        format!("%im{n} = OpConvertUToImageNV {img} %h{n}\nOpStore %var{n} %im{n}\n%tp{n} = OpImageTexelPointer {pi} %var{n} %xy %c0\n")
                    }
                };
            }
            m
        }
    };
    m.ssbo("out", "%u32", 4, 0, 1).main(&format!(
        "{vars}{GID_X}
%x = OpUMod %u32 %i %c4
%i4 = OpUDiv %u32 %i %c4
%y = OpUMod %u32 %i4 %c2
{TEXEL_XY}
%i8 = OpUDiv %u32 %i %c8
%k = OpUMod %u32 %i8 %c2
%k3 = OpIMul %u32 %k %c3
{fetch}%va0 = OpIMul %u32 %i %c7
%va = OpIAdd %u32 %va0 %c1
%olda = OpAtomicIAdd %u32 %tpa %c1 %c0 %va
%sb0 = OpIMul %u32 %i %c37
%sb1 = OpUMod %u32 %sb0 %c101
%sb2 = OpBitcast %i32 %sb1
%sb = OpISub %i32 %sb2 %i50
%oldb = OpAtomicSMax %i32 %tpb %c1 %c0 %sb
%vc = OpIAdd %u32 %i %c1
%oldc = OpAtomicCompareExchange %u32 %tpc %c1 %c0 %c0 %vc %c0
%oldbu = OpBitcast %u32 %oldb
{}",
        store_each("%i", "%ps_u32", &["%olda", "%oldbu", "%oldc"])
    ))
}

/// Every shader of this file.
pub fn all_shaders() -> Result<Vec<Shader>, String> {
    Shape::ALL.iter().map(|&s| Ok((format!("atomics_{}", s.name()), shader(s).assemble()?, shader(s).target_env()))).collect()
}

/// Initial texel `t` (0..8) of image A and B of set `k`.
fn init_add(k: u32, t: u32) -> u32 {
    1000 * t + 7 * k + 3
}
fn init_max(k: u32, t: u32) -> i32 {
    -1000 + t as i32 - 10 * k as i32
}
/// What invocation `i` adds / maxes / swaps in, and where.
fn add_value(i: u32) -> u32 {
    7 * i + 1
}
fn max_value(i: u32) -> i32 {
    ((37 * i) % 101) as i32 - 50
}
fn set_of(i: u32) -> u32 {
    (i / 8) % 2
}
fn texel_of(i: u32) -> u32 {
    (i / 4 % H) * W + i % W
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Runs `shape` once through the layer (`ctx` from [`crate::vk::ContextOptions::bindless`]) and
/// checks the images and the returned values against the model.
pub fn run(ctx: &Context, shape: Shape) -> Result<(), String> {
    let what = format!("image atomics ({})", shape.name());
    let kind = shape.kind();
    let api = HandleApi::new(ctx);
    let mut scope = Scope::new(ctx)?;
    let usage = vk::ImageUsageFlags::STORAGE;
    // imgs[3k + j]: j = 0 add (uint), 1 max (int), 2 compare-exchange (uint).
    let mut imgs: Vec<Img> = Vec::new();
    for k in 0..SETS {
        let add: Vec<u8> = (0..W * H).flat_map(|t| init_add(k, t).to_le_bytes()).collect();
        let max: Vec<u8> = (0..W * H).flat_map(|t| init_max(k, t).to_le_bytes()).collect();
        imgs.push(scope.image(vk::Format::R32_UINT, W, H, usage, Some(&add), vk::ImageLayout::GENERAL)?);
        imgs.push(scope.image(vk::Format::R32_SINT, W, H, usage, Some(&max), vk::ImageLayout::GENERAL)?);
        imgs.push(scope.image(vk::Format::R32_UINT, W, H, usage, None, vk::ImageLayout::GENERAL)?);
    }
    let mut handles: Vec<u32> = Vec::new();
    let mut bytes: Vec<u8> = Vec::new();
    for (n, img) in imgs.iter().enumerate() {
        let h32 = api.storage(img.view)?;
        handles.push(h32);
        match kind {
            HandleKind::U32 => bytes.extend(h32.to_le_bytes()),
            HandleKind::U64 => {
                let h64 = api.get64(img.view, vk::DescriptorType::STORAGE_IMAGE, vk::Sampler::null())?;
                if h64 as u32 != h32 {
                    return Err(format!("{what}: vkGetImageViewHandle64NVX {h64:#x} and vkGetImageViewHandleNVX {h32:#x} differ"));
                }
                bytes.extend(h64.to_le_bytes());
            }
            HandleKind::UVec2 => {
                // The high word is garbage: only the low word names the image.
                bytes.extend(h32.to_le_bytes());
                bytes.extend((0x5A00_0000u32 | n as u32).to_le_bytes());
            }
        }
    }
    let hbuf = scope.buffer_with(&bytes)?;
    let out = scope.buffer(N as usize * 12)?;
    out.fill(0xEE);
    let w = shader(shape).assemble()?;
    dispatch(&mut scope, &w, &[hbuf.whole(0, vk::DescriptorType::STORAGE_BUFFER), out.whole(1, vk::DescriptorType::STORAGE_BUFFER)], &[], [N / 64, 1, 1])?;
    let olds = words(&out.read());
    let mut finals: Vec<Vec<u32>> = Vec::new();
    for img in &imgs {
        finals.push(words(&scope.read_image(img, 4)?));
    }
    check(&olds, &finals).map_err(|e| format!("{what} (handles {handles:x?}): {e}"))
}

/// The CPU model: `olds[3i + j]` returned by invocation `i`'s atomic `j`, `finals[3k + j]` the
/// texels of image `j` of set `k` after the dispatch.
pub fn check(olds: &[u32], finals: &[Vec<u32>]) -> Result<(), String> {
    let mut errs: Vec<String> = Vec::new();
    for k in 0..SETS {
        for t in 0..W * H {
            let users: Vec<u32> = (0..N).filter(|&i| set_of(i) == k && texel_of(i) == t).collect();
            let at = |j: u32| finals[(3 * k + j) as usize][t as usize];
            // Add: the old values, ordered, chain from the initial value to the final one.
            let mut chain: Vec<(u32, u32)> = users.iter().map(|&i| (olds[3 * i as usize], add_value(i))).collect();
            chain.sort();
            let mut expect = init_add(k, t);
            for &(old, v) in &chain {
                if old != expect {
                    errs.push(format!("add, set {k} texel {t}: returned old values {chain:?} do not chain from {}", init_add(k, t)));
                    break;
                }
                expect = expect.wrapping_add(v);
            }
            if at(0) != init_add(k, t).wrapping_add(users.iter().map(|&i| add_value(i)).sum::<u32>()) {
                errs.push(format!("add, set {k} texel {t}: final {} want {}", at(0), init_add(k, t) + users.iter().map(|&i| add_value(i)).sum::<u32>()));
            }
            // Max: final = max of everything; every old value is the initial one or an
            // operand, and at most the final value.
            let want = users.iter().map(|&i| max_value(i)).max().unwrap().max(init_max(k, t));
            if at(1) as i32 != want {
                errs.push(format!("max, set {k} texel {t}: final {} want {want}", at(1) as i32));
            }
            for &i in &users {
                let old = olds[3 * i as usize + 1] as i32;
                if old > want || (old != init_max(k, t) && !users.iter().any(|&u| max_value(u) == old)) {
                    errs.push(format!("max, set {k} texel {t}: invocation {i} returned {old}, which no serialization gives"));
                }
            }
            // Compare-exchange from 0: one winner, whose value stays; the rest see it.
            let winners: Vec<u32> = users.iter().copied().filter(|&i| olds[3 * i as usize + 2] == 0).collect();
            match winners.as_slice() {
                [w] if at(2) == w + 1 => {
                    if let Some(&i) = users.iter().find(|&&i| i != *w && olds[3 * i as usize + 2] != w + 1) {
                        errs.push(format!("compare-exchange, set {k} texel {t}: invocation {i} returned {} after {w} won", olds[3 * i as usize + 2]));
                    }
                }
                _ => errs.push(format!("compare-exchange, set {k} texel {t}: winners {winners:?}, final {}", at(2))),
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        let n = errs.len();
        errs.truncate(8);
        Err(format!("{n} mismatches:\n  {}", errs.join("\n  ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model accepts a sequential execution and rejects corrupted ones.
    #[test]
    fn model_accepts_a_serial_run_and_rejects_corruptions() {
        let mut finals: Vec<Vec<u32>> = Vec::new();
        for k in 0..SETS {
            finals.push((0..W * H).map(|t| init_add(k, t)).collect());
            finals.push((0..W * H).map(|t| init_max(k, t) as u32).collect());
            finals.push(vec![0; (W * H) as usize]);
        }
        let mut olds = vec![0u32; 3 * N as usize];
        for i in 0..N {
            let (k, t) = (set_of(i) as usize, texel_of(i) as usize);
            olds[3 * i as usize] = finals[3 * k][t];
            finals[3 * k][t] = finals[3 * k][t].wrapping_add(add_value(i));
            olds[3 * i as usize + 1] = finals[3 * k + 1][t];
            finals[3 * k + 1][t] = (finals[3 * k + 1][t] as i32).max(max_value(i)) as u32;
            olds[3 * i as usize + 2] = finals[3 * k + 2][t];
            if finals[3 * k + 2][t] == 0 {
                finals[3 * k + 2][t] = i + 1;
            }
        }
        check(&olds, &finals).unwrap();
        for (what, j) in [("add", 0), ("max", 1), ("cas", 2)] {
            let mut bad = finals.clone();
            bad[j][3] ^= 1;
            assert!(check(&olds, &bad).is_err(), "{what}: a wrong final texel passed");
            let mut bad_olds = olds.clone();
            // An add that skips a step, a max above every operand, a second winner.
            bad_olds[3 * 40 + j] = [bad_olds[3 * 40].wrapping_add(1), 1000, 0][j];
            assert!(check(&bad_olds, &finals).is_err(), "{what}: a wrong returned value passed");
        }
    }
}
