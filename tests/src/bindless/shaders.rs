//! spvasm generators of the bindless test shaders. [`Asm`] collects the module's sections
//! (capabilities, decorations, types, globals, functions) so each shader only states what it
//! adds; `assemble` runs spirv-as.
//!
//! Conventions: `%img` = sampled 2D float image (Sampled 1, Unknown format), `%simg` its
//! sampled-image type, `%smp` = sampler, `%stimg` = storage 2D image (Sampled 2, Rgba8);
//! `%H` = the handle type ([`HandleKind`]): u32, u64 or uvec2; `%lo` extracts a handle's low
//! word where the test needs it.

use super::HandleKind;
use crate::tools;

/// A module under construction.
#[derive(Debug, Clone)]
pub struct Asm {
    /// SPIR-V minor version (3..=6); decides the spirv-as target env and the interface rule.
    pub minor: u32,
    caps: Vec<String>,
    exts: Vec<String>,
    addressing: String,
    mode: Option<u32>,
    model: String,
    exec: Vec<String>,
    decos: Vec<String>,
    types: Vec<String>,
    /// Globals: (name, storage class) — Input/Output ones always go in the interface.
    globals: Vec<(String, String)>,
    body: String,
}

impl Asm {
    /// A module with the bindless capability, the common types, and `mode`
    /// (`OpSamplerImageAddressingModeNV`; `None`: no instruction).
    pub fn new(minor: u32, model: &str, mode: Option<u32>, int64: bool) -> Asm {
        let mut a = Asm {
            minor,
            caps: vec!["Shader".into(), "BindlessTextureNV".into()],
            exts: vec!["SPV_NV_bindless_texture".into()],
            addressing: "Logical".into(),
            mode,
            model: model.into(),
            exec: vec![],
            decos: vec![],
            types: vec![],
            globals: vec![],
            body: String::new(),
        };
        if int64 {
            a.caps.push("Int64".into());
        }
        a.types.push(
            "%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%u32 = OpTypeInt 32 0
%i32 = OpTypeInt 32 1
%f32 = OpTypeFloat 32
%v2u = OpTypeVector %u32 2
%v2i = OpTypeVector %i32 2
%v3u = OpTypeVector %u32 3
%v2f = OpTypeVector %f32 2
%v4f = OpTypeVector %f32 4
%img = OpTypeImage %f32 2D 0 0 0 1 Unknown
%simg = OpTypeSampledImage %img
%smp = OpTypeSampler
%stimg = OpTypeImage %f32 2D 0 0 0 2 Rgba8
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%c2 = OpConstant %u32 2
%c3 = OpConstant %u32 3
%c4 = OpConstant %u32 4
%c8 = OpConstant %u32 8
%c16 = OpConstant %u32 16
%i0 = OpConstant %i32 0
%f0 = OpConstant %f32 0
%f1 = OpConstant %f32 1
%fhalf = OpConstant %f32 0.5
%fquarter = OpConstant %f32 0.25
%f255inv = OpConstant %f32 0.0039215688
%ps_u32 = OpTypePointer StorageBuffer %u32
%ps_v4f = OpTypePointer StorageBuffer %v4f
%pin_v3u = OpTypePointer Input %v3u"
                .into(),
        );
        if int64 {
            a.types.push("%u64 = OpTypeInt 64 0\n%ps_u64 = OpTypePointer StorageBuffer %u64".into());
        }
        a.types.push("%ps_v2u = OpTypePointer StorageBuffer %v2u".into());
        a
    }

    /// A compute module (LocalSize x y 1) with `%gid` (GlobalInvocationId) declared.
    pub fn compute(minor: u32, mode: Option<u32>, int64: bool, local: (u32, u32)) -> Asm {
        let mut a = Asm::new(minor, "GLCompute", mode, int64);
        a.exec.push(format!("OpExecutionMode %main LocalSize {} {} 1", local.0, local.1));
        a.decos.push("OpDecorate %gid BuiltIn GlobalInvocationId".into());
        a.global("%gid = OpVariable %pin_v3u Input", "%gid", "Input");
        a
    }

    /// The compute module for handle kind `kind`: u32 → addressing 32 (SPIR-V `minor`),
    /// u64/uvec2 → addressing 64 (+Int64 for u64). Declares `%H`, `%ps_H`, `%pp_H`.
    pub fn compute_for(kind: HandleKind, minor: u32, local: (u32, u32)) -> Asm {
        let (mode, int64) = match kind {
            HandleKind::U32 => (Some(32), false),
            HandleKind::U64 => (Some(64), true),
            HandleKind::UVec2 => (Some(64), false),
        };
        let mut a = Asm::compute(minor, mode, int64, local);
        a.handle_type(kind);
        a
    }

