//! The interface between the layer's core and its emulations.
//!
//! The core (instance.rs, device.rs, loader_interface.rs, shader_hooks.rs) knows emulations only
//! through [`Emulation`] (registered in `ext::ALL`) and the plans and components they create:
//!
//! - physical-device queries: which device extensions it adds ([`Emulation::added_extensions`]),
//!   which feature bits it reports ([`Emulation::features`]) and which descriptors it reserves
//!   in the reported limits ([`Emulation::descriptor_reservation`]);
//! - `vkCreateDevice`, as a sequence of steps over the [`DevicePlan`]s the emulations return from
//!   [`Emulation::plan`] (device.rs): decide → strip what the driver must not see → enable the
//!   driver features the lowering needs → call down → set up per-device state
//!   ([`DevicePlan::set_up`], which adds `component::DeviceComponent`s) → record;
//! - shader rewriting: each active plan turns its lowering on in the rewrite options
//!   ([`DevicePlan::options`]) and keeps the target from using what it emulates
//!   ([`DevicePlan::restrict_target`]).
//!
//! Services several emulations share (the descriptor table) are plans too: an emulation joins one
//! with [`Services::get_or_insert`] while it decides; services enable their driver features after
//! the emulations and are set up before them, so their components exist when users look for them.
use crate::component::Components;
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use crate::pnext::Chain;
use crate::settings::{Mode, Settings};
use ash::vk;
use shader_rewrite::{Options, Target};
use std::any::Any;
use std::ffi::CStr;

/// One physical device as the emulations see it.
#[derive(Clone, Copy)]
pub struct PhysDev<'a> {
    pub inst: &'a InstanceData,
    pub pd: vk::PhysicalDevice,
    pub info: &'a PhysicalDeviceInfo,
}

/// A device extension the layer can provide, with the commands it answers.
#[derive(Debug)]
pub struct LayerExtension {
    pub name: &'static CStr,
    pub spec_version: u32,
    pub commands: &'static [&'static str],
}

impl LayerExtension {
    pub fn properties(&self) -> vk::ExtensionProperties {
        let mut p = vk::ExtensionProperties { spec_version: self.spec_version, ..Default::default() };
        crate::vk_layer::copy_c_str(&mut p.extension_name, self.name.to_bytes());
        p
    }
}

/// Feature reporting of one emulation on one physical device.
pub struct FeatureReport {
    /// The emulation's own feature structures: unlinked while the driver fills the chain (it may
    /// not know them; VUID-VkPhysicalDeviceFeatures2-pNext-pNext).
    pub hidden: &'static [vk::StructureType],
    /// Sets the emulated bits in one node of the filled chain.
    pub report: Box<dyn Fn(*mut vk::BaseOutStructure<'static>)>,
}

/// One emulated extension or feature family.
pub trait Emulation: Sync {
    /// For logs.
    fn name(&self) -> &'static str;
    /// The device extensions it can provide (the answer to vkEnumerateDeviceExtensionProperties
    /// with the layer's name lists all of them).
    fn extensions(&self) -> &'static [LayerExtension] {
        &[]
    }
    /// Might it emulate anything under these settings? Physical-device queries are intercepted
    /// only when one emulation might.
    fn may_emulate(&self, settings: &Settings) -> bool;
    /// May it reserve descriptors in the limits the application sees (under these settings)?
    fn may_reserve_descriptors(&self, _settings: &Settings) -> bool {
        false
    }
    /// The extensions it adds to the driver's list on `pd` (emulated, and not listed below).
    ///
    /// # Safety
    /// `pd` is a live physical device of its instance.
    unsafe fn added_extensions(&self, _pd: &PhysDev) -> Vec<vk::ExtensionProperties> {
        Vec::new()
    }
    /// How it reports its features on `pd` (None: nothing to report there).
    ///
    /// # Safety
    /// As for [`Self::added_extensions`].
    unsafe fn features(&'static self, pd: &PhysDev) -> Option<FeatureReport>;
    /// The descriptors it adds to the device's pipeline layouts, to be reserved in the limits
    /// the application sees (crate::descriptor_limits). None: nothing there.
    ///
    /// # Safety
    /// As for [`Self::added_extensions`].
    unsafe fn descriptor_reservation(&'static self, _pd: &PhysDev) -> Option<crate::descriptor_limits::Reservation> {
        None
    }
    /// vkCreateDevice: what it does on the device being created (None: nothing, not even a log
    /// line). May join services (`services`).
    ///
    /// # Safety
    /// `request` describes a valid VkDeviceCreateInfo of `pd`.
    unsafe fn plan(&'static self, pd: &PhysDev, request: &DeviceRequest, services: &mut Services) -> Option<Box<dyn DevicePlan>>;
}

/// The application's `vkCreateDevice` request.
pub struct DeviceRequest<'a> {
    pub create_info: &'a vk::DeviceCreateInfo<'a>,
    /// `ppEnabledExtensionNames`.
    pub extensions: &'a [&'a CStr],
}

