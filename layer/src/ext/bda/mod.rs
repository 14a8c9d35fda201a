//! VK_KHR_buffer_device_address (and the core 1.2 `bufferDeviceAddress` feature) on drivers
//! without it, the way Dozen does it on D3D12: an address is `0xD3 << 56 | slot << 32 | (offset ^ 2^31)`
//! (`shader_rewrite::bda::encode_address`), where the slot names a storage-buffer descriptor of
//! the layer-owned descriptor table (crate::tables, binding 3) holding the whole buffer.
//!
//! - Feature reporting: `bufferDeviceAddress` in `VkPhysicalDeviceBufferDeviceAddressFeatures`
//!   and `VkPhysicalDeviceVulkan12Features`; `bufferDeviceAddressCaptureReplay` and
//!   `bufferDeviceAddressMultiDevice` are reported false (see [`buffers`] for capture/replay).
//!   The EXT extension (VK_EXT_buffer_device_address) is not provided.
//! - vkCreateDevice: the extension name, the dedicated structure and the aggregate's bits are
//!   removed, so the driver never sees the feature (also in `force` mode where it has it).
//! - Buffers, memory and addresses: [`buffers`]. Shaders using PhysicalStorageBufferAddresses are
//!   rewritten by shader-rewrite's physical_storage_buffer pass onto the table.
use super::extension::{Activated, ExtensionEmulation};
use crate::component::{Components, DeviceComponent};
use crate::descriptor_limits::Reservation;
use crate::emulation::{LayerExtension, NewDevice, PhysDev, Services};
use crate::pnext::{self, Chain};

use crate::tables::features::{self, Core, Indexing};
use crate::tables::{budget, device_query, table, TableArray, TableDevice, TableUser};
use crate::into_any;
use ash::vk;
use shader_rewrite::BdaTable;
use std::ffi::{c_void, CStr};
use std::sync::Arc;

pub mod buffers;
mod word_alias;

pub use buffers::Buffers;

pub struct BufferDeviceAddress;

pub const NAME: &CStr = vk::KHR_BUFFER_DEVICE_ADDRESS_NAME;
/// VK_KHR_buffer_device_address revision 1 (the only one).
pub static EXTENSION: LayerExtension = LayerExtension {
    name: NAME,
    spec_version: 1,
    commands: &[
        "vkGetBufferDeviceAddressKHR",
        "vkGetBufferOpaqueCaptureAddressKHR",
        "vkGetDeviceMemoryOpaqueCaptureAddressKHR",
    ],
};
const FEATURES: vk::StructureType = vk::StructureType::PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES;
const V12: vk::StructureType = vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;