    /// Declares `%H` (the handle type), `%ps_H` (StorageBuffer pointer) and `%pp_H`
    /// (PushConstant pointer).
    pub fn handle_type(&mut self, kind: HandleKind) {
        let t = match kind {
            HandleKind::U32 => "%u32",
            HandleKind::U64 => "%u64",
            HandleKind::UVec2 => "%v2u",
        };
        self.types.push(format!("%ps_H = OpTypePointer StorageBuffer {t}\n%pp_H = OpTypePointer PushConstant {t}"));
        // %H is an alias name: spirv-as has no aliases, so shaders use `{H}` via `h_ty`.
    }

    pub fn cap(&mut self, c: &str) {
        if !self.caps.iter().any(|x| x == c) {
            self.caps.push(c.into());
        }
    }
    pub fn ext(&mut self, e: &str) {
        if !self.exts.iter().any(|x| x == e) {
            self.exts.push(e.into());
        }
    }
    pub fn addressing(&mut self, a: &str) {
        self.addressing = a.into();
    }
    pub fn exec(&mut self, e: &str) {
        self.exec.push(e.into());
    }
    pub fn deco(&mut self, d: &str) {
        for l in d.lines().map(str::trim).filter(|l| !l.is_empty()) {
            self.decos.push(l.into());
        }
    }
    pub fn ty(&mut self, t: &str) {
        self.types.push(t.trim().into());
    }
    /// A global variable declaration `decl` named `name` in storage class `class`.
    pub fn global(&mut self, decl: &str, name: &str, class: &str) {
        self.types.push(decl.trim().into());
        self.globals.push((name.into(), class.into()));
    }

    /// A storage buffer `{ elem data[]; }` (Block, stride) at (set, binding) named `name`;
    /// element pointer type must exist (`%ps_<...>`).
    pub fn ssbo(&mut self, name: &str, elem: &str, stride: u32, set: u32, binding: u32) {
        self.deco(&format!(
            "OpDecorate %{name}_rta ArrayStride {stride}
OpMemberDecorate %{name}_blk 0 Offset 0
OpDecorate %{name}_blk Block
OpDecorate %{name} DescriptorSet {set}
OpDecorate %{name} Binding {binding}"
        ));
        self.ty(&format!("%{name}_rta = OpTypeRuntimeArray {elem}\n%{name}_blk = OpTypeStruct %{name}_rta\n%{name}_pblk = OpTypePointer StorageBuffer %{name}_blk"));
        self.global(&format!("%{name} = OpVariable %{name}_pblk StorageBuffer"), &format!("%{name}"), "StorageBuffer");
    }

    /// A push-constant block with members `members` (type, offset) named `name`; member
    /// pointer types `%pp_<...>` must exist.
    pub fn push_block(&mut self, name: &str, members: &[(&str, u32)]) {
        let mut d = String::new();
        for (i, (_, off)) in members.iter().enumerate() {
            d += &format!("OpMemberDecorate %{name}_blk {i} Offset {off}\n");
        }
        d += &format!("OpDecorate %{name}_blk Block\n");
        self.deco(&d);
        let tys: Vec<&str> = members.iter().map(|m| m.0).collect();
        self.ty(&format!("%{name}_blk = OpTypeStruct {}\n%{name}_pblk = OpTypePointer PushConstant %{name}_blk", tys.join(" ")));
        self.global(&format!("%{name} = OpVariable %{name}_pblk PushConstant"), &format!("%{name}"), "PushConstant");
    }

    /// Appends function text (the whole `%main = OpFunction ... OpFunctionEnd`, plus helpers).
    pub fn body(&mut self, b: &str) {
        self.body += b;
        self.body += "\n";
    }

    pub fn target_env(&self) -> &'static str {
        match self.minor {
            0..=3 => "vulkan1.1",
            4 => "spv1.4",
            5 => "vulkan1.2",
            _ => "vulkan1.3",
        }
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        for c in &self.caps {
            s += &format!("OpCapability {c}\n");
        }
        for e in &self.exts {
            s += &format!("OpExtension \"{e}\"\n");
        }
        s += &format!("OpMemoryModel {} GLSL450\n", self.addressing);
        if let Some(m) = self.mode {
            s += &format!("OpSamplerImageAddressingModeNV {m}\n");
        }
        let iface: Vec<&str> = self
            .globals
            .iter()
            .filter(|(_, class)| self.minor >= 4 || class == "Input" || class == "Output")
            .map(|(n, _)| n.as_str())
            .collect();
        s += &format!("OpEntryPoint {} %main \"main\" {}\n", self.model, iface.join(" "));
        for e in &self.exec {
            s += e;
            s += "\n";
        }
        for d in &self.decos {
            s += d;
            s += "\n";
        }
        for t in &self.types {
            s += t;
            s += "\n";
        }
        s += &self.body;
        s
    }

    pub fn assemble(&self) -> Result<Vec<u32>, String> {
        tools::spirv_as(&self.text(), self.target_env())
    }
}

