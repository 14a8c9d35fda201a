//! The table's part of vkCreateDevice: users join while their emulations decide; the table then
//! turns on the features its users need, `nullDescriptor` (else it fills free slots with a
//! layer-owned buffer, `filler_buffer.rs`) and, for users that leave storage-buffer bounds to
//! the driver, `robustBufferAccess2` where the device has it (robustness2.rs), and is created
//! after the device, before its users set up (emulation.rs: services are set up first).
use super::budget::Limits;
use super::table::FreeSlots;
use super::robustness2::{self, Bits};
use super::{features, TableConfig, TableDevice, TableUser};
use crate::component::Components;
use crate::dispatch::load_instance;
use crate::emulation::{DeviceEdit, DevicePlan, NewDevice, PhysDev, Services};
use crate::settings::DebugTarget;
use ash::vk;
use crate::{log_info, log_warn};
use std::sync::Arc;

/// The table of the device being created.
pub struct Plan {
    limits: Limits,
    users: Vec<TableUser>,
    /// What fills the free slots (nullDescriptor enabled, else a buffer).
    free: Option<FreeSlots>,
}

/// `user` joins the table of the device being created (`limits`: the device's, queried by the
/// user). The table sits at set `maxBoundDescriptorSets - 1`.
pub fn join(services: &mut Services, limits: Limits, user: TableUser) {
    services.get_or_insert(|| Plan { limits, users: Vec::new(), free: None }).users.push(user);
}

impl Plan {
    fn config(&self) -> TableConfig {
        TableConfig { set: self.limits.max_bound_descriptor_sets - 1, arrays: self.users.iter().flat_map(|u| u.arrays.iter().copied()).collect() }
    }
}

impl Plan {
    /// The robustness2 extension to enable robustBufferAccess2 with, when a user leaves
    /// storage-buffer bounds to the driver and nothing stands in the way: the device supports it,
    /// no debug poison byte is asked for (only the lowering's own checks can return it), and the
    /// application did not enable pipelineRobustness (a pipeline could then opt out of it).
    /// Otherwise the lowering checks bounds itself (device_features::enabled_target sees the
    /// feature off); the reason is logged.
    unsafe fn robust_buffers(&self, pd: &PhysDev, edit: &DeviceEdit, support: Option<&robustness2::Support>) -> Option<&'static std::ffi::CStr> {
        let user = self.users.iter().find(|u| u.robust_buffers)?;
        let why_not = match support {
            _ if pd.inst.settings.debug_target == DebugTarget::Core => "debug_target=core",
            _ if pd.inst.settings.debug_oob_poison.is_some() => "debug_oob_poison is set",
            Some(s) if s.robust_buffer_access2 => {
                if !crate::device_features::chain_enables_pipeline_robustness(&edit.chain) {
                    return Some(s.extension);
                }
                "the application enables pipelineRobustness, so a pipeline may opt out of it"
            }
            _ => "the device lacks robustBufferAccess2",
        };
        log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{}': not enabling robustBufferAccess2 ({why_not}): {}'s lowered accesses check their bounds themselves", edit.device_name, user.name);
        None
    }
}

impl DevicePlan for Plan {
    fn emulated(&self) -> bool {
        false
    }
    fn active(&self) -> bool {
        false
    }
    unsafe fn enable(&mut self, pd: &PhysDev, edit: &mut DeviceEdit) -> Result<(), String> {
        let name = edit.device_name;
        for u in &self.users {
            let added = features::enable(&mut edit.chain, &mut edit.enabled_features, &edit.extensions, edit.version, u.indexing, &u.core)
                .map_err(|why| format!("{} cannot be emulated: {why}", u.name))?;
            if !added.is_empty() {
                log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{name}': enabling driver features for the descriptor table ({}): {}", u.name, added.join(", "));
            }
        }
        // Null descriptors for the table's free slots (a garbage handle or address then reads
        // zero instead of an unwritten descriptor). debug_target=core: as on a Vulkan 1.0 device
        // without them, to test the filler buffer (and the lowering's own bounds checks).
        let support = match pd.inst.settings.debug_target {
            DebugTarget::Core => Err("debug_target=core".to_string()),
            DebugTarget::Device => robustness2::support(pd.inst, pd.pd, pd.info),
        };
        let robust = self.robust_buffers(pd, edit, support.as_ref().ok());
        let null = support.and_then(|s| if s.null_descriptor { Ok(s.extension) } else { Err(format!("{} lacks nullDescriptor", s.extension.to_str().unwrap_or("?"))) });
        let bits = Bits { null_descriptor: null.is_ok(), robust_buffer_access2: robust.is_some() };
        if let Some(ext) = robust.or(null.as_ref().ok().copied()) {
            let added = robustness2::enable(&mut edit.chain, &mut edit.extensions, ext, bits)?;
            let mut names: Vec<&str> = added.iter().map(|e| e.to_str().unwrap_or("?")).collect();
            if bits.robust_buffer_access2 {
                names.extend(features::enable_core(&mut edit.chain, &mut edit.enabled_features, &[features::Core::RobustBufferAccess]));
                names.push("robustBufferAccess2 (the driver checks the bounds of the lowered buffer-device-address accesses)");
            }
            if bits.null_descriptor {
                names.push("nullDescriptor (the descriptor table's free slots)");
            }
            log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{name}': enabling {}", names.join(", "));
        }
        match null {
            Ok(_) => self.free = Some(FreeSlots::Null),
            Err(why) => {
                let get: Option<vk::PFN_vkGetPhysicalDeviceMemoryProperties> = load_instance(pd.inst.next_gipa, pd.inst.instance, c"vkGetPhysicalDeviceMemoryProperties");
                let get = get.ok_or("the next layer lacks vkGetPhysicalDeviceMemoryProperties")?;
                let mut props = Box::<vk::PhysicalDeviceMemoryProperties>::default();
                get(pd.pd, &mut *props);
                self.free = Some(FreeSlots::Filler(props));
                log_warn!(
                    NO_NULL_DESCRIPTOR,
                    "vkCreateDevice: device '{name}': no null descriptors for the descriptor table ({why}): free storage-buffer slots hold a layer-owned buffer; free image slots stay unwritten, and a garbage handle naming one is undefined behaviour (may crash)"
                );
            }
        }
        Ok(())
    }
    unsafe fn set_up(self: Box<Self>, dev: &NewDevice, components: &mut Components) -> Result<(), String> {
        let config = self.config();
        let t = TableDevice::create(dev.device, dev.gdpa, dev.name, config.clone(), self.limits, self.free.unwrap_or(FreeSlots::Null), self.users)
            .map_err(|why| format!("cannot create the descriptor table: {why}"))?;
        log_info!(
            DESCRIPTOR_TABLE,
            "vkCreateDevice: device '{}': descriptor table ({}) appended to every pipeline layout it fits beside at set {} and bound before work that uses it",
            dev.name,
            config.describe(),
            config.set
        );
        components.push(Arc::new(t));
        Ok(())
    }
}
