//! vkGetPhysicalDeviceProperties2(KHR) where a table user may be emulated: the table's pool
//! takes its descriptors from `maxUpdateAfterBindDescriptorsInAllPools`, so that one limit is
//! reported minus the table (table.rs, `reserve_pool_descriptors`); maxBoundDescriptorSets and
//! the per-stage / per-layout limits stay the driver's (budget.rs).
use super::table::reserve_pool_descriptors;
use crate::dispatch::{self, InstanceData};
use crate::ext::{bda, bindless};
use crate::ffi_guard::guard;
use crate::log_error;
use ash::vk;

/// Descriptors of the largest table this physical device's users would create (each user that
/// is emulated there).
unsafe fn table_descriptors(inst: &InstanceData, pd: vk::PhysicalDevice) -> u32 {
    let phys = inst.physical_device(pd);
    let images = bindless::emulated_caps(inst, pd, &phys).map(|c| c.table);
    let buffers = bda::emulated_caps(inst, pd, &phys).map(|c| c.table);
    let config = super::TableConfig { set: 0, images, buffers };
    config.descriptor_count()
}

pub unsafe extern "system" fn get_physical_device_properties2(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties2) {
    guard("vkGetPhysicalDeviceProperties2", (), || unsafe { properties2(pd, p, false) })
}

pub unsafe extern "system" fn get_physical_device_properties2_khr(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties2) {
    guard("vkGetPhysicalDeviceProperties2KHR", (), || unsafe { properties2(pd, p, true) })
}

unsafe fn properties2(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties2, khr: bool) {
    let Some(inst) = dispatch::instance_of(pd) else {
        log_error!("vkGetPhysicalDeviceProperties2: unknown physical device {pd:?}");
        return;
    };
    let (core, alias) = (inst.get_physical_device_properties2, inst.get_physical_device_properties2_khr);
    let Some(next) = (if khr { alias.or(core) } else { core.or(alias) }) else {
        log_error!("vkGetPhysicalDeviceProperties2: next layer has no such command");
        return;
    };
    next(pd, p);
    let Some(props) = p.as_ref() else { return };
    let n = table_descriptors(&inst, pd);
    if n == 0 {
        return;
    }
    let mut at = props.p_next as *mut vk::BaseOutStructure;
    while let Some(node) = at.as_mut() {
        match node.s_type {
            vk::StructureType::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_PROPERTIES => {
                let di = &mut *(at as *mut vk::PhysicalDeviceDescriptorIndexingProperties);
                di.max_update_after_bind_descriptors_in_all_pools = reserve_pool_descriptors(n, di.max_update_after_bind_descriptors_in_all_pools);
            }
            vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES => {
                let v12 = &mut *(at as *mut vk::PhysicalDeviceVulkan12Properties);
                v12.max_update_after_bind_descriptors_in_all_pools = reserve_pool_descriptors(n, v12.max_update_after_bind_descriptors_in_all_pools);
            }
            _ => {}
        }
        at = node.p_next;
    }
}
