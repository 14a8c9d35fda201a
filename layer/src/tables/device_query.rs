//! The device facts every table user sizes its arrays from: limits, descriptor-indexing
//! properties and features, queried through the next layer.
use crate::device_features::effective_version;
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use crate::emulation::PhysDev;
use crate::log_info;
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

/// A table user's capabilities on `pd`, computed by `caps` from [`query`] once per physical
/// device (cached in its slots, one per type `C`) and logged once: `Ok` described by `describe`,
/// `Err` with its reason. `extension` names the emulated extension in the log line, `user`
/// prefixes it.
///
/// # Safety
/// `pd` is live.
pub unsafe fn caps_once<C: Clone + Send + Sync + 'static>(
    (user, extension): (&str, &str),
    pd: &PhysDev,
    caps: impl FnOnce(&DescriptorIndexing) -> Result<C, String>,
    describe: impl FnOnce(&C) -> String,
) -> Result<C, String> {
    pd.info.slots.get_or_init::<Result<C, String>>(|| {
        let r = query(pd.inst, pd.pd, pd.info).and_then(|d| caps(&d));
        match &r {
            Ok(c) => log_info!(DEVICE_EMULATION, "{user}: device '{}': {extension} can be emulated: {}", pd.info.name, describe(c)),
            Err(why) => log_info!(DEVICE_EMULATION, "{user}: device '{}': {extension} cannot be emulated: {why}", pd.info.name),
        }
        r
    })
}
