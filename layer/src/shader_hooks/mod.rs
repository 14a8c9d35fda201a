//! Every path by which shader code reaches the driver (the registry's list, checked by
//! layer/tests/shader_carriers.rs against [`carriers::CARRIERS`]):
//! - [`modules`]: vkCreateShaderModule, vkGetShaderModuleCreateInfoIdentifierEXT,
//!   vkCreateShadersEXT;
//! - [`pipelines`]: the stages of vkCreateComputePipelines, vkCreateGraphicsPipelines (and the
//!   shader groups of VkGraphicsPipelineShaderGroupsCreateInfoNV), vkCreateRayTracingPipelinesKHR
//!   (deferred operations: [`deferred`]), vkCreateRayTracingPipelinesNV,
//!   vkCreateExecutionGraphPipelinesAMDX — a `VkShaderModuleCreateInfo` chained into a stage
//!   with `module` == VK_NULL_HANDLE (maintenance5, graphics pipeline libraries) is rewritten;
//! - [`queries`]: the pipeline create infos handed to vkGetPipelineKeyKHR,
//!   vkCreatePipelineBinariesKHR and vkGetPipelineIndirectMemoryRequirementsNV, which the driver
//!   compiles or hashes like a pipeline; vkCreateDataGraphPipelinesARM, whose SPIR-V graphs the
//!   layer does not rewrite (refused where they use an emulated extension).
//!
//! These hooks are only handed out for devices with an active emulation. Nothing the
//! application passed is written to: changed create infos are copies that live until the call
//! down returns (deferred operations: until they complete).
use crate::component::{PipelineDesc, ShaderObserver};
use crate::dispatch::{device_data, DeviceData};
use crate::log_error;
use ash::vk;
use std::sync::Arc;

pub mod carriers;
pub mod deferred;
pub mod modules;
pub mod pipelines;
pub mod queries;
pub mod stages;

/// Result of an internal failure (panic) in these hooks.
const PANIC_RESULT: vk::Result = vk::Result::ERROR_UNKNOWN;

unsafe fn device(device: vk::Device, hook: &str) -> Option<Arc<DeviceData>> {
    let d = device_data(device);
    if d.is_none() {
        log_error!(LOADER_INTERFACE, "{hook}: unknown device {device:?}");
    }
    d
}

/// The device's components that watch shader and pipeline creation.
fn observers(dev: &DeviceData) -> impl Iterator<Item = &dyn ShaderObserver> {
    dev.components.iter().filter_map(|c| c.shader_observer())
}

/// Asks the observers before creating `descs`; on refusal nulls the outputs.
///
/// # Safety
/// `descs` point into valid create infos; `out` holds `descs.len()` handles or is null.
unsafe fn pipelines_allowed(dev: &DeviceData, hook: &str, descs: &[PipelineDesc], deferred: bool, out: *mut vk::Pipeline) -> bool {
    let ok = observers(dev).all(|o| o.pipelines_allowed(hook, descs, deferred));
    if !ok {
        null_out(out, descs.len() as u32);
    }
    ok
}

/// Tells the observers which pipelines were created.
///
/// # Safety
/// As for [`pipelines_allowed`].
unsafe fn pipelines_created(dev: &DeviceData, hook: &str, descs: &[PipelineDesc], out: *const vk::Pipeline) {
    if out.is_null() {
        return;
    }
    let created = std::slice::from_raw_parts(out, descs.len());
    observers(dev).for_each(|o| o.pipelines_created(hook, descs, created));
}

/// Spec: on failure, handles not created are VK_NULL_HANDLE (e.g. vkCreateGraphicsPipelines
/// "pPipelines ... elements are set to VK_NULL_HANDLE").
unsafe fn null_out<T: Default>(p: *mut T, count: u32) {
    if !p.is_null() {
        for i in 0..count as usize {
            p.add(i).write(T::default());
        }
    }
}

/// vkGetDeviceProcAddr on a device with an active emulation: the hook for `name`, if the
/// layer hooks it (and the command exists below).
pub fn device_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        b"vkCreateShaderModule" => pfn!(modules::create_shader_module as vk::PFN_vkCreateShaderModule),
        b"vkGetShaderModuleCreateInfoIdentifierEXT" => {
            pfn!(modules::get_shader_module_create_info_identifier_ext as vk::PFN_vkGetShaderModuleCreateInfoIdentifierEXT)
        }
        b"vkCreateShadersEXT" => pfn!(modules::create_shaders_ext as vk::PFN_vkCreateShadersEXT),
        b"vkCreateComputePipelines" => pfn!(pipelines::create_compute_pipelines as vk::PFN_vkCreateComputePipelines),
        b"vkCreateGraphicsPipelines" => pfn!(pipelines::create_graphics_pipelines as vk::PFN_vkCreateGraphicsPipelines),
        b"vkCreateRayTracingPipelinesKHR" => pfn!(pipelines::create_ray_tracing_pipelines_khr as vk::PFN_vkCreateRayTracingPipelinesKHR),
        b"vkCreateRayTracingPipelinesNV" => pfn!(pipelines::create_ray_tracing_pipelines_nv as vk::PFN_vkCreateRayTracingPipelinesNV),
        b"vkCreateExecutionGraphPipelinesAMDX" => {
            pfn!(pipelines::create_execution_graph_pipelines_amdx as vk::PFN_vkCreateExecutionGraphPipelinesAMDX)
        }
        b"vkGetPipelineKeyKHR" => pfn!(queries::get_pipeline_key_khr as queries::PfnGetPipelineKeyKHR),
        b"vkCreatePipelineBinariesKHR" => pfn!(queries::create_pipeline_binaries_khr as queries::PfnCreatePipelineBinariesKHR),
        b"vkGetPipelineIndirectMemoryRequirementsNV" => {
            pfn!(queries::get_pipeline_indirect_memory_requirements_nv as vk::PFN_vkGetPipelineIndirectMemoryRequirementsNV)
        }
        b"vkCreateDataGraphPipelinesARM" => pfn!(queries::create_data_graph_pipelines_arm as queries::PfnCreateDataGraphPipelinesARM),
        b"vkDeferredOperationJoinKHR" => pfn!(deferred::deferred_operation_join as vk::PFN_vkDeferredOperationJoinKHR),
        b"vkGetDeferredOperationResultKHR" => pfn!(deferred::get_deferred_operation_result as vk::PFN_vkGetDeferredOperationResultKHR),
        b"vkDestroyDeferredOperationKHR" => pfn!(deferred::destroy_deferred_operation as vk::PFN_vkDestroyDeferredOperationKHR),
        _ => None,
    }
}