/// Type name of a handle kind.
pub fn h_ty(kind: HandleKind) -> &'static str {
    match kind {
        HandleKind::U32 => "%u32",
        HandleKind::U64 => "%u64",
        HandleKind::UVec2 => "%v2u",
    }
}

/// Function-body lines computing `%x`, `%y` (u32 texel coords = i % 4, (i / 4) % 4) from `%i`,
/// the texel-center coordinate `%uv` (v2f) and the integer coordinate `%xy` (v2i).
pub const COORDS: &str = "
%x = OpUMod %u32 %i %c4
%i4 = OpUDiv %u32 %i %c4
%y = OpUMod %u32 %i4 %c4
%xf = OpConvertUToF %f32 %x
%yf = OpConvertUToF %f32 %y
%xh = OpFAdd %f32 %xf %fhalf
%yh = OpFAdd %f32 %yf %fhalf
%uf = OpFMul %f32 %xh %fquarter
%vf = OpFMul %f32 %yh %fquarter
%uv = OpCompositeConstruct %v2f %uf %vf
%xs = OpBitcast %i32 %x
%ys = OpBitcast %i32 %y
%xy = OpCompositeConstruct %v2i %xs %ys";

/// Case 1: `out[2i]` = sample (nearest, texel centers) and `out[2i+1]` = fetch of the texture
/// a handle names. `uniform`: the handle comes from push constants `{ H h; u32 base; }` and
/// the outputs go to `out[2(base+i)...]`; otherwise from `handles[i]` (binding 0).
/// Output: binding 1, vec4[]. LocalSize 16.
pub fn sample_many(kind: HandleKind, uniform: bool, minor: u32) -> Asm {
    let mut a = Asm::compute_for(kind, minor, (16, 1));
    let h = h_ty(kind);
    a.ssbo("out", "%v4f", 16, 0, 1);
    let load = if uniform {
        a.push_block("pc", &[(h, 0), ("%u32", 8)]);
        a.ty("%pp_u32 = OpTypePointer PushConstant %u32");
        format!(
            "%hp = OpAccessChain %pp_H %pc %c0
%h = OpLoad {h} %hp
%bp = OpAccessChain %pp_u32 %pc %c1
%base = OpLoad %u32 %bp
%o = OpIAdd %u32 %base %i"
        )
    } else {
        a.ssbo("handles", h, kind.bytes() as u32, 0, 0);
        format!(
            "%hp = OpAccessChain %ps_H %handles %c0 %i
%h = OpLoad {h} %hp
%o = OpCopyObject %u32 %i"
        )
    };
    a.body(&format!(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
{COORDS}
{load}
%si = OpConvertUToSampledImageNV %simg %h
%s = OpImageSampleExplicitLod %v4f %si %uv Lod %f0
%im = OpImage %img %si
%t = OpImageFetch %v4f %im %xy Lod %i0
%o2 = OpIMul %u32 %o %c2
%o21 = OpIAdd %u32 %o2 %c1
%p0 = OpAccessChain %ps_v4f %out %c0 %o2
OpStore %p0 %s
%p1 = OpAccessChain %ps_v4f %out %c0 %o21
OpStore %p1 %t
OpReturn
OpFunctionEnd"
    ));
    a
}

/// Case 2: image `k = gid.z` (handle `handles[k]`, a STORAGE_IMAGE handle) gets texel (x, y) =
/// ((16x+k)/255, (16y+k)/255, 8k/255, 1) written through OpConvertUToImageNV + OpImageWrite.
/// LocalSize 4×4, dispatch (1, 1, K).
pub fn storage_write(kind: HandleKind) -> Asm {
    let mut a = Asm::compute_for(kind, 6, (4, 4));
    let h = h_ty(kind);
    a.ssbo("handles", h, kind.bytes() as u32, 0, 0);
    a.body(&format!(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%x = OpCompositeExtract %u32 %g 0
%y = OpCompositeExtract %u32 %g 1
%k = OpCompositeExtract %u32 %g 2
%hp = OpAccessChain %ps_H %handles %c0 %k
%h = OpLoad {h} %hp
%im = OpConvertUToImageNV %stimg %h
%x16 = OpIMul %u32 %x %c16
%y16 = OpIMul %u32 %y %c16
%rx = OpIAdd %u32 %x16 %k
%ry = OpIAdd %u32 %y16 %k
%bk = OpIMul %u32 %k %c8
%rf = OpConvertUToF %f32 %rx
%gf = OpConvertUToF %f32 %ry
%bf = OpConvertUToF %f32 %bk
%r = OpFMul %f32 %rf %f255inv
%gg = OpFMul %f32 %gf %f255inv
%b = OpFMul %f32 %bf %f255inv
%color = OpCompositeConstruct %v4f %r %gg %b %f1
%xs = OpBitcast %i32 %x
%ys = OpBitcast %i32 %y
%xy = OpCompositeConstruct %v2i %xs %ys
OpImageWrite %im %xy %color
OpReturn
OpFunctionEnd"
    ));
    a
}

