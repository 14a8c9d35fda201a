//! The emulations, one module each, registered in [`ALL`]. The core reaches them only through
//! `crate::emulation::Emulation` and the plans and components they create.
//!
//! - Extensions the layer adds ([`raw_access_chains`], [`bindless`] = VK_NVX_image_view_handle,
//!   [`bda`] = VK_KHR_buffer_device_address) implement [`extension::ExtensionEmulation`]: their
//!   mode setting, feature structures and bits, driver support, what the device must offer, and
//!   what they do once active ([`extension::Activated`]).
//! - Feature bits of structures the driver knows (8/16-bit storage, [`small_storage`]) implement
//!   `Emulation` directly: nothing is advertised or unlinked; per feature, the bit is reported,
//!   cleared from the device create info and lowered.
//!
//! # Adding an emulation
//!
//! Buffer device addresses ([`bda`]) are the worked example; an emulation is this one module
//! plus its shader-rewrite pass:
//!
//! 1. **The pass** (`shader-rewrite/src/passes/<name>/`, no Vulkan): what it lowers, an
//!    `Options` field that turns it on (`Options::bda`: where the descriptor table's
//!    storage-buffer array is), a `ScanResult` flag so the cheap capability scan finds modules
//!    that need it (`physical_storage_buffer`), and a call in `shader_rewrite::rewrite` in the
//!    right order relative to the other passes.
//! 2. **The module** `layer/src/ext/<name>/mod.rs` implementing
//!    [`extension::ExtensionEmulation`] (or `Emulation` for a feature family):
//!    - `extension()`: name, spec version and the commands it answers (the manifest lists them);
//!      `mode()`: its setting (add the key to settings.rs and the manifest);
//!    - `feature_structs()` / `report_feature()` / `feature_requested()` / `clear_features()`:
//!      its feature bits, reported in vkGetPhysicalDeviceFeatures2 and stripped from
//!      vkCreateDevice (bda: `VkPhysicalDeviceBufferDeviceAddressFeatures` is removed, the
//!      Vulkan 1.2 aggregate's bits cleared);
//!    - `driver_has()` / `unavailable()`: when it is native, and what the device must offer
//!      (bda: the descriptor-indexing features and limits of the storage-buffer array, queried
//!      once per physical device with `tables::device_query::caps_once`, cached in the physical
//!      device's slots);
//!    - `adjust_properties()`: limits it changes (bda: the all-pools budget minus its array);
//!    - `activate()`: on a device where it is active, join shared services (bda:
//!      `tables::join` with a `TableUser` — its array, the features it needs, which modules use
//!      it) and return an [`extension::Activated`] that turns the pass on in the rewrite
//!      options and, in `set_up`, creates the per-device state: a `component::DeviceComponent`
//!      (bda: `BdaDevice`, the buffer slots) that hands out the commands it hooks
//!      (`device_hook`: vkCreateBuffer, vkBindBufferMemory*, vkGetBufferDeviceAddress*, ...)
//!      and finds its state with `dispatch::component::<BdaDevice>(device)`.
//! 3. **Register it** in [`ALL`]. The core needs no change: `vkCreateDevice` runs every
//!    emulation's plan through the same steps (device.rs), the physical-device queries ask every
//!    emulation (instance.rs), and vkGetDeviceProcAddr asks the device's components
//!    (loader_interface.rs).
//! 4. **Tests**: unit tests of the pass (every output through spirv-val), the module's own unit
//!    tests (feature reporting, stripping), and e2e tests on lavapipe native vs `force`
//!    (tests/tests/buffer_device_address.rs).
use crate::emulation::Emulation;

pub mod bda;
pub mod bindless;
pub mod extension;
pub mod raw_access_chains;
pub mod small_storage;

/// Every emulation, in the order their plans run at vkCreateDevice.
pub static ALL: &[&dyn Emulation] =
    &[&raw_access_chains::RawAccessChains, &bindless::ImageViewHandle, &bda::BufferDeviceAddress, &small_storage::SmallStorageFeatures];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_extensions() {
        let names: Vec<_> = ALL.iter().flat_map(|e| e.extensions()).map(|e| e.name).collect();
        assert_eq!(names, [c"VK_NV_raw_access_chains", c"VK_NVX_image_view_handle", c"VK_KHR_buffer_device_address"]);
        assert!(ALL.iter().flat_map(|e| e.extensions()).all(|e| e.spec_version == 1));
    }
}
