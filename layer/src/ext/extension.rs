//! The common shape of an emulated device extension (raw access chains, image view handles,
//! buffer device addresses): one mode setting, advertised where it is emulated and the driver
//! does not list it, its feature structures hidden from the driver, its name and feature bits
//! stripped from `vkCreateDevice`. An [`ExtensionEmulation`] says only what differs; the blanket
//! implementation turns it into an [`Emulation`].
use crate::component::Components;
use crate::emulation::{
    status_for, Decision, DeviceEdit, DevicePlan, DeviceRequest, Emulation, FeatureReport, LayerExtension, NewDevice, PhysDev, Services, Status,
};
use crate::descriptor_limits::Reservation;
use crate::log_error;
use crate::pnext::Chain;
use crate::settings::{Mode, Settings};
use ash::vk;
use shader_rewrite::Options;
use std::ffi::c_void;

/// What an active extension emulation contributes to the device being created.
pub trait Activated {
    /// Turns the lowering on.
    fn options(&self, options: &mut Options);
    /// Per-device state, after the driver created the device.
    ///
    /// # Safety
    /// `dev.device` is live.
    unsafe fn set_up(self: Box<Self>, _dev: &NewDevice, _components: &mut Components) -> Result<(), String> {
        Ok(())
    }
}

pub trait ExtensionEmulation: Sync {
    fn extension(&self) -> &'static LayerExtension;
    /// The key of its mode setting.
    fn setting(&self) -> &'static str;
    /// Feature structures of the extension alone: hidden from the driver in queries and removed
    /// from vkCreateDevice (VUID-VkDeviceCreateInfo-pNext-pNext).
    fn feature_structs(&self) -> &'static [vk::StructureType] {
        &[]
    }
    /// Sets the extension's feature bits in `node` if it carries them.
    ///
    /// # Safety
    /// `node` is a valid, writable structure of the sType it names.
    unsafe fn report_feature(&self, _node: *mut vk::BaseOutStructure<'static>) {}
    /// Does this chain enable one of its features? (`head` = VkDeviceCreateInfo::pNext)
    ///
    /// # Safety
    /// `head` is a valid chain.
    unsafe fn feature_requested(&self, _head: *const c_void) -> bool {
        false
    }
    /// Does the driver support it? (Default: it lists the extension.)
    ///
    /// # Safety
    /// `pd` is live.
    unsafe fn driver_has(&self, pd: &PhysDev) -> bool {
        pd.info.has_extension(self.extension().name)
    }
    /// Why `pd` cannot host the emulation (None: it can).
    ///
    /// # Safety
    /// `pd` is live.
    unsafe fn unavailable(&self, _pd: &PhysDev) -> Option<String> {
        None
    }
    /// Clears its bits in structures it shares with the driver (Vulkan 1.x aggregates) in a
    /// copied chain; `Err` when one sits where it cannot be edited.
    ///
    /// # Safety
    /// `chain` is a copy of a valid VkDeviceCreateInfo chain.
    unsafe fn clear_features(&self, _chain: &mut Chain) -> Result<(), String> {
        Ok(())
    }
    /// Does it reserve descriptors where it is emulated?
    fn reserves_descriptors(&self) -> bool {
        false
    }
    /// The descriptors it reserves on `pd` where it is emulated (see
    /// [`Emulation::descriptor_reservation`]).
    ///
    /// # Safety
    /// `pd` is live.
    unsafe fn reservation(&self, _pd: &PhysDev) -> Option<Reservation> {
        None
    }
    /// It is active on the device being created: join services, prepare per-device state.
    ///
    /// # Safety
    /// `pd` is live.
    unsafe fn activate(&self, pd: &PhysDev, services: &mut Services) -> Result<Box<dyn Activated>, String>;
}

/// Its mode setting (before `force_enable`).
fn mode<E: ExtensionEmulation + ?Sized>(e: &E, settings: &Settings) -> Mode {
    settings.mode(e.setting()).unwrap_or(Mode::Auto)
}

/// Its status on `pd`: the mode (with `auto` as the client quirks make it for this client and
/// device), driver support, and whether the device can host it.
///
/// # Safety
/// `pd` is live.
pub unsafe fn status_on<E: ExtensionEmulation + ?Sized>(e: &E, pd: &PhysDev) -> Status {
    let settings = &pd.inst.settings;
    let mut m = crate::emulation::effective(mode(e, settings), settings.force_enable);
    if m == Mode::Auto {
        m = crate::quirks::auto_mode(e.setting(), pd);
    }
    let s = status_for(m, false, e.driver_has(pd));
    if matches!(s, Status::Emulated { .. }) && e.unavailable(pd).is_some() {
        Status::Unavailable
    } else {
        s
    }
}

