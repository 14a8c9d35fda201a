//! spvasm generators of the bindless test shaders, on [`Module`]: [`bindless`] starts a module
//! with the capability and the image types, so each shader only states what it adds;
//! [`Assemble::assemble`](crate::tools::Assemble) runs spirv-as.
//!
//! Conventions: `%img` = sampled 2D float image (Sampled 1, Unknown format), `%simg` its
//! sampled-image type, `%smp` = sampler, `%stimg` = storage 2D image (Sampled 2, Rgba8); the
//! handle type ([`HandleKind`]) is u32, u64 or uvec2 ([`h_ty`]), its pointers the standard
//! `%ps_u32`, `%pp_u64`, ... names.

use super::HandleKind;
use spvasm::{Module, FRAG_XY, GID_X};

/// The storage image type and the float constants the shaders share (those without a standard
/// name), after [`spvasm::IMAGE_TYPES`].
const SHARED_GLOBALS: &str = "%stimg = OpTypeImage %f32 2D 0 0 0 2 Rgba8
%fhalf = OpConstant %f32 0.5
%fquarter = OpConstant %f32 0.25
%f255inv = OpConstant %f32 0.0039215688";

/// A SPIR-V 1.`minor` module with the bindless capability and `mode`
/// (`OpSamplerImageAddressingModeNV`; `None`: no instruction), the image types and
/// [`SHARED_GLOBALS`].
pub fn bindless(model: &str, minor: u32, mode: Option<u32>, int64: bool) -> Module {
    let m = Module::new(model).spirv(minor).bindless_textures(mode);
    let m = if int64 { m.cap("Int64") } else { m };
    m.image_types().globals(SHARED_GLOBALS)
}

/// The addressing mode of handle kind `kind` (u32 → 32, u64/uvec2 → 64) and whether it needs
/// Int64.
fn mode_of(kind: HandleKind) -> (Option<u32>, bool) {
    match kind {
        HandleKind::U32 => (Some(32), false),
        HandleKind::U64 => (Some(64), true),
        HandleKind::UVec2 => (Some(64), false),
    }
}

/// The compute module (LocalSize x y 1, `%gid`) for handle kind `kind`, SPIR-V 1.`minor`.
pub fn compute_for(kind: HandleKind, minor: u32, local: (u32, u32)) -> Module {
    let (mode, int64) = mode_of(kind);
    bindless("GLCompute", minor, mode, int64).local_size(local.0, local.1, 1).gid()
}

/// Type name of a handle kind.
pub fn h_ty(kind: HandleKind) -> &'static str {
    match kind {
        HandleKind::U32 => "%u32",
        HandleKind::U64 => "%u64",
        HandleKind::UVec2 => "%v2u",
    }
}

/// The storage buffer of handles `handles[]` at (0, `binding`).
fn handle_buffer(m: Module, name: &str, kind: HandleKind, binding: u32) -> Module {
    m.ssbo(name, h_ty(kind), kind.bytes() as u32, 0, binding)
}

/// Function-body lines computing `%x`, `%y` (u32 texel coords = i % 4, (i / 4) % 4) from `%i`.
const TEXEL_OF_I: &str = "%x = OpUMod %u32 %i %c4
%i4 = OpUDiv %u32 %i %c4
%y = OpUMod %u32 %i4 %c4";

/// Function-body lines computing the texel-center coordinate `%uv` (v2f) of texel (`%x`, `%y`)
/// of a 4×4 texture.
const CENTER_UV: &str = "%xf = OpConvertUToF %f32 %x
%yf = OpConvertUToF %f32 %y
%xh = OpFAdd %f32 %xf %fhalf
%yh = OpFAdd %f32 %yf %fhalf
%uf = OpFMul %f32 %xh %fquarter
%vf = OpFMul %f32 %yh %fquarter
%uv = OpCompositeConstruct %v2f %uf %vf";

/// Function-body lines computing the integer coordinate `%xy` (v2i) of texel (`%x`, `%y`).
pub const TEXEL_XY: &str = "%xs = OpBitcast %i32 %x
%ys = OpBitcast %i32 %y
%xy = OpCompositeConstruct %v2i %xs %ys";

