//! The extension's commands and the object lifetimes behind them:
//! vkGetImageViewHandleNVX / vkGetImageViewHandle64NVX (slot allocation + descriptor write),
//! vkDestroyImageView / vkDestroySampler (release), and the vkGetPhysicalDeviceProperties2 hooks
//! that report `maxUpdateAfterBindDescriptorsInAllPools` minus the table's pool (every other limit
//! stays the driver's: budget.rs).
use super::slots::{Acquired, ImageKind, Key, KeyKind, SlotError, Write};
use super::table::reserve_pool_descriptors;
use super::{bindless_device, caps_for, BindlessDevice, ImageViewHandle};
use crate::dispatch::{self, InstanceData};
use crate::ext::{self, Status};
use crate::ffi_guard::guard;
use crate::{log_debug, log_error};
use ash::vk::{self, Handle};
use std::sync::atomic::Ordering;

/// `uint64_t vkGetImageViewHandle64NVX(VkDevice, const VkImageViewHandleInfoNVX*)` (revision 3;
/// not in ash 0.38).
pub type PfnGetImageViewHandle64NVX = unsafe extern "system" fn(vk::Device, *const vk::ImageViewHandleInfoNVX) -> u64;

pub unsafe extern "system" fn get_image_view_handle_nvx(device: vk::Device, p_info: *const vk::ImageViewHandleInfoNVX) -> u32 {
    guard("vkGetImageViewHandleNVX", 0, || unsafe { handle(device, p_info, "vkGetImageViewHandleNVX") })
}

pub unsafe extern "system" fn get_image_view_handle64_nvx(device: vk::Device, p_info: *const vk::ImageViewHandleInfoNVX) -> u64 {
    guard("vkGetImageViewHandle64NVX", 0, || unsafe { handle(device, p_info, "vkGetImageViewHandle64NVX") as u64 })
}

unsafe fn handle(device: vk::Device, p_info: *const vk::ImageViewHandleInfoNVX, hook: &str) -> u32 {
    let Some(b) = bindless_device(device) else {
        log_error!("{hook}: device {device:?} has no bindless emulation; returning 0");
        return 0;
    };
    let Some(info) = p_info.as_ref() else {
        log_error!("{hook}: pInfo is NULL; returning 0");
        return 0;
    };
    let kind = match info.descriptor_type {
        vk::DescriptorType::SAMPLED_IMAGE => KeyKind::SampledImage,
        vk::DescriptorType::STORAGE_IMAGE => KeyKind::StorageImage,
        vk::DescriptorType::COMBINED_IMAGE_SAMPLER => KeyKind::CombinedImageSampler,
        t => {
            log_error!("{hook}: descriptorType {t:?} is not SAMPLED_IMAGE, STORAGE_IMAGE or COMBINED_IMAGE_SAMPLER; returning 0");
            return 0;
        }
    };
    if info.image_view == vk::ImageView::null() {
        log_error!("{hook}: imageView is VK_NULL_HANDLE; returning 0");
        return 0;
    }
    if kind == KeyKind::CombinedImageSampler && info.sampler == vk::Sampler::null() {
        log_error!("{hook}: COMBINED_IMAGE_SAMPLER without a sampler; returning 0");
        return 0;
    }
    let sampler = if kind == KeyKind::CombinedImageSampler { info.sampler.as_raw() } else { 0 };
    let key = Key { view: info.image_view.as_raw(), kind, sampler };
    // The lock is held while the new slots' descriptors are written: the set is written from
    // one thread at a time (vkUpdateDescriptorSets: dstSet is externally synchronized).
    let mut slots = b.slots.lock().unwrap_or_else(|e| e.into_inner());
    match slots.acquire(key) {
        Ok(Acquired::Existing(h)) => h,
        Ok(Acquired::New { handle, writes }) => {
            write_descriptors(&b, &writes);
            log_debug!(
                "{hook}: device '{}': view {:?} as {:?}{} -> handle {handle:#010x} (image slot {}, sampler slot {})",
                b.name,
                info.image_view,
                info.descriptor_type,
                if sampler != 0 { format!(" with sampler {:?}", info.sampler) } else { String::new() },
                handle & 0xf_ffff,
                handle >> 20
            );
            handle
        }
        Err(SlotError::Exhausted(array)) => {
            let (s, st, sm) = slots.in_use();
            drop(slots);
            if !b.exhausted_logged.swap(true, Ordering::Relaxed) {
                log_error!(
                    "{hook}: device '{}': the bindless {array} array is full (in use: {s} sampled images of {}, {st} storage images of {}, {sm} samplers of {}); returning handle 0 (destroy unused image views / samplers to free slots). Logged once per device.",
                    b.name,
                    b.table.config.sampled_images_count - 1,
                    b.table.config.storage_images_count - 1,
                    b.table.config.samplers_count - 1
                );
            }
            0
        }
    }
}

