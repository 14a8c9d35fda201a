//! The extension's commands and the object lifetimes behind them:
//! vkGetImageViewHandleNVX / vkGetImageViewHandle64NVX (slot allocation + descriptor write) and
//! vkDestroyImageView / vkDestroySampler (release).
use super::slots::{Acquired, Freed, ImageKind, Key, KeyKind, SlotError, Write};
use crate::ffi_guard::guard;
use super::BindlessDevice;
use crate::dispatch::component;
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
    let Some(b) = component::<BindlessDevice>(device) else {
        log_error!(LOADER_INTERFACE, "{hook}: device {device:?} has no bindless emulation; returning 0");
        return 0;
    };
    let images = &b.images;
    let Some(info) = p_info.as_ref() else {
        log_error!(API_MISUSE, "{hook}: pInfo is NULL; returning 0");
        return 0;
    };
    let kind = match info.descriptor_type {
        vk::DescriptorType::SAMPLED_IMAGE => KeyKind::SampledImage,
        vk::DescriptorType::STORAGE_IMAGE => KeyKind::StorageImage,
        vk::DescriptorType::COMBINED_IMAGE_SAMPLER => KeyKind::CombinedImageSampler,
        t => {
            log_error!(API_MISUSE, "{hook}: descriptorType {t:?} is not SAMPLED_IMAGE, STORAGE_IMAGE or COMBINED_IMAGE_SAMPLER; returning 0");
            return 0;
        }
    };
    if info.image_view == vk::ImageView::null() {
        log_error!(API_MISUSE, "{hook}: imageView is VK_NULL_HANDLE; returning 0");
        return 0;
    }
    if kind == KeyKind::CombinedImageSampler && info.sampler == vk::Sampler::null() {
        log_error!(API_MISUSE, "{hook}: COMBINED_IMAGE_SAMPLER without a sampler; returning 0");
        return 0;
    }
    let sampler = if kind == KeyKind::CombinedImageSampler { info.sampler.as_raw() } else { 0 };
    let key = Key { view: info.image_view.as_raw(), kind, sampler };
    // The lock is held while the new slots' descriptors are written: the set is written from
    // one thread at a time (vkUpdateDescriptorSets: dstSet is externally synchronized).
    let mut slots = images.slots.lock().unwrap_or_else(|e| e.into_inner());
    match slots.acquire(key) {
        Ok(Acquired::Existing(h)) => h,
        Ok(Acquired::New { handle, writes }) => {
            write_descriptors(&b, &writes);
            log_debug!(
                TRACE,
                "{hook}: device '{}': view {:?} as {:?}{} -> handle {handle:#010x} (image slot {}, sampler slot {})",
                b.table.name,
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
            let t = b.arrays;
            if !images.exhausted_logged.swap(true, Ordering::Relaxed) {
                log_error!(
                    TABLE_FULL,
                    "{hook}: device '{}': the bindless {array} array is full (in use: {s} sampled images of {}, {st} storage images of {}, {sm} samplers of {}); returning handle 0 (destroy unused image views / samplers to free slots). Logged once per device.",
                    b.table.name,
                    t.sampled_images_count - 1,
                    t.storage_images_count - 1,
                    t.samplers_count - 1
                );
            }
            0
        }
    }
}

/// Writes the descriptors of newly taken slots into the table.
unsafe fn write_descriptors(b: &BindlessDevice, writes: &[Write]) {
    let t = b.arrays;
    for w in writes {
        let (binding, ty, image_info) = match *w {
            Write::Image { kind: ImageKind::Sampled, slot, view } => (
                (t.sampled_images_binding, slot),
                vk::DescriptorType::SAMPLED_IMAGE,
                vk::DescriptorImageInfo {
                    image_view: vk::ImageView::from_raw(view),
                    image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                    ..Default::default()
                },
            ),
            Write::Image { kind: ImageKind::Storage, slot, view } => (
                (t.storage_images_binding, slot),
                vk::DescriptorType::STORAGE_IMAGE,
                vk::DescriptorImageInfo {
                    image_view: vk::ImageView::from_raw(view),
                    image_layout: vk::ImageLayout::GENERAL,
                    ..Default::default()
                },
            ),
            Write::Sampler { slot, sampler } => (
                (t.samplers_binding, slot),
                vk::DescriptorType::SAMPLER,
                vk::DescriptorImageInfo { sampler: vk::Sampler::from_raw(sampler), ..Default::default() },
            ),
        };
        let write = vk::WriteDescriptorSet {
            dst_set: b.table.table.set,
            dst_binding: binding.0,
            dst_array_element: binding.1,
            descriptor_count: 1,
            descriptor_type: ty,
            p_image_info: &image_info,
            ..Default::default()
        };
        b.table.write(&write);
    }
}

/// Writes the filler (null image descriptor / default sampler) back into released slots.
/// Call with the `slots` lock still held (the slots are on the free list already, and another
/// thread may take and write them as soon as the lock is released).
unsafe fn refill(b: &BindlessDevice, freed: &[Freed]) {
    let t = b.arrays;
    for f in freed {
        let (binding, slot, ty) = match *f {
            Freed::Image { kind: ImageKind::Sampled, slot } => (t.sampled_images_binding, slot, vk::DescriptorType::SAMPLED_IMAGE),
            Freed::Image { kind: ImageKind::Storage, slot } => (t.storage_images_binding, slot, vk::DescriptorType::STORAGE_IMAGE),
            Freed::Sampler { slot } => (t.samplers_binding, slot, vk::DescriptorType::SAMPLER),
        };
        b.table.refill(binding, ty, slot, 1);
    }
}

/// Releases what `release` frees under the slots lock, refilling freed slots; returns the
/// number of handles released.
unsafe fn release(b: &BindlessDevice, release: impl FnOnce(&mut super::slots::Slots) -> super::slots::Released) -> usize {
    let mut slots = b.images.slots.lock().unwrap_or_else(|e| e.into_inner());
    let r = release(&mut slots);
    refill(b, &r.freed);
    r.keys
}

pub unsafe extern "system" fn destroy_image_view(device: vk::Device, view: vk::ImageView, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroyImageView", (), || unsafe {
        let Some(b) = component::<BindlessDevice>(device) else { return };
        if view != vk::ImageView::null() {
            // Refill the freed slots before unlocking (and before the view is destroyed): no
            // other thread can take them meanwhile, and no descriptor names a dead view.
            let n = release(&b, |s| s.release_view(view.as_raw()));
            if n > 0 {
                log_debug!(TRACE, "vkDestroyImageView: device '{}': view {view:?}: released {n} bindless handle(s)", b.table.name);
            }
        }
        if let Some(f) = b.destroy_image_view {
            f(device, view, p_allocator);
        }
    })
}

pub unsafe extern "system" fn destroy_sampler(device: vk::Device, sampler: vk::Sampler, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroySampler", (), || unsafe {
        let Some(b) = component::<BindlessDevice>(device) else { return };
        if sampler != vk::Sampler::null() {
            let n = release(&b, |s| s.release_sampler(sampler.as_raw()));
            if n > 0 {
                log_debug!(TRACE, "vkDestroySampler: device '{}': sampler {sampler:?}: released {n} bindless handle(s)", b.table.name);
            }
        }
        if let Some(f) = b.destroy_sampler {
            f(device, sampler, p_allocator);
        }
    })
}
