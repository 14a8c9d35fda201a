//! Finding and replacing shader code inside pipeline create infos: a stage's code (a
//! `VkShaderModuleCreateInfo` chained into the stage, `module` = VK_NULL_HANDLE: maintenance5 /
//! graphics pipeline libraries), the stage arrays of every pipeline type, the shader groups of
//! `VkGraphicsPipelineShaderGroupsCreateInfoNV`, and pipeline create infos chained into
//! `VkPipelineCreateInfoKHR` (pipeline binaries, pipeline keys). Nothing the application passed
//! is written: rewritten create infos are copies whose data lives in [`Owned`].
//!
//! The rewrite itself is a parameter ([`Rewrite`]): the hooks pass `module_rewrite::prepare` for
//! their device, the tests a stand-in.
use crate::component::PipelineDesc;
use crate::module_rewrite::Prepared;
use crate::pnext::{self, Chain};
use crate::log_error;
use ash::vk;
use std::ffi::c_void;

type S = vk::StructureType;

/// A module was refused (the reason is logged): the call fails with
/// `module_rewrite::REWRITE_FAILED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

/// Rewrites one module's code (`code`, `size` bytes).
pub type Rewrite<'r> = dyn FnMut(*const c_void, usize) -> Prepared + 'r;

/// Copies that must stay alive while the driver reads them (and, for deferred operations, until
/// the operation completes).
#[derive(Default)]
pub struct Owned<'a> {
    codes: Vec<Vec<u32>>,
    chains: Vec<Chain>,
    stage_arrays: Vec<Vec<vk::PipelineShaderStageCreateInfo<'a>>>,
    group_arrays: Vec<Vec<vk::GraphicsShaderGroupCreateInfoNV<'a>>>,
}

impl Owned<'_> {
    /// Whether anything was rewritten.
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }
}

/// A stage whose pNext carries a `VkShaderModuleCreateInfo` that needs rewriting gets a copied
/// chain with the new code. `Ok(None)`: unchanged; `Err`: refused (logged).
unsafe fn rewrite_stage<'a>(
    stage: &vk::PipelineShaderStageCreateInfo<'a>,
    rw: &mut Rewrite,
    owned: &mut Owned<'a>,
) -> Result<Option<vk::PipelineShaderStageCreateInfo<'a>>, Refused> {
    let Some(mci) = pnext::find::<vk::ShaderModuleCreateInfo>(stage.p_next, S::SHADER_MODULE_CREATE_INFO) else { return Ok(None) };
    match rw(mci.p_code as *const c_void, mci.code_size) {
        Prepared::PassThrough => Ok(None),
        Prepared::Failed => Err(Refused),
        Prepared::Rewritten(words) => {
            let mut chain = Chain::copy(stage.p_next);
            let Some(m) = chain.find_mut::<vk::ShaderModuleCreateInfo>(S::SHADER_MODULE_CREATE_INFO) else {
                log_error!(
                    SHADER_REFUSED,
                    "the stage's VkShaderModuleCreateInfo sits behind an unknown structure; cannot replace its code; returning {:?}",
                    crate::module_rewrite::REWRITE_FAILED
                );
                return Err(Refused);
            };
            m.p_code = words.as_ptr();
            m.code_size = words.len() * 4;
            let mut s = *stage;
            s.p_next = chain.link();
            owned.codes.push(words);
            owned.chains.push(chain);
            Ok(Some(s))
        }
    }
}

/// A stage array (null / 0 allowed). `Ok(Some(ptr))`: use this copied array.
unsafe fn rewrite_stages<'a>(
    stages: *const vk::PipelineShaderStageCreateInfo<'a>,
    count: u32,
    rw: &mut Rewrite,
    owned: &mut Owned<'a>,
) -> Result<Option<*const vk::PipelineShaderStageCreateInfo<'a>>, Refused> {
    let src = stage_slice(stages, count);
    let mut out: Option<Vec<vk::PipelineShaderStageCreateInfo<'a>>> = None;
    for (i, s) in src.iter().enumerate() {
        if let Some(n) = rewrite_stage(s, rw, owned)? {
            out.get_or_insert_with(|| src.to_vec())[i] = n;
        }
    }
    Ok(out.map(|v| {
        let p = v.as_ptr();
        owned.stage_arrays.push(v);
        p
    }))
}

