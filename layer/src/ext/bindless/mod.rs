//! VK_NVX_image_view_handle on any driver, backed by the layer-owned descriptor table
//! (crate::tables; the Vulkan side of SPV_NV_bindless_texture emulation; the shader side is
//! shader-rewrite's bindless pass).
//!
//! - A handle names slots in the table's image arrays ([`slots`]): image slot in bits 0..20,
//!   sampler slot in bits 20..32 (`shader_rewrite::BindlessTable::handle`), per (view,
//!   descriptor type, sampler), released on vkDestroyImageView / vkDestroySampler ([`api`]).
//! - The arrays ([`caps`]): SAMPLED_IMAGE / STORAGE_IMAGE / SAMPLER (bindings 0/1/2) of the
//!   table at the reserved set index `maxBoundDescriptorSets - 1`; layouts, binding before
//!   work and shader objects are the table's (crate::tables), shared with buffer device
//!   addresses.
//!
//! These hooks exist only on devices where the emulation is active (the application enabled
//! the extension, or `image_view_handle=force` / `force_enable`).
use super::EmulatedExtension;
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use crate::pnext::Chain;
use crate::settings::{Mode, Settings};
use crate::tables::features::{self, Core};
use crate::tables::{device_query, pfn};
use ash::vk;
use std::ffi::{c_void, CStr};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

pub mod api;
pub mod caps;
pub mod slots;

pub use caps::Caps;

pub struct ImageViewHandle;

pub const NAME: &CStr = vk::NVX_IMAGE_VIEW_HANDLE_NAME;
/// Advertised revision: 1.
///
/// VK_NVX_image_view_handle's version history (Vulkan registry, `VK_NVX_image_view_handle`
/// appendix): revision 1 (2018-12-07) has `vkGetImageViewHandleNVX`; revision 2 (2020-04-03)
/// adds `vkGetImageViewAddressNVX`; revision 3 (2024-11-04) adds `vkGetImageViewHandle64NVX`.
/// `vkGetImageViewAddressNVX` returns the device address and size of the view's memory, which
/// a descriptor-table emulation does not have, so revisions 2 and 3 cannot be claimed honestly.
/// The layer still answers `vkGetImageViewHandle64NVX` (the same handle, zero-extended) for
/// applications that look it up regardless of the revision; `vkGetImageViewAddressNVX` is not
/// provided (vkGetDeviceProcAddr gives the next layer's answer, normally NULL).
pub const SPEC_VERSION: u32 = 1;

impl EmulatedExtension for ImageViewHandle {
    fn name(&self) -> &'static CStr {
        NAME
    }
    fn spec_version(&self) -> u32 {
        SPEC_VERSION
    }
    fn mode_setting(&self, settings: &Settings) -> Mode {
        settings.image_view_handle
    }
    fn feature_struct_types(&self) -> &'static [vk::StructureType] {
        &[]
    }
    unsafe fn report_features(&self, _node: *mut vk::BaseOutStructure<'static>) {}
    unsafe fn feature_requested(&self, _head: *const c_void) -> bool {
        false
    }
    /// The table depends on the device: device.rs sets `options.bindless` from [`caps_for`].
    fn enable_in_options(&self, _options: &mut shader_rewrite::Options) {}
    unsafe fn unavailable(&self, inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Option<String> {
        caps_for(inst, pd, phys).err()
    }
}

/// The table a physical device can hold, or why it cannot (queried once, logged once).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn caps_for(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Result<Caps, String> {
    let caps_of = |d: &device_query::DescriptorIndexing| caps::caps(&d.limits, &d.properties, &d.features, &d.core);
    let describe = |c: &Caps| {
        format!(
            "table at set {} ({} sampled images, {} storage images, {} samplers), appended to the pipeline layouts it fits beside; device limits reported unchanged but maxUpdateAfterBindDescriptorsInAllPools (minus the table)",
            c.table.set, c.table.sampled_images_count, c.table.storage_images_count, c.table.samplers_count
        )
    };
    device_query::caps_once(&phys.bindless, ("bindless", "VK_NVX_image_view_handle"), inst, pd, phys, caps_of, describe)
}

/// The arrays this physical device would get, when the extension is emulated there.
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn emulated_caps(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Option<Caps> {
    match super::status_on(&ImageViewHandle, inst, pd, phys) {
        super::Status::Emulated { .. } => caps_for(inst, pd, phys).ok(),
        _ => None,
    }
}

/// Turns on the descriptor-indexing features the image arrays and the lowered shaders need in a
/// copied `VkDeviceCreateInfo` chain (crate::tables::features). Returns the names newly enabled.
///
/// # Safety
/// `chain` is a copy of a valid VkDeviceCreateInfo chain.
pub unsafe fn enable_features(
    chain: &mut Chain,
    enabled_features: &mut Option<vk::PhysicalDeviceFeatures>,
    enabled_extensions: &[&CStr],
    version: u32,
    caps: &Caps,
) -> Result<Vec<&'static str>, String> {
    let mut core = Vec::new();
    if caps.sampled_dynamic_indexing {
        core.push(Core::SampledImageDynamic);
    }
    if caps.storage_dynamic_indexing {
        core.push(Core::StorageImageDynamic);
    }
    features::enable(chain, enabled_features, enabled_extensions, version, &caps::NEEDED_FEATURES, &core)
}

/// The bindless user's state on a device with the table.
pub struct Images {
    /// Slot bookkeeping; held while the descriptors of new slots are written.
    pub slots: Mutex<slots::Slots>,
    /// An out-of-slots error was logged (logged once per device).
    pub exhausted_logged: AtomicBool,
}

