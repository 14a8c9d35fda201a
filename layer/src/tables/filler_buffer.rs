//! The filler of the table's storage-buffer array on devices without `nullDescriptor`: one small
//! layer-owned buffer written into every free slot, slot 0 included.
//!
//! The rewritten shaders' bounds checks do not branch (shader-rewrite's `bda.rs` contract): a
//! store outside its buffer goes to offset 0 of slot 0, and a load outside reads offset 0 of its
//! buffer or of slot 0 and has its value replaced by 0. So slot 0 must always hold a descriptor
//! that can take those accesses — a null descriptor, or a buffer of at least the widest access
//! (16 bytes) that nothing reads. An unwritten descriptor there (or in a freed slot a stale
//! address names) is undefined behaviour: on real drivers a read or write through garbage.
use crate::dispatch::load_device;
use ash::vk;
use std::ffi::c_void;

/// Bytes of the filler: wider than any access a rewritten shader makes at offset 0 (a leaf is at
/// most a 4-component 64-bit vector, 32 bytes).
pub const FILLER_BYTES: u64 = 256;

/// The buffer and its memory (zeroed at creation).
#[derive(Debug, Clone, Copy)]
pub struct FillerBuffer {
    pub buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    gdpa: vk::PFN_vkGetDeviceProcAddr,
}

/// The memory type for the filler among `allowed` (`VkMemoryRequirements::memoryTypeBits`):
/// host-visible and coherent so it can be zeroed without a queue submission (every buffer's
/// `memoryTypeBits` has one, Vulkan spec "VkMemoryRequirements"), device-local where possible.
pub fn memory_type(props: &vk::PhysicalDeviceMemoryProperties, allowed: u32) -> Option<u32> {
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let types = &props.memory_types[..props.memory_type_count.min(vk::MAX_MEMORY_TYPES as u32) as usize];
    let fits = |want: vk::MemoryPropertyFlags| {
        types.iter().enumerate().position(|(i, t)| allowed & (1 << i) != 0 && t.property_flags.contains(want)).map(|i| i as u32)
    };
    fits(host | vk::MemoryPropertyFlags::DEVICE_LOCAL).or_else(|| fits(host))
}

/// The next layer's commands the filler needs.
struct Commands {
    create: vk::PFN_vkCreateBuffer,
    destroy: vk::PFN_vkDestroyBuffer,
    requirements: vk::PFN_vkGetBufferMemoryRequirements,
    allocate: vk::PFN_vkAllocateMemory,
    free: vk::PFN_vkFreeMemory,
    bind: vk::PFN_vkBindBufferMemory,
    map: vk::PFN_vkMapMemory,
    unmap: vk::PFN_vkUnmapMemory,
}

impl Commands {
    unsafe fn load(gdpa: vk::PFN_vkGetDeviceProcAddr, d: vk::Device) -> Option<Commands> {
        Some(Commands {
            create: load_device(gdpa, d, c"vkCreateBuffer")?,
            destroy: load_device(gdpa, d, c"vkDestroyBuffer")?,
            requirements: load_device(gdpa, d, c"vkGetBufferMemoryRequirements")?,
            allocate: load_device(gdpa, d, c"vkAllocateMemory")?,
            free: load_device(gdpa, d, c"vkFreeMemory")?,
            bind: load_device(gdpa, d, c"vkBindBufferMemory")?,
            map: load_device(gdpa, d, c"vkMapMemory")?,
            unmap: load_device(gdpa, d, c"vkUnmapMemory")?,
        })
    }
}

