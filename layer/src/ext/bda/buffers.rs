//! Buffers, memory and addresses on a device where the layer provides buffer device addresses.
//!
//! - vkCreateBuffer: a buffer with `SHADER_DEVICE_ADDRESS` usage (in `VkBufferCreateInfo::usage`,
//!   or in `VkBufferUsageFlags2CreateInfoKHR`, which replaces it when chained) reaches the driver
//!   with `STORAGE_BUFFER` usage instead (the table's descriptor needs it:
//!   VUID-VkWriteDescriptorSet-descriptorType-00331) and without the capture-replay flag and
//!   structures; the layer records its size. vkGetDeviceBufferMemoryRequirements(KHR) edits its
//!   create info the same way, so the requirements match the buffer the driver creates.
//! - vkBindBufferMemory / vkBindBufferMemory2(KHR) (every bound element): the buffer gets a slot
//!   of the table's storage-buffer array, written with the whole buffer (up to
//!   `maxStorageBufferRange`; a buffer of 4n+1..3 bytes through a whole-word alias on the same
//!   memory where it has room, `word_alias`). Sparse buffers get theirs at creation (they are
//!   never bound this way, and a descriptor of a sparse buffer needs no memory).
//! - vkGetBufferDeviceAddress (core, KHR, EXT): `encode_address(slot, 0)`. Slot 0 is never
//!   handed out, and the tag keeps every address non-zero.
//! - vkDestroyBuffer: the slot gets the null descriptor back (before the buffer is destroyed, so
//!   no descriptor names a dead buffer) and is reused.
//! - vkAllocateMemory: `VkMemoryAllocateFlagsInfo`'s DEVICE_ADDRESS / DEVICE_ADDRESS_CAPTURE_REPLAY
//!   bits and `VkMemoryOpaqueCaptureAddressAllocateInfo` are taken out (the driver's feature is
//!   not enabled: VUID-VkMemoryAllocateInfo-flags-03331); the allocation's size is recorded
//!   (until vkFreeMemory) for the whole-word aliases of buffers bound to it (`word_alias`).
//!
//! Capture/replay is not provided: `bufferDeviceAddressCaptureReplay` is reported false, so the
//! opaque-capture commands may not be called (VUID-vkGetBufferOpaqueCaptureAddress-None-03326,
//! VUID-vkGetDeviceMemoryOpaqueCaptureAddress-None-03334). They are still answered by the layer
//! (0, with an error in the log) because on a Vulkan 1.2 device they are core commands that
//! vkGetDeviceProcAddr must return; the driver's own answer would describe its own addresses,
//! which the application never sees.
use crate::dispatch::load_device;
use crate::ffi_guard::guard;
use crate::pnext::{self, Chain};
use crate::tables::slot_space::SlotSpace;
use super::{word_alias, BdaDevice};
use crate::dispatch::component;
use crate::{log_debug, log_error};
use ash::vk::{self, Handle};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

type S = vk::StructureType;

/// Next-layer commands the hooks call.
#[derive(Default, Clone, Copy)]
pub struct Next {
    pub create_buffer: Option<vk::PFN_vkCreateBuffer>,
    pub destroy_buffer: Option<vk::PFN_vkDestroyBuffer>,
    pub bind_buffer_memory: Option<vk::PFN_vkBindBufferMemory>,
    pub bind_buffer_memory2: Option<vk::PFN_vkBindBufferMemory2>,
    pub bind_buffer_memory2_khr: Option<vk::PFN_vkBindBufferMemory2>,
    pub allocate_memory: Option<vk::PFN_vkAllocateMemory>,
    pub get_device_buffer_memory_requirements: Option<vk::PFN_vkGetDeviceBufferMemoryRequirements>,
    pub get_device_buffer_memory_requirements_khr: Option<vk::PFN_vkGetDeviceBufferMemoryRequirements>,
    pub get_buffer_memory_requirements: Option<vk::PFN_vkGetBufferMemoryRequirements>,
    pub free_memory: Option<vk::PFN_vkFreeMemory>,
}

