//! The layer-owned descriptor table: one descriptor set at the reserved index
//! `maxBoundDescriptorSets - 1` holding the arrays of every user active on the device —
//! bindless textures (sampled images, storage images, samplers: bindings 0/1/2) and buffer
//! device addresses (a storage-buffer array: binding 3). [`TableConfig`] says which; this module
//! creates and destroys the set layout, pool and set through next-layer pointers.
//!
//! Every slot that is not live holds a harmless filler, so that a garbage handle or address
//! (kept inside the table by the lowering: masked or clamped) never reads an unwritten
//! descriptor: a null descriptor in the image and buffer arrays (`nullDescriptor` of
//! VK_EXT_robustness2, when the device has it: reads return zero, writes are discarded; a null
//! storage buffer has length 0; without it, a small layer-owned buffer in the storage-buffer
//! array, `filler_buffer.rs`, and nothing in the image arrays) and a layer-owned default sampler
//! (nearest, clamp-to-edge) in the sampler array. The fillers are written into all slots at
//! creation and written back into a slot when it is released.
use super::filler_buffer::FillerBuffer;
use super::Next;
use crate::{log_error, log_info};
use ash::vk;

/// Bindings inside the table's set (fixed contract with the shader passes: bindless textures use
/// 0-2, buffer device addresses 3).
pub const SAMPLED_BINDING: u32 = 0;
pub const STORAGE_BINDING: u32 = 1;
pub const SAMPLER_BINDING: u32 = 2;
pub const BUFFER_BINDING: u32 = 3;

/// One array of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableArray {
    pub binding: u32,
    pub ty: vk::DescriptorType,
    pub count: u32,
}

/// Which arrays one device's table holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableConfig {
    /// The reserved set index (`maxBoundDescriptorSets - 1`).
    pub set: u32,
    /// Every user's arrays, in binding order.
    pub arrays: Vec<TableArray>,
}

impl TableConfig {
    /// The table's bindings (all stages), in binding order.
    pub fn bindings(&self) -> Vec<vk::DescriptorSetLayoutBinding<'static>> {
        let mut arrays = self.arrays.clone();
        arrays.sort_by_key(|a| a.binding);
        arrays
            .iter()
            .map(|a| vk::DescriptorSetLayoutBinding {
                binding: a.binding,
                descriptor_type: a.ty,
                descriptor_count: a.count,
                stage_flags: vk::ShaderStageFlags::ALL,
                ..Default::default()
            })
            .collect()
    }

    /// Total descriptors (what the table's pool takes from the all-pools budget).
    pub fn descriptor_count(&self) -> u32 {
        self.arrays.iter().map(|a| a.count).sum()
    }

    /// One line for the log.
    pub fn describe(&self) -> String {
        let kind = |ty| match ty {
            vk::DescriptorType::SAMPLED_IMAGE => "sampled images",
            vk::DescriptorType::STORAGE_IMAGE => "storage images",
            vk::DescriptorType::SAMPLER => "samplers",
            vk::DescriptorType::STORAGE_BUFFER => "storage buffers",
            _ => "descriptors",
        };
        self.bindings().iter().map(|b| format!("{} {} (binding {})", b.descriptor_count, kind(b.descriptor_type), b.binding)).collect::<Vec<_>>().join(", ")
    }
}

/// The Vulkan objects of one device's table.
#[derive(Debug, Clone)]
pub struct Table {
    pub config: TableConfig,
    pub layout: vk::DescriptorSetLayout,
    /// Zero bindings: fills the set indices between the application's sets and the table.
    pub empty_layout: vk::DescriptorSetLayout,
    pub pool: vk::DescriptorPool,
    pub set: vk::DescriptorSet,
    /// Layer-owned sampler (nearest, clamp-to-edge) in every free sampler slot (null when the
    /// table has no image arrays).
    pub default_sampler: vk::Sampler,
    /// `nullDescriptor` is enabled: free image and buffer slots hold null descriptors (else
    /// image slots are left unwritten / stale, and a garbage handle naming one is undefined
    /// behaviour).
    pub null_descriptor: bool,
    /// Without `nullDescriptor`: the filler of the free storage-buffer slots.
    filler_buffer: Option<FillerBuffer>,
}