/// Function-body lines: `%i` = gid.x, its texel (`%x`, `%y`) as in [`TEXEL_OF_I`], `%uv` and
/// `%xy` of that texel.
pub fn coords() -> String {
    format!("{GID_X}\n{TEXEL_OF_I}\n{CENTER_UV}\n{TEXEL_XY}")
}

/// Function-body lines: `%color` = ((16x+k)/255, (16y+k)/255, 8k/255, 1), what the storage
/// cases write at texel (`%x`, `%y`) of image `%k`.
const WRITTEN_COLOR: &str = "%x16 = OpIMul %u32 %x %c16
%y16 = OpIMul %u32 %y %c16
%rx = OpIAdd %u32 %x16 %k
%ry = OpIAdd %u32 %y16 %k
%bk = OpIMul %u32 %k %c8
%rf = OpConvertUToF %f32 %rx
%gf = OpConvertUToF %f32 %ry
%bf = OpConvertUToF %f32 %bk
%cr = OpFMul %f32 %rf %f255inv
%cg = OpFMul %f32 %gf %f255inv
%cb = OpFMul %f32 %bf %f255inv
%color = OpCompositeConstruct %v4f %cr %cg %cb %f1";

/// Function-body lines storing the n `values` (ids) to `out[n·base + k]` through pointers
/// of type `ptr`, the k-th to the k-th slot.
pub fn store_each(base: &str, ptr: &str, values: &[&str]) -> String {
    let n = values.len();
    let mut s = format!("%o0 = OpIMul %u32 {base} %c{n}\n");
    for k in 1..n {
        s += &format!("%o{k} = OpIAdd %u32 %o0 %c{k}\n");
    }
    for (k, v) in values.iter().enumerate() {
        s += &format!("%p{k} = OpAccessChain {ptr} %out %c0 %o{k}\nOpStore %p{k} {v}\n");
    }
    s
}

/// Case 1: `out[2i]` = sample (nearest, texel centers) and `out[2i+1]` = fetch of the texture
/// a handle names. `uniform`: the handle comes from push constants `{ H h; u32 base; }` and
/// the outputs go to `out[2(base+i)...]`; otherwise from `handles[i]` (binding 0).
/// Output: binding 1, vec4[]. LocalSize 16.
pub fn sample_many(kind: HandleKind, uniform: bool, minor: u32) -> Module {
    let m = compute_for(kind, minor, (16, 1)).ssbo("out", "%v4f", 16, 0, 1);
    let (h, hn) = (h_ty(kind), &h_ty(kind)[1..]);
    let (m, load) = if uniform {
        (
            m.push_constants("pc", &[(h, 0), ("%u32", 8)]),
            format!("%hp = OpAccessChain %pp_{hn} %pc %c0\n%h = OpLoad {h} %hp\n%bp = OpAccessChain %pp_u32 %pc %c1\n%base = OpLoad %u32 %bp\n%o = OpIAdd %u32 %base %i"),
        )
    } else {
        (handle_buffer(m, "handles", kind, 0), format!("%hp = OpAccessChain %ps_{hn} %handles %c0 %i\n%h = OpLoad {h} %hp\n%o = OpCopyObject %u32 %i"))
    };
    m.main(&format!(
        "{}
{load}
%si = OpConvertUToSampledImageNV %simg %h
%s = OpImageSampleExplicitLod %v4f %si %uv Lod %f0
%im = OpImage %img %si
%t = OpImageFetch %v4f %im %xy Lod %i0
{}",
        coords(),
        store_each("%o", "%ps_v4f", &["%s", "%t"])
    ))
}