impl Next {
    /// # Safety
    /// Valid device and its next GetDeviceProcAddr.
    pub unsafe fn load(gdpa: vk::PFN_vkGetDeviceProcAddr, d: vk::Device) -> Next {
        Next {
            create_buffer: load_device(gdpa, d, c"vkCreateBuffer"),
            destroy_buffer: load_device(gdpa, d, c"vkDestroyBuffer"),
            bind_buffer_memory: load_device(gdpa, d, c"vkBindBufferMemory"),
            bind_buffer_memory2: load_device(gdpa, d, c"vkBindBufferMemory2"),
            bind_buffer_memory2_khr: load_device(gdpa, d, c"vkBindBufferMemory2KHR"),
            allocate_memory: load_device(gdpa, d, c"vkAllocateMemory"),
            get_device_buffer_memory_requirements: load_device(gdpa, d, c"vkGetDeviceBufferMemoryRequirements"),
            get_device_buffer_memory_requirements_khr: load_device(gdpa, d, c"vkGetDeviceBufferMemoryRequirementsKHR"),
            get_buffer_memory_requirements: load_device(gdpa, d, c"vkGetBufferMemoryRequirements"),
            free_memory: load_device(gdpa, d, c"vkFreeMemory"),
        }
    }
}

/// A buffer created with device-address usage.
#[derive(Debug, Clone, Copy)]
struct Tracked {
    size: vk::DeviceSize,
    /// Its slot once bound (sparse: from creation).
    slot: Option<u32>,
    /// May its descriptor come from a whole-word alias ([`word_alias::eligible`]).
    alias_eligible: bool,
    /// The alias its descriptor names, destroyed with it.
    alias: Option<vk::Buffer>,
}

#[derive(Debug)]
struct State {
    slots: SlotSpace,
    buffers: HashMap<u64, Tracked>,
    /// The sizes of the device-address allocations a whole-word alias may be bound to (not
    /// dedicated or external ones), until freed.
    aliasable_memory: HashMap<u64, vk::DeviceSize>,
}

/// The address user's state on a device with the table.
pub struct Buffers {
    /// Held while a slot's descriptor is written (vkUpdateDescriptorSets: dstSet is externally
    /// synchronized) and until a released slot has its filler back.
    state: Mutex<State>,
    /// `maxStorageBufferRange` (VUID-VkWriteDescriptorSet-descriptorType-00333).
    max_range: u32,
    /// An out-of-slots error was logged (logged once per device).
    exhausted_logged: AtomicBool,
}