impl ExtensionEmulation for BufferDeviceAddress {
    fn extension(&self) -> &'static LayerExtension {
        &EXTENSION
    }
    fn setting(&self) -> &'static str {
        "buffer_device_address"
    }
    /// The dedicated structure holds nothing but the three address bits: removed.
    fn feature_structs(&self) -> &'static [vk::StructureType] {
        &[FEATURES]
    }
    unsafe fn report_feature(&self, node: *mut vk::BaseOutStructure<'static>) {
        match (*node).s_type {
            FEATURES => {
                let f = &mut *(node as *mut vk::PhysicalDeviceBufferDeviceAddressFeatures);
                f.buffer_device_address = vk::TRUE;
                f.buffer_device_address_capture_replay = vk::FALSE;
                f.buffer_device_address_multi_device = vk::FALSE;
            }
            V12 => {
                let f = &mut *(node as *mut vk::PhysicalDeviceVulkan12Features);
                f.buffer_device_address = vk::TRUE;
                f.buffer_device_address_capture_replay = vk::FALSE;
                f.buffer_device_address_multi_device = vk::FALSE;
            }
            _ => {}
        }
    }
    unsafe fn feature_requested(&self, head: *const c_void) -> bool {
        pnext::walk(head).any(|n| match (*n).s_type {
            FEATURES => (*(n as *const vk::PhysicalDeviceBufferDeviceAddressFeatures)).buffer_device_address != vk::FALSE,
            V12 => (*(n as *const vk::PhysicalDeviceVulkan12Features)).buffer_device_address != vk::FALSE,
            _ => false,
        })
    }
    unsafe fn unavailable(&self, pd: &PhysDev) -> Option<String> {
        caps_for(pd).err()
    }
    /// Core since Vulkan 1.2: the feature bit counts, not only the extension name.
    unsafe fn driver_has(&self, pd: &PhysDev) -> bool {
        if pd.info.has_extension(NAME) {
            return true;
        }
        let Some(features2) = pd.inst.features2_for_query() else { return false };
        if pd.info.api_version < vk::API_VERSION_1_2 {
            return false;
        }
        let mut f = vk::PhysicalDeviceBufferDeviceAddressFeatures::default();
        let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: &mut f as *mut _ as *mut c_void, ..Default::default() };
        features2(pd.pd, &mut f2);
        f.buffer_device_address != vk::FALSE
    }
    /// The aggregate's bits (the driver must not see the feature enabled).
    unsafe fn clear_features(&self, chain: &mut Chain) -> Result<(), String> {
        if let Some(v12) = chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(V12) {
            v12.buffer_device_address = vk::FALSE;
            v12.buffer_device_address_capture_replay = vk::FALSE;
            v12.buffer_device_address_multi_device = vk::FALSE;
        }
        if chain.tail_contains(V12) {
            return Err("VkPhysicalDeviceVulkan12Features sits behind an unknown structure in read-only memory".into());
        }
        Ok(())
    }
    fn reserves_descriptors(&self) -> bool {
        true
    }
    /// The table's storage-buffer array, in every layout (descriptor_limits).
    unsafe fn reservation(&self, pd: &PhysDev) -> Option<Reservation> {
        let c = caps_for(pd).ok()?;
        Some(Reservation::of(c.limits, &[(vk::DescriptorType::STORAGE_BUFFER, c.table.count)]))
    }
    unsafe fn activate(&self, pd: &PhysDev, services: &mut Services) -> Result<Box<dyn Activated>, String> {
        let caps = caps_for(pd)?;
        let user = TableUser {
            name: NAME.to_str().unwrap_or("?"),
            arrays: vec![TableArray { binding: caps.table.binding, ty: vk::DescriptorType::STORAGE_BUFFER, count: caps.table.count }],
            indexing: &NEEDED_FEATURES,
            core: if caps.dynamic_indexing { vec![Core::StorageBufferDynamic] } else { Vec::new() },
            robust_buffers: true,
            uses: |scan| scan.physical_storage_buffer,
        };
        crate::tables::join(services, caps.limits, user);
        Ok(Box::new(Active(caps)))
    }
}

/// Active on the device being created.
struct Active(Caps);

impl Activated for Active {
    fn options(&self, options: &mut shader_rewrite::Options) {
        options.bda = Some(self.0.table);
    }
    unsafe fn set_up(self: Box<Self>, dev: &NewDevice, components: &mut Components) -> Result<(), String> {
        let table = components.get::<TableDevice>().ok_or("no descriptor table")?;
        let c = self.0;
        components.push(Arc::new(BdaDevice {
            table,
            array: c.table,
            buffers: Buffers::new(c.table.count, c.max_range),
            next: buffers::Next::load(dev.gdpa, dev.device),
        }));
        Ok(())
    }
}

/// The address user's state on a device.
pub struct BdaDevice {
    pub table: Arc<TableDevice>,
    pub array: BdaTable,
    pub buffers: Buffers,
    pub next: buffers::Next,
}

impl DeviceComponent for BdaDevice {
    fn device_hook(&self, name: &[u8], next_exists: bool) -> vk::PFN_vkVoidFunction {
        device_hook(name, next_exists)
    }
    into_any!();
}

/// Default size of the storage-buffer array; capped like the image arrays (at most half of the
/// device's update-after-bind limits, which are reported less the array).
pub const DEFAULT_BUFFERS: u32 = 65536;

/// The descriptor-indexing bits the storage-buffer array and the lowered shaders need.
pub const NEEDED_FEATURES: [Indexing; 4] =
    [Indexing::StorageBufferUpdateAfterBind, Indexing::UpdateUnusedWhilePending, Indexing::PartiallyBound, Indexing::StorageBufferNonUniform];

/// What a physical device offers for the storage-buffer array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub limits: budget::Limits,
    pub table: BdaTable,
    /// Core `shaderStorageBufferArrayDynamicIndexing` is supported (turned on at device creation).
    pub dynamic_indexing: bool,
    /// `maxStorageBufferRange`, and at most `shader_rewrite::bda::OFFSET_LIMIT`: a buffer's
    /// descriptor covers at most this many bytes.
    pub max_range: u32,
}