/// Case 2b: `out[16k + 4y + x]` = OpImageRead of storage image `handles[k]` at (x, y).
pub fn storage_read(kind: HandleKind) -> Asm {
    let mut a = Asm::compute_for(kind, 6, (4, 4));
    let h = h_ty(kind);
    a.ssbo("handles", h, kind.bytes() as u32, 0, 0);
    a.ssbo("out", "%v4f", 16, 0, 1);
    a.body(&format!(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%x = OpCompositeExtract %u32 %g 0
%y = OpCompositeExtract %u32 %g 1
%k = OpCompositeExtract %u32 %g 2
%hp = OpAccessChain %ps_H %handles %c0 %k
%h = OpLoad {h} %hp
%im = OpConvertUToImageNV %stimg %h
%xs = OpBitcast %i32 %x
%ys = OpBitcast %i32 %y
%xy = OpCompositeConstruct %v2i %xs %ys
%v = OpImageRead %v4f %im %xy
%k16 = OpIMul %u32 %k %c16
%y4 = OpIMul %u32 %y %c4
%o1 = OpIAdd %u32 %k16 %y4
%o = OpIAdd %u32 %o1 %x
%p = OpAccessChain %ps_v4f %out %c0 %o
OpStore %p %v
OpReturn
OpFunctionEnd"
    ));
    a
}

/// Case 3: per invocation `params[i] = { u32 sampler_handle; u32 image_handle; f32 u; f32 v }`
/// (binding 0); `out[2i]` = sample of the *bound* image (binding 2, SAMPLED_IMAGE) with the
/// sampler from OpConvertUToSamplerNV, `out[2i+1]` = sample of OpConvertUToImageNV(image
/// handle) with that sampler. Addressing 32.
pub fn sampler_handles() -> Asm {
    let mut a = Asm::compute_for(HandleKind::U32, 6, (16, 1));
    a.deco(
        "OpMemberDecorate %prm_t 0 Offset 0
OpMemberDecorate %prm_t 1 Offset 4
OpMemberDecorate %prm_t 2 Offset 8
OpMemberDecorate %prm_t 3 Offset 12
OpDecorate %bound DescriptorSet 0
OpDecorate %bound Binding 2",
    );
    a.ty("%prm_t = OpTypeStruct %u32 %u32 %f32 %f32\n%ps_prm = OpTypePointer StorageBuffer %prm_t\n%pu_img = OpTypePointer UniformConstant %img");
    a.global("%bound = OpVariable %pu_img UniformConstant", "%bound", "UniformConstant");
    a.ssbo("params", "%prm_t", 16, 0, 0);
    a.ssbo("out", "%v4f", 16, 0, 1);
    a.body(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
%pp = OpAccessChain %ps_prm %params %c0 %i
%prm = OpLoad %prm_t %pp
%hs = OpCompositeExtract %u32 %prm 0
%hi = OpCompositeExtract %u32 %prm 1
%u = OpCompositeExtract %f32 %prm 2
%v = OpCompositeExtract %f32 %prm 3
%uv = OpCompositeConstruct %v2f %u %v
%sm = OpConvertUToSamplerNV %smp %hs
%bimg = OpLoad %img %bound
%s1 = OpSampledImage %simg %bimg %sm
%r1 = OpImageSampleExplicitLod %v4f %s1 %uv Lod %f0
%himg = OpConvertUToImageNV %img %hi
%s2 = OpSampledImage %simg %himg %sm
%r2 = OpImageSampleExplicitLod %v4f %s2 %uv Lod %f0
%o = OpIMul %u32 %i %c2
%o1 = OpIAdd %u32 %o %c1
%p0 = OpAccessChain %ps_v4f %out %c0 %o
OpStore %p0 %r1
%p1 = OpAccessChain %ps_v4f %out %c0 %o1
OpStore %p1 %r2
OpReturn
OpFunctionEnd",
    );
    a
}