/// Writes the descriptors of newly taken slots into the table.
unsafe fn write_descriptors(b: &BindlessDevice, writes: &[Write]) {
    let Some(update) = b.next.update_descriptor_sets else { return };
    let t = &b.table;
    for w in writes {
        let (binding, ty, image_info) = match *w {
            Write::Image { kind: ImageKind::Sampled, slot, view } => (
                (t.config.sampled_images_binding, slot),
                vk::DescriptorType::SAMPLED_IMAGE,
                vk::DescriptorImageInfo {
                    image_view: vk::ImageView::from_raw(view),
                    image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                    ..Default::default()
                },
            ),
            Write::Image { kind: ImageKind::Storage, slot, view } => (
                (t.config.storage_images_binding, slot),
                vk::DescriptorType::STORAGE_IMAGE,
                vk::DescriptorImageInfo {
                    image_view: vk::ImageView::from_raw(view),
                    image_layout: vk::ImageLayout::GENERAL,
                    ..Default::default()
                },
            ),
            Write::Sampler { slot, sampler } => (
                (t.config.samplers_binding, slot),
                vk::DescriptorType::SAMPLER,
                vk::DescriptorImageInfo { sampler: vk::Sampler::from_raw(sampler), ..Default::default() },
            ),
        };
        let write = vk::WriteDescriptorSet {
            dst_set: t.set,
            dst_binding: binding.0,
            dst_array_element: binding.1,
            descriptor_count: 1,
            descriptor_type: ty,
            p_image_info: &image_info,
            ..Default::default()
        };
        update(b.device, 1, &write, 0, std::ptr::null());
    }
}

pub unsafe extern "system" fn destroy_image_view(device: vk::Device, view: vk::ImageView, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroyImageView", (), || unsafe {
        let Some(b) = bindless_device(device) else { return };
        if view != vk::ImageView::null() {
            // Refill the freed slots before unlocking (and before the view is destroyed): no
            // other thread can take them meanwhile, and no descriptor names a dead view.
            let mut slots = b.slots.lock().unwrap_or_else(|e| e.into_inner());
            let r = slots.release_view(view.as_raw());
            b.refill(&r.freed);
            drop(slots);
            let n = r.keys;
            if n > 0 {
                log_debug!("vkDestroyImageView: device '{}': view {view:?}: released {n} bindless handle(s)", b.name);
            }
        }
        if let Some(f) = b.next.destroy_image_view {
            f(device, view, p_allocator);
        }
    })
}

pub unsafe extern "system" fn destroy_sampler(device: vk::Device, sampler: vk::Sampler, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroySampler", (), || unsafe {
        let Some(b) = bindless_device(device) else { return };
        if sampler != vk::Sampler::null() {
            let mut slots = b.slots.lock().unwrap_or_else(|e| e.into_inner());
            let r = slots.release_sampler(sampler.as_raw());
            b.refill(&r.freed);
            drop(slots);
            let n = r.keys;
            if n > 0 {
                log_debug!("vkDestroySampler: device '{}': sampler {sampler:?}: released {n} bindless handle(s)", b.name);
            }
        }
        if let Some(f) = b.next.destroy_sampler {
            f(device, sampler, p_allocator);
        }
    })
}

// ---- physical-device properties ------------------------------------------------------------

/// The table this physical device will hold, when the extension is emulated there.
unsafe fn emulated_caps(inst: &InstanceData, pd: vk::PhysicalDevice) -> Option<super::Caps> {
    let phys = inst.physical_device(pd);
    match ext::status_on(&ImageViewHandle, inst, pd, &phys) {
        Status::Emulated { .. } => caps_for(inst, pd, &phys).ok(),
        _ => None,
    }
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
    let Some(c) = emulated_caps(&inst, pd) else { return };
    // Only the device-wide pool budget changes (table.rs, reserve_pool_descriptors);
    // maxBoundDescriptorSets and the per-stage / per-layout limits stay the driver's.
    let mut at = props.p_next as *mut vk::BaseOutStructure;
    while let Some(node) = at.as_mut() {
        match node.s_type {
            vk::StructureType::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_PROPERTIES => {
                let di = &mut *(at as *mut vk::PhysicalDeviceDescriptorIndexingProperties);
                di.max_update_after_bind_descriptors_in_all_pools = reserve_pool_descriptors(&c.table, di.max_update_after_bind_descriptors_in_all_pools);
            }
            vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES => {
                let v12 = &mut *(at as *mut vk::PhysicalDeviceVulkan12Properties);
                v12.max_update_after_bind_descriptors_in_all_pools = reserve_pool_descriptors(&c.table, v12.max_update_after_bind_descriptors_in_all_pools);
            }
            _ => {}
        }
        at = node.p_next;
    }
}