impl Buffers {
    /// `count`: the array size (slot 0 reserved).
    pub fn new(count: u32, max_range: u32) -> Buffers {
        Buffers {
            state: Mutex::new(State { slots: SlotSpace::new(count), buffers: HashMap::new(), aliasable_memory: HashMap::new() }),
            max_range,
            exhausted_logged: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a device-address allocation (a handle may come back for another one).
    fn note_memory(&self, memory: vk::DeviceMemory, size: vk::DeviceSize, aliasable: bool) {
        let mut state = self.lock();
        if aliasable {
            state.aliasable_memory.insert(memory.as_raw(), size);
        } else {
            state.aliasable_memory.remove(&memory.as_raw());
        }
    }

    /// The slot of a bound device-address buffer.
    pub fn slot(&self, buffer: vk::Buffer) -> Option<u32> {
        self.lock().buffers.get(&buffer.as_raw()).and_then(|t| t.slot)
    }
}

/// The device's address state, when it provides addresses.
unsafe fn device_with_buffers(device: vk::Device, hook: &str) -> Option<std::sync::Arc<BdaDevice>> {
    let t = component::<BdaDevice>(device);
    if t.is_none() {
        log_error!(LOADER_INTERFACE, "{hook}: device {device:?} has no buffer-device-address emulation");
    }
    t
}

/// Gives `buffer` a slot (if it is a device-address buffer without one) and writes its
/// descriptor; `bound`: the memory and offset it was just bound to (`None`: sparse).
unsafe fn assign_slot(t: &BdaDevice, hook: &str, buffer: vk::Buffer, bound: Option<(vk::DeviceMemory, vk::DeviceSize)>) {
    let (b, array) = (&t.buffers, t.array);
    let mut state = b.lock();
    let Some(tracked) = state.buffers.get(&buffer.as_raw()).copied() else { return };
    if tracked.slot.is_some() {
        return;
    }
    let Some(slot) = state.slots.alloc() else {
        let in_use = state.slots.in_use();
        drop(state);
        if !b.exhausted_logged.swap(true, Ordering::Relaxed) {
            log_error!(
                TABLE_FULL,
                "{hook}: device '{}': the storage-buffer array of the descriptor table is full ({in_use} buffers of {}); buffer {buffer:?} gets address 0 (destroy unused device-address buffers to free slots). Logged once per device.",
                t.table.name,
                array.count - 1
            );
        }
        return;
    };
    let range = tracked.size.min(u64::from(b.max_range));
    if range < tracked.size {
        log_error!(
            API_MISUSE,
            "{hook}: device '{}': buffer {buffer:?} is {} bytes; its address reaches only the first {range} (maxStorageBufferRange, and 2 GiB under the emulation)",
            t.table.name,
            tracked.size
        );
    }
    // (range <= maxStorageBufferRange, a u32: rounding it up cannot overflow.)
    let whole_words = (range + 3) & !3;
    let alias = bound
        .filter(|_| tracked.alias_eligible && range == tracked.size && whole_words <= u64::from(b.max_range))
        .and_then(|(memory, offset)| Some((memory, offset, *state.aliasable_memory.get(&memory.as_raw())?)))
        .and_then(|(memory, offset, memory_size)| match word_alias::make(t.table.device, &t.next, buffer, whole_words, memory, offset, memory_size) {
            Ok(a) => Some(a),
            Err(why) => {
                log_debug!(TRACE, "{hook}: device '{}': buffer {buffer:?} ({} bytes) keeps its exact range: no whole-word alias ({why})", t.table.name, tracked.size);
                None
            }
        });
    let info = match alias {
        Some(a) => vk::DescriptorBufferInfo { buffer: a, offset: 0, range: whole_words },
        None => vk::DescriptorBufferInfo { buffer, offset: 0, range },
    };
    let w = vk::WriteDescriptorSet {
        dst_set: t.table.table.set,
        dst_binding: array.binding,
        dst_array_element: slot,
        descriptor_count: 1,
        descriptor_type: vk::DescriptorType::STORAGE_BUFFER,
        p_buffer_info: &info,
        ..Default::default()
    };
    t.table.write(&w);
    if let Some(e) = state.buffers.get_mut(&buffer.as_raw()) {
        e.slot = Some(slot);
        e.alias = alias;
    }
    log_debug!(TRACE, "{hook}: device '{}': buffer {buffer:?} ({} bytes) -> slot {slot}", t.table.name, tracked.size);
}

/// A copied `VkBufferCreateInfo` for the driver: STORAGE_BUFFER instead of SHADER_DEVICE_ADDRESS
/// usage, no capture-replay flag or structures. `None`: the buffer has no device-address usage.
pub struct EditedBuffer<'a> {
    pub info: vk::BufferCreateInfo<'a>,
    _chain: Chain,
}

/// # Safety
/// `ci` is a valid VkBufferCreateInfo.
pub unsafe fn edit_buffer_info<'a>(ci: &vk::BufferCreateInfo<'a>) -> Option<EditedBuffer<'a>> {
    // VkBufferUsageFlags2CreateInfoKHR, when chained, replaces `usage` (VK_KHR_maintenance5).
    let usage2 = pnext::find::<vk::BufferUsageFlags2CreateInfoKHR>(ci.p_next, S::BUFFER_USAGE_FLAGS_2_CREATE_INFO_KHR);
    let wants = match usage2 {
        Some(u) => u.usage.contains(vk::BufferUsageFlags2KHR::SHADER_DEVICE_ADDRESS),
        None => ci.usage.contains(vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS),
    };
    if !wants {
        return None;
    }
    let mut chain = Chain::copy(ci.p_next);
    if let Some(u) = chain.find_mut::<vk::BufferUsageFlags2CreateInfoKHR>(S::BUFFER_USAGE_FLAGS_2_CREATE_INFO_KHR) {
        u.usage = (u.usage & !vk::BufferUsageFlags2KHR::SHADER_DEVICE_ADDRESS) | vk::BufferUsageFlags2KHR::STORAGE_BUFFER;
    } else if usage2.is_some() {
        log_error!(API_MISUSE, "vkCreateBuffer: VkBufferUsageFlags2CreateInfoKHR sits behind an unknown structure; the driver sees its usage unchanged");
    }
    chain.remove(S::BUFFER_OPAQUE_CAPTURE_ADDRESS_CREATE_INFO);
    chain.remove(S::BUFFER_DEVICE_ADDRESS_CREATE_INFO_EXT);
    let mut info = *ci;
    info.usage = (ci.usage & !vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS) | vk::BufferUsageFlags::STORAGE_BUFFER;
    info.flags &= !vk::BufferCreateFlags::DEVICE_ADDRESS_CAPTURE_REPLAY;
    info.p_next = chain.link();
    Some(EditedBuffer { info, _chain: chain })
}

