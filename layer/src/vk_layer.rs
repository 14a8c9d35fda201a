//! The loader's private structures from `vk_layer.h` (not in ash), see
//! LoaderLayerInterface.md "Layer Version Negotiation" and "Layer Dispatch Initialization".
use ash::vk;
use std::ffi::{c_char, c_void};

/// `VkLayerFunction` — which union member of the loader create-info structs is valid.
pub const VK_LAYER_LINK_INFO: i32 = 0;

/// `VkNegotiateLayerStructType::LAYER_NEGOTIATE_INTERFACE_STRUCT`.
pub const LAYER_NEGOTIATE_INTERFACE_STRUCT: i32 = 1;

/// The loader/layer interface version this layer implements.
pub const INTERFACE_VERSION: u32 = 2;

pub type PfnGetPhysicalDeviceProcAddr =
    Option<unsafe extern "system" fn(vk::Instance, *const c_char) -> vk::PFN_vkVoidFunction>;

#[repr(C)]
pub struct VkNegotiateLayerInterface {
    pub s_type: i32,
    pub p_next: *mut c_void,
    pub loader_layer_interface_version: u32,
    pub pfn_get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    pub pfn_get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
    pub pfn_get_physical_device_proc_addr: PfnGetPhysicalDeviceProcAddr,
}

#[repr(C)]
pub struct VkLayerInstanceLink {
    pub p_next: *mut VkLayerInstanceLink,
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub pfn_next_get_physical_device_proc_addr: PfnGetPhysicalDeviceProcAddr,
}

/// `VkLayerInstanceCreateInfo` with the union reduced to the member we read (`pLayerInfo`);
/// we never copy it by value (its real size is in `pnext.rs`).
#[repr(C)]
pub struct VkLayerInstanceCreateInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub function: i32,
    pub p_layer_info: *mut VkLayerInstanceLink,
}

#[repr(C)]
pub struct VkLayerDeviceLink {
    pub p_next: *mut VkLayerDeviceLink,
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub pfn_next_get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
}

#[repr(C)]
pub struct VkLayerDeviceCreateInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub function: i32,
    pub p_layer_info: *mut VkLayerDeviceLink,
}

/// Finds the loader's `VK_LAYER_LINK_INFO` struct of `s_type` in a create-info chain.
///
/// # Safety
/// `head` must be a valid pNext chain.
pub unsafe fn find_link_info<T>(head: *const c_void, s_type: vk::StructureType) -> Option<*mut T> {
    crate::pnext::walk(head)
        .find(|n| {
            // Both loader structs put `function` right after sType/pNext.
            (**n).s_type == s_type && (*(*n as *const VkLayerDeviceCreateInfo)).function == VK_LAYER_LINK_INFO
        })
        .map(|n| n as *mut T)
}

/// Copies `s` into a fixed-size C string array (`VkLayerProperties::layerName` and the like),
/// truncated to keep the terminating NUL.
pub fn copy_c_str(dst: &mut [std::ffi::c_char], s: &[u8]) {
    let n = s.len().min(dst.len().saturating_sub(1));
    for (d, b) in dst.iter_mut().zip(&s[..n]) {
        *d = *b as std::ffi::c_char;
    }
}

// ---- types of commands newer than ash 0.38 (Vulkan headers 1.3.281) ----

/// VkPipelineCreateInfoKHR (VK_KHR_pipeline_binary; not in ash 0.38): a pNext chain holding
/// one Vk*PipelineCreateInfo.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PipelineCreateInfoKHR {
    pub s_type: vk::StructureType,
    pub p_next: *const std::ffi::c_void,
}

/// VkPipelineBinaryCreateInfoKHR.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PipelineBinaryCreateInfoKHR {
    pub s_type: vk::StructureType,
    pub p_next: *const std::ffi::c_void,
    pub p_keys_and_data_info: *const std::ffi::c_void,
    pub pipeline: vk::Pipeline,
    pub p_pipeline_create_info: *const PipelineCreateInfoKHR,
}

pub type PfnGetPipelineKeyKHR = unsafe extern "system" fn(vk::Device, *const PipelineCreateInfoKHR, *mut std::ffi::c_void) -> vk::Result;
pub type PfnCreatePipelineBinariesKHR =
    unsafe extern "system" fn(vk::Device, *const PipelineBinaryCreateInfoKHR, *const vk::AllocationCallbacks, *mut std::ffi::c_void) -> vk::Result;
/// vkCreateDataGraphPipelinesARM (VK_ARM_data_graph; not in ash 0.38).
pub type PfnCreateDataGraphPipelinesARM = unsafe extern "system" fn(
    vk::Device,
    vk::DeferredOperationKHR,
    vk::PipelineCache,
    u32,
    *const std::ffi::c_void,
    *const vk::AllocationCallbacks,
    *mut vk::Pipeline,
) -> vk::Result;

