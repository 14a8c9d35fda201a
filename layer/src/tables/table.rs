//! The layer-owned descriptor table: one descriptor set at the reserved index
//! `maxBoundDescriptorSets - 1` holding the arrays of every user active on the device —
//! bindless textures (sampled images, storage images, samplers: bindings 0/1/2) and buffer
//! device addresses (a storage-buffer array: binding 3). [`TableConfig`] says which; this module
//! creates and destroys the set layout, pool and set through next-layer pointers.
//!
//! Every slot that is not live holds a harmless filler, so that a garbage handle or address
//! (clamped into the table by the lowering) never reads an unwritten descriptor: a null
//! descriptor in the image and buffer arrays (`nullDescriptor` of VK_EXT_robustness2, when the
//! device has it: reads return zero, writes are discarded; a null storage buffer has length 0)
//! and a layer-owned default sampler (nearest, clamp-to-edge) in the sampler array. The fillers
//! are written into all slots at creation and written back into a slot when it is released.
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
    /// they are left unwritten / stale, and a garbage handle naming one is undefined behaviour).
    pub null_descriptor: bool,
}

impl Table {
    /// Creates the table on `device`.
    ///
    /// # Safety
    /// `device` is a live device and `next` holds its next-layer commands.
    /// `null_descriptor`: the device was created with `nullDescriptor` enabled.
    pub unsafe fn create(device: vk::Device, next: &Next, config: TableConfig, name: &str, null_descriptor: bool) -> Result<Table, String> {
        let (Some(create_dsl), Some(destroy_dsl), Some(create_pool), Some(destroy_pool), Some(alloc), Some(update), Some(create_sampler), Some(_)) = (
            next.create_descriptor_set_layout,
            next.destroy_descriptor_set_layout,
            next.create_descriptor_pool,
            next.destroy_descriptor_pool,
            next.allocate_descriptor_sets,
            next.update_descriptor_sets,
            next.create_sampler,
            next.destroy_sampler, // Table::destroy needs it
        ) else {
            return Err("the next layer lacks descriptor commands".into());
        };
        let bindings = config.bindings();
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
        let mut layout = vk::DescriptorSetLayout::null();
        let r = create_dsl(device, &ci, std::ptr::null(), &mut layout);
        if r != vk::Result::SUCCESS {
            return Err(format!("vkCreateDescriptorSetLayout (table) returned {r:?}"));
        }
        let empty_ci = vk::DescriptorSetLayoutCreateInfo::default();
        let mut empty_layout = vk::DescriptorSetLayout::null();
        let r = create_dsl(device, &empty_ci, std::ptr::null(), &mut empty_layout);
        if r != vk::Result::SUCCESS {
            destroy_dsl(device, layout, std::ptr::null());
            return Err(format!("vkCreateDescriptorSetLayout (padding) returned {r:?}"));
        }
        let sizes: Vec<vk::DescriptorPoolSize> =
            bindings.iter().map(|b| vk::DescriptorPoolSize { ty: b.descriptor_type, descriptor_count: b.descriptor_count }).collect();
        let pool_ci = vk::DescriptorPoolCreateInfo {
            flags: vk::DescriptorPoolCreateFlags::UPDATE_AFTER_BIND,
            max_sets: 1,
            pool_size_count: sizes.len() as u32,
            p_pool_sizes: sizes.as_ptr(),
            ..Default::default()
        };
        let mut pool = vk::DescriptorPool::null();
        let r = create_pool(device, &pool_ci, std::ptr::null(), &mut pool);
        if r != vk::Result::SUCCESS {
            destroy_dsl(device, layout, std::ptr::null());
            destroy_dsl(device, empty_layout, std::ptr::null());
            return Err(format!("vkCreateDescriptorPool returned {r:?}"));
        }
        let alloc_info = vk::DescriptorSetAllocateInfo {
            descriptor_pool: pool,
            descriptor_set_count: 1,
            p_set_layouts: &layout,
            ..Default::default()
        };
        let mut set = vk::DescriptorSet::null();
        let r = alloc(device, &alloc_info, &mut set);
        if r != vk::Result::SUCCESS {
            destroy_pool(device, pool, std::ptr::null());
            destroy_dsl(device, layout, std::ptr::null());
            destroy_dsl(device, empty_layout, std::ptr::null());
            return Err(format!("vkAllocateDescriptorSets returned {r:?}"));
        }
        let mut default_sampler = vk::Sampler::null();
        if config.arrays.iter().any(|a| a.ty == vk::DescriptorType::SAMPLER) {
            let sampler_ci = default_sampler_info();
            let r = create_sampler(device, &sampler_ci, std::ptr::null(), &mut default_sampler);
            if r != vk::Result::SUCCESS {
                destroy_pool(device, pool, std::ptr::null());
                destroy_dsl(device, layout, std::ptr::null());
                destroy_dsl(device, empty_layout, std::ptr::null());
                return Err(format!("vkCreateSampler (default sampler) returned {r:?}"));
            }
        }
        let table = Table { config: config.clone(), layout, empty_layout, pool, set, default_sampler, null_descriptor };
        // Fillers in every slot, slot 0 included: one write per array (no other thread knows
        // the set yet).
        for b in &bindings {
            table.filler_write(b.binding, b.descriptor_type, 0, b.descriptor_count, |w| update(device, 1, w, 0, std::ptr::null()));
        }
        log_info!(
            DESCRIPTOR_TABLE,
            "tables: device '{name}': descriptor table at set {}: {}; free slots hold {}",
            config.set,
            config.describe(),
            if null_descriptor {
                "null descriptors (the default sampler in the sampler array)"
            } else {
                "no image/buffer descriptor (nullDescriptor unavailable: a garbage handle or address is undefined behaviour)"
            }
        );
        Ok(table)
    }

    /// The write of the filler of `ty` into `count` slots from `first` of `binding`, handed to
    /// `write` (nothing where there is no filler: image/buffer arrays without `nullDescriptor`).
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
            if !self.null_descriptor {
                return;
            }
            // VUID-VkDescriptorBufferInfo-buffer-02999: a null buffer needs nullDescriptor; its
            // offset must be 0 and its range VK_WHOLE_SIZE.
            let infos = vec![vk::DescriptorBufferInfo { buffer: vk::Buffer::null(), offset: 0, range: vk::WHOLE_SIZE }; count as usize];
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