/// Decides the array for a device, or why there cannot be one.
pub fn caps(
    limits: &vk::PhysicalDeviceLimits,
    di: &vk::PhysicalDeviceDescriptorIndexingProperties,
    features: &vk::PhysicalDeviceDescriptorIndexingFeatures,
    core: &vk::PhysicalDeviceFeatures,
) -> Result<Caps, String> {
    features::table_room(&NEEDED_FEATURES, features, limits, "pipelines")?;
    let count = DEFAULT_BUFFERS
        .min(di.max_descriptor_set_update_after_bind_storage_buffers / 2)
        .min(di.max_per_stage_descriptor_update_after_bind_storage_buffers / 2)
        .min(di.max_per_stage_update_after_bind_resources / 4)
        .min(di.max_update_after_bind_descriptors_in_all_pools / 2 / 3)
        .min(1 << shader_rewrite::bda::SLOT_BITS);
    // A power of two: the shaders then take the slot as `hi & (count - 1)` (shader_rewrite::bda).
    let count = budget::array_size(count);
    if count < 2 {
        return Err(format!("update-after-bind storage-buffer limits too small for a table ({count})"));
    }
    Ok(Caps {
        limits: budget::Limits::new(limits, di),
        table: BdaTable { set: limits.max_bound_descriptor_sets - 1, binding: table::BUFFER_BINDING, count },
        dynamic_indexing: core.shader_storage_buffer_array_dynamic_indexing != vk::FALSE,
        // The shaders reach offsets below OFFSET_LIMIT only (see shader_rewrite::bda).
        max_range: limits.max_storage_buffer_range.min(shader_rewrite::bda::OFFSET_LIMIT),
    })
}

/// The array a physical device can hold, or why it cannot (queried once, logged once).
///
/// # Safety
/// `pd` is live.
pub unsafe fn caps_for(pd: &PhysDev) -> Result<Caps, String> {
    let caps_of = |d: &device_query::DescriptorIndexing| caps(&d.limits, &d.properties, &d.features, &d.core);
    let describe = |c: &Caps| format!("{} storage-buffer slots at set {} binding {}", c.table.count, c.table.set, c.table.binding);
    device_query::caps_once(("bda", "VK_KHR_buffer_device_address"), pd, caps_of, describe)
}