/// What fills the free slots of a device's table.
pub enum FreeSlots {
    /// `nullDescriptor` is enabled on the device.
    Null,
    /// It is not: the storage-buffer array gets a [`FillerBuffer`], made in memory of this
    /// physical device.
    Filler(Box<vk::PhysicalDeviceMemoryProperties>),
}

impl Table {
    /// Creates the table on `device`.
    ///
    /// # Safety
    /// `device` is a live device and `next` holds its next-layer commands.
    /// `gdpa` is its next GetDeviceProcAddr.
    pub unsafe fn create(device: vk::Device, gdpa: vk::PFN_vkGetDeviceProcAddr, next: &Next, config: TableConfig, name: &str, free: FreeSlots) -> Result<Table, String> {
        let (Some(update), Some(_), Some(_), Some(_)) =
            (next.update_descriptor_sets, next.destroy_descriptor_pool, next.destroy_descriptor_set_layout, next.destroy_sampler)
        else {
            return Err("the next layer lacks descriptor commands".into());
        };
        let null_descriptor = matches!(free, FreeSlots::Null);
        let mut table = Table {
            config,
            layout: vk::DescriptorSetLayout::null(),
            empty_layout: vk::DescriptorSetLayout::null(),
            pool: vk::DescriptorPool::null(),
            set: vk::DescriptorSet::null(),
            default_sampler: vk::Sampler::null(),
            null_descriptor,
            filler_buffer: None,
        };
        // On failure, what was made so far goes (destroying a null handle is a no-op).
        if let Err(why) = table.make_objects(device, gdpa, next, free) {
            table.destroy(device, next);
            return Err(why);
        }
        // Fillers in every slot, slot 0 included: one write per array (no other thread knows
        // the set yet).
        for b in &table.config.bindings() {
            table.filler_write(b.binding, b.descriptor_type, 0, b.descriptor_count, |w| update(device, 1, w, 0, std::ptr::null()));
        }
        log_info!(
            DESCRIPTOR_TABLE,
            "tables: device '{name}': descriptor table at set {}: {}; free slots hold {}",
            table.config.set,
            table.config.describe(),
            match (null_descriptor, table.filler_buffer.is_some()) {
                (true, _) => "null descriptors (the default sampler in the sampler array)",
                (false, true) => "a layer-owned 256-byte buffer (storage-buffer array; nullDescriptor unavailable; image slots stay unwritten: a garbage handle is undefined behaviour)",
                (false, false) => "no image descriptor (nullDescriptor unavailable: a garbage handle is undefined behaviour)",
            }
        );
        Ok(table)
    }

