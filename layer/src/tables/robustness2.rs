//! VK_EXT_robustness2 / VK_KHR_robustness2 features the table turns on at vkCreateDevice where
//! the device has them:
//! - `nullDescriptor`, for the table's free slots: a released or never-used slot holds a null
//!   descriptor (reads zero, writes discarded) rather than an unwritten one;
//! - `robustBufferAccess2` (with core `robustBufferAccess`, which it requires:
//!   VUID-VkPhysicalDeviceRobustness2FeaturesKHR-robustBufferAccess2-04000), for users whose
//!   lowered shaders leave storage-buffer bounds to the driver ([`super::TableUser::robust_buffers`]):
//!   every access is then checked against its descriptor's range, loads outside read zero and
//!   writes outside are discarded.
use crate::device_features::robustness2_in;
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use crate::pnext::Chain;
use ash::vk;
use std::ffi::{c_void, CStr};

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