/// vkGetDeviceProcAddr for a device with the emulation active: our hook for `name`, if it is one
/// of the extension's. `next_exists`: the next layer has the command.
pub fn device_hook(name: &[u8], next_exists: bool) -> vk::PFN_vkVoidFunction {
    // Answered by the layer whether or not the driver has them.
    match name {
        // vkGetBufferDeviceAddressEXT too: same signature, for an application that enabled
        // VK_EXT_buffer_device_address on a driver that has it while the layer emulates.
        b"vkGetBufferDeviceAddress" | b"vkGetBufferDeviceAddressKHR" | b"vkGetBufferDeviceAddressEXT" => {
            return pfn!(buffers::get_buffer_device_address as vk::PFN_vkGetBufferDeviceAddress)
        }
        b"vkGetBufferOpaqueCaptureAddress" | b"vkGetBufferOpaqueCaptureAddressKHR" => {
            return pfn!(buffers::get_buffer_opaque_capture_address as vk::PFN_vkGetBufferOpaqueCaptureAddress)
        }
        b"vkGetDeviceMemoryOpaqueCaptureAddress" | b"vkGetDeviceMemoryOpaqueCaptureAddressKHR" => {
            return pfn!(buffers::get_device_memory_opaque_capture_address as vk::PFN_vkGetDeviceMemoryOpaqueCaptureAddress)
        }
        _ => {}
    }
    if !next_exists {
        return None;
    }
    match name {
        b"vkCreateBuffer" => pfn!(buffers::create_buffer as vk::PFN_vkCreateBuffer),
        b"vkDestroyBuffer" => pfn!(buffers::destroy_buffer as vk::PFN_vkDestroyBuffer),
        b"vkBindBufferMemory" => pfn!(buffers::bind_buffer_memory as vk::PFN_vkBindBufferMemory),
        b"vkBindBufferMemory2" => pfn!(buffers::bind_buffer_memory2 as vk::PFN_vkBindBufferMemory2),
        b"vkBindBufferMemory2KHR" => pfn!(buffers::bind_buffer_memory2_khr as vk::PFN_vkBindBufferMemory2),
        b"vkAllocateMemory" => pfn!(buffers::allocate_memory as vk::PFN_vkAllocateMemory),
        b"vkFreeMemory" => pfn!(buffers::free_memory as vk::PFN_vkFreeMemory),
        b"vkGetDeviceBufferMemoryRequirements" => {
            pfn!(buffers::get_device_buffer_memory_requirements as vk::PFN_vkGetDeviceBufferMemoryRequirements)
        }
        b"vkGetDeviceBufferMemoryRequirementsKHR" => {
            pfn!(buffers::get_device_buffer_memory_requirements_khr as vk::PFN_vkGetDeviceBufferMemoryRequirements)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(x: u32) -> vk::PhysicalDeviceDescriptorIndexingProperties<'static> {
        vk::PhysicalDeviceDescriptorIndexingProperties {
            max_per_stage_update_after_bind_resources: x,
            max_update_after_bind_descriptors_in_all_pools: u32::MAX,
            max_descriptor_set_update_after_bind_storage_buffers: x,
            max_per_stage_descriptor_update_after_bind_storage_buffers: x,
            ..Default::default()
        }
    }

    fn all_features() -> vk::PhysicalDeviceDescriptorIndexingFeatures<'static> {
        vk::PhysicalDeviceDescriptorIndexingFeatures {
            descriptor_binding_storage_buffer_update_after_bind: vk::TRUE,
            descriptor_binding_update_unused_while_pending: vk::TRUE,
            descriptor_binding_partially_bound: vk::TRUE,
            shader_storage_buffer_array_non_uniform_indexing: vk::TRUE,
            ..Default::default()
        }
    }

    #[test]
    fn array_sizes() {
        let limits = vk::PhysicalDeviceLimits { max_bound_descriptor_sets: 8, max_storage_buffer_range: 1 << 27, ..Default::default() };
        let c = caps(&limits, &props(1_000_000), &all_features(), &Default::default()).unwrap();
        assert_eq!(c.table, BdaTable { set: 7, binding: 3, count: 65536 });
        assert_eq!(c.max_range, 1 << 27);
        // A driver's 4 GiB range: the addresses reach a buffer's first 2 GiB (bda::OFFSET_LIMIT).
        let big = vk::PhysicalDeviceLimits { max_storage_buffer_range: u32::MAX, ..limits };
        assert_eq!(caps(&big, &props(1_000_000), &all_features(), &Default::default()).unwrap().max_range, 1 << 31);
        let c = caps(&limits, &props(1000), &all_features(), &Default::default()).unwrap();
        assert_eq!(c.table.count, 128, "a quarter of the per-stage resources (250), to a power of two");
        let mut f = all_features();
        f.descriptor_binding_partially_bound = vk::FALSE;
        assert!(caps(&limits, &props(1_000_000), &f, &Default::default()).unwrap_err().contains("descriptorBindingPartiallyBound"));
    }

    #[test]
    fn features_reported_requested_and_cleared() {
        type S = vk::StructureType;
        let mut f = vk::PhysicalDeviceBufferDeviceAddressFeatures { buffer_device_address_capture_replay: vk::TRUE, ..Default::default() };
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
        unsafe {
            assert!(!BufferDeviceAddress.feature_requested(&f as *const _ as *const c_void));
            BufferDeviceAddress.report_feature(&mut f as *mut _ as *mut vk::BaseOutStructure);
            BufferDeviceAddress.report_feature(&mut v12 as *mut _ as *mut vk::BaseOutStructure);
        }
        assert_eq!((f.buffer_device_address, f.buffer_device_address_capture_replay), (vk::TRUE, vk::FALSE));
        assert_eq!(v12.buffer_device_address, vk::TRUE);
        assert!(unsafe { BufferDeviceAddress.feature_requested(&v12 as *const _ as *const c_void) });
        let mut chain = unsafe { Chain::copy(&v12 as *const _ as *const c_void) };
        unsafe { BufferDeviceAddress.clear_features(&mut chain) }.unwrap();
        let copy = unsafe { chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) }.unwrap();
        assert_eq!(copy.buffer_device_address, vk::FALSE);
        assert_eq!(v12.buffer_device_address, vk::TRUE, "application's struct untouched");
    }

    #[test]
    fn hooks() {
        assert!(device_hook(b"vkGetBufferDeviceAddress", false).is_some());
        assert!(device_hook(b"vkGetBufferDeviceAddressKHR", false).is_some());
        assert!(device_hook(b"vkGetBufferDeviceAddressEXT", false).is_some());
        assert!(device_hook(b"vkCreateBuffer", true).is_some());
        assert!(device_hook(b"vkCreateBuffer", false).is_none());
        assert!(device_hook(b"vkCmdDraw", true).is_none());
    }
}