    /// Makes the set layouts, the pool and set, the default sampler (with a sampler array) and
    /// the filler buffer (with a storage-buffer array and `free` = a filler), recording each
    /// in `self` as it is made.
    unsafe fn make_objects(&mut self, device: vk::Device, gdpa: vk::PFN_vkGetDeviceProcAddr, next: &Next, free: FreeSlots) -> Result<(), String> {
        let (Some(create_dsl), Some(create_pool), Some(alloc), Some(create_sampler)) =
            (next.create_descriptor_set_layout, next.create_descriptor_pool, next.allocate_descriptor_sets, next.create_sampler)
        else {
            return Err("the next layer lacks descriptor commands".into());
        };
        let check = |r: vk::Result, what: &str| if r == vk::Result::SUCCESS { Ok(()) } else { Err(format!("{what} returned {r:?}")) };
        let bindings = self.config.bindings();
        let flags = vec![
            vk::DescriptorBindingFlags::UPDATE_AFTER_BIND
                | vk::DescriptorBindingFlags::PARTIALLY_BOUND
                | vk::DescriptorBindingFlags::UPDATE_UNUSED_WHILE_PENDING;
            bindings.len()
        ];
        let flags_info = vk::DescriptorSetLayoutBindingFlagsCreateInfo {
            binding_count: flags.len() as u32,
            p_binding_flags: flags.as_ptr(),
            ..Default::default()
        };
        let ci = vk::DescriptorSetLayoutCreateInfo {
            p_next: &flags_info as *const _ as *const std::ffi::c_void,
            flags: vk::DescriptorSetLayoutCreateFlags::UPDATE_AFTER_BIND_POOL,
            binding_count: bindings.len() as u32,
            p_bindings: bindings.as_ptr(),
            ..Default::default()
        };
        check(create_dsl(device, &ci, std::ptr::null(), &mut self.layout), "vkCreateDescriptorSetLayout (table)")?;
        let empty_ci = vk::DescriptorSetLayoutCreateInfo::default();
        check(create_dsl(device, &empty_ci, std::ptr::null(), &mut self.empty_layout), "vkCreateDescriptorSetLayout (padding)")?;
        let sizes: Vec<vk::DescriptorPoolSize> =
            bindings.iter().map(|b| vk::DescriptorPoolSize { ty: b.descriptor_type, descriptor_count: b.descriptor_count }).collect();
        let pool_ci = vk::DescriptorPoolCreateInfo {
            flags: vk::DescriptorPoolCreateFlags::UPDATE_AFTER_BIND,
            max_sets: 1,
            pool_size_count: sizes.len() as u32,
            p_pool_sizes: sizes.as_ptr(),
            ..Default::default()
        };
        check(create_pool(device, &pool_ci, std::ptr::null(), &mut self.pool), "vkCreateDescriptorPool")?;
        let alloc_info = vk::DescriptorSetAllocateInfo {
            descriptor_pool: self.pool,
            descriptor_set_count: 1,
            p_set_layouts: &self.layout,
            ..Default::default()
        };
        check(alloc(device, &alloc_info, &mut self.set), "vkAllocateDescriptorSets")?;
        let has = |ty| self.config.arrays.iter().any(|a| a.ty == ty);
        if has(vk::DescriptorType::SAMPLER) {
            check(create_sampler(device, &default_sampler_info(), std::ptr::null(), &mut self.default_sampler), "vkCreateSampler (default sampler)")?;
        }
        if let (FreeSlots::Filler(props), true) = (free, has(vk::DescriptorType::STORAGE_BUFFER)) {
            let f = FillerBuffer::create(device, gdpa, &props).map_err(|why| format!("the filler of the storage-buffer slots: {why}"))?;
            self.filler_buffer = Some(f);
        }
        Ok(())
    }

    /// The write of the filler of `ty` into `count` slots from `first` of `binding`, handed to
    /// `write` (nothing where there is no filler: image arrays without `nullDescriptor`).
    pub fn filler_write(&self, binding: u32, ty: vk::DescriptorType, first: u32, count: u32, write: impl FnOnce(&vk::WriteDescriptorSet)) {
        let mut w = vk::WriteDescriptorSet {
            dst_set: self.set,
            dst_binding: binding,
            dst_array_element: first,
            descriptor_count: count,
            descriptor_type: ty,
            ..Default::default()
        };
        if ty == vk::DescriptorType::STORAGE_BUFFER {
            // VUID-VkDescriptorBufferInfo-buffer-02999: a null buffer needs nullDescriptor; its
            // offset must be 0 and its range VK_WHOLE_SIZE.
            let buffer = match (self.null_descriptor, self.filler_buffer) {
                (true, _) => vk::Buffer::null(),
                (false, Some(f)) => f.buffer,
                (false, None) => return,
            };
            let infos = vec![vk::DescriptorBufferInfo { buffer, offset: 0, range: vk::WHOLE_SIZE }; count as usize];
            w.p_buffer_info = infos.as_ptr();
            return write(&w);
        }
        let Some(info) = self.filler(ty) else { return };
        let infos = vec![info; count as usize];
        w.p_image_info = infos.as_ptr();
        write(&w)
    }

