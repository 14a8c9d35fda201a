//! One module per emulated extension or feature family.
//!
//! - Extensions the layer adds (raw access chains; bindless later) implement
//!   [`EmulatedExtension`]: name/spec version, mode setting, the feature structures the driver
//!   must not see, how to report the feature bits, whether an application's `VkDeviceCreateInfo`
//!   asks for it, and which rewrite options it turns on. They plug into [`ALL`].
//! - Feature bits of structures the driver knows (8/16-bit storage, [`small_storage`]) are not
//!   extensions of ours: nothing is advertised or unlinked; per feature, the bit is reported,
//!   cleared from the device create info and lowered. That module is a table over its features.
//!
//! Both share the mode → [`Status`] rule ([`status_for`]) and the per-device [`Decision`].
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use crate::settings::{Mode, Settings};
use ash::vk;
use std::ffi::{c_char, CStr};

pub mod bda;
pub mod bindless;
pub mod raw_access_chains;
pub mod small_storage;

pub trait EmulatedExtension: Sync {
    fn name(&self) -> &'static CStr;
    fn spec_version(&self) -> u32;
    /// The per-extension mode setting, before `force_enable` is applied.
    fn mode_setting(&self, settings: &Settings) -> Mode;
    /// Feature structures that belong to this extension alone: removed from chains before the
    /// driver sees them (it may not know them; VUID-VkDeviceCreateInfo-pNext-pNext).
    fn feature_struct_types(&self) -> &'static [vk::StructureType];
    /// Sets this extension's feature bits in `node` if it is one of its structures.
    ///
    /// # Safety
    /// `node` must be a valid, writable structure of the sType it names.
    unsafe fn report_features(&self, node: *mut vk::BaseOutStructure<'static>);
    /// Does this chain enable one of the extension's features? (`head` = VkDeviceCreateInfo::pNext)
    ///
    /// # Safety
    /// `head` must be a valid pNext chain.
    unsafe fn feature_requested(&self, head: *const std::ffi::c_void) -> bool;
    /// Turns the lowering on in the rewrite options.
    fn enable_in_options(&self, options: &mut shader_rewrite::Options);
    /// Why this physical device cannot host the emulation (`None`: it can). Extensions that need
    /// device resources (the bindless descriptor table) check them here.
    ///
    /// # Safety
    /// `pd` belongs to `inst`; `phys` is its info.
    unsafe fn unavailable(&self, _inst: &InstanceData, _pd: vk::PhysicalDevice, _phys: &PhysicalDeviceInfo) -> Option<String> {
        None
    }
    /// Does the driver support it? (Default: it lists the extension; a promoted extension also
    /// checks its core feature bit.)
    ///
    /// # Safety
    /// `pd` belongs to `inst`; `phys` is its info.
    unsafe fn driver_has(&self, _inst: &InstanceData, _pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> bool {
        phys.has_extension(self.name())
    }
    /// Clears the extension's feature bits in structures it shares with the driver (Vulkan
    /// 1.x aggregates) in a copied `VkDeviceCreateInfo` chain; `Err` when one sits where it
    /// cannot be edited.
    ///
    /// # Safety
    /// `chain` is a copy of a valid VkDeviceCreateInfo chain.
    unsafe fn clear_features(&self, _chain: &mut crate::pnext::Chain) -> Result<(), String> {
        Ok(())
    }
}

pub static ALL: &[&dyn EmulatedExtension] = &[&raw_access_chains::RawAccessChains, &bindless::ImageViewHandle, &bda::BufferDeviceAddress];

/// What the layer does for one extension on one physical device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Setting `off`: the layer does not touch it.
    Off,
    /// The driver has it and nothing forces emulation.
    Native,
    /// The layer provides it (driver lacks it, or `force`/`force_enable`).
    Emulated { forced: bool },
    /// It would be emulated, but the device lacks what the emulation needs (reason logged).
    Unavailable,
}

/// Effective mode: a per-extension (per-feature) `off` wins over `force_enable`; `force_enable`
/// upgrades `auto` to `force`.
pub fn effective(mode: Mode, force_enable: bool) -> Mode {
    match mode {
        Mode::Off => Mode::Off,
        Mode::Force => Mode::Force,
        Mode::Auto if force_enable => Mode::Force,
        Mode::Auto => Mode::Auto,
    }
}

/// The status for a mode setting (before `force_enable`) and driver support.
pub fn status_for(mode: Mode, force_enable: bool, driver_has_it: bool) -> Status {
    match effective(mode, force_enable) {
        Mode::Off => Status::Off,
        Mode::Force => Status::Emulated { forced: true },
        Mode::Auto if driver_has_it => Status::Native,
        Mode::Auto => Status::Emulated { forced: false },
    }
}

pub fn effective_mode(ext: &dyn EmulatedExtension, settings: &Settings) -> Mode {
    effective(ext.mode_setting(settings), settings.force_enable)
}

pub fn status(ext: &dyn EmulatedExtension, settings: &Settings, driver_has_it: bool) -> Status {
    status_for(ext.mode_setting(settings), settings.force_enable, driver_has_it)
}

/// [`status`] on a physical device: also [`Status::Unavailable`] when the device cannot host the
/// emulation ([`EmulatedExtension::unavailable`]).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn status_on(ext: &dyn EmulatedExtension, inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Status {
    let s = status(ext, &inst.settings, ext.driver_has(inst, pd, phys));
    if matches!(s, Status::Emulated { .. }) && ext.unavailable(inst, pd, phys).is_some() {
        Status::Unavailable
    } else {
        s
    }
}