/// Case 4: handles through control flow. Inputs `handles[i]` (A) and `handles[i+1]` (B),
/// combined handles; texel (x, y) from `i` as in [`COORDS`]. Outputs (binding 1):
/// - `out[4i]`   = sample(OpPhi(A if i odd else B)),
/// - `out[4i+1]` = sample(OpSelect(i % 3 == 0, A, B)),
/// - `out[4i+2]` = sample(Function variable: B, overwritten with A if i % 4 == 1),
/// - `out[4i+3]` = fetch(OpSelect over images: OpConvertUToImageNV A if i % 3 == 1 else B);
///
/// `back[i]` (binding 2, handle type) = OpConvertSampledImageToUNV of the phi.
pub fn flow(kind: HandleKind) -> Asm {
    let mut a = Asm::compute_for(kind, 6, (16, 1));
    let h = h_ty(kind);
    a.ssbo("handles", h, kind.bytes() as u32, 0, 0);
    a.ssbo("out", "%v4f", 16, 0, 1);
    a.ssbo("back", h, kind.bytes() as u32, 0, 2);
    a.ty("%pf_simg = OpTypePointer Function %simg");
    a.body(&format!(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%var = OpVariable %pf_simg Function
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
{COORDS}
%ib = OpIAdd %u32 %i %c1
%hpa = OpAccessChain %ps_H %handles %c0 %i
%ha = OpLoad {h} %hpa
%hpb = OpAccessChain %ps_H %handles %c0 %ib
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
%o = OpIMul %u32 %i %c4
%o1 = OpIAdd %u32 %o %c1
%o2 = OpIAdd %u32 %o %c2
%o3 = OpIAdd %u32 %o %c3
%p0 = OpAccessChain %ps_v4f %out %c0 %o
OpStore %p0 %r0
%p1 = OpAccessChain %ps_v4f %out %c0 %o1
OpStore %p1 %r1
%p2 = OpAccessChain %ps_v4f %out %c0 %o2
OpStore %p2 %r2
%p3 = OpAccessChain %ps_v4f %out %c0 %o3
OpStore %p3 %r3
%pb = OpAccessChain %ps_H %back %c0 %i
OpStore %pb %hback
OpReturn
OpFunctionEnd"
    ));
    a
}

/// Case 4b: the handle table read through a PhysicalStorageBuffer pointer (push constant
/// `{ u64 table; }`, table = `{ H h[]; }`): `out[i]` = sample(handle `table.h[i]`).
pub fn psb_table(kind: HandleKind) -> Asm {
    let mut a = Asm::compute_for(kind, 6, (16, 1));
    if kind != HandleKind::U64 {
        a.cap("Int64");
        a.ty("%u64 = OpTypeInt 64 0");
    }
    a.cap("PhysicalStorageBufferAddresses");
    a.addressing("PhysicalStorageBuffer64");
    let h = h_ty(kind);
    a.deco(&format!(
        "OpDecorate %tbl_rta ArrayStride {}
OpMemberDecorate %tbl_blk 0 Offset 0
OpDecorate %tbl_blk Block",
        kind.bytes()
    ));
    a.ty(&format!(
        "%tbl_rta = OpTypeRuntimeArray {h}\n%tbl_blk = OpTypeStruct %tbl_rta\n%pg_tbl = OpTypePointer PhysicalStorageBuffer %tbl_blk\n%pg_H = OpTypePointer PhysicalStorageBuffer {h}\n%pp_u64 = OpTypePointer PushConstant %u64"
    ));
    a.push_block("pc", &[("%u64", 0)]);
    a.ssbo("out", "%v4f", 16, 0, 1);
    a.body(&format!(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
{COORDS}
%ap = OpAccessChain %pp_u64 %pc %c0
%addr = OpLoad %u64 %ap
%tp = OpConvertUToPtr %pg_tbl %addr
%hp = OpAccessChain %pg_H %tp %c0 %i
%h = OpLoad {h} %hp Aligned {}
%si = OpConvertUToSampledImageNV %simg %h
%s = OpImageSampleExplicitLod %v4f %si %uv Lod %f0
%p = OpAccessChain %ps_v4f %out %c0 %i
OpStore %p %s
OpReturn
OpFunctionEnd",
        kind.bytes()
    ));
    a
}