/// Function-body lines: gid = (`%x`, `%y`, `%k`), `%h` = `handles[k]`, `%im` = its storage
/// image.
fn storage_image_of_k(kind: HandleKind) -> String {
    let (h, hn) = (h_ty(kind), &h_ty(kind)[1..]);
    format!(
        "%g = OpLoad %v3u %gid
%x = OpCompositeExtract %u32 %g 0
%y = OpCompositeExtract %u32 %g 1
%k = OpCompositeExtract %u32 %g 2
%hp = OpAccessChain %ps_{hn} %handles %c0 %k
%h = OpLoad {h} %hp
%im = OpConvertUToImageNV %stimg %h"
    )
}

/// Case 2: image `k = gid.z` (handle `handles[k]`, a STORAGE_IMAGE handle) gets texel (x, y) =
/// ((16x+k)/255, (16y+k)/255, 8k/255, 1) written through OpConvertUToImageNV + OpImageWrite.
/// LocalSize 4×4, dispatch (1, 1, K).
pub fn storage_write(kind: HandleKind) -> Module {
    handle_buffer(compute_for(kind, 6, (4, 4)), "handles", kind, 0).main(&format!("{}\n{WRITTEN_COLOR}\n{TEXEL_XY}\nOpImageWrite %im %xy %color", storage_image_of_k(kind)))
}

/// Case 2b: `out[16k + 4y + x]` = OpImageRead of storage image `handles[k]` at (x, y).
pub fn storage_read(kind: HandleKind) -> Module {
    handle_buffer(compute_for(kind, 6, (4, 4)), "handles", kind, 0).ssbo("out", "%v4f", 16, 0, 1).main(&format!(
        "{}
{TEXEL_XY}
%v = OpImageRead %v4f %im %xy
%k16 = OpIMul %u32 %k %c16
%y4 = OpIMul %u32 %y %c4
%o1 = OpIAdd %u32 %k16 %y4
%o = OpIAdd %u32 %o1 %x
%p = OpAccessChain %ps_v4f %out %c0 %o
OpStore %p %v",
        storage_image_of_k(kind)
    ))
}

/// `params` = `{ u32; u32; f32 u; f32 v }[]` (`%prm_t`) at binding 0 and `out` (`vec4[]`) at
/// binding 1, of the shaders that sample per invocation with [`load_params`].
pub fn params_and_out(m: Module) -> Module {
    m.decorate("OpMemberDecorate %prm_t 0 Offset 0\nOpMemberDecorate %prm_t 1 Offset 4\nOpMemberDecorate %prm_t 2 Offset 8\nOpMemberDecorate %prm_t 3 Offset 12")
        .globals("%prm_t = OpTypeStruct %u32 %u32 %f32 %f32\n%ps_prm_t = OpTypePointer StorageBuffer %prm_t")
        .ssbo("params", "%prm_t", 16, 0, 0)
        .ssbo("out", "%v4f", 16, 0, 1)
}

/// A body's first lines: `%i` and `params[i]` of [`params_and_out`] unpacked: its two u32 into
/// `a` and `b`, its coordinates into `%uv`.
pub fn load_params(a: &str, b: &str) -> String {
    format!(
        "{GID_X}
%pp = OpAccessChain %ps_prm_t %params %c0 %i
%prm = OpLoad %prm_t %pp
{a} = OpCompositeExtract %u32 %prm 0
{b} = OpCompositeExtract %u32 %prm 1
%u = OpCompositeExtract %f32 %prm 2
%v = OpCompositeExtract %f32 %prm 3
%uv = OpCompositeConstruct %v2f %u %v"
    )
}

