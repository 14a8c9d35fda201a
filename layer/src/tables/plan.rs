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
use crate::device_features::{storage_checked_as_robust2, Robustness};
use crate::settings::DebugTarget;
use std::ffi::CStr;
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

/// Who checks the bounds of the storage-buffer accesses of users that leave them to the driver
/// where it can (TableUser::robust_buffers).
enum Bounds {
    /// The lowering, for this reason.
    Lowering(&'static str),
    /// The driver already, for this reason.
    Driver(&'static str),
    /// The driver, once robustBufferAccess2 is turned on with this extension.
    Enable(&'static CStr),
}

impl Plan {
    /// Who checks the bounds of the users' storage-buffer accesses (None: no user leaves them to
    /// the driver). The driver, where every pipeline is sure to be robust as robustBufferAccess2
    /// says: the application enables it, or enables no robustness and the device's default is
    /// it (lavapipe: enabling it there makes its code slower), or the device supports it and the
    /// layer turns it on. The lowering where the device cannot, where a debug poison byte is
    /// asked for (only the lowering's checks can return it), under debug_target=core, and where
    /// the application enables pipelineRobustness (a pipeline could opt out).
    unsafe fn buffer_bounds(&self, pd: &PhysDev, edit: &DeviceEdit, support: Option<&robustness2::Support>) -> Option<Bounds> {
        self.users.iter().find(|u| u.robust_buffers)?;
        let app = Robustness::enabled(&edit.chain, edit.enabled_features.as_ref());
        Some(match support {
            _ if pd.inst.settings.debug_target == DebugTarget::Core => Bounds::Lowering("debug_target=core"),
            _ if pd.inst.settings.debug_oob_poison.is_some() => Bounds::Lowering("debug_oob_poison is set"),
            _ if app.pipeline_robustness => Bounds::Lowering("the application enables pipelineRobustness, so a pipeline may opt out of robustness"),
            _ => match storage_checked_as_robust2(pd.inst, pd.pd, pd.info, app) {
                Some(why) => Bounds::Driver(why),
                None => match support {
                    Some(s) if s.robust_buffer_access2 => Bounds::Enable(s.extension),
                    _ => Bounds::Lowering("the device lacks robustBufferAccess2"),
                },
            },
        })
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
        let bounds = self.buffer_bounds(pd, edit, support.as_ref().ok());
        let users = self.users.iter().filter(|u| u.robust_buffers).map(|u| u.name).collect::<Vec<_>>().join(", ");
        let keeps_checks = |why: &str| {
            log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{name}': not relying on robustBufferAccess2 ({why}): the lowered storage-buffer accesses of {users} check their bounds themselves");
        };
        let robust = match bounds {
            Some(Bounds::Enable(ext)) => Some(ext),
            Some(Bounds::Driver(why)) => {
                log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{name}': the driver checks the bounds of the lowered storage-buffer accesses of {users} ({why})");
                None
            }
            Some(Bounds::Lowering(why)) => {
                keeps_checks(why);
                None
            }
            None => None,
        };
        let mut null = support.and_then(|s| if s.null_descriptor { Ok(s.extension) } else { Err(format!("{} lacks nullDescriptor", s.extension.to_str().unwrap_or("?"))) });
        let bits = Bits { null_descriptor: null.is_ok(), robust_buffer_access2: robust.is_some() };
        if let Some(ext) = robust.or(null.as_ref().ok().copied()) {
            match robustness2::enable(&mut edit.chain, &mut edit.extensions, ext, bits) {
                Ok(added) => {
                    let mut names: Vec<&str> = added.iter().map(|e| e.to_str().unwrap_or("?")).collect();
                    if bits.robust_buffer_access2 {
                        names.extend(features::enable_core(&mut edit.chain, &mut edit.enabled_features, &[features::Core::RobustBufferAccess]));
                        names.push("robustBufferAccess2 (the driver checks the bounds of the lowered storage-buffer accesses)");
                    }
                    if bits.null_descriptor {
                        names.push("nullDescriptor (the descriptor table's free slots)");
                    }
                    log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{name}': enabling {}", names.join(", "));
                }
                // Neither can be turned on: the lowering checks bounds, a buffer fills free slots.
                Err(why) => {
                    if bits.robust_buffer_access2 {
                        keeps_checks(&why);
                    }
                    null = Err(why);
                }
            }
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