impl FillerBuffer {
    /// Creates the zeroed filler through the next layer (so no layer hook sees it).
    ///
    /// # Safety
    /// `device` is live, `gdpa` its next GetDeviceProcAddr, `props` its physical device's.
    pub unsafe fn create(device: vk::Device, gdpa: vk::PFN_vkGetDeviceProcAddr, props: &vk::PhysicalDeviceMemoryProperties) -> Result<FillerBuffer, String> {
        let c = Commands::load(gdpa, device).ok_or("the next layer lacks buffer or memory commands")?;
        let ci = vk::BufferCreateInfo {
            size: FILLER_BYTES,
            usage: vk::BufferUsageFlags::STORAGE_BUFFER,
            sharing_mode: vk::SharingMode::EXCLUSIVE,
            ..Default::default()
        };
        let mut buffer = vk::Buffer::null();
        let r = (c.create)(device, &ci, std::ptr::null(), &mut buffer);
        if r != vk::Result::SUCCESS {
            return Err(format!("vkCreateBuffer (filler) returned {r:?}"));
        }
        let made = FillerBuffer { buffer, memory: vk::DeviceMemory::null(), gdpa };
        match made.back(device, &c, props) {
            Ok(memory) => Ok(FillerBuffer { memory, ..made }),
            Err(why) => {
                (c.destroy)(device, buffer, std::ptr::null());
                Err(why)
            }
        }
    }

    /// Allocates, binds and zeroes the memory behind `self.buffer`.
    unsafe fn back(&self, device: vk::Device, c: &Commands, props: &vk::PhysicalDeviceMemoryProperties) -> Result<vk::DeviceMemory, String> {
        let mut req = vk::MemoryRequirements::default();
        (c.requirements)(device, self.buffer, &mut req);
        let index = memory_type(props, req.memory_type_bits).ok_or("no host-visible coherent memory type for a storage buffer")?;
        let ai = vk::MemoryAllocateInfo { allocation_size: req.size, memory_type_index: index, ..Default::default() };
        let mut memory = vk::DeviceMemory::null();
        let r = (c.allocate)(device, &ai, std::ptr::null(), &mut memory);
        if r != vk::Result::SUCCESS {
            return Err(format!("vkAllocateMemory (filler, {} bytes) returned {r:?}", req.size));
        }
        let mut data: *mut c_void = std::ptr::null_mut();
        let mut r = (c.bind)(device, self.buffer, memory, 0);
        if r == vk::Result::SUCCESS {
            r = (c.map)(device, memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty(), &mut data);
        }
        if r != vk::Result::SUCCESS || data.is_null() {
            (c.free)(device, memory, std::ptr::null());
            return Err(format!("binding or mapping the filler's memory returned {r:?}"));
        }
        std::ptr::write_bytes(data.cast::<u8>(), 0, req.size as usize);
        (c.unmap)(device, memory);
        Ok(memory)
    }

    /// # Safety
    /// `device` is the live device the filler was created on; no pending work uses it.
    pub unsafe fn destroy(&self, device: vk::Device) {
        if let Some(c) = Commands::load(self.gdpa, device) {
            (c.destroy)(device, self.buffer, std::ptr::null());
            (c.free)(device, self.memory, std::ptr::null());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(flags: &[vk::MemoryPropertyFlags]) -> vk::PhysicalDeviceMemoryProperties {
        let mut p = vk::PhysicalDeviceMemoryProperties { memory_type_count: flags.len() as u32, ..Default::default() };
        for (t, f) in p.memory_types.iter_mut().zip(flags) {
            t.property_flags = *f;
        }
        p
    }

    #[test]
    fn memory_type_prefers_device_local_host_visible_and_respects_allowed_bits() {
        type F = vk::MemoryPropertyFlags;
        let host = F::HOST_VISIBLE | F::HOST_COHERENT;
        let p = props(&[F::DEVICE_LOCAL, host | F::HOST_CACHED, host | F::DEVICE_LOCAL, host]);
        assert_eq!(memory_type(&p, 0b1111), Some(2));
        assert_eq!(memory_type(&p, 0b1011), Some(1), "type 2 not allowed: first host-visible coherent");
        assert_eq!(memory_type(&p, 0b0001), None, "device-local only cannot be zeroed from the host");
        assert_eq!(memory_type(&props(&[F::HOST_VISIBLE]), 1), None, "not coherent");
    }
}
