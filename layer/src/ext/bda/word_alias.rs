//! Buffers whose size is not a whole number of words are reached through a layer-made alias of
//! the rounded-up size, bound to the same memory at the same offset.
//!
//! Where the rewrite has no 8-bit view (devices without storageBuffer8BitAccess) a buffer's
//! length comes from OpArrayLength of a `uint[]`, which rounds down, and its 8/16-bit accesses
//! move whole words (which a robust driver checks as a whole): the last 1–3 bytes of a buffer of
//! 4n+1..3 bytes would read 0 and drop writes, though the application may use them. The
//! descriptor cannot simply cover more (VUID-VkDescriptorBufferInfo-range-00342: at most the
//! buffer's size), and growing the application's buffer would also grow its own `VK_WHOLE_SIZE`
//! descriptors. The alias covers the rounded size only where the memory the application bound
//! holds it (`offset +` the alias's requirements inside the allocation,
//! VUID-vkBindBufferMemory-size-01037), with the same memory types and the offset's alignment,
//! and within `maxStorageBufferRange`. Exclusive buffers without creation flags only (an alias
//! would need the same queue families and flags), not on dedicated or external memory.
//! Otherwise the buffer's own exact range stays, as before.
use super::buffers::Next;
use crate::pnext;
use ash::vk;

/// May a buffer of `ci` get an alias: a size that is not whole words, exclusive sharing, no
/// creation flags (sparse, protected, ...) and no external-memory structure the alias would have
/// to share.
///
/// # Safety
/// `ci` is a valid VkBufferCreateInfo.
pub unsafe fn eligible(ci: &vk::BufferCreateInfo) -> bool {
    let external = pnext::find::<vk::ExternalMemoryBufferCreateInfo>(ci.p_next, vk::StructureType::EXTERNAL_MEMORY_BUFFER_CREATE_INFO).is_some();
    !ci.size.is_multiple_of(4) && ci.sharing_mode == vk::SharingMode::EXCLUSIVE && ci.flags.is_empty() && !external
}

/// May a buffer other than the one the memory was made for be bound to memory allocated with
/// `info`? Not to a dedicated allocation (VUID-vkBindBufferMemory-memory-01508) nor to
/// exported or imported memory (its buffers must name its handle types,
/// VUID-vkBindBufferMemory-memory-02726).
///
/// # Safety
/// `info` is a valid VkMemoryAllocateInfo.
pub unsafe fn aliasable(info: &vk::MemoryAllocateInfo) -> bool {
    type S = vk::StructureType;
    let dedicated = pnext::find::<vk::MemoryDedicatedAllocateInfo>(info.p_next, S::MEMORY_DEDICATED_ALLOCATE_INFO)
        .is_some_and(|d| d.buffer != vk::Buffer::null() || d.image != vk::Image::null());
    let external = [S::EXPORT_MEMORY_ALLOCATE_INFO, S::IMPORT_MEMORY_FD_INFO_KHR, S::IMPORT_MEMORY_HOST_POINTER_INFO_EXT, S::IMPORT_ANDROID_HARDWARE_BUFFER_INFO_ANDROID, S::IMPORT_MEMORY_WIN32_HANDLE_INFO_KHR]
        .into_iter()
        .any(|s| pnext::find::<vk::BaseInStructure>(info.p_next, s).is_some());
    !dedicated && !external
}