pub unsafe extern "system" fn create_buffer(
    device: vk::Device,
    p_create_info: *const vk::BufferCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_buffer: *mut vk::Buffer,
) -> vk::Result {
    const HOOK: &str = "vkCreateBuffer";
    guard(HOOK, vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe {
        let Some(t) = device_with_buffers(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = t.next.create_buffer else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(edited) = p_create_info.as_ref().and_then(|ci| edit_buffer_info(ci)) else {
            return next(device, p_create_info, p_allocator, p_buffer);
        };
        let r = next(device, &edited.info, p_allocator, p_buffer);
        if let (vk::Result::SUCCESS, Some(&buffer)) = (r, p_buffer.as_ref()) {
            let b = &t.buffers;
            let alias_eligible = word_alias::eligible(&edited.info);
            b.lock().buffers.insert(buffer.as_raw(), Tracked { size: edited.info.size, slot: None, alias_eligible, alias: None });
            if edited.info.flags.contains(vk::BufferCreateFlags::SPARSE_BINDING) {
                assign_slot(&t, HOOK, buffer, None);
            }
        }
        r
    })
}

pub unsafe extern "system" fn destroy_buffer(device: vk::Device, buffer: vk::Buffer, p_allocator: *const vk::AllocationCallbacks) {
    const HOOK: &str = "vkDestroyBuffer";
    guard(HOOK, (), || unsafe {
        let Some(t) = device_with_buffers(device, HOOK) else { return };
        {
            let (b, array) = (&t.buffers, t.array);
            let mut state = b.lock();
            if let Some(Tracked { slot: Some(slot), alias, .. }) = state.buffers.remove(&buffer.as_raw()) {
                // The filler back before the slot is free (and before the buffer and its alias die).
                t.table.refill(array.binding, vk::DescriptorType::STORAGE_BUFFER, slot, 1);
                state.slots.release(slot);
                if let (Some(a), Some(f)) = (alias, t.next.destroy_buffer) {
                    f(device, a, std::ptr::null());
                }
                log_debug!(TRACE, "{HOOK}: device '{}': buffer {buffer:?}: slot {slot} released", t.table.name);
            }
        }
        if let Some(f) = t.next.destroy_buffer {
            f(device, buffer, p_allocator);
        }
    })
}

pub unsafe extern "system" fn bind_buffer_memory(device: vk::Device, buffer: vk::Buffer, memory: vk::DeviceMemory, offset: vk::DeviceSize) -> vk::Result {
    const HOOK: &str = "vkBindBufferMemory";
    guard(HOOK, vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe {
        let Some(t) = device_with_buffers(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = t.next.bind_buffer_memory else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = next(device, buffer, memory, offset);
        if r == vk::Result::SUCCESS {
            assign_slot(&t, HOOK, buffer, Some((memory, offset)));
        }
        r
    })
}

/// vkBindBufferMemory2(KHR): every element that was bound — all on success; on failure those
/// whose `VkBindMemoryStatusKHR` (VK_KHR_maintenance6) reports success.
unsafe fn bind2(hook: &'static str, device: vk::Device, count: u32, infos: *const vk::BindBufferMemoryInfo, core: bool) -> vk::Result {
    guard(hook, vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe {
        let Some(t) = device_with_buffers(device, hook) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let next = if core { t.next.bind_buffer_memory2 } else { t.next.bind_buffer_memory2_khr };
        let Some(next) = next else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = next(device, count, infos);
        if infos.is_null() {
            return r;
        }
        for info in std::slice::from_raw_parts(infos, count as usize) {
            let bound = r == vk::Result::SUCCESS
                || pnext::find::<vk::BindMemoryStatusKHR>(info.p_next, S::BIND_MEMORY_STATUS_KHR)
                    .and_then(|s| s.p_result.as_ref())
                    .is_some_and(|res| *res == vk::Result::SUCCESS);
            if bound {
                assign_slot(&t, hook, info.buffer, Some((info.memory, info.memory_offset)));
            }
        }
        r
    })
}

pub unsafe extern "system" fn bind_buffer_memory2(device: vk::Device, count: u32, infos: *const vk::BindBufferMemoryInfo) -> vk::Result {
    bind2("vkBindBufferMemory2", device, count, infos, true)
}

pub unsafe extern "system" fn bind_buffer_memory2_khr(device: vk::Device, count: u32, infos: *const vk::BindBufferMemoryInfo) -> vk::Result {
    bind2("vkBindBufferMemory2KHR", device, count, infos, false)
}

pub unsafe extern "system" fn get_buffer_device_address(device: vk::Device, p_info: *const vk::BufferDeviceAddressInfo) -> vk::DeviceAddress {
    const HOOK: &str = "vkGetBufferDeviceAddress";
    guard(HOOK, 0, || unsafe {
        let Some(t) = device_with_buffers(device, HOOK) else { return 0 };
        let Some(info) = p_info.as_ref() else {
            log_error!(API_MISUSE, "{HOOK}: pInfo is NULL; returning 0");
            return 0;
        };
        match t.buffers.slot(info.buffer) {
            Some(slot) => shader_rewrite::bda::encode_address(slot, 0),
            None => {
                log_error!(
                    TABLE_FULL,
                    "{HOOK}: device '{}': buffer {:?} has no address (not created with VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT, not bound to memory, or the table is full); returning 0",
                    t.table.name,
                    info.buffer
                );
                0
            }
        }
    })
}

pub unsafe extern "system" fn get_buffer_opaque_capture_address(_device: vk::Device, _info: *const vk::BufferDeviceAddressInfo) -> u64 {
    guard("vkGetBufferOpaqueCaptureAddress", 0, || {
        log_error!(API_MISUSE, "vkGetBufferOpaqueCaptureAddress: bufferDeviceAddressCaptureReplay is not supported where the layer provides buffer device addresses; returning 0");
        0
    })
}

pub unsafe extern "system" fn get_device_memory_opaque_capture_address(_device: vk::Device, _info: *const vk::DeviceMemoryOpaqueCaptureAddressInfo) -> u64 {
    guard("vkGetDeviceMemoryOpaqueCaptureAddress", 0, || {
        log_error!(API_MISUSE, "vkGetDeviceMemoryOpaqueCaptureAddress: bufferDeviceAddressCaptureReplay is not supported where the layer provides buffer device addresses; returning 0");
        0
    })
}

pub unsafe extern "system" fn allocate_memory(
    device: vk::Device,
    p_info: *const vk::MemoryAllocateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_memory: *mut vk::DeviceMemory,
) -> vk::Result {
    const HOOK: &str = "vkAllocateMemory";
    guard(HOOK, vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe {
        let Some(t) = device_with_buffers(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = t.next.allocate_memory else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(info) = p_info.as_ref() else { return next(device, p_info, p_allocator, p_memory) };
        let address_bits = vk::MemoryAllocateFlags::DEVICE_ADDRESS | vk::MemoryAllocateFlags::DEVICE_ADDRESS_CAPTURE_REPLAY;
        let flagged = pnext::find::<vk::MemoryAllocateFlagsInfo>(info.p_next, S::MEMORY_ALLOCATE_FLAGS_INFO).is_some_and(|f| f.flags.intersects(address_bits));
        let capture = pnext::find::<vk::MemoryOpaqueCaptureAddressAllocateInfo>(info.p_next, S::MEMORY_OPAQUE_CAPTURE_ADDRESS_ALLOCATE_INFO).is_some();
        if !flagged && !capture {
            return next(device, p_info, p_allocator, p_memory);
        }
        let mut chain = Chain::copy(info.p_next);
        if let Some(f) = chain.find_mut::<vk::MemoryAllocateFlagsInfo>(S::MEMORY_ALLOCATE_FLAGS_INFO) {
            f.flags &= !address_bits;
        }
        chain.remove(S::MEMORY_OPAQUE_CAPTURE_ADDRESS_ALLOCATE_INFO);
        let mut copy = *info;
        copy.p_next = chain.link();
        let r = next(device, &copy, p_allocator, p_memory);
        if let (vk::Result::SUCCESS, Some(&memory)) = (r, p_memory.as_ref()) {
            // Device-address buffers are bound to such memory only (DEVICE_ADDRESS bit,
            // VUID-vkBindBufferMemory-bufferDeviceAddress-03339): note where no alias may go.
            t.buffers.note_memory(memory, info.allocation_size, word_alias::aliasable(info));
        }
        r
    })
}

/// vkFreeMemory: the allocation's entry goes (its handle may come back for another one).
pub unsafe extern "system" fn free_memory(device: vk::Device, memory: vk::DeviceMemory, p_allocator: *const vk::AllocationCallbacks) {
    const HOOK: &str = "vkFreeMemory";
    guard(HOOK, (), || unsafe {
        let Some(t) = device_with_buffers(device, HOOK) else { return };
        t.buffers.lock().aliasable_memory.remove(&memory.as_raw());
        if let Some(f) = t.next.free_memory {
            f(device, memory, p_allocator);
        }
    })
}

/// vkGetDeviceBufferMemoryRequirements(KHR) (VK_KHR_maintenance4, Vulkan 1.3): answered for the
/// create info the driver would get from vkCreateBuffer.
unsafe fn buffer_requirements(
    hook: &'static str,
    device: vk::Device,
    p_info: *const vk::DeviceBufferMemoryRequirements,
    p_reqs: *mut vk::MemoryRequirements2,
    core: bool,
) {
    guard(hook, (), || unsafe {
        let Some(t) = device_with_buffers(device, hook) else { return };
        let next = if core { t.next.get_device_buffer_memory_requirements } else { t.next.get_device_buffer_memory_requirements_khr };
        let Some(next) = next else { return };
        let edited = p_info.as_ref().and_then(|i| i.p_create_info.as_ref()).and_then(|ci| edit_buffer_info(ci));
        match (edited, p_info.as_ref()) {
            (Some(e), Some(info)) => {
                let mut copy = *info;
                copy.p_create_info = &e.info;
                next(device, &copy, p_reqs)
            }
            _ => next(device, p_info, p_reqs),
        }
    })
}

pub unsafe extern "system" fn get_device_buffer_memory_requirements(
    device: vk::Device,
    p_info: *const vk::DeviceBufferMemoryRequirements,
    p_reqs: *mut vk::MemoryRequirements2,
) {
    buffer_requirements("vkGetDeviceBufferMemoryRequirements", device, p_info, p_reqs, true)
}

pub unsafe extern "system" fn get_device_buffer_memory_requirements_khr(
    device: vk::Device,
    p_info: *const vk::DeviceBufferMemoryRequirements,
    p_reqs: *mut vk::MemoryRequirements2,
) {
    buffer_requirements("vkGetDeviceBufferMemoryRequirementsKHR", device, p_info, p_reqs, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;

    #[test]
    fn usage_is_rewritten_for_the_driver() {
        let plain = vk::BufferCreateInfo { usage: vk::BufferUsageFlags::TRANSFER_DST, size: 64, ..Default::default() };
        assert!(unsafe { edit_buffer_info(&plain) }.is_none());
        let capture = vk::BufferOpaqueCaptureAddressCreateInfo { opaque_capture_address: 0, ..Default::default() };
        let ci = vk::BufferCreateInfo {
            p_next: &capture as *const _ as *const c_void,
            usage: vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS | vk::BufferUsageFlags::TRANSFER_DST,
            flags: vk::BufferCreateFlags::DEVICE_ADDRESS_CAPTURE_REPLAY,
            size: 64,
            ..Default::default()
        };
        let e = unsafe { edit_buffer_info(&ci) }.unwrap();
        assert_eq!(e.info.usage, vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST);
        assert!(e.info.flags.is_empty());
        assert!(e.info.p_next.is_null(), "capture structure removed");
        // VkBufferUsageFlags2CreateInfoKHR replaces usage: its copy is edited.
        let u2 = vk::BufferUsageFlags2CreateInfoKHR { usage: vk::BufferUsageFlags2KHR::SHADER_DEVICE_ADDRESS, ..Default::default() };
        let ci = vk::BufferCreateInfo { p_next: &u2 as *const _ as *const c_void, size: 64, ..Default::default() };
        let e = unsafe { edit_buffer_info(&ci) }.unwrap();
        let copy = unsafe { &*(e.info.p_next as *const vk::BufferUsageFlags2CreateInfoKHR) };
        assert_eq!(copy.usage, vk::BufferUsageFlags2KHR::STORAGE_BUFFER);
        assert_eq!(u2.usage, vk::BufferUsageFlags2KHR::SHADER_DEVICE_ADDRESS, "application's struct untouched");
    }
}