/// Case 3: per invocation `params[i] = { u32 sampler_handle; u32 image_handle; f32 u; f32 v }`
/// (binding 0); `out[2i]` = sample of the *bound* image (binding 2, SAMPLED_IMAGE) with the
/// sampler from OpConvertUToSamplerNV, `out[2i+1]` = sample of OpConvertUToImageNV(image
/// handle) with that sampler. Addressing 32.
pub fn sampler_handles() -> Module {
    params_and_out(compute_for(HandleKind::U32, 6, (16, 1)))
        .decorate("OpDecorate %bound DescriptorSet 0\nOpDecorate %bound Binding 2")
        .globals("%puc_img = OpTypePointer UniformConstant %img\n%bound = OpVariable %puc_img UniformConstant")
        .main(&format!(
            "{}
%sm = OpConvertUToSamplerNV %smp %hs
%bimg = OpLoad %img %bound
%s1 = OpSampledImage %simg %bimg %sm
%r1 = OpImageSampleExplicitLod %v4f %s1 %uv Lod %f0
%himg = OpConvertUToImageNV %img %hi
%s2 = OpSampledImage %simg %himg %sm
%r2 = OpImageSampleExplicitLod %v4f %s2 %uv Lod %f0
{}",
            load_params("%hs", "%hi"),
            store_each("%i", "%ps_v4f", &["%r1", "%r2"])
        ))
}

/// Case 4: handles through control flow. Inputs `handles[i]` (A) and `handles[i+1]` (B),
/// combined handles; texel (x, y) from `i` as in [`coords`]. Outputs (binding 1):
/// - `out[4i]`   = sample(OpPhi(A if i odd else B)),
/// - `out[4i+1]` = sample(OpSelect(i % 3 == 0, A, B)),
/// - `out[4i+2]` = sample(Function variable: B, overwritten with A if i % 4 == 1),
/// - `out[4i+3]` = fetch(OpSelect over images: OpConvertUToImageNV A if i % 3 == 1 else B);
///
/// `back[i]` (binding 2, handle type) = OpConvertSampledImageToUNV of the phi.
pub fn flow(kind: HandleKind) -> Module {
    let (h, hn) = (h_ty(kind), &h_ty(kind)[1..]);
    let m = handle_buffer(compute_for(kind, 6, (16, 1)), "handles", kind, 0).ssbo("out", "%v4f", 16, 0, 1);
    handle_buffer(m, "back", kind, 2).globals("%pf_simg = OpTypePointer Function %simg").main(&format!(
        "%var = OpVariable %pf_simg Function
{}
%ib = OpIAdd %u32 %i %c1
%hpa = OpAccessChain %ps_{hn} %handles %c0 %i
%ha = OpLoad {h} %hpa
%hpb = OpAccessChain %ps_{hn} %handles %c0 %ib
%hb = OpLoad {h} %hpb
%odd = OpBitwiseAnd %u32 %i %c1
%isodd = OpINotEqual %bool %odd %c0
OpSelectionMerge %m1 None
OpBranchConditional %isodd %ta %tb
%ta = OpLabel
%sa = OpConvertUToSampledImageNV %simg %ha
OpBranch %m1
%tb = OpLabel
%sb = OpConvertUToSampledImageNV %simg %hb
OpBranch %m1
%m1 = OpLabel
%sp = OpPhi %simg %sa %ta %sb %tb
%r0 = OpImageSampleExplicitLod %v4f %sp %uv Lod %f0
%i3 = OpUMod %u32 %i %c3
%is0 = OpIEqual %bool %i3 %c0
%sa2 = OpConvertUToSampledImageNV %simg %ha
%sb2 = OpConvertUToSampledImageNV %simg %hb
%ss = OpSelect %simg %is0 %sa2 %sb2
%r1 = OpImageSampleExplicitLod %v4f %ss %uv Lod %f0
OpStore %var %sb2
%i4m = OpUMod %u32 %i %c4
%is1 = OpIEqual %bool %i4m %c1
OpSelectionMerge %m2 None
OpBranchConditional %is1 %tw %m2
%tw = OpLabel
%sa3 = OpConvertUToSampledImageNV %simg %ha
OpStore %var %sa3
OpBranch %m2
%m2 = OpLabel
%sv = OpLoad %simg %var
%r2 = OpImageSampleExplicitLod %v4f %sv %uv Lod %f0
%is31 = OpIEqual %bool %i3 %c1
%ia = OpConvertUToImageNV %img %ha
%ibm = OpConvertUToImageNV %img %hb
%isel = OpSelect %img %is31 %ia %ibm
%r3 = OpImageFetch %v4f %isel %xy Lod %i0
%hback = OpConvertSampledImageToUNV {h} %sp
{}%pb = OpAccessChain %ps_{hn} %back %c0 %i
OpStore %pb %hback",
        coords(),
        store_each("%i", "%ps_v4f", &["%r0", "%r1", "%r2", "%r3"])
    ))
}