/// The alias of `buffer`, of `whole_words` bytes (its size rounded up), bound to `memory` of
/// `memory_size` bytes at `offset`, or why there is none (see the module comment).
///
/// # Safety
/// `buffer` is a live buffer of `device`, just bound to `memory` at `offset`.
pub unsafe fn make(device: vk::Device, next: &Next, buffer: vk::Buffer, whole_words: vk::DeviceSize, memory: vk::DeviceMemory, offset: vk::DeviceSize, memory_size: vk::DeviceSize) -> Result<vk::Buffer, String> {
    let (Some(create), Some(destroy), Some(requirements), Some(bind)) = (next.create_buffer, next.destroy_buffer, next.get_buffer_memory_requirements, next.bind_buffer_memory) else {
        return Err("the next layer lacks a buffer command".into());
    };
    let ci = vk::BufferCreateInfo { size: whole_words, usage: vk::BufferUsageFlags::STORAGE_BUFFER, ..Default::default() };
    let mut alias = vk::Buffer::null();
    let r = create(device, &ci, std::ptr::null(), &mut alias);
    if r != vk::Result::SUCCESS {
        return Err(format!("vkCreateBuffer: {r:?}"));
    }
    let (mut app, mut own) = (vk::MemoryRequirements::default(), vk::MemoryRequirements::default());
    requirements(device, buffer, &mut app);
    requirements(device, alias, &mut own);
    let fits = own.size <= memory_size.saturating_sub(offset)
        && own.memory_type_bits & app.memory_type_bits == app.memory_type_bits
        && offset.is_multiple_of(own.alignment.max(1));
    let r = if fits { bind(device, alias, memory, offset) } else { vk::Result::ERROR_UNKNOWN };
    if r == vk::Result::SUCCESS {
        return Ok(alias);
    }
    destroy(device, alias, std::ptr::null());
    Err(if fits { format!("vkBindBufferMemory: {r:?}") } else { format!("the alias needs {own:?}; the memory has {memory_size} bytes, bound at {offset}, for a buffer needing {app:?}") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;
    use std::ffi::c_void;

    #[test]
    fn eligible_buffers_are_exclusive_plain_and_not_whole_words() {
        let ci = |size, flags, sharing_mode| vk::BufferCreateInfo { size, flags, sharing_mode, ..Default::default() };
        let of = |c: &vk::BufferCreateInfo| unsafe { eligible(c) };
        assert!(of(&ci(43, vk::BufferCreateFlags::empty(), vk::SharingMode::EXCLUSIVE)));
        assert!(!of(&ci(44, vk::BufferCreateFlags::empty(), vk::SharingMode::EXCLUSIVE)), "whole words");
        assert!(!of(&ci(43, vk::BufferCreateFlags::SPARSE_BINDING, vk::SharingMode::EXCLUSIVE)));
        assert!(!of(&ci(43, vk::BufferCreateFlags::PROTECTED, vk::SharingMode::EXCLUSIVE)));
        assert!(!of(&ci(43, vk::BufferCreateFlags::empty(), vk::SharingMode::CONCURRENT)));
        let external = vk::ExternalMemoryBufferCreateInfo::default();
        let with_external = vk::BufferCreateInfo { p_next: &external as *const _ as *const c_void, ..ci(43, vk::BufferCreateFlags::empty(), vk::SharingMode::EXCLUSIVE) };
        assert!(!of(&with_external), "external memory");
    }

    #[test]
    fn dedicated_and_external_memory_takes_no_alias() {
        let plain = vk::MemoryAllocateInfo::default();
        assert!(unsafe { aliasable(&plain) });
        let no_object = vk::MemoryDedicatedAllocateInfo::default();
        let info = vk::MemoryAllocateInfo { p_next: &no_object as *const _ as *const c_void, ..Default::default() };
        assert!(unsafe { aliasable(&info) }, "a dedicated structure naming nothing");
        let dedicated = vk::MemoryDedicatedAllocateInfo { buffer: vk::Buffer::from_raw(7), ..Default::default() };
        let info = vk::MemoryAllocateInfo { p_next: &dedicated as *const _ as *const c_void, ..Default::default() };
        assert!(!unsafe { aliasable(&info) });
        let export = vk::ExportMemoryAllocateInfo::default();
        let info = vk::MemoryAllocateInfo { p_next: &export as *const _ as *const c_void, ..Default::default() };
        assert!(!unsafe { aliasable(&info) });
    }
}
