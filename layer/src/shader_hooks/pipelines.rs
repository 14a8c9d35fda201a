//! Pipeline creation: every pipeline type's stages are rewritten (stages.rs), the device's
//! observers (the descriptor table) see each pipeline before and after, and a deferred
//! ray-tracing creation keeps its copies until the operation completes (deferred.rs).
use super::deferred::{self, Completion, Erased};
use super::stages::{rewrite_infos, Owned, PipelineInfo};
use super::{device as device_of, null_out, pipelines_allowed, pipelines_created, PANIC_RESULT};
use crate::component::PipelineDesc;
use crate::dispatch::DeviceData;
use crate::ffi_guard::guard;
use crate::module_rewrite::{prepare, REWRITE_FAILED};
use ash::vk;

/// One vkCreate*Pipelines call: rewrite, ask the observers, call down (`call` with the create
/// infos to hand down), tell the observers — at once, or when `deferred` completes.
///
/// # Safety
/// `p_infos` valid for `count` create infos (or null); `out` valid for `count` handles.
unsafe fn create<'a, T: PipelineInfo<'a>>(
    dev: &DeviceData,
    hook: &'static str,
    p_infos: *const T,
    count: u32,
    out: *mut vk::Pipeline,
    deferred: vk::DeferredOperationKHR,
    call: impl FnOnce(*const T) -> vk::Result,
) -> vk::Result {
    if p_infos.is_null() || count == 0 {
        return call(p_infos);
    }
    let infos = std::slice::from_raw_parts(p_infos, count as usize);
    let mut owned = Owned::default();
    let mut rw = |code, size| prepare(dev, hook, code, size);
    let Ok(copies) = rewrite_infos(infos, &mut rw, &mut owned) else {
        null_out(out, count);
        return REWRITE_FAILED;
    };
    let descs: Vec<PipelineDesc> = infos.iter().map(|i| i.desc()).collect();
    let is_deferred = deferred != vk::DeferredOperationKHR::null();
    if !pipelines_allowed(dev, hook, &descs, is_deferred, out) {
        return REWRITE_FAILED;
    }
    let r = call(copies.as_ref().map_or(p_infos, |c| c.as_ptr()));
    // VK_KHR_deferred_host_operations: the implementation reads the parameters until the
    // operation completes (they must stay valid until then), and writes the pipelines then.
    if r == vk::Result::OPERATION_DEFERRED_KHR {
        deferred::keep(dev, deferred, Completion::new(hook, &descs, out, Erased::new((owned, copies))));
        return r;
    }
    pipelines_created(dev, hook, &descs, out);
    r
}

macro_rules! pipeline_hook {
    ($name:ident, $hook:literal, $next:ident, $info:ty) => {
        pub unsafe extern "system" fn $name(
            device: vk::Device,
            cache: vk::PipelineCache,
            count: u32,
            p_infos: *const $info,
            p_allocator: *const vk::AllocationCallbacks,
            p_pipelines: *mut vk::Pipeline,
        ) -> vk::Result {
            const HOOK: &str = $hook;
            guard(HOOK, PANIC_RESULT, || unsafe {
                let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
                let Some(next) = dev.next.$next else { return vk::Result::ERROR_INITIALIZATION_FAILED };
                create(&dev, HOOK, p_infos, count, p_pipelines, vk::DeferredOperationKHR::null(), |p| {
                    next(device, cache, count, p, p_allocator, p_pipelines)
                })
            })
        }
    };
}

pipeline_hook!(create_compute_pipelines, "vkCreateComputePipelines", create_compute_pipelines, vk::ComputePipelineCreateInfo);
pipeline_hook!(create_graphics_pipelines, "vkCreateGraphicsPipelines", create_graphics_pipelines, vk::GraphicsPipelineCreateInfo);
pipeline_hook!(create_ray_tracing_pipelines_nv, "vkCreateRayTracingPipelinesNV", create_ray_tracing_pipelines_nv, vk::RayTracingPipelineCreateInfoNV);
pipeline_hook!(
    create_execution_graph_pipelines_amdx,
    "vkCreateExecutionGraphPipelinesAMDX",
    create_execution_graph_pipelines_amdx,
    vk::ExecutionGraphPipelineCreateInfoAMDX
);

pub unsafe extern "system" fn create_ray_tracing_pipelines_khr(
    device: vk::Device,
    deferred: vk::DeferredOperationKHR,
    cache: vk::PipelineCache,
    count: u32,
    p_infos: *const vk::RayTracingPipelineCreateInfoKHR,
    p_allocator: *const vk::AllocationCallbacks,
    p_pipelines: *mut vk::Pipeline,
) -> vk::Result {
    const HOOK: &str = "vkCreateRayTracingPipelinesKHR";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.create_ray_tracing_pipelines_khr else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        create(&dev, HOOK, p_infos, count, p_pipelines, deferred, |p| next(device, deferred, cache, count, p, p_allocator, p_pipelines))
    })
}
