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
use super::extension::{Activated, ExtensionEmulation};
use crate::component::{Components, DeviceComponent};
use crate::dispatch::load_device;
use crate::descriptor_limits::Reservation;
use crate::emulation::{LayerExtension, NewDevice, PhysDev, Services};

use crate::tables::features::Core;
use crate::tables::{device_query, TableArray, TableDevice, TableUser};
use crate::into_any;
use ash::vk;
use shader_rewrite::BindlessTable;
use std::ffi::CStr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

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
pub static EXTENSION: LayerExtension =
    LayerExtension { name: NAME, spec_version: 1, commands: &["vkGetImageViewHandleNVX", "vkGetImageViewHandle64NVX"] };

impl ExtensionEmulation for ImageViewHandle {
    fn extension(&self) -> &'static LayerExtension {
        &EXTENSION
    }
    fn setting(&self) -> &'static str {
        "image_view_handle"
    }
    unsafe fn unavailable(&self, pd: &PhysDev) -> Option<String> {
        caps_for(pd).err()
    }
    fn reserves_descriptors(&self) -> bool {
        true
    }
    /// The table's image arrays, in every layout (descriptor_limits).
    unsafe fn reservation(&self, pd: &PhysDev) -> Option<Reservation> {
        let c = caps_for(pd).ok()?;
        Some(Reservation::of(c.limits, &arrays(&c.table).map(|a| (a.ty, a.count))))
    }
    unsafe fn activate(&self, pd: &PhysDev, services: &mut Services) -> Result<Box<dyn Activated>, String> {
        let caps = caps_for(pd)?;
        let mut core = Vec::new();
        if caps.sampled_dynamic_indexing {
            core.push(Core::SampledImageDynamic);
        }
        if caps.storage_dynamic_indexing {
            core.push(Core::StorageImageDynamic);
        }
        let user = TableUser {
            name: self.name_str(),
            arrays: arrays(&caps.table).to_vec(),
            indexing: &caps::NEEDED_FEATURES,
            core,
            robust_buffers: false,
            uses: |scan| scan.bindless_texture,
        };
        crate::tables::join(services, caps.limits, user);
        Ok(Box::new(Active(caps.table)))
    }
}

impl ImageViewHandle {
    fn name_str(&self) -> &'static str {
        NAME.to_str().unwrap_or("?")
    }
}

/// The image arrays of a table description (bindings 0-2).
fn arrays(t: &BindlessTable) -> [TableArray; 3] {
    type T = vk::DescriptorType;
    [
        TableArray { binding: t.sampled_images_binding, ty: T::SAMPLED_IMAGE, count: t.sampled_images_count },
        TableArray { binding: t.storage_images_binding, ty: T::STORAGE_IMAGE, count: t.storage_images_count },
        TableArray { binding: t.samplers_binding, ty: T::SAMPLER, count: t.samplers_count },
    ]
}

/// The table a physical device can hold, or why it cannot (queried once, logged once).
///
/// # Safety
/// `pd` is live.
pub unsafe fn caps_for(pd: &PhysDev) -> Result<Caps, String> {
    let caps_of = |d: &device_query::DescriptorIndexing| caps::caps(&d.limits, &d.properties, &d.features, &d.core);
    let describe = |c: &Caps| {
        format!(
            "table at set {} ({} sampled images, {} storage images, {} samplers), reserved in the reported limits (one set less, the arrays' descriptors less)",
            c.table.set, c.table.sampled_images_count, c.table.storage_images_count, c.table.samplers_count
        )
    };
    device_query::caps_once(("bindless", "VK_NVX_image_view_handle"), pd, caps_of, describe)
}

/// Active on the device being created.
struct Active(BindlessTable);

impl Activated for Active {
    fn options(&self, options: &mut shader_rewrite::Options) {
        options.bindless = Some(self.0);
    }
    unsafe fn set_up(self: Box<Self>, dev: &NewDevice, components: &mut Components) -> Result<(), String> {
        let table = components.get::<TableDevice>().ok_or("no descriptor table")?;
        components.push(Arc::new(BindlessDevice {
            table,
            arrays: self.0,
            images: Images::new(&self.0),
            destroy_image_view: load_device(dev.gdpa, dev.device, c"vkDestroyImageView"),
            destroy_sampler: load_device(dev.gdpa, dev.device, c"vkDestroySampler"),
        }));
        Ok(())
    }
}

/// The bindless user's state on a device.
pub struct BindlessDevice {
    pub table: Arc<TableDevice>,
    pub arrays: BindlessTable,
    pub images: Images,
    pub destroy_image_view: Option<vk::PFN_vkDestroyImageView>,
    pub destroy_sampler: Option<vk::PFN_vkDestroySampler>,
}

/// Image/sampler slots.
pub struct Images {
    /// Slot bookkeeping; held while the descriptors of new slots are written.
    pub slots: Mutex<slots::Slots>,
    /// An out-of-slots error was logged (logged once per device).
    pub exhausted_logged: AtomicBool,
}

impl Images {
    pub fn new(t: &BindlessTable) -> Images {
        Images {
            slots: Mutex::new(slots::Slots::new(t.sampled_images_count, t.storage_images_count, t.samplers_count)),
            exhausted_logged: AtomicBool::new(false),
        }
    }
}

impl DeviceComponent for BindlessDevice {
    fn device_hook(&self, name: &[u8], next_exists: bool) -> vk::PFN_vkVoidFunction {
        device_hook(name, next_exists)
    }
    into_any!();
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
    use crate::pnext::Chain;
    use std::ffi::c_void;

    #[test]
    fn extension_identity() {
        assert_eq!(EXTENSION.name, c"VK_NVX_image_view_handle");
        assert_eq!(EXTENSION.spec_version, 1);
        assert_eq!(ImageViewHandle.setting(), "image_view_handle");
        assert!(ImageViewHandle.feature_structs().is_empty());
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
        let core = [Core::SampledImageDynamic];
        let enable = |chain: &mut Chain, ef: &mut Option<vk::PhysicalDeviceFeatures>, exts: &[&CStr], version| unsafe {
            crate::tables::features::enable(chain, ef, exts, version, &caps::NEEDED_FEATURES, &core)
        };
        assert!(caps.sampled_dynamic_indexing && !caps.storage_dynamic_indexing);
        let added = enable(&mut chain, &mut ef, &[], vk::API_VERSION_1_3).unwrap();
        assert_eq!(added.len(), 6, "{added:?}");
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES]);
        assert_eq!(ef.unwrap().shader_sampled_image_array_dynamic_indexing, vk::TRUE);
        assert_eq!(ef.unwrap().shader_storage_image_array_dynamic_indexing, vk::FALSE);
        let v = unsafe { chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) }.unwrap();
        assert_eq!(v.shader_storage_image_array_non_uniform_indexing, vk::TRUE);
        assert_eq!(v12.shader_storage_image_array_non_uniform_indexing, vk::FALSE, "application's struct untouched");
        // Nothing chained, Vulkan 1.2+: the dedicated struct.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        enable(&mut chain, &mut None, &[], vk::API_VERSION_1_2).unwrap();
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES]);
        // Vulkan 1.1 without the extension: not possible.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(enable(&mut chain, &mut None, &[], vk::API_VERSION_1_1).is_err());
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(enable(&mut chain, &mut None, &[vk::EXT_DESCRIPTOR_INDEXING_NAME], vk::API_VERSION_1_1).is_ok());
    }
}