    /// The filler of a free slot of an image or sampler array of `ty`: a null image descriptor
    /// (only with `nullDescriptor`) or the default sampler.
    fn filler(&self, ty: vk::DescriptorType) -> Option<vk::DescriptorImageInfo> {
        match ty {
            vk::DescriptorType::SAMPLER => Some(vk::DescriptorImageInfo { sampler: self.default_sampler, ..Default::default() }),
            vk::DescriptorType::SAMPLED_IMAGE if self.null_descriptor => Some(vk::DescriptorImageInfo {
                image_view: vk::ImageView::null(),
                image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                ..Default::default()
            }),
            vk::DescriptorType::STORAGE_IMAGE if self.null_descriptor => {
                Some(vk::DescriptorImageInfo { image_view: vk::ImageView::null(), image_layout: vk::ImageLayout::GENERAL, ..Default::default() })
            }
            _ => None,
        }
    }

    /// # Safety
    /// `device` is the live device the table was created on; no pending work uses it.
    pub unsafe fn destroy(&self, device: vk::Device, next: &Next) {
        if let Some(f) = &self.filler_buffer {
            f.destroy(device);
        }
        match (next.destroy_descriptor_pool, next.destroy_descriptor_set_layout, next.destroy_sampler) {
            (Some(dp), Some(dl), Some(ds)) => {
                dp(device, self.pool, std::ptr::null());
                dl(device, self.layout, std::ptr::null());
                dl(device, self.empty_layout, std::ptr::null());
                if self.default_sampler != vk::Sampler::null() {
                    ds(device, self.default_sampler, std::ptr::null());
                }
            }
            _ => log_error!(LOADER_INTERFACE, "tables: cannot destroy the descriptor table (next layer lacks the commands)"),
        }
    }
}

/// The default sampler: nearest, clamp-to-edge, no anisotropy / compare.
pub fn default_sampler_info() -> vk::SamplerCreateInfo<'static> {
    vk::SamplerCreateInfo {
        mag_filter: vk::Filter::NEAREST,
        min_filter: vk::Filter::NEAREST,
        mipmap_mode: vk::SamplerMipmapMode::NEAREST,
        address_mode_u: vk::SamplerAddressMode::CLAMP_TO_EDGE,
        address_mode_v: vk::SamplerAddressMode::CLAMP_TO_EDGE,
        address_mode_w: vk::SamplerAddressMode::CLAMP_TO_EDGE,
        max_lod: vk::LOD_CLAMP_NONE,
        border_color: vk::BorderColor::FLOAT_TRANSPARENT_BLACK,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_per_user() {
        type T = vk::DescriptorType;
        let a = |binding, ty, count| TableArray { binding, ty, count };
        let images = vec![a(0, T::SAMPLED_IMAGE, 65536), a(1, T::STORAGE_IMAGE, 65536), a(2, T::SAMPLER, 4096)];
        let both = TableConfig { set: 7, arrays: [vec![a(3, T::STORAGE_BUFFER, 1000)], images].concat() };
        let b = both.bindings();
        assert_eq!(b.iter().map(|b| (b.binding, b.descriptor_type)).collect::<Vec<_>>(), vec![
            (0, T::SAMPLED_IMAGE),
            (1, T::STORAGE_IMAGE),
            (2, T::SAMPLER),
            (3, T::STORAGE_BUFFER)
        ]);
        assert_eq!(both.descriptor_count(), 65536 + 65536 + 4096 + 1000);
        let buffers = TableConfig { set: 7, arrays: vec![a(3, T::STORAGE_BUFFER, 1000)] };
        assert_eq!(buffers.bindings().len(), 1);
        assert!(both.describe().contains("1000 storage buffers (binding 3)"), "{}", both.describe());
        assert!(both.describe().starts_with("65536 sampled images (binding 0)"), "{}", both.describe());
    }
}
