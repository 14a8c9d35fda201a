//! VK_EXT_robustness2 / VK_KHR_robustness2 features the table turns on at vkCreateDevice where
//! the device has them:
//! - `nullDescriptor`, for the table's free slots: a released or never-used slot holds a null
//!   descriptor (reads zero, writes discarded) rather than an unwritten one;
//! - `robustBufferAccess2` (with core `robustBufferAccess`, which it requires:
//!   VUID-VkPhysicalDeviceRobustness2FeaturesKHR-robustBufferAccess2-04000), for users whose
//!   lowered shaders leave storage-buffer bounds to the driver ([`super::TableUser::robust_buffers`]):
//!   every access is then checked against its descriptor's range, loads outside read zero and
//!   writes outside are discarded.
use crate::device_features::Robustness;
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use crate::pnext::Chain;
use ash::vk;
use std::ffi::{c_void, CStr};

/// The robustness2 extension `has` names, EXT first (VK_KHR_robustness2 shares the structure and
/// its sType).
fn robustness2_in(has: impl Fn(&CStr) -> bool) -> Option<&'static CStr> {
    const KHR: &CStr = c"VK_KHR_robustness2";
    [vk::EXT_ROBUSTNESS2_NAME, KHR].into_iter().find(|&n| has(n))
}

/// What the physical device supports of robustness2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The extension to enable for it.
    pub extension: &'static CStr,
    pub null_descriptor: bool,
    /// `robustBufferAccess2` and core `robustBufferAccess`.
    pub robust_buffer_access2: bool,
}

/// What to turn on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bits {
    pub null_descriptor: bool,
    /// `robustBufferAccess2` (core `robustBufferAccess` is the caller's: it lives in another
    /// structure).
    pub robust_buffer_access2: bool,
}

/// Which robustness2 features the physical device supports (VK_EXT_robustness2 /
/// VK_KHR_robustness2), and the extension to enable for them.
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn support(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Result<Support, String> {
    let Some(extension) = robustness2_in(|n| phys.has_extension(n)) else {
        return Err("the device has neither VK_EXT_robustness2 nor VK_KHR_robustness2".into());
    };
    let Some(features2) = inst.features2_for_query() else {
        return Err("cannot query features (Vulkan 1.0 instance without VK_KHR_get_physical_device_properties2)".into());
    };
    let mut r2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
    let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: &mut r2 as *mut _ as *mut c_void, ..Default::default() };
    features2(pd, &mut f2);
    Ok(Support {
        extension,
        null_descriptor: r2.null_descriptor != vk::FALSE,
        robust_buffer_access2: r2.robust_buffer_access2 != vk::FALSE && f2.features.robust_buffer_access != vk::FALSE,
    })
}

/// Whether the device checks storage-buffer accesses as robustBufferAccess2 does even with no
/// robustness feature enabled: VK_EXT_pipeline_robustness's
/// `defaultRobustnessStorageBuffers` ("the behavior of out of bounds accesses made to storage
/// buffers when no robustness features are enabled") is ROBUST_BUFFER_ACCESS_2 (lavapipe).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn default_is_robust2(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> bool {
    // Only structures the device knows may be chained (VUID-VkPhysicalDeviceProperties2-pNext-pNext).
    if !phys.has_extension(vk::EXT_PIPELINE_ROBUSTNESS_NAME) && phys.api_version < vk::make_api_version(0, 1, 4, 0) {
        return false;
    }
    let Some(properties2) = inst.properties2_for_query() else { return false };
    let mut pr = vk::PhysicalDevicePipelineRobustnessPropertiesEXT::default();
    let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut pr as *mut _ as *mut c_void, ..Default::default() };
    properties2(pd, &mut p2);
    pr.default_robustness_storage_buffers == vk::PipelineRobustnessBufferBehaviorEXT::ROBUST_BUFFER_ACCESS_2
}

/// Does the driver check every storage-buffer access of the device's pipelines as
/// robustBufferAccess2 says, given the robustness the final create info enables (`app`)? Where
/// robustBufferAccess2 is enabled (with robustBufferAccess, which it requires), or no robustness
/// is and the device's default is robustBufferAccess2 ([`default_is_robust2`]); never where
/// pipelineRobustness is enabled (a pipeline may opt out of the device's robustness).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn storage_checked_as_robust2(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo, app: Robustness) -> bool {
    if app.pipeline_robustness {
        return false;
    }
    match (app.robust_buffer_access, app.robust_buffer_access2) {
        (true, true) => true,
        (false, false) => default_is_robust2(inst, pd, phys),
        _ => false,
    }
}