impl<E: ExtensionEmulation> Emulation for E {
    fn name(&self) -> &'static str {
        self.extension().name.to_str().unwrap_or("?")
    }
    fn extensions(&self) -> &'static [LayerExtension] {
        std::slice::from_ref(self.extension())
    }
    fn may_emulate(&self, settings: &Settings) -> bool {
        crate::emulation::effective(mode(self, settings), settings.force_enable) != Mode::Off
    }
    fn may_reserve_descriptors(&self, settings: &Settings) -> bool {
        self.reserves_descriptors() && self.may_emulate(settings)
    }
    unsafe fn added_extensions(&self, pd: &PhysDev) -> Vec<vk::ExtensionProperties> {
        let ext = self.extension();
        if matches!(status_on(self, pd), Status::Emulated { .. }) && !pd.info.has_extension(ext.name) {
            vec![ext.properties()]
        } else {
            Vec::new()
        }
    }
    unsafe fn features(&'static self, pd: &PhysDev) -> Option<FeatureReport> {
        if !matches!(status_on(self, pd), Status::Emulated { .. }) {
            return None;
        }
        // SAFETY (closure): called on valid, writable nodes of the filled chain.
        Some(FeatureReport { hidden: self.feature_structs(), report: Box::new(move |node| unsafe { self.report_feature(node) }) })
    }
    unsafe fn descriptor_reservation(&'static self, pd: &PhysDev) -> Option<Reservation> {
        if self.reserves_descriptors() && matches!(status_on(self, pd), Status::Emulated { .. }) {
            self.reservation(pd)
        } else {
            None
        }
    }
    unsafe fn plan(&'static self, pd: &PhysDev, request: &DeviceRequest, services: &mut Services) -> Option<Box<dyn DevicePlan>> {
        let ext = self.extension();
        let decision = Decision {
            name: self.name(),
            native: self.driver_has(pd),
            status: status_on(self, pd),
            requested: request.enables_extension(ext.name) || self.feature_requested(request.create_info.p_next),
        };
        if decision.requested && decision.status == Status::Unavailable {
            if let Some(why) = self.unavailable(pd) {
                log_error!(
                    DEVICE_EMULATION,
                    "vkCreateDevice: device '{}': the application enabled {} but it cannot be emulated: {why}",
                    pd.info.name,
                    decision.name
                );
            }
        }
        let activated = if decision.active() {
            match self.activate(pd, services) {
                Ok(a) => Some(a),
                Err(why) => {
                    log_error!(DEVICE_REFUSED, "vkCreateDevice: device '{}': {} cannot be emulated: {why}", pd.info.name, decision.name);
                    None
                }
            }
        } else {
            None
        };
        Some(Box::new(ExtensionPlan { ext: self, decision, activated }))
    }
}

struct ExtensionPlan<E: ExtensionEmulation + 'static> {
    ext: &'static E,
    decision: Decision,
    activated: Option<Box<dyn Activated>>,
}

impl<E: ExtensionEmulation + 'static> DevicePlan for ExtensionPlan<E> {
    fn decisions(&self) -> Vec<Decision> {
        vec![self.decision]
    }
    fn emulated(&self) -> bool {
        self.decision.emulated()
    }
    fn active(&self) -> bool {
        self.activated.is_some()
    }
    unsafe fn strip(&self, edit: &mut DeviceEdit) -> Result<(), String> {
        if !self.emulated() {
            return Ok(());
        }
        let name = self.decision.name;
        edit.remove_extension(self.ext.extension().name);
        self.ext.clear_features(&mut edit.chain).map_err(|why| format!("cannot clear the emulated {name} feature bits: {why}"))?;
        for st in self.ext.feature_structs() {
            edit.chain.remove(*st);
            if edit.chain.tail_contains(*st) {
                return Err(format!(
                    "cannot remove the layer's structure (sType {}) from behind an unknown structure in read-only memory",
                    st.as_raw()
                ));
            }
        }
        Ok(())
    }
    fn options(&self, options: &mut Options) {
        if let Some(a) = &self.activated {
            a.options(options);
        }
    }
    unsafe fn set_up(self: Box<Self>, dev: &NewDevice, components: &mut Components) -> Result<(), String> {
        match self.activated {
            Some(a) => a.set_up(dev, components),
            None => Ok(()),
        }
    }
}