/// Case 3b, handles through function calls: `out[2i]` = sample of the image a function picks
/// from two sampled images made from handles `handles[i]` and `handles[i + 1]` (its parameters;
/// the second when `i % 3 == 2`) and returns, `out[2i + 1]` = fetch by a function that takes
/// the image (of handle `handles[i]`) as its parameter.
pub fn flow_calls(kind: HandleKind) -> Module {
    let (h, hn) = (h_ty(kind), &h_ty(kind)[1..]);
    handle_buffer(compute_for(kind, 6, (16, 1)), "handles", kind, 0)
        .ssbo("out", "%v4f", 16, 0, 1)
        .globals("%fn_pick = OpTypeFunction %simg %simg %simg %bool\n%fn_fetch = OpTypeFunction %v4f %img %v2i")
        .function(
            "%pick = OpFunction %simg None %fn_pick\n%pa = OpFunctionParameter %simg\n%pb = OpFunctionParameter %simg\n\
             %pc2 = OpFunctionParameter %bool\n%pl = OpLabel\n%pr = OpSelect %simg %pc2 %pb %pa\nOpReturnValue %pr\nOpFunctionEnd",
        )
        .function(
            "%fetch = OpFunction %v4f None %fn_fetch\n%fi = OpFunctionParameter %img\n%fxy = OpFunctionParameter %v2i\n%fl = OpLabel\n\
             %fr = OpImageFetch %v4f %fi %fxy Lod %i0\nOpReturnValue %fr\nOpFunctionEnd",
        )
        .main(&format!(
            "{}
%ib = OpIAdd %u32 %i %c1
%hpa = OpAccessChain %ps_{hn} %handles %c0 %i
%ha = OpLoad {h} %hpa
%hpb = OpAccessChain %ps_{hn} %handles %c0 %ib
%hb = OpLoad {h} %hpb
%sa = OpConvertUToSampledImageNV %simg %ha
%sb = OpConvertUToSampledImageNV %simg %hb
%i3 = OpUMod %u32 %i %c3
%second = OpIEqual %bool %i3 %c2
%sp = OpFunctionCall %simg %pick %sa %sb %second
%r0 = OpImageSampleExplicitLod %v4f %sp %uv Lod %f0
%ia = OpConvertUToImageNV %img %ha
%r1 = OpFunctionCall %v4f %fetch %ia %xy
{}",
            coords(),
            store_each("%i", "%ps_v4f", &["%r0", "%r1"])
        ))
}

/// Function-body lines: `%tp` = the PhysicalStorageBuffer pointer of type `ptr` whose address
/// is push constant 0 (a u64).
fn pointer_from_push_constant(ptr: &str) -> String {
    format!("%ap = OpAccessChain %pp_u64 %pc %c0\n%addr = OpLoad %u64 %ap\n%tp = OpConvertUToPtr {ptr} %addr")
}

/// Function-body lines: `out[i]` = sample of `%si` at `%uv`.
const SAMPLE_TO_OUT: &str = "%s = OpImageSampleExplicitLod %v4f %si %uv Lod %f0
%p = OpAccessChain %ps_v4f %out %c0 %i
OpStore %p %s";

