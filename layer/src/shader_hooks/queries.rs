//! Commands that hand a pipeline create info to the driver without creating a pipeline from it
//! here and now: vkGetPipelineKeyKHR and vkCreatePipelineBinariesKHR (VK_KHR_pipeline_binary:
//! the key and the binaries must be those of the pipeline the layer would create, so the driver
//! sees the rewritten code), vkGetPipelineIndirectMemoryRequirementsNV (the driver may compile
//! the stage to size it). And vkCreateDataGraphPipelinesARM: SPIR-V graphs, which the layer does
//! not rewrite: one whose chained code uses an emulated extension is refused.
use super::stages::{rewrite_chain, Owned, PipelineInfo, Refused};
use super::{device as device_of, null_out, PANIC_RESULT};
use crate::dispatch::DeviceData;
use crate::ffi_guard::guard;
use crate::log_error;
use crate::module_rewrite::{needs_rewrite, prepare, REWRITE_FAILED};
use crate::pnext::{self, Chain};
use ash::vk;
use std::ffi::c_void;

pub use crate::vk_layer::{PfnCreateDataGraphPipelinesARM, PfnCreatePipelineBinariesKHR, PfnGetPipelineKeyKHR, PipelineBinaryCreateInfoKHR, PipelineCreateInfoKHR};

/// A VkPipelineCreateInfoKHR whose chained pipeline create info has its code rewritten
/// (`Ok(None)`: unchanged).
///
/// # Safety
/// `info` valid.
pub unsafe fn rewrite_pipeline_create_info<'a>(
    info: &PipelineCreateInfoKHR,
    rw: &mut super::stages::Rewrite,
    owned: &mut Owned<'a>,
    chains: &mut Vec<Chain>,
) -> Result<Option<PipelineCreateInfoKHR>, Refused> {
    let mut chain = Chain::copy(info.p_next);
    if !rewrite_chain(&mut chain, rw, owned)? {
        return Ok(None);
    }
    let copy = PipelineCreateInfoKHR { s_type: info.s_type, p_next: chain.link() };
    chains.push(chain);
    Ok(Some(copy))
}

pub unsafe extern "system" fn get_pipeline_key_khr(device: vk::Device, p_info: *const PipelineCreateInfoKHR, p_key: *mut c_void) -> vk::Result {
    const HOOK: &str = "vkGetPipelineKeyKHR";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.get_pipeline_key_khr else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        // NULL: the global key (no shader involved).
        let Some(info) = p_info.as_ref() else { return next(device, p_info, p_key) };
        let (mut owned, mut chains) = (Owned::default(), Vec::new());
        let mut rw = |code, size| prepare(&dev, HOOK, code, size);
        match rewrite_pipeline_create_info(info, &mut rw, &mut owned, &mut chains) {
            Ok(None) => next(device, p_info, p_key),
            Ok(Some(copy)) => next(device, &copy, p_key),
            Err(Refused) => REWRITE_FAILED,
        }
    })
}

pub unsafe extern "system" fn create_pipeline_binaries_khr(
    device: vk::Device,
    p_info: *const PipelineBinaryCreateInfoKHR,
    p_allocator: *const vk::AllocationCallbacks,
    p_binaries: *mut c_void,
) -> vk::Result {
    const HOOK: &str = "vkCreatePipelineBinariesKHR";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.create_pipeline_binaries_khr else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        // From keys and data or from a pipeline: no shader code in the call.
        let Some(pci) = p_info.as_ref().and_then(|i| i.p_pipeline_create_info.as_ref()) else { return next(device, p_info, p_allocator, p_binaries) };
        let (mut owned, mut chains) = (Owned::default(), Vec::new());
        let mut rw = |code, size| prepare(&dev, HOOK, code, size);
        match rewrite_pipeline_create_info(pci, &mut rw, &mut owned, &mut chains) {
            Ok(None) => next(device, p_info, p_allocator, p_binaries),
            Ok(Some(copy)) => {
                let info = PipelineBinaryCreateInfoKHR { p_pipeline_create_info: &copy, ..*p_info };
                next(device, &info, p_allocator, p_binaries)
            }
            Err(Refused) => REWRITE_FAILED,
        }
    })
}

pub unsafe extern "system" fn get_pipeline_indirect_memory_requirements_nv(
    device: vk::Device,
    p_info: *const vk::ComputePipelineCreateInfo,
    p_requirements: *mut vk::MemoryRequirements2,
) {
    const HOOK: &str = "vkGetPipelineIndirectMemoryRequirementsNV";
    guard(HOOK, (), || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return };
        let Some(next) = dev.next.get_pipeline_indirect_memory_requirements_nv else { return };
        let Some(info) = p_info.as_ref() else { return next(device, p_info, p_requirements) };
        let mut owned = Owned::default();
        let mut rw = |code, size| prepare(&dev, HOOK, code, size);
        match info.rewritten(&mut rw, &mut owned) {
            Ok(None) => next(device, p_info, p_requirements),
            Ok(Some(copy)) => next(device, &copy, p_requirements),
            // No pipeline can be created from this code: no requirements for it.
            Err(Refused) => {
                if let Some(r) = p_requirements.as_mut() {
                    r.memory_requirements = vk::MemoryRequirements::default();
                }
            }
        }
    })
}

/// Does a data-graph pipeline create info chain code that needs the emulation?
unsafe fn data_graph_needs_rewrite(dev: &DeviceData, info: *const c_void) -> bool {
    let head = (*(info as *const vk::BaseInStructure)).p_next as *const c_void;
    pnext::walk(head).any(|n| {
        (*n).s_type == vk::StructureType::SHADER_MODULE_CREATE_INFO && {
            let m = &*(n as *const vk::ShaderModuleCreateInfo);
            needs_rewrite(dev.options.as_ref(), m.p_code as *const c_void, m.code_size)
        }
    })
}

pub unsafe extern "system" fn create_data_graph_pipelines_arm(
    device: vk::Device,
    deferred: vk::DeferredOperationKHR,
    cache: vk::PipelineCache,
    count: u32,
    p_infos: *const c_void,
    p_allocator: *const vk::AllocationCallbacks,
    p_pipelines: *mut vk::Pipeline,
) -> vk::Result {
    const HOOK: &str = "vkCreateDataGraphPipelinesARM";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.create_data_graph_pipelines_arm else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        // VkDataGraphPipelineCreateInfoARM's size, from the registry (pnext.rs).
        let size = pnext::struct_size(vk::StructureType::from_raw(1_000_507_000)).unwrap_or(0);
        if !p_infos.is_null() && size > 0 {
            for i in 0..count as usize {
                if data_graph_needs_rewrite(&dev, (p_infos as *const u8).add(i * size) as *const c_void) {
                    log_error!(
                        SHADER_REFUSED,
                        "{HOOK}: device '{}': data-graph pipeline {i} chains SPIR-V that uses an emulated extension; the layer does not rewrite SPIR-V graphs; returning {REWRITE_FAILED:?}",
                        dev.name
                    );
                    null_out(p_pipelines, count);
                    return REWRITE_FAILED;
                }
            }
        }
        next(device, deferred, cache, count, p_infos, p_allocator, p_pipelines)
    })
}