/// What the layer does for one extension or feature on the device being created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Extension or feature name, for the log.
    pub name: &'static str,
    /// The driver supports it.
    pub native: bool,
    pub status: Status,
    /// The application enabled it (extension name or feature bit).
    pub requested: bool,
}

impl Decision {
    pub fn emulated(&self) -> bool {
        matches!(self.status, Status::Emulated { .. })
    }
    /// Shaders get rewritten for it.
    pub fn active(&self) -> bool {
        match self.status {
            Status::Emulated { forced } => forced || self.requested,
            _ => false,
        }
    }
    /// One log line's worth (after "device '<name>': ").
    pub fn describe(&self) -> String {
        let name = self.name;
        match self.status {
            Status::Off => format!("{name} off (setting)"),
            Status::Native => format!("{name} native (driver supports it)"),
            Status::Unavailable => format!("{name} not emulated: the device lacks what the emulation needs"),
            Status::Emulated { .. } if !self.active() => {
                format!("{name} available but not enabled by the application; not emulated")
            }
            Status::Emulated { forced: true } => {
                format!("{name} emulated (forced; driver {} it)", if self.native { "has" } else { "lacks" })
            }
            Status::Emulated { forced: false } => format!("{name} emulated (driver lacks it)"),
        }
    }
}

/// `VkExtensionProperties` for our own device extensions.
pub fn properties(ext: &dyn EmulatedExtension) -> vk::ExtensionProperties {
    let mut p = vk::ExtensionProperties { spec_version: ext.spec_version(), ..Default::default() };
    for (dst, src) in p.extension_name.iter_mut().zip(ext.name().to_bytes()) {
        *dst = *src as c_char;
    }
    p
}

/// The device extensions this layer implements (the answer for `pLayerName == our name`).
pub fn layer_device_extensions() -> Vec<vk::ExtensionProperties> {
    ALL.iter().map(|e| properties(*e)).collect()
}

/// `driver` plus each of `ours` the list lacks (never a duplicate).
pub fn merge_extensions(mut driver: Vec<vk::ExtensionProperties>, ours: &[vk::ExtensionProperties]) -> Vec<vk::ExtensionProperties> {
    for o in ours {
        if !driver.iter().any(|d| d.extension_name_as_c_str().ok() == o.extension_name_as_c_str().ok()) {
            driver.push(*o);
        }
    }
    driver
}