impl Images {
    pub fn new(t: &shader_rewrite::BindlessTable) -> Images {
        Images {
            slots: Mutex::new(slots::Slots::new(t.sampled_images_count, t.storage_images_count, t.samplers_count)),
            exhausted_logged: AtomicBool::new(false),
        }
    }
}

/// vkGetDeviceProcAddr for a device with bindless emulation active: our hook for `name`, if it
/// is one of the extension's (the table's own hooks are in crate::tables). `next_exists`: the
/// next layer has the command (hooks that call down are only handed out then).
pub fn device_hook(name: &[u8], next_exists: bool) -> vk::PFN_vkVoidFunction {
    // The extension's own commands: implemented here, nothing below.
    match name {
        b"vkGetImageViewHandleNVX" => return pfn!(api::get_image_view_handle_nvx as vk::PFN_vkGetImageViewHandleNVX),
        b"vkGetImageViewHandle64NVX" => return pfn!(api::get_image_view_handle64_nvx as api::PfnGetImageViewHandle64NVX),
        _ => {}
    }
    match name {
        b"vkDestroyImageView" if next_exists => pfn!(api::destroy_image_view as vk::PFN_vkDestroyImageView),
        b"vkDestroySampler" if next_exists => pfn!(api::destroy_sampler as vk::PFN_vkDestroySampler),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_identity() {
        assert_eq!(ImageViewHandle.name(), c"VK_NVX_image_view_handle");
        assert_eq!(ImageViewHandle.spec_version(), 1);
        let mut s = Settings::default();
        assert_eq!(ImageViewHandle.mode_setting(&s), Mode::Auto);
        s.image_view_handle = Mode::Off;
        assert_eq!(ImageViewHandle.mode_setting(&s), Mode::Off);
        assert!(ImageViewHandle.feature_struct_types().is_empty());
    }

    #[test]
    fn hooks_only_for_our_names() {
        assert!(device_hook(b"vkGetImageViewHandleNVX", false).is_some());
        assert!(device_hook(b"vkGetImageViewHandle64NVX", false).is_some());
        assert!(device_hook(b"vkGetImageViewAddressNVX", true).is_none());
        assert!(device_hook(b"vkDestroyImageView", true).is_some());
        assert!(device_hook(b"vkDestroyImageView", false).is_none());
        assert!(device_hook(b"vkCmdDraw", true).is_none(), "the table's hook (crate::tables)");
    }

    #[test]
    fn features_go_into_the_aggregate() {
        let caps = caps::caps(
            &vk::PhysicalDeviceLimits { max_bound_descriptor_sets: 8, ..Default::default() },
            &vk::PhysicalDeviceDescriptorIndexingProperties {
                max_per_stage_update_after_bind_resources: 1 << 20,
                max_update_after_bind_descriptors_in_all_pools: u32::MAX,
                max_descriptor_set_update_after_bind_sampled_images: 1 << 20,
                max_per_stage_descriptor_update_after_bind_sampled_images: 1 << 20,
                max_descriptor_set_update_after_bind_storage_images: 1 << 20,
                max_per_stage_descriptor_update_after_bind_storage_images: 1 << 20,
                max_descriptor_set_update_after_bind_samplers: 1 << 20,
                max_per_stage_descriptor_update_after_bind_samplers: 1 << 20,
                ..Default::default()
            },
            &vk::PhysicalDeviceDescriptorIndexingFeatures {
                descriptor_binding_sampled_image_update_after_bind: 1,
                descriptor_binding_storage_image_update_after_bind: 1,
                descriptor_binding_update_unused_while_pending: 1,
                descriptor_binding_partially_bound: 1,
                shader_sampled_image_array_non_uniform_indexing: 1,
                shader_storage_image_array_non_uniform_indexing: 1,
                ..Default::default()
            },
            &vk::PhysicalDeviceFeatures { shader_sampled_image_array_dynamic_indexing: 1, ..Default::default() },
        )
        .unwrap();
        type S = vk::StructureType;
        // Aggregate chained: bits go there, no dedicated struct is added.
        let v12 = vk::PhysicalDeviceVulkan12Features { descriptor_binding_partially_bound: vk::TRUE, ..Default::default() };
        let mut chain = unsafe { Chain::copy(&v12 as *const _ as *const c_void) };
        let mut ef = None;
        let added = unsafe { enable_features(&mut chain, &mut ef, &[], vk::API_VERSION_1_3, &caps) }.unwrap();
        assert_eq!(added.len(), 6, "{added:?}");
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES]);
        assert_eq!(ef.unwrap().shader_sampled_image_array_dynamic_indexing, vk::TRUE);
        assert_eq!(ef.unwrap().shader_storage_image_array_dynamic_indexing, vk::FALSE);
        let v = unsafe { chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) }.unwrap();
        assert_eq!(v.shader_storage_image_array_non_uniform_indexing, vk::TRUE);
        assert_eq!(v12.shader_storage_image_array_non_uniform_indexing, vk::FALSE, "application's struct untouched");
        // Nothing chained, Vulkan 1.2+: the dedicated struct.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        unsafe { enable_features(&mut chain, &mut None, &[], vk::API_VERSION_1_2, &caps) }.unwrap();
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES]);
        // Vulkan 1.1 without the extension: not possible.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(unsafe { enable_features(&mut chain, &mut None, &[], vk::API_VERSION_1_1, &caps) }.is_err());
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(unsafe { enable_features(&mut chain, &mut None, &[vk::EXT_DESCRIPTOR_INDEXING_NAME], vk::API_VERSION_1_1, &caps) }.is_ok());
    }
}