impl DeviceRequest<'_> {
    pub fn enables_extension(&self, name: &CStr) -> bool {
        self.extensions.contains(&name)
    }
}

/// The create info the driver will get, being edited (copies of the application's).
pub struct DeviceEdit<'a> {
    pub chain: Chain,
    /// Copy of `pEnabledFeatures` (None: null).
    pub enabled_features: Option<vk::PhysicalDeviceFeatures>,
    /// Extension names passed down.
    pub extensions: Vec<&'a CStr>,
    /// Effective API version (instance and device).
    pub version: u32,
    /// Device name for log lines.
    pub device_name: &'a str,
}

impl DeviceEdit<'_> {
    pub fn remove_extension(&mut self, name: &CStr) {
        self.extensions.retain(|n| *n != name);
    }
}

/// The device just created.
pub struct NewDevice<'a> {
    pub device: vk::Device,
    pub gdpa: vk::PFN_vkGetDeviceProcAddr,
    pub name: &'a str,
}

/// What one emulation (or service) does on the device being created.
pub trait DevicePlan: Any {
    /// Its decisions, logged one line each.
    fn decisions(&self) -> Vec<Decision> {
        Vec::new()
    }
    /// The driver must not see something of the application's request (stripped).
    fn emulated(&self) -> bool;
    /// Shaders get rewritten for it.
    fn active(&self) -> bool;
    /// Removes what the driver must not see (extension names, own structures, emulated bits).
    /// `Err` (logged by the caller) fails vkCreateDevice.
    ///
    /// # Safety
    /// `edit` holds a copy of a valid create info.
    unsafe fn strip(&self, _edit: &mut DeviceEdit) -> Result<(), String> {
        Ok(())
    }
    /// Takes what it emulates out of `target` (the driver features the lowering may use).
    fn restrict_target(&self, _target: &mut Target) {}
    /// Turns on the driver features it needs (only called when some plan is active); logs what
    /// it enabled. `Err` (logged by the caller) fails vkCreateDevice.
    ///
    /// # Safety
    /// As for [`Self::strip`].
    unsafe fn enable(&mut self, _pd: &PhysDev, _edit: &mut DeviceEdit) -> Result<(), String> {
        Ok(())
    }
    /// Turns its lowering on.
    fn options(&self, _options: &mut Options) {}
    /// After the driver created the device: its per-device state. `Err` (logged by the caller)
    /// destroys the device and fails vkCreateDevice.
    ///
    /// # Safety
    /// `dev.device` is live.
    unsafe fn set_up(self: Box<Self>, _dev: &NewDevice, _components: &mut Components) -> Result<(), String> {
        Ok(())
    }
}

/// Shared services joined by emulations while they decide (see the module comment).
#[derive(Default)]
pub struct Services(Vec<Box<dyn DevicePlan>>);

impl Services {
    /// The service of type `T`, created by `make` on first use.
    pub fn get_or_insert<T: DevicePlan>(&mut self, make: impl FnOnce() -> T) -> &mut T {
        let at = match self.0.iter().position(|s| (s.as_ref() as &dyn Any).is::<T>()) {
            Some(i) => i,
            None => {
                self.0.push(Box::new(make()));
                self.0.len() - 1
            }
        };
        (self.0[at].as_mut() as &mut dyn Any).downcast_mut::<T>().expect("checked above")
    }

    pub fn into_plans(self) -> Vec<Box<dyn DevicePlan>> {
        self.0
    }
}

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
    use std::ffi::c_char;

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
        let ours = vec![ext("VK_NV_raw_access_chains", 1), ext("VK_NVX_image_view_handle", 1)];
        let driver = vec![ext("VK_KHR_swapchain", 70), ext("VK_KHR_8bit_storage", 1)];
        let merged = merge_extensions(driver.clone(), &ours);
        assert_eq!(names(&merged), vec!["VK_KHR_swapchain", "VK_KHR_8bit_storage", "VK_NV_raw_access_chains", "VK_NVX_image_view_handle"]);
        assert_eq!(merge_extensions(merged.clone(), &ours).len(), 4);
        assert_eq!(merge_extensions(vec![ext("VK_NV_raw_access_chains", 1)], &ours).len(), 2);
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
        assert_eq!(status_for(Mode::Auto, false, false), Status::Emulated { forced: false });
        assert_eq!(status_for(Mode::Auto, false, true), Status::Native);
        assert_eq!(status_for(Mode::Auto, true, true), Status::Emulated { forced: true });
        assert_eq!(status_for(Mode::Off, true, false), Status::Off);
        assert_eq!(status_for(Mode::Force, false, true), Status::Emulated { forced: true });
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
    }

    #[test]
    fn services_are_typed_singletons() {
        struct S(u32);
        impl DevicePlan for S {
            fn emulated(&self) -> bool {
                false
            }
            fn active(&self) -> bool {
                false
            }
        }
        let mut s = Services::default();
        s.get_or_insert(|| S(1)).0 += 10;
        assert_eq!(s.get_or_insert(|| S(5)).0, 11);
        assert_eq!(s.into_plans().len(), 1);
    }
}