/// The two-call idiom (spec "Opaque Non-Dispatchable Handle"/"Object Enumeration"): with a null
/// array report the count; else write min(count, len) elements, set the count written, and
/// return VK_INCOMPLETE when not all fit.
///
/// # Safety
/// `p_count` valid; `p_out` null or valid for `*p_count` elements.
pub unsafe fn write_enumeration<T: Copy>(list: &[T], p_count: *mut u32, p_out: *mut T) -> vk::Result {
    if p_count.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    if p_out.is_null() {
        *p_count = list.len() as u32;
        return vk::Result::SUCCESS;
    }
    let n = (*p_count as usize).min(list.len());
    std::ptr::copy_nonoverlapping(list.as_ptr(), p_out, n);
    *p_count = n as u32;
    if n < list.len() {
        vk::Result::INCOMPLETE
    } else {
        vk::Result::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(name: &str, v: u32) -> vk::ExtensionProperties {
        let mut p = vk::ExtensionProperties { spec_version: v, ..Default::default() };
        for (d, s) in p.extension_name.iter_mut().zip(name.bytes()) {
            *d = s as c_char;
        }
        p
    }
    fn names(l: &[vk::ExtensionProperties]) -> Vec<String> {
        l.iter().map(|e| e.extension_name_as_c_str().unwrap().to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn merge_appends_once() {
        let ours = layer_device_extensions();
        assert_eq!(names(&ours), vec!["VK_NV_raw_access_chains", "VK_NVX_image_view_handle", "VK_KHR_buffer_device_address"]);
        assert!(ours.iter().all(|e| e.spec_version == 1));
        let driver = vec![ext("VK_KHR_swapchain", 70), ext("VK_KHR_8bit_storage", 1)];
        let merged = merge_extensions(driver.clone(), &ours);
        assert_eq!(
            names(&merged),
            vec!["VK_KHR_swapchain", "VK_KHR_8bit_storage", "VK_NV_raw_access_chains", "VK_NVX_image_view_handle", "VK_KHR_buffer_device_address"]
        );
        let again = merge_extensions(merged.clone(), &ours);
        assert_eq!(again.len(), 5);
        let native = vec![ext("VK_NV_raw_access_chains", 1)];
        assert_eq!(merge_extensions(native, &ours).len(), 3);
    }

    #[test]
    fn two_call_idiom() {
        let list = [1u32, 2, 3];
        let mut count = 0u32;
        unsafe {
            assert_eq!(write_enumeration(&list, &mut count, std::ptr::null_mut()), vk::Result::SUCCESS);
            assert_eq!(count, 3);
            let mut out = [0u32; 3];
            count = 2;
            assert_eq!(write_enumeration(&list, &mut count, out.as_mut_ptr()), vk::Result::INCOMPLETE);
            assert_eq!((count, out), (2, [1, 2, 0]));
            count = 5;
            let mut big = [0u32; 5];
            assert_eq!(write_enumeration(&list, &mut count, big.as_mut_ptr()), vk::Result::SUCCESS);
            assert_eq!(count, 3);
            assert_eq!(&big[..3], &list);
        }
    }

    #[test]
    fn statuses() {
        let e = ALL[0];
        let mut s = Settings::default();
        assert_eq!(status(e, &s, false), Status::Emulated { forced: false });
        assert_eq!(status(e, &s, true), Status::Native);
        s.force_enable = true;
        assert_eq!(status(e, &s, true), Status::Emulated { forced: true });
        s.raw_access_chains = Mode::Off;
        assert_eq!(status(e, &s, false), Status::Off);
        s.force_enable = false;
        s.raw_access_chains = Mode::Force;
        assert_eq!(status(e, &s, true), Status::Emulated { forced: true });
    }

    #[test]
    fn decisions() {
        let d = |status, native, requested| Decision { name: "storageInputOutput16", native, status, requested };
        let off = d(Status::Off, true, true);
        assert!(!off.emulated() && !off.active());
        assert_eq!(off.describe(), "storageInputOutput16 off (setting)");
        let native = d(Status::Native, true, true);
        assert!(!native.emulated() && !native.active());
        assert!(native.describe().contains("native"));
        let idle = d(Status::Emulated { forced: false }, false, false);
        assert!(idle.emulated() && !idle.active());
        assert!(idle.describe().contains("not enabled by the application"), "{}", idle.describe());
        let on = d(Status::Emulated { forced: false }, false, true);
        assert!(on.active());
        assert_eq!(on.describe(), "storageInputOutput16 emulated (driver lacks it)");
        let forced = d(Status::Emulated { forced: true }, true, false);
        assert!(forced.active());
        assert_eq!(forced.describe(), "storageInputOutput16 emulated (forced; driver has it)");
        // force_enable upgrades auto only; off wins.
        assert_eq!(status_for(Mode::Auto, true, true), Status::Emulated { forced: true });
        assert_eq!(status_for(Mode::Off, true, false), Status::Off);
        assert_eq!(status_for(Mode::Force, false, true), Status::Emulated { forced: true });
        assert_eq!(status_for(Mode::Auto, false, false), Status::Emulated { forced: false });
    }
}
