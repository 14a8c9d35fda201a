//! The device facts every table user sizes its arrays from: limits, descriptor-indexing
//! properties and features, queried through the next layer.
use crate::device_features::effective_version;
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use ash::vk;
use std::ffi::c_void;

/// What [`query`] hands a user's sizing function.
pub struct DescriptorIndexing {
    pub limits: vk::PhysicalDeviceLimits,
    pub properties: vk::PhysicalDeviceDescriptorIndexingProperties<'static>,
    pub features: vk::PhysicalDeviceDescriptorIndexingFeatures<'static>,
    pub core: vk::PhysicalDeviceFeatures,
}

/// Queries [`DescriptorIndexing`] for `pd`, or says why a table cannot exist there (update-after-
/// bind descriptor arrays need Vulkan 1.2 or VK_EXT_descriptor_indexing).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn query(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Result<DescriptorIndexing, String> {
    let version = effective_version(inst.api_version, phys.api_version);
    if version < vk::API_VERSION_1_2 && !phys.has_extension(vk::EXT_DESCRIPTOR_INDEXING_NAME) {
        return Err("needs Vulkan 1.2 (instance and device) or VK_EXT_descriptor_indexing".into());
    }
    let (Some(features2), Some(properties2)) = (inst.features2_for_query(), inst.properties2_for_query()) else {
        return Err("cannot query features (Vulkan 1.0 instance without VK_KHR_get_physical_device_properties2)".into());
    };
    let mut features = vk::PhysicalDeviceDescriptorIndexingFeatures::default();
    let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: &mut features as *mut _ as *mut c_void, ..Default::default() };
    features2(pd, &mut f2);
    let mut properties = vk::PhysicalDeviceDescriptorIndexingProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut properties as *mut _ as *mut c_void, ..Default::default() };
    properties2(pd, &mut p2);
    features.p_next = std::ptr::null_mut();
    properties.p_next = std::ptr::null_mut();
    Ok(DescriptorIndexing { limits: p2.properties.limits, properties, features, core: f2.features })
}