/// A stage array as a slice (empty when null).
///
/// # Safety
/// `p` readable for `n` elements when non-null.
pub unsafe fn stage_slice<'a>(p: *const vk::PipelineShaderStageCreateInfo<'a>, n: u32) -> &'a [vk::PipelineShaderStageCreateInfo<'a>] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n as usize)
    }
}

/// Graphics pipeline libraries without pre-rasterization or fragment shader state ignore
/// pStages (VkGraphicsPipelineCreateInfo: "pStages ... is ignored" unless those states are
/// included), so it may be garbage: do not read it.
pub unsafe fn graphics_stages_used(info: &vk::GraphicsPipelineCreateInfo) -> bool {
    match pnext::find::<vk::GraphicsPipelineLibraryCreateInfoEXT>(info.p_next, S::GRAPHICS_PIPELINE_LIBRARY_CREATE_INFO_EXT) {
        Some(lib) => lib.flags.intersects(
            vk::GraphicsPipelineLibraryFlagsEXT::PRE_RASTERIZATION_SHADERS | vk::GraphicsPipelineLibraryFlagsEXT::FRAGMENT_SHADER,
        ),
        None => true,
    }
}

/// The pipeline-library info in a pNext chain.
///
/// # Safety
/// `p_next` a valid chain.
pub unsafe fn library_info<'a>(p_next: *const c_void) -> *const vk::PipelineLibraryCreateInfoKHR<'a> {
    pnext::find::<vk::PipelineLibraryCreateInfoKHR>(p_next, S::PIPELINE_LIBRARY_CREATE_INFO_KHR).map_or(std::ptr::null(), |l| l as *const _)
}