/// Case 4b: the handle table read through a PhysicalStorageBuffer pointer (push constant
/// `{ u64 table; }`, table = `{ H h[]; }`): `out[i]` = sample(handle `table.h[i]`).
pub fn psb_table(kind: HandleKind) -> Module {
    let (h, hn) = (h_ty(kind), &h_ty(kind)[1..]);
    let bytes = kind.bytes();
    compute_for(kind, 6, (16, 1))
        .cap("Int64")
        .physical_addressing()
        .decorate(&format!("OpDecorate %tbl_rta ArrayStride {bytes}\nOpMemberDecorate %tbl_blk 0 Offset 0\nOpDecorate %tbl_blk Block"))
        .globals(&format!("%tbl_rta = OpTypeRuntimeArray {h}\n%tbl_blk = OpTypeStruct %tbl_rta\n%pg_tbl = OpTypePointer PhysicalStorageBuffer %tbl_blk"))
        .push_constants("pc", &[("%u64", 0)])
        .ssbo("out", "%v4f", 16, 0, 1)
        .main(&format!(
            "{}
{}
%hp = OpAccessChain %pg_{hn} %tp %c0 %i
%h = OpLoad {h} %hp Aligned {bytes}
%si = OpConvertUToSampledImageNV %simg %h
{SAMPLE_TO_OUT}",
            coords(),
            pointer_from_push_constant("%pg_tbl")
        ))
}

/// Case 4c: images as block members (8 bytes each, addressing 64): `tex[i]` of a storage
/// buffer `{ simg tex[]; }` (binding 0), or through a PhysicalStorageBuffer pointer when
/// `psb`; `out[i]` = sample(tex[i]).
pub fn block_member_images(psb: bool) -> Module {
    let m = bindless("GLCompute", 6, Some(64), true).local_size(16, 1, 1).gid();
    let (m, load) = if psb {
        let m = m.physical_addressing().block("tex_blk", "%simg", 8).globals("%pg_tex = OpTypePointer PhysicalStorageBuffer %tex_blk\n%pg_simg = OpTypePointer PhysicalStorageBuffer %simg");
        (m.push_constants("pc", &[("%u64", 0)]), format!("{}\n%sp = OpAccessChain %pg_simg %tp %c0 %i\n%si = OpLoad %simg %sp Aligned 8", pointer_from_push_constant("%pg_tex")))
    } else {
        let m = m.block("tex_blk", "%simg", 8).buffer("tex", "tex_blk", 0, 0).globals("%ps_simg = OpTypePointer StorageBuffer %simg");
        (m, "%sp = OpAccessChain %ps_simg %tex %c0 %i\n%si = OpLoad %simg %sp".to_string())
    };
    m.ssbo("out", "%v4f", 16, 0, 1).main(&format!("{}\n{load}\n{SAMPLE_TO_OUT}", coords()))
}

/// Case 5, the shape Slang emits (`-capability spvBindlessTextureNV`): addressing 64, every
/// handle converted with OpConvertUToSampledImageNV (also storage images: OpImage then gives
/// the storage image), samplers with OpConvertUToSamplerNV. Per invocation
/// `slots[i] = { H tex; H samp; H stor; H pad }` (binding 0); outputs (binding 1):
/// `out[3i]` = fetch(OpImage(tex)), `out[3i+1]` = sample(OpSampledImage(OpImage(tex),
/// sampler(samp))), `out[3i+2]` = OpImageRead(OpImage(stor)) before this invocation writes
/// ((16x+k)/255, (16y+k)/255, 8k/255, 1) with k = i / 16 into it.
pub fn slang_shape(kind: HandleKind) -> Module {
    assert!(kind != HandleKind::U32, "Slang uses addressing mode 64");
    let h = h_ty(kind);
    compute_for(kind, 6, (16, 1))
        .decorate(
            "OpMemberDecorate %slot_t 0 Offset 0
OpMemberDecorate %slot_t 1 Offset 8
OpMemberDecorate %slot_t 2 Offset 16
OpMemberDecorate %slot_t 3 Offset 24",
        )
        .globals(&format!("%slot_t = OpTypeStruct {h} {h} {h} {h}\n%ps_slot = OpTypePointer StorageBuffer %slot_t\n%sstimg = OpTypeSampledImage %stimg"))
        .ssbo("slots", "%slot_t", 32, 0, 0)
        .ssbo("out", "%v4f", 16, 0, 1)
        .main(&format!(
            "{}
%k = OpUDiv %u32 %i %c16
%sp = OpAccessChain %ps_slot %slots %c0 %i
%slot = OpLoad %slot_t %sp
%ht = OpCompositeExtract {h} %slot 0
%hs = OpCompositeExtract {h} %slot 1
%hst = OpCompositeExtract {h} %slot 2
%tsi = OpConvertUToSampledImageNV %simg %ht
%timg = OpImage %img %tsi
%f = OpImageFetch %v4f %timg %xy Lod %i0
%sm = OpConvertUToSamplerNV %smp %hs
%si = OpSampledImage %simg %timg %sm
%s = OpImageSampleExplicitLod %v4f %si %uv Lod %f0
%ssi = OpConvertUToSampledImageNV %sstimg %hst
%simgs = OpImage %stimg %ssi
%r = OpImageRead %v4f %simgs %xy
{WRITTEN_COLOR}
OpImageWrite %simgs %xy %color
{}",
            coords(),
            store_each("%i", "%ps_v4f", &["%f", "%s", "%r"])
        ))
}