/// Is the device's `robustStorageBufferAccessSizeAlignment` 1: robustBufferAccess2 checks
/// storage-buffer accesses against the descriptor's range to the byte (else the range is rounded
/// up to whole words)? False where the device has neither robustness2 extension to say so.
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn storage_checks_to_the_byte(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> bool {
    if robustness2_in(|n| phys.has_extension(n)).is_none() {
        return false;
    }
    let Some(properties2) = inst.properties2_for_query() else { return false };
    let mut r2 = vk::PhysicalDeviceRobustness2PropertiesEXT::default();
    let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut r2 as *mut _ as *mut c_void, ..Default::default() };
    properties2(pd, &mut p2);
    r2.robust_storage_buffer_access_size_alignment == 1
}

/// Turns on `bits` in a copied `VkDeviceCreateInfo` chain: in the application's
/// `VkPhysicalDeviceRobustness2FeaturesEXT` copy when chained, else in a new one, adding
/// `extension` (from [`support`]) to `enabled_extensions` when the application enabled neither
/// robustness2 extension (the structure is only valid then). Returns the extension added, if any.
///
/// # Safety
/// `chain` is a copy of a valid VkDeviceCreateInfo chain.
pub unsafe fn enable(chain: &mut Chain, enabled_extensions: &mut Vec<&CStr>, extension: &'static CStr, bits: Bits) -> Result<Option<&'static CStr>, String> {
    type S = vk::StructureType;
    let set = |r2: &mut vk::PhysicalDeviceRobustness2FeaturesEXT| {
        if bits.null_descriptor {
            r2.null_descriptor = vk::TRUE;
        }
        if bits.robust_buffer_access2 {
            r2.robust_buffer_access2 = vk::TRUE;
        }
    };
    if let Some(r2) = chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) {
        set(r2);
        return Ok(None);
    }
    if chain.tail_contains(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) {
        return Err("the robustness2 feature structure sits behind an unknown structure".into());
    }
    // The structure is only valid with one of the extensions enabled.
    let added = match robustness2_in(|n| enabled_extensions.contains(&n)) {
        Some(_) => None,
        None => {
            enabled_extensions.push(extension);
            Some(extension)
        }
    };
    let mut r2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
    set(&mut r2);
    chain.push_front(r2);
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NULL: Bits = Bits { null_descriptor: true, robust_buffer_access2: false };

    #[test]
    fn robustness2_enabling() {
        type S = vk::StructureType;
        let ext = vk::EXT_ROBUSTNESS2_NAME;
        // Nothing chained, extension not enabled: new struct + extension added.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut exts: Vec<&CStr> = vec![vk::KHR_SWAPCHAIN_NAME];
        assert_eq!(unsafe { enable(&mut chain, &mut exts, ext, NULL) }, Ok(Some(ext)));
        assert_eq!(exts, vec![vk::KHR_SWAPCHAIN_NAME, ext]);
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT]);
        let r2 = unsafe { chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) }.unwrap();
        assert_eq!(r2.null_descriptor, vk::TRUE);
        // The application enabled VK_KHR_robustness2: no extension added.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut exts: Vec<&CStr> = vec![c"VK_KHR_robustness2"];
        assert_eq!(unsafe { enable(&mut chain, &mut exts, ext, NULL) }, Ok(None));
        assert_eq!(exts.len(), 1);
        // The application chained its own struct: its copy gets the bit, nothing is added.
        let app = vk::PhysicalDeviceRobustness2FeaturesEXT { robust_image_access2: vk::TRUE, ..Default::default() };
        let mut chain = unsafe { Chain::copy(&app as *const _ as *const c_void) };
        let mut exts: Vec<&CStr> = vec![ext];
        assert_eq!(unsafe { enable(&mut chain, &mut exts, ext, NULL) }, Ok(None));
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT]);
        let r2 = unsafe { chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) }.unwrap();
        assert_eq!((r2.null_descriptor, r2.robust_image_access2), (vk::TRUE, vk::TRUE));
        assert_eq!(app.null_descriptor, vk::FALSE, "application's struct untouched");
    }

    #[test]
    fn robust_buffer_access2_enabling() {
        type S = vk::StructureType;
        let ext = vk::EXT_ROBUSTNESS2_NAME;
        let both = Bits { null_descriptor: true, robust_buffer_access2: true };
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut exts: Vec<&CStr> = vec![];
        assert_eq!(unsafe { enable(&mut chain, &mut exts, ext, both) }, Ok(Some(ext)));
        let r2 = unsafe { chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) }.unwrap();
        assert_eq!((r2.null_descriptor, r2.robust_buffer_access2, r2.robust_image_access2), (vk::TRUE, vk::TRUE, vk::FALSE));
        let only = Bits { null_descriptor: false, robust_buffer_access2: true };
        let app = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
        let mut chain = unsafe { Chain::copy(&app as *const _ as *const c_void) };
        assert_eq!(unsafe { enable(&mut chain, &mut vec![ext], ext, only) }, Ok(None));
        let r2 = unsafe { chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) }.unwrap();
        assert_eq!((r2.null_descriptor, r2.robust_buffer_access2), (vk::FALSE, vk::TRUE));
    }
}
