//! The table's part of vkCreateDevice: users join while their emulations decide; the table then
//! turns on the features its users need and `nullDescriptor` (else it fills free slots with a
//! layer-owned buffer, `filler_buffer.rs`), and is created after the device,
//! before its users set up (emulation.rs: services are set up first).
use super::budget::Limits;
use super::table::FreeSlots;
use super::{features, null_descriptor, TableConfig, TableDevice, TableUser};
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
        // without them, to test the filler buffer.
        let r = match pd.inst.settings.debug_target {
            DebugTarget::Core => Err("debug_target=core".to_string()),
            DebugTarget::Device => null_descriptor::support(pd.inst, pd.pd, pd.info),
        };
        match r.and_then(|ext| null_descriptor::enable(&mut edit.chain, &mut edit.extensions, ext)) {
            Ok(added) => {
                self.free = Some(FreeSlots::Null);
                let how = added.map_or(String::new(), |e| format!("{} ", e.to_str().unwrap_or("?")));
                log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{name}': enabling {how}(nullDescriptor) for the descriptor table's free slots");
            }
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