/// Case 4c: images as block members (8 bytes each, addressing 64): `tex[i]` of a storage
/// buffer `{ simg tex[]; }` (binding 0), or through a PhysicalStorageBuffer pointer when
/// `psb`; `out[i]` = sample(tex[i]).
pub fn block_member_images(psb: bool) -> Asm {
    let mut a = Asm::compute(6, Some(64), true, (16, 1));
    a.deco(
        "OpDecorate %tex_rta ArrayStride 8
OpMemberDecorate %tex_blk 0 Offset 0
OpDecorate %tex_blk Block",
    );
    a.ty("%tex_rta = OpTypeRuntimeArray %simg\n%tex_blk = OpTypeStruct %tex_rta");
    let load = if psb {
        a.cap("PhysicalStorageBufferAddresses");
        a.addressing("PhysicalStorageBuffer64");
        a.ty("%pg_tex = OpTypePointer PhysicalStorageBuffer %tex_blk\n%pg_simg = OpTypePointer PhysicalStorageBuffer %simg\n%pp_u64 = OpTypePointer PushConstant %u64");
        a.push_block("pc", &[("%u64", 0)]);
        "%ap = OpAccessChain %pp_u64 %pc %c0
%addr = OpLoad %u64 %ap
%tp = OpConvertUToPtr %pg_tex %addr
%sp = OpAccessChain %pg_simg %tp %c0 %i
%si = OpLoad %simg %sp Aligned 8"
    } else {
        a.deco("OpDecorate %tex DescriptorSet 0\nOpDecorate %tex Binding 0");
        a.ty("%ps_tex = OpTypePointer StorageBuffer %tex_blk\n%ps_simg = OpTypePointer StorageBuffer %simg");
        a.global("%tex = OpVariable %ps_tex StorageBuffer", "%tex", "StorageBuffer");
        "%sp = OpAccessChain %ps_simg %tex %c0 %i
%si = OpLoad %simg %sp"
    };
    a.ssbo("out", "%v4f", 16, 0, 1);
    a.body(&format!(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
{COORDS}
{load}
%s = OpImageSampleExplicitLod %v4f %si %uv Lod %f0
%p = OpAccessChain %ps_v4f %out %c0 %i
OpStore %p %s
OpReturn
OpFunctionEnd"
    ));
    a
}

/// Case 5, the shape Slang emits (`-capability spvBindlessTextureNV`): addressing 64, every
/// handle converted with OpConvertUToSampledImageNV (also storage images: OpImage then gives
/// the storage image), samplers with OpConvertUToSamplerNV. Per invocation
/// `slots[i] = { H tex; H samp; H stor; H pad }` (binding 0); outputs (binding 1):
/// `out[3i]` = fetch(OpImage(tex)), `out[3i+1]` = sample(OpSampledImage(OpImage(tex),
/// sampler(samp))), `out[3i+2]` = OpImageRead(OpImage(stor)) before this invocation writes
/// ((16x+k)/255, (16y+k)/255, 8k/255, 1) with k = i / 16 into it.
pub fn slang_shape(kind: HandleKind) -> Asm {
    assert!(kind != HandleKind::U32, "Slang uses addressing mode 64");
    let mut a = Asm::compute_for(kind, 6, (16, 1));
    let h = h_ty(kind);
    a.deco(
        "OpMemberDecorate %slot_t 0 Offset 0
OpMemberDecorate %slot_t 1 Offset 8
OpMemberDecorate %slot_t 2 Offset 16
OpMemberDecorate %slot_t 3 Offset 24",
    );
    a.ty(&format!("%slot_t = OpTypeStruct {h} {h} {h} {h}\n%ps_slot = OpTypePointer StorageBuffer %slot_t\n%sstimg = OpTypeSampledImage %stimg"));
    a.ssbo("slots", "%slot_t", 32, 0, 0);
    a.ssbo("out", "%v4f", 16, 0, 1);
    a.body(&format!(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
{COORDS}
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
%x16 = OpIMul %u32 %x %c16
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
%color = OpCompositeConstruct %v4f %cr %cg %cb %f1
OpImageWrite %simgs %xy %color
%o = OpIMul %u32 %i %c3
%o1 = OpIAdd %u32 %o %c1
%o2 = OpIAdd %u32 %o %c2
%p0 = OpAccessChain %ps_v4f %out %c0 %o
OpStore %p0 %f
%p1 = OpAccessChain %ps_v4f %out %c0 %o1
OpStore %p1 %s
%p2 = OpAccessChain %ps_v4f %out %c0 %o2
OpStore %p2 %r
OpReturn
OpFunctionEnd"
    ));
    a
}