/// A vertex shader: `%vid` (VertexIndex, i32) in, `%pos` (Position) out, `%fm1` = -1.0.
fn vertex_module() -> Module {
    Module::new("Vertex").spirv(6).builtin("%vid", "VertexIndex", "Input", "%i32").builtin("%pos", "Position", "Output", "%v4f").globals("%fm1 = OpConstant %f32 -1")
}

/// Function-body lines: `%pos` = (`%fx`·`scale` - 1, `%fy`·`scale` - 1, 0, 1), the clip-space
/// position of grid point (`%fx`, `%fy`).
fn clip_position(scale: &str) -> String {
    format!("%x1 = OpFMul %f32 %fx {scale}\n%y1 = OpFMul %f32 %fy {scale}\n%x = OpFAdd %f32 %x1 %fm1\n%y = OpFAdd %f32 %y1 %fm1\n%p = OpCompositeConstruct %v4f %x %y %f0 %f1\nOpStore %pos %p")
}

/// Fullscreen triangle from VertexIndex (no vertex input). Not a bindless module.
pub fn fullscreen_vs() -> String {
    vertex_module()
        .main(&format!(
            "%v = OpLoad %i32 %vid
%b0 = OpBitwiseAnd %i32 %v %i1
%v2 = OpShiftRightLogical %i32 %v %i1
%b1 = OpBitwiseAnd %i32 %v2 %i1
%fx = OpConvertSToF %f32 %b0
%fy = OpConvertSToF %f32 %b1
{}",
            clip_position("%f4")
        ))
        .text()
}

/// Vertex shader of the draw cases/bench: a quad in cell `pc.cell` (offset 4) of a 4×4 grid.
pub fn cell_vs() -> String {
    vertex_module()
        .push_constants("pc", &[("%u32", 0), ("%u32", 4)])
        .globals("%fhalf = OpConstant %f32 0.5")
        .main(&format!(
            "%vs = OpLoad %i32 %vid
%v = OpBitcast %u32 %vs
%cp = OpAccessChain %pp_u32 %pc %c1
%cell = OpLoad %u32 %cp
%cx = OpBitwiseAnd %u32 %cell %c3
%cy = OpShiftRightLogical %u32 %cell %c2
%bx0 = OpShiftRightLogical %u32 %c26 %v
%bx = OpBitwiseAnd %u32 %bx0 %c1
%by0 = OpShiftRightLogical %u32 %c52 %v
%by = OpBitwiseAnd %u32 %by0 %c1
%gx = OpIAdd %u32 %cx %bx
%gy = OpIAdd %u32 %cy %by
%fx = OpConvertUToF %f32 %gx
%fy = OpConvertUToF %f32 %gy
{}",
            clip_position("%fhalf")
        ))
        .text()
}

