//! `nullDescriptor` (VK_EXT_robustness2 / VK_KHR_robustness2) for the table's free slots: the
//! layer enables it at vkCreateDevice when the device has it, so that a released or never-used
//! slot holds a null descriptor (reads zero, writes discarded) rather than an unwritten one.
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use crate::pnext::Chain;
use ash::vk;
use std::ffi::{c_void, CStr};

/// The extension that makes `VkPhysicalDeviceRobustness2FeaturesEXT` valid in the chain, if the
/// application enabled one (VK_KHR_robustness2 shares the structure and its sType).
fn robustness2_enabled(extensions: &[&CStr]) -> Option<&'static CStr> {
    const KHR: &CStr = c"VK_KHR_robustness2";
    if extensions.contains(&vk::EXT_ROBUSTNESS2_NAME) {
        Some(vk::EXT_ROBUSTNESS2_NAME)
    } else if extensions.contains(&KHR) {
        Some(KHR)
    } else {
        None
    }
}

/// Whether the physical device supports `nullDescriptor` (VK_EXT_robustness2 /
/// VK_KHR_robustness2), and the extension to enable for it.
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn support(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Result<&'static CStr, String> {
    const KHR: &CStr = c"VK_KHR_robustness2";
    let ext = if phys.has_extension(vk::EXT_ROBUSTNESS2_NAME) {
        vk::EXT_ROBUSTNESS2_NAME
    } else if phys.has_extension(KHR) {
        KHR
    } else {
        return Err("the device has neither VK_EXT_robustness2 nor VK_KHR_robustness2".into());
    };
    let Some(features2) = inst.features2_for_query() else {
        return Err("cannot query features (Vulkan 1.0 instance without VK_KHR_get_physical_device_properties2)".into());
    };
    let mut r2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
    let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: &mut r2 as *mut _ as *mut c_void, ..Default::default() };
    features2(pd, &mut f2);
    if r2.null_descriptor == vk::FALSE {
        return Err(format!("{} lacks nullDescriptor", ext.to_str().unwrap_or("?")));
    }
    Ok(ext)
}

/// Turns on `nullDescriptor` in a copied `VkDeviceCreateInfo` chain for the table's free slots:
/// in the application's `VkPhysicalDeviceRobustness2FeaturesEXT` copy when chained, else in a
/// new one, adding `extension` (from [`support`]) to `enabled_extensions` when
/// the application enabled neither robustness2 extension (the structure is only valid then).
/// Returns the extension added, if any.
///
/// # Safety
/// `chain` is a copy of a valid VkDeviceCreateInfo chain.
pub unsafe fn enable(
    chain: &mut Chain,
    enabled_extensions: &mut Vec<&CStr>,
    extension: &'static CStr,
) -> Result<Option<&'static CStr>, String> {
    type S = vk::StructureType;
    if let Some(r2) = chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) {
        r2.null_descriptor = vk::TRUE;
        return Ok(None);
    }
    if chain.tail_contains(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) {
        return Err("the robustness2 feature structure sits behind an unknown structure".into());
    }
    let added = match robustness2_enabled(enabled_extensions) {
        Some(_) => None,
        None => {
            enabled_extensions.push(extension);
            Some(extension)
        }
    };
    chain.push_front(vk::PhysicalDeviceRobustness2FeaturesEXT { null_descriptor: vk::TRUE, ..Default::default() });
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_descriptor_enabling() {
        type S = vk::StructureType;
        let ext = vk::EXT_ROBUSTNESS2_NAME;
        // Nothing chained, extension not enabled: new struct + extension added.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut exts: Vec<&CStr> = vec![vk::KHR_SWAPCHAIN_NAME];
        assert_eq!(unsafe { enable(&mut chain, &mut exts, ext) }, Ok(Some(ext)));
        assert_eq!(exts, vec![vk::KHR_SWAPCHAIN_NAME, ext]);
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT]);
        let r2 = unsafe { chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) }.unwrap();
        assert_eq!(r2.null_descriptor, vk::TRUE);
        // The application enabled VK_KHR_robustness2: no extension added.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut exts: Vec<&CStr> = vec![c"VK_KHR_robustness2"];
        assert_eq!(unsafe { enable(&mut chain, &mut exts, ext) }, Ok(None));
        assert_eq!(exts.len(), 1);
        // The application chained its own struct: its copy gets the bit, nothing is added.
        let app = vk::PhysicalDeviceRobustness2FeaturesEXT { robust_image_access2: vk::TRUE, ..Default::default() };
        let mut chain = unsafe { Chain::copy(&app as *const _ as *const c_void) };
        let mut exts: Vec<&CStr> = vec![ext];
        assert_eq!(unsafe { enable(&mut chain, &mut exts, ext) }, Ok(None));
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT]);
        let r2 = unsafe { chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) }.unwrap();
        assert_eq!((r2.null_descriptor, r2.robust_image_access2), (vk::TRUE, vk::TRUE));
        assert_eq!(app.null_descriptor, vk::FALSE, "application's struct untouched");
    }
}