/// Fullscreen triangle from VertexIndex (no vertex input). Not a bindless module.
pub fn fullscreen_vs() -> String {
    "OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint Vertex %main \"main\" %vid %pos
OpDecorate %vid BuiltIn VertexIndex
OpDecorate %pos BuiltIn Position
%void = OpTypeVoid
%fn = OpTypeFunction %void
%i32 = OpTypeInt 32 1
%f32 = OpTypeFloat 32
%v4f = OpTypeVector %f32 4
%pin_i = OpTypePointer Input %i32
%pout = OpTypePointer Output %v4f
%vid = OpVariable %pin_i Input
%pos = OpVariable %pout Output
%c1 = OpConstant %i32 1
%c2 = OpConstant %i32 2
%f0 = OpConstant %f32 0
%f1 = OpConstant %f32 1
%f4 = OpConstant %f32 4
%fm1 = OpConstant %f32 -1
%main = OpFunction %void None %fn
%l = OpLabel
%v = OpLoad %i32 %vid
%b0 = OpBitwiseAnd %i32 %v %c1
%v2 = OpShiftRightLogical %i32 %v %c1
%b1 = OpBitwiseAnd %i32 %v2 %c1
%x0 = OpConvertSToF %f32 %b0
%y0 = OpConvertSToF %f32 %b1
%x1 = OpFMul %f32 %x0 %f4
%y1 = OpFMul %f32 %y0 %f4
%x = OpFAdd %f32 %x1 %fm1
%y = OpFAdd %f32 %y1 %fm1
%p = OpCompositeConstruct %v4f %x %y %f0 %f1
OpStore %pos %p
OpReturn
OpFunctionEnd
"
    .into()
}

/// Case 6: fragment shader; pixel (px, py) takes handle `handles[(py/4) * (width/4) + px/4]`
/// (binding 0) and outputs the texture's texel (px % 4, py % 4) (ImplicitLod sampling at the
/// texel center).
pub fn per_pixel_fs(kind: HandleKind, width: u32) -> Asm {
    let (mode, int64) = match kind {
        HandleKind::U32 => (Some(32), false),
        HandleKind::U64 => (Some(64), true),
        HandleKind::UVec2 => (Some(64), false),
    };
    let mut a = Asm::new(6, "Fragment", mode, int64);
    a.handle_type(kind);
    let h = h_ty(kind);
    a.exec("OpExecutionMode %main OriginUpperLeft");
    a.deco("OpDecorate %fc BuiltIn FragCoord\nOpDecorate %color Location 0");
    a.ty("%pin_v4f = OpTypePointer Input %v4f\n%pout_v4f = OpTypePointer Output %v4f");
    a.ty(&format!("%cw4 = OpConstant %u32 {}", width / 4));
    a.global("%fc = OpVariable %pin_v4f Input", "%fc", "Input");
    a.global("%color = OpVariable %pout_v4f Output", "%color", "Output");
    a.ssbo("handles", h, kind.bytes() as u32, 0, 0);
    a.body(&format!(
        "%main = OpFunction %void None %fn
%entry = OpLabel
%f = OpLoad %v4f %fc
%fx = OpCompositeExtract %f32 %f 0
%fy = OpCompositeExtract %f32 %f 1
%px = OpConvertFToU %u32 %fx
%py = OpConvertFToU %u32 %fy
%bx = OpUDiv %u32 %px %c4
%by = OpUDiv %u32 %py %c4
%row = OpIMul %u32 %by %cw4
%idx = OpIAdd %u32 %row %bx
%hp = OpAccessChain %ps_H %handles %c0 %idx
%h = OpLoad {h} %hp
%x = OpUMod %u32 %px %c4
%y = OpUMod %u32 %py %c4
%xf = OpConvertUToF %f32 %x
%yf = OpConvertUToF %f32 %y
%xh = OpFAdd %f32 %xf %fhalf
%yh = OpFAdd %f32 %yf %fhalf
%uf = OpFMul %f32 %xh %fquarter
%vf = OpFMul %f32 %yh %fquarter
%uv = OpCompositeConstruct %v2f %uf %vf
%si = OpConvertUToSampledImageNV %simg %h
%s = OpImageSampleImplicitLod %v4f %si %uv
OpStore %color %s
OpReturn
OpFunctionEnd"
    ));
    a
}