/// Case 6: fragment shader; pixel (px, py) takes handle `handles[(py/4) * (width/4) + px/4]`
/// (binding 0) and outputs the texture's texel (px % 4, py % 4) (ImplicitLod sampling at the
/// texel center).
pub fn per_pixel_fs(kind: HandleKind, width: u32) -> Module {
    let (mode, int64) = mode_of(kind);
    let (h, hn) = (h_ty(kind), &h_ty(kind)[1..]);
    let m = bindless("Fragment", 6, mode, int64)
        .frag_coord()
        .decorate("OpDecorate %color Location 0")
        .globals(&format!("%cw4 = OpConstant %u32 {}\n%color = OpVariable %pout_v4f Output", width / 4));
    handle_buffer(m, "handles", kind, 0).main(&format!(
        "{FRAG_XY}
%bx = OpUDiv %u32 %px %c4
%by = OpUDiv %u32 %py %c4
%row = OpIMul %u32 %by %cw4
%idx = OpIAdd %u32 %row %bx
%hp = OpAccessChain %ps_{hn} %handles %c0 %idx
%h = OpLoad {h} %hp
%x = OpUMod %u32 %px %c4
%y = OpUMod %u32 %py %c4
{CENTER_UV}
%si = OpConvertUToSampledImageNV %simg %h
%s = OpImageSampleImplicitLod %v4f %si %uv
OpStore %color %s"
    ))
}

/// Case 8: compute, `out[base + i]` (storage buffer at (`set`, binding 0)) = fetch of the
/// texture named by push constant `{ u32 h; u32 base; }` at texel (i % 4, i / 4 % 4).
/// `bindless == false`: the same without the capability, writing the constant (7,7,7,7)
/// instead (a module the layer leaves alone).
pub fn rebind_compute(set: u32, bindless: bool) -> String {
    let m = if bindless { compute_for(HandleKind::U32, 6, (16, 1)) } else { Module::compute(16).spirv(6).gid().globals("%seven = OpConstantComposite %v4f %f7 %f7 %f7 %f7") };
    let (start, fetch, value) = if bindless {
        (format!("{}\n%hp = OpAccessChain %pp_u32 %pc %c0\n%h = OpLoad %u32 %hp", coords()), "%im = OpConvertUToImageNV %img %h\n%t = OpImageFetch %v4f %im %xy Lod %i0", "%t")
    } else {
        (GID_X.to_string(), "", "%seven")
    };
    m.ssbo("out", "%v4f", 16, set, 0)
        .push_constants("pc", &[("%u32", 0), ("%u32", 4)])
        .main(&format!(
            "{start}
%bp = OpAccessChain %pp_u32 %pc %c1
%base = OpLoad %u32 %bp
%o = OpIAdd %u32 %base %i
{fetch}
%p = OpAccessChain %ps_v4f %out %c0 %o
OpStore %p {value}"
        ))
        .text()
}

/// Fragment shader for the draw tests and the bench: outputs the texel (1, 2) of the texture
/// whose handle is push constant `h` (offset 0) — or, when `!bindless`, of the texture bound
/// as a combined image sampler at (set 0, binding 0).
pub fn draw_fs(bindless: bool) -> String {
    let (m, get) = if bindless {
        (
            Module::new("Fragment").bindless_textures(Some(32)).interface(&["%color", "%pc"]),
            "%hp = OpAccessChain %pp_u32 %pc %c0\n%h = OpLoad %u32 %hp\n%im = OpConvertUToImageNV %img %h",
        )
    } else {
        (Module::new("Fragment").interface(&["%color", "%pc", "%tex"]), "%si = OpLoad %simg %tex\n%im = OpImage %img %si")
    };
    m.spirv(6)
        .mode("OriginUpperLeft")
        .decorate("OpDecorate %color Location 0\nOpDecorate %tex DescriptorSet 0\nOpDecorate %tex Binding 0")
        .image_types()
        .globals("%puc_simg = OpTypePointer UniformConstant %simg\n%tex = OpVariable %puc_simg UniformConstant")
        .push_constants("pc", &[("%u32", 0)])
        .globals("%color = OpVariable %pout_v4f Output\n%xy = OpConstantComposite %v2i %i1 %i2")
        .main(&format!("{get}\n%t = OpImageFetch %v4f %im %xy Lod %i0\nOpStore %color %t"))
        .text()
}