/// Rewrites, in place, the stages the copied nodes of `chain` carry: the shader groups of
/// `VkGraphicsPipelineShaderGroupsCreateInfoNV`, and the pipeline create infos chained into a
/// `VkPipelineCreateInfoKHR`. Returns whether anything changed (then `chain` must be linked).
///
/// # Safety
/// `chain` is a copy of a valid chain.
pub unsafe fn rewrite_chain<'a>(chain: &mut Chain, rw: &mut Rewrite, owned: &mut Owned<'a>) -> Result<bool, Refused> {
    let mut changed = false;
    if let Some(groups) = chain.find_mut::<vk::GraphicsPipelineShaderGroupsCreateInfoNV>(S::GRAPHICS_PIPELINE_SHADER_GROUPS_CREATE_INFO_NV) {
        let src: &[vk::GraphicsShaderGroupCreateInfoNV] =
            if groups.p_groups.is_null() { &[] } else { std::slice::from_raw_parts(groups.p_groups, groups.group_count as usize) };
        let mut out: Option<Vec<vk::GraphicsShaderGroupCreateInfoNV<'a>>> = None;
        for (i, g) in src.iter().enumerate() {
            if let Some(p) = rewrite_stages(g.p_stages, g.stage_count, rw, owned)? {
                let copy = out.get_or_insert_with(|| src.iter().map(|g| std::mem::transmute::<_, vk::GraphicsShaderGroupCreateInfoNV<'a>>(*g)).collect());
                copy[i].p_stages = p;
            }
        }
        if let Some(v) = out {
            groups.p_groups = v.as_ptr() as *const _;
            owned.group_arrays.push(v);
            changed = true;
        }
    }
    macro_rules! chained {
        ($t:ty, $st:expr) => {
            if let Some(node) = chain.find_mut::<$t>($st) {
                if let Some(new) = node.rewritten_stages(rw, owned)? {
                    *node = new;
                    changed = true;
                }
            }
        };
    }
    chained!(vk::ComputePipelineCreateInfo<'a>, S::COMPUTE_PIPELINE_CREATE_INFO);
    chained!(vk::GraphicsPipelineCreateInfo<'a>, S::GRAPHICS_PIPELINE_CREATE_INFO);
    chained!(vk::RayTracingPipelineCreateInfoKHR<'a>, S::RAY_TRACING_PIPELINE_CREATE_INFO_KHR);
    chained!(vk::ExecutionGraphPipelineCreateInfoAMDX<'a>, S::EXECUTION_GRAPH_PIPELINE_CREATE_INFO_AMDX);
    Ok(changed)
}

/// A pipeline create info whose shader stages the layer rewrites.
pub trait PipelineInfo<'a>: Copy + 'a {
    /// This create info with its stages' code rewritten (a copy; data in `owned`), or `None`
    /// when nothing needs rewriting. Only the stage pointers change (the pNext chain is
    /// rewritten by [`rewrite_chain`] where it carries stages).
    ///
    /// # Safety
    /// A valid create info.
    unsafe fn rewritten_stages(&self, rw: &mut Rewrite, owned: &mut Owned<'a>) -> Result<Option<Self>, Refused>;
    /// This create info with everything rewritten: stages and pNext chain.
    ///
    /// # Safety
    /// A valid create info.
    unsafe fn rewritten(&self, rw: &mut Rewrite, owned: &mut Owned<'a>) -> Result<Option<Self>, Refused> {
        self.rewritten_stages(rw, owned)
    }
    /// How observers see it (the application's create info).
    ///
    /// # Safety
    /// A valid create info.
    unsafe fn desc(&self) -> PipelineDesc<'a>;
}

impl<'a> PipelineInfo<'a> for vk::ComputePipelineCreateInfo<'a> {
    unsafe fn rewritten_stages(&self, rw: &mut Rewrite, owned: &mut Owned<'a>) -> Result<Option<Self>, Refused> {
        Ok(rewrite_stage(&self.stage, rw, owned)?.map(|stage| Self { stage, ..*self }))
    }
    unsafe fn desc(&self) -> PipelineDesc<'a> {
        let stages = std::slice::from_ref(&*(&self.stage as *const _));
        PipelineDesc { bind_point: vk::PipelineBindPoint::COMPUTE, layout: self.layout, stages, libraries: library_info(self.p_next) }
    }
}

impl<'a> PipelineInfo<'a> for vk::GraphicsPipelineCreateInfo<'a> {
    unsafe fn rewritten_stages(&self, rw: &mut Rewrite, owned: &mut Owned<'a>) -> Result<Option<Self>, Refused> {
        if !graphics_stages_used(self) {
            return Ok(None);
        }
        Ok(rewrite_stages(self.p_stages, self.stage_count, rw, owned)?.map(|p_stages| Self { p_stages, ..*self }))
    }
    /// Also the shader groups of a chained VkGraphicsPipelineShaderGroupsCreateInfoNV.
    unsafe fn rewritten(&self, rw: &mut Rewrite, owned: &mut Owned<'a>) -> Result<Option<Self>, Refused> {
        let mut out = self.rewritten_stages(rw, owned)?;
        if pnext::find::<vk::GraphicsPipelineShaderGroupsCreateInfoNV>(self.p_next, S::GRAPHICS_PIPELINE_SHADER_GROUPS_CREATE_INFO_NV).is_some() {
            let mut chain = Chain::copy(self.p_next);
            if rewrite_chain(&mut chain, rw, owned)? {
                let mut copy = out.unwrap_or(*self);
                copy.p_next = chain.link();
                owned.chains.push(chain);
                out = Some(copy);
            }
        }
        Ok(out)
    }
    unsafe fn desc(&self) -> PipelineDesc<'a> {
        let stages = if graphics_stages_used(self) { stage_slice(self.p_stages, self.stage_count) } else { &[] };
        PipelineDesc { bind_point: vk::PipelineBindPoint::GRAPHICS, layout: self.layout, stages, libraries: library_info(self.p_next) }
    }
}

macro_rules! stage_array_info {
    ($t:ty, $bind_point:expr, $libraries:expr) => {
        impl<'a> PipelineInfo<'a> for $t {
            unsafe fn rewritten_stages(&self, rw: &mut Rewrite, owned: &mut Owned<'a>) -> Result<Option<Self>, Refused> {
                Ok(rewrite_stages(self.p_stages, self.stage_count, rw, owned)?.map(|p_stages| Self { p_stages, ..*self }))
            }
            unsafe fn desc(&self) -> PipelineDesc<'a> {
                #[allow(clippy::redundant_closure_call)]
                PipelineDesc {
                    bind_point: $bind_point,
                    layout: self.layout,
                    stages: stage_slice(self.p_stages, self.stage_count),
                    libraries: ($libraries)(self),
                }
            }
        }
    };
}

stage_array_info!(vk::RayTracingPipelineCreateInfoKHR<'a>, vk::PipelineBindPoint::RAY_TRACING_KHR, |i: &vk::RayTracingPipelineCreateInfoKHR<'a>| i.p_library_info);
stage_array_info!(vk::RayTracingPipelineCreateInfoNV<'a>, vk::PipelineBindPoint::RAY_TRACING_KHR, |_: &vk::RayTracingPipelineCreateInfoNV<'a>| std::ptr::null());
stage_array_info!(vk::ExecutionGraphPipelineCreateInfoAMDX<'a>, vk::PipelineBindPoint::EXECUTION_GRAPH_AMDX, |i: &vk::ExecutionGraphPipelineCreateInfoAMDX<'a>| i.p_library_info);

/// The create infos with their code rewritten: `Ok(None)` when nothing changed.
///
/// # Safety
/// Valid create infos.
pub unsafe fn rewrite_infos<'a, T: PipelineInfo<'a>>(infos: &[T], rw: &mut Rewrite, owned: &mut Owned<'a>) -> Result<Option<Vec<T>>, Refused> {
    let mut copies: Option<Vec<T>> = None;
    for (i, info) in infos.iter().enumerate() {
        if let Some(n) = info.rewritten(rw, owned)? {
            copies.get_or_insert_with(|| infos.to_vec())[i] = n;
        }
    }
    Ok(copies)
}

#[cfg(test)]
mod tests {
    //! The walker on synthetic create infos of every pipeline type (also those lavapipe does not
    //! run: NV shader groups, NV ray tracing, pipeline binaries' chained create infos): the code
    //! a stand-in rewriter marks is replaced in copies, the application's structures stay as they
    //! were, and a refusal stops the walk.
    use super::*;
    use crate::shader_hooks::queries::{rewrite_pipeline_create_info, PipelineCreateInfoKHR};

    const OLD: [u32; 2] = [0x0723_0203, 1];
    const NEW: [u32; 3] = [0x0723_0203, 2, 2];
    const BAD: [u32; 2] = [0x0723_0203, 666];

    /// Rewrites OLD into NEW, refuses BAD, passes anything else.
    fn stand_in(code: *const c_void, size: usize) -> Prepared {
        let words = unsafe { std::slice::from_raw_parts(code as *const u32, size / 4) };
        match words {
            w if w == OLD => Prepared::Rewritten(NEW.to_vec()),
            w if w == BAD => Prepared::Failed,
            _ => Prepared::PassThrough,
        }
    }

    fn module_info(code: &[u32]) -> vk::ShaderModuleCreateInfo<'_> {
        vk::ShaderModuleCreateInfo { code_size: code.len() * 4, p_code: code.as_ptr(), ..Default::default() }
    }

    fn stage(m: &vk::ShaderModuleCreateInfo) -> vk::PipelineShaderStageCreateInfo<'static> {
        vk::PipelineShaderStageCreateInfo { p_next: m as *const _ as *const c_void, p_name: c"main".as_ptr(), ..Default::default() }
    }

    /// The code the stage hands down.
    fn code_of(s: &vk::PipelineShaderStageCreateInfo) -> Vec<u32> {
        unsafe {
            let m = pnext::find::<vk::ShaderModuleCreateInfo>(s.p_next, S::SHADER_MODULE_CREATE_INFO).unwrap();
            std::slice::from_raw_parts(m.p_code, m.code_size / 4).to_vec()
        }
    }

    #[test]
    fn every_pipeline_type() {
        let (old, other) = (module_info(&OLD), module_info(&[0x0723_0203, 7]));
        let stages = [stage(&other), stage(&old)];
        let mut owned = Owned::default();
        let mut rw = stand_in;
        unsafe {
            let c = vk::ComputePipelineCreateInfo { stage: stage(&old), ..Default::default() };
            assert_eq!(code_of(&c.rewritten(&mut rw, &mut owned).unwrap().unwrap().stage), NEW);
            assert_eq!(code_of(&c.stage), OLD, "application's structure untouched");
            let g = vk::GraphicsPipelineCreateInfo { stage_count: 2, p_stages: stages.as_ptr(), ..Default::default() };
            let gr = g.rewritten(&mut rw, &mut owned).unwrap().unwrap();
            assert_eq!(code_of(&*gr.p_stages.add(1)), NEW);
            assert_eq!(code_of(&*gr.p_stages), [0x0723_0203, 7], "the other stage is passed on");
            let r = vk::RayTracingPipelineCreateInfoKHR { stage_count: 2, p_stages: stages.as_ptr(), ..Default::default() };
            assert_eq!(code_of(&*r.rewritten(&mut rw, &mut owned).unwrap().unwrap().p_stages.add(1)), NEW);
            let n = vk::RayTracingPipelineCreateInfoNV { stage_count: 2, p_stages: stages.as_ptr(), ..Default::default() };
            assert_eq!(code_of(&*n.rewritten(&mut rw, &mut owned).unwrap().unwrap().p_stages.add(1)), NEW);
            let x = vk::ExecutionGraphPipelineCreateInfoAMDX { stage_count: 2, p_stages: stages.as_ptr(), ..Default::default() };
            let xr = x.rewritten(&mut rw, &mut owned).unwrap().unwrap();
            assert_eq!(code_of(&*xr.p_stages.add(1)), NEW);
            assert_eq!(xr.desc().bind_point, vk::PipelineBindPoint::EXECUTION_GRAPH_AMDX);
            let untouched = vk::ComputePipelineCreateInfo { stage: stage(&other), ..Default::default() };
            assert!(untouched.rewritten(&mut rw, &mut owned).unwrap().is_none());
        }
    }

    #[test]
    fn nv_shader_groups() {
        let old = module_info(&OLD);
        let group_stages = [stage(&old)];
        let groups = [vk::GraphicsShaderGroupCreateInfoNV { stage_count: 1, p_stages: group_stages.as_ptr(), ..Default::default() }];
        let sg = vk::GraphicsPipelineShaderGroupsCreateInfoNV { group_count: 1, p_groups: groups.as_ptr(), ..Default::default() };
        let g = vk::GraphicsPipelineCreateInfo { p_next: &sg as *const _ as *const c_void, ..Default::default() };
        let mut owned = Owned::default();
        unsafe {
            let r = g.rewritten(&mut stand_in, &mut owned).unwrap().expect("the groups' code is rewritten");
            let sg2 = pnext::find::<vk::GraphicsPipelineShaderGroupsCreateInfoNV>(r.p_next, S::GRAPHICS_PIPELINE_SHADER_GROUPS_CREATE_INFO_NV).unwrap();
            assert_ne!(sg2.p_groups, groups.as_ptr());
            assert_eq!(code_of(&*(*sg2.p_groups).p_stages), NEW);
            assert_eq!(code_of(&group_stages[0]), OLD);
        }
    }

    #[test]
    fn chained_into_pipeline_create_info_khr() {
        let old = module_info(&OLD);
        let c = vk::ComputePipelineCreateInfo { stage: stage(&old), ..Default::default() };
        let info = PipelineCreateInfoKHR { s_type: vk::StructureType::from_raw(1_000_483_007), p_next: &c as *const _ as *const c_void };
        let (mut owned, mut chains) = (Owned::default(), Vec::new());
        unsafe {
            let copy = rewrite_pipeline_create_info(&info, &mut stand_in, &mut owned, &mut chains).unwrap().unwrap();
            let c2 = pnext::find::<vk::ComputePipelineCreateInfo>(copy.p_next, S::COMPUTE_PIPELINE_CREATE_INFO).unwrap();
            assert_eq!(code_of(&c2.stage), NEW);
            assert_eq!(code_of(&c.stage), OLD);
        }
    }

    #[test]
    fn refusal_stops_the_walk() {
        let (old, bad) = (module_info(&OLD), module_info(&BAD));
        let stages = [stage(&old), stage(&bad)];
        let g = vk::GraphicsPipelineCreateInfo { stage_count: 2, p_stages: stages.as_ptr(), ..Default::default() };
        let mut owned = Owned::default();
        assert!(unsafe { rewrite_infos(&[g], &mut stand_in, &mut owned) }.is_err());
    }
}