/// Case 8: compute, `out[base + i]` (storage buffer at (`set`, binding 0)) = fetch of the
/// texture named by push constant `{ u32 h; u32 base; }` at texel (i % 4, i / 4 % 4).
/// `bindless == false`: the same without the capability, writing the constant (7,7,7,7)
/// instead (a module the layer leaves alone).
pub fn rebind_compute(set: u32, bindless: bool) -> String {
    if bindless {
        let mut a = Asm::compute_for(HandleKind::U32, 6, (16, 1));
        a.ssbo("out", "%v4f", 16, set, 0);
        a.push_block("pc", &[("%u32", 0), ("%u32", 4)]);
        a.ty("%pp_u32 = OpTypePointer PushConstant %u32");
        a.body(&format!(
            "%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
{COORDS}
%hp = OpAccessChain %pp_u32 %pc %c0
%h = OpLoad %u32 %hp
%bp = OpAccessChain %pp_u32 %pc %c1
%base = OpLoad %u32 %bp
%o = OpIAdd %u32 %base %i
%im = OpConvertUToImageNV %img %h
%t = OpImageFetch %v4f %im %xy Lod %i0
%p = OpAccessChain %ps_v4f %out %c0 %o
OpStore %p %t
OpReturn
OpFunctionEnd"
        ));
        a.text()
    } else {
        format!(
            "OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main \"main\" %gid %out %pc
OpExecutionMode %main LocalSize 16 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %rta ArrayStride 16
OpMemberDecorate %blk 0 Offset 0
OpDecorate %blk Block
OpDecorate %out DescriptorSet {set}
OpDecorate %out Binding 0
OpMemberDecorate %pcb 0 Offset 0
OpMemberDecorate %pcb 1 Offset 4
OpDecorate %pcb Block
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%f32 = OpTypeFloat 32
%v3u = OpTypeVector %u32 3
%v4f = OpTypeVector %f32 4
%rta = OpTypeRuntimeArray %v4f
%blk = OpTypeStruct %rta
%pblk = OpTypePointer StorageBuffer %blk
%pv4 = OpTypePointer StorageBuffer %v4f
%pcb = OpTypeStruct %u32 %u32
%ppcb = OpTypePointer PushConstant %pcb
%ppu = OpTypePointer PushConstant %u32
%pin = OpTypePointer Input %v3u
%out = OpVariable %pblk StorageBuffer
%pc = OpVariable %ppcb PushConstant
%gid = OpVariable %pin Input
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%f7 = OpConstant %f32 7
%seven = OpConstantComposite %v4f %f7 %f7 %f7 %f7
%main = OpFunction %void None %fn
%l = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
%bp = OpAccessChain %ppu %pc %c1
%base = OpLoad %u32 %bp
%o = OpIAdd %u32 %base %i
%p = OpAccessChain %pv4 %out %c0 %o
OpStore %p %seven
OpReturn
OpFunctionEnd
"
        )
    }
}

/// Fragment shader for the draw tests and the bench: outputs the texel (1, 2) of the texture
/// whose handle is push constant `h` (offset 0) — or, when `!bindless`, of the texture bound
/// as a combined image sampler at (set 0, binding 0).
pub fn draw_fs(bindless: bool) -> String {
    let head = if bindless {
        "OpCapability Shader
OpCapability BindlessTextureNV
OpExtension \"SPV_NV_bindless_texture\"
OpMemoryModel Logical GLSL450
OpSamplerImageAddressingModeNV 32
OpEntryPoint Fragment %main \"main\" %color %pc"
    } else {
        "OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint Fragment %main \"main\" %color %pc %tex"
    };
    let get = if bindless {
        "%hp = OpAccessChain %ppu %pc %c0
%h = OpLoad %u32 %hp
%im = OpConvertUToImageNV %img %h"
    } else {
        "%si = OpLoad %simg %tex
%im = OpImage %img %si"
    };
    format!(
        "{head}
OpExecutionMode %main OriginUpperLeft
OpDecorate %color Location 0
OpMemberDecorate %pcb 0 Offset 0
OpDecorate %pcb Block
OpDecorate %tex DescriptorSet 0
OpDecorate %tex Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%i32 = OpTypeInt 32 1
%f32 = OpTypeFloat 32
%v2i = OpTypeVector %i32 2
%v4f = OpTypeVector %f32 4
%img = OpTypeImage %f32 2D 0 0 0 1 Unknown
%simg = OpTypeSampledImage %img
%pu_simg = OpTypePointer UniformConstant %simg
%tex = OpVariable %pu_simg UniformConstant
%pcb = OpTypeStruct %u32
%ppcb = OpTypePointer PushConstant %pcb
%ppu = OpTypePointer PushConstant %u32
%pout = OpTypePointer Output %v4f
%pc = OpVariable %ppcb PushConstant
%color = OpVariable %pout Output
%c0 = OpConstant %u32 0
%i0 = OpConstant %i32 0
%i1 = OpConstant %i32 1
%i2 = OpConstant %i32 2
%xy = OpConstantComposite %v2i %i1 %i2
%main = OpFunction %void None %fn
%l = OpLabel
{get}
%t = OpImageFetch %v4f %im %xy Lod %i0
OpStore %color %t
OpReturn
OpFunctionEnd
"
    )
}
