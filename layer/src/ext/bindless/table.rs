//! The layer-owned descriptor table: what a physical device allows ([`caps`], a pure function of
//! its limits and features), and creating / destroying the set layout, pool and set on a device
//! through next-layer pointers.
//!
//! Every slot that is not a live handle holds a harmless filler, so that a garbage handle
//! (clamped into the table by the lowering) never reads an unwritten descriptor: a null
//! descriptor in the image arrays (`nullDescriptor` of VK_EXT_robustness2, when the device has
//! it: reads return zero, writes are discarded) and a layer-owned default sampler (nearest,
//! clamp-to-edge) in the sampler array. The fillers are written into all slots (slot 0
//! included) at creation and written back into a slot when it is released.
use super::{budget, Next};
use crate::{log_error, log_info};
use ash::vk;
use shader_rewrite::BindlessTable;

/// Default array sizes; each is further capped by half of the device's update-after-bind limits
/// so that layouts with up to half of them still get the table beside their own descriptors
/// (the limits are reported unchanged: see budget.rs).
pub const DEFAULT_SAMPLED_IMAGES: u32 = 65536;
pub const DEFAULT_STORAGE_IMAGES: u32 = 65536;
pub const DEFAULT_SAMPLERS: u32 = 4096;
/// Bindings inside the table's set (fixed contract with the shader pass).
pub const SAMPLED_BINDING: u32 = 0;
pub const STORAGE_BINDING: u32 = 1;
pub const SAMPLER_BINDING: u32 = 2;

/// What the physical device offers for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The driver's limits the table counts against (the table lives at set
    /// `maxBoundDescriptorSets - 1`).
    pub limits: budget::Limits,
    pub table: BindlessTable,
    /// Core `shaderSampledImageArrayDynamicIndexing` / `shaderStorageImageArrayDynamicIndexing`
    /// are supported (turned on at device creation; the lowering indexes the arrays).
    pub sampled_dynamic_indexing: bool,
    pub storage_dynamic_indexing: bool,
}

/// The descriptor-indexing bits the table and the lowered shaders need.
pub const NEEDED_FEATURES: [&str; 6] = [
    "descriptorBindingSampledImageUpdateAfterBind",
    "descriptorBindingStorageImageUpdateAfterBind",
    "descriptorBindingUpdateUnusedWhilePending",
    "descriptorBindingPartiallyBound",
    "shaderSampledImageArrayNonUniformIndexing",
    "shaderStorageImageArrayNonUniformIndexing",
];

/// The six needed bits of a `VkPhysicalDeviceDescriptorIndexingFeatures`, in [`NEEDED_FEATURES`]
/// order.
pub fn needed_bits(f: &vk::PhysicalDeviceDescriptorIndexingFeatures) -> [vk::Bool32; 6] {
    [
        f.descriptor_binding_sampled_image_update_after_bind,
        f.descriptor_binding_storage_image_update_after_bind,
        f.descriptor_binding_update_unused_while_pending,
        f.descriptor_binding_partially_bound,
        f.shader_sampled_image_array_non_uniform_indexing,
        f.shader_storage_image_array_non_uniform_indexing,
    ]
}

/// Decides the table for a device, or why there cannot be one.
pub fn caps(
    limits: &vk::PhysicalDeviceLimits,
    di: &vk::PhysicalDeviceDescriptorIndexingProperties,
    features: &vk::PhysicalDeviceDescriptorIndexingFeatures,
    core: &vk::PhysicalDeviceFeatures,
) -> Result<Caps, String> {
    let missing: Vec<&str> =
        NEEDED_FEATURES.iter().zip(needed_bits(features)).filter(|(_, b)| *b == vk::FALSE).map(|(n, _)| *n).collect();
    if !missing.is_empty() {
        return Err(format!("the device lacks descriptor-indexing features {}", missing.join(", ")));
    }
    // The table takes the last set of bindless pipelines' layouts; they need one of their own.
    if limits.max_bound_descriptor_sets < 2 {
        return Err(format!("maxBoundDescriptorSets is {} (bindless pipelines need one set beside the table)", limits.max_bound_descriptor_sets));
    }
    let half = |x: u32| x / 2;
    // Sampled + storage images share maxPerStageUpdateAfterBindResources: a quarter each.
    let res = di.max_per_stage_update_after_bind_resources / 4;
    let all = di.max_update_after_bind_descriptors_in_all_pools / 2;
    let sampled = DEFAULT_SAMPLED_IMAGES
        .min(half(di.max_descriptor_set_update_after_bind_sampled_images))
        .min(half(di.max_per_stage_descriptor_update_after_bind_sampled_images))
        .min(res)
        .min(all / 3)
        .min(1 << BindlessTable::IMAGE_SLOT_BITS);
    let storage = DEFAULT_STORAGE_IMAGES
        .min(half(di.max_descriptor_set_update_after_bind_storage_images))
        .min(half(di.max_per_stage_descriptor_update_after_bind_storage_images))
        .min(res)
        .min(all / 3)
        .min(1 << BindlessTable::IMAGE_SLOT_BITS);
    let samplers = DEFAULT_SAMPLERS
        .min(half(di.max_descriptor_set_update_after_bind_samplers))
        .min(half(di.max_per_stage_descriptor_update_after_bind_samplers))
        .min(all / 3)
        .min(1 << BindlessTable::SAMPLER_SLOT_BITS);
    if sampled < 2 || storage < 2 || samplers < 2 {
        return Err(format!(
            "update-after-bind descriptor limits too small for a table (sampled images {sampled}, storage images {storage}, samplers {samplers})"
        ));
    }
    Ok(Caps {
        limits: budget::Limits::new(limits, di),
        table: BindlessTable {
            set: limits.max_bound_descriptor_sets - 1,
            sampled_images_binding: SAMPLED_BINDING,
            sampled_images_count: sampled,
            storage_images_binding: STORAGE_BINDING,
            storage_images_count: storage,
            samplers_binding: SAMPLER_BINDING,
            samplers_count: samplers,
        },
        sampled_dynamic_indexing: core.shader_sampled_image_array_dynamic_indexing != vk::FALSE,
        storage_dynamic_indexing: core.shader_storage_image_array_dynamic_indexing != vk::FALSE,
    })
}

/// The one limit the layer lowers: the table's pool takes its descriptors from
/// `maxUpdateAfterBindDescriptorsInAllPools`, a device-wide budget of every update-after-bind
/// pool (vkCreateDescriptorPool may fail with VK_ERROR_FRAGMENTATION beyond it). Every other
/// limit is the driver's: the table only counts against the layouts it is appended to, and it
/// is appended only where it fits (budget.rs).
pub fn reserve_pool_descriptors(t: &BindlessTable, all_pools: u32) -> u32 {
    all_pools.saturating_sub(t.sampled_images_count + t.storage_images_count + t.samplers_count)
}

/// The Vulkan objects of one device's table.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub config: BindlessTable,
    pub layout: vk::DescriptorSetLayout,
    /// Zero bindings: fills the set indices between the application's sets and the table.
    pub empty_layout: vk::DescriptorSetLayout,
    pub pool: vk::DescriptorPool,
    pub set: vk::DescriptorSet,
    /// Layer-owned sampler (nearest, clamp-to-edge) in every free sampler slot.
    pub default_sampler: vk::Sampler,
    /// `nullDescriptor` is enabled: free image slots hold null descriptors (else they are left
    /// unwritten / stale, and a garbage handle naming one is undefined behaviour).
    pub null_descriptor: bool,
}

impl Table {
    /// Creates the table on `device`.
    ///
    /// # Safety
    /// `device` is a live device and `next` holds its next-layer commands.
    /// `null_descriptor`: the device was created with `nullDescriptor` enabled.
    pub unsafe fn create(device: vk::Device, next: &Next, config: BindlessTable, name: &str, null_descriptor: bool) -> Result<Table, String> {
        let (
            Some(create_dsl),
            Some(destroy_dsl),
            Some(create_pool),
            Some(destroy_pool),
            Some(alloc),
            Some(update),
            Some(create_sampler),
            Some(destroy_sampler),
        ) = (
            next.create_descriptor_set_layout,
            next.destroy_descriptor_set_layout,
            next.create_descriptor_pool,
            next.destroy_descriptor_pool,
            next.allocate_descriptor_sets,
            next.update_descriptor_sets,
            next.create_sampler,
            next.destroy_sampler,
        )
        else {
            return Err("the next layer lacks descriptor commands".into());
        };
        let stages = vk::ShaderStageFlags::ALL;
        let bindings = [
            vk::DescriptorSetLayoutBinding {
                binding: SAMPLED_BINDING,
                descriptor_type: vk::DescriptorType::SAMPLED_IMAGE,
                descriptor_count: config.sampled_images_count,
                stage_flags: stages,
                ..Default::default()
            },
            vk::DescriptorSetLayoutBinding {
                binding: STORAGE_BINDING,
                descriptor_type: vk::DescriptorType::STORAGE_IMAGE,
                descriptor_count: config.storage_images_count,
                stage_flags: stages,
                ..Default::default()
            },
            vk::DescriptorSetLayoutBinding {
                binding: SAMPLER_BINDING,
                descriptor_type: vk::DescriptorType::SAMPLER,
                descriptor_count: config.samplers_count,
                stage_flags: stages,
                ..Default::default()
            },
        ];
        let flag = vk::DescriptorBindingFlags::UPDATE_AFTER_BIND
            | vk::DescriptorBindingFlags::PARTIALLY_BOUND
            | vk::DescriptorBindingFlags::UPDATE_UNUSED_WHILE_PENDING;
        let flags = [flag; 3];
        let flags_info = vk::DescriptorSetLayoutBindingFlagsCreateInfo {
            binding_count: 3,
            p_binding_flags: flags.as_ptr(),
            ..Default::default()
        };
        let ci = vk::DescriptorSetLayoutCreateInfo {
            p_next: &flags_info as *const _ as *const std::ffi::c_void,
            flags: vk::DescriptorSetLayoutCreateFlags::UPDATE_AFTER_BIND_POOL,
            binding_count: 3,
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
        let sizes = [
            vk::DescriptorPoolSize { ty: vk::DescriptorType::SAMPLED_IMAGE, descriptor_count: config.sampled_images_count },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_IMAGE, descriptor_count: config.storage_images_count },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::SAMPLER, descriptor_count: config.samplers_count },
        ];
        let pool_ci = vk::DescriptorPoolCreateInfo {
            flags: vk::DescriptorPoolCreateFlags::UPDATE_AFTER_BIND,
            max_sets: 1,
            pool_size_count: 3,
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
        let sampler_ci = default_sampler_info();
        let mut default_sampler = vk::Sampler::null();
        let r = create_sampler(device, &sampler_ci, std::ptr::null(), &mut default_sampler);
        if r != vk::Result::SUCCESS {
            destroy_pool(device, pool, std::ptr::null());
            destroy_dsl(device, layout, std::ptr::null());
            destroy_dsl(device, empty_layout, std::ptr::null());
            return Err(format!("vkCreateSampler (default sampler) returned {r:?}"));
        }
        // (vkDestroySampler is checked above: Table::destroy needs it.)
        let _ = destroy_sampler;
        let table = Table { config, layout, empty_layout, pool, set, default_sampler, null_descriptor };
        // Fillers in every slot, slot 0 included: one write per array.
        let fill = |binding: u32, ty: vk::DescriptorType, count: u32| {
            let Some(info) = table.filler(ty) else { return };
            let infos = vec![info; count as usize];
            let w = vk::WriteDescriptorSet {
                dst_set: set,
                dst_binding: binding,
                dst_array_element: 0,
                descriptor_count: count,
                descriptor_type: ty,
                p_image_info: infos.as_ptr(),
                ..Default::default()
            };
            update(device, 1, &w, 0, std::ptr::null());
        };
        fill(config.sampled_images_binding, vk::DescriptorType::SAMPLED_IMAGE, config.sampled_images_count);
        fill(config.storage_images_binding, vk::DescriptorType::STORAGE_IMAGE, config.storage_images_count);
        fill(config.samplers_binding, vk::DescriptorType::SAMPLER, config.samplers_count);
        log_info!(
            "bindless: device '{name}': descriptor table at set {}: {} sampled images (binding {SAMPLED_BINDING}), {} storage images (binding {STORAGE_BINDING}), {} samplers (binding {SAMPLER_BINDING}); slot 0 of each is reserved; free slots hold {} and the default sampler",
            config.set,
            config.sampled_images_count,
            config.storage_images_count,
            config.samplers_count,
            if null_descriptor { "null image descriptors" } else { "no image descriptor (nullDescriptor unavailable: a garbage handle is undefined behaviour)" }
        );
        Ok(table)
    }

    /// The filler of a free slot of an array of `ty`: a null image descriptor (only with
    /// `nullDescriptor`) or the default sampler.
    pub fn filler(&self, ty: vk::DescriptorType) -> Option<vk::DescriptorImageInfo> {
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
                ds(device, self.default_sampler, std::ptr::null());
            }
            _ => log_error!("bindless: cannot destroy the descriptor table (next layer lacks the commands)"),
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

    fn all_features() -> vk::PhysicalDeviceDescriptorIndexingFeatures<'static> {
        vk::PhysicalDeviceDescriptorIndexingFeatures {
            descriptor_binding_sampled_image_update_after_bind: vk::TRUE,
            descriptor_binding_storage_image_update_after_bind: vk::TRUE,
            descriptor_binding_update_unused_while_pending: vk::TRUE,
            descriptor_binding_partially_bound: vk::TRUE,
            shader_sampled_image_array_non_uniform_indexing: vk::TRUE,
            shader_storage_image_array_non_uniform_indexing: vk::TRUE,
            ..Default::default()
        }
    }

    fn props(x: u32) -> vk::PhysicalDeviceDescriptorIndexingProperties<'static> {
        vk::PhysicalDeviceDescriptorIndexingProperties {
            max_per_stage_update_after_bind_resources: x,
            max_update_after_bind_descriptors_in_all_pools: u32::MAX,
            max_descriptor_set_update_after_bind_sampled_images: x,
            max_per_stage_descriptor_update_after_bind_sampled_images: x,
            max_descriptor_set_update_after_bind_storage_images: x,
            max_per_stage_descriptor_update_after_bind_storage_images: x,
            max_descriptor_set_update_after_bind_samplers: x,
            max_per_stage_descriptor_update_after_bind_samplers: x,
            ..Default::default()
        }
    }

    #[test]
    fn lavapipe_like_limits_give_defaults() {
        let limits = vk::PhysicalDeviceLimits { max_bound_descriptor_sets: 8, ..Default::default() };
        let c = caps(&limits, &props(1_000_000), &all_features(), &Default::default()).unwrap();
        assert_eq!(c.table.set, 7);
        assert_eq!((c.table.sampled_images_count, c.table.storage_images_count, c.table.samplers_count), (65536, 65536, 4096));
        assert_eq!((c.table.sampled_images_binding, c.table.storage_images_binding, c.table.samplers_binding), (0, 1, 2));
    }

    #[test]
    fn small_limits_are_halved() {
        let limits = vk::PhysicalDeviceLimits { max_bound_descriptor_sets: 4, ..Default::default() };
        let mut p = props(500_000);
        p.max_per_stage_descriptor_update_after_bind_samplers = 2048;
        p.max_per_stage_descriptor_update_after_bind_storage_images = 1000;
        let c = caps(&limits, &p, &all_features(), &Default::default()).unwrap();
        assert_eq!(c.table.set, 3);
        assert_eq!((c.table.sampled_images_count, c.table.storage_images_count, c.table.samplers_count), (65536, 500, 1024));
        assert_eq!(c.limits.per_stage, [2048, 500_000, 1000, 500_000]);
        assert_eq!(reserve_pool_descriptors(&c.table, 1_000_000), 1_000_000 - 65536 - 500 - 1024);
        assert_eq!(reserve_pool_descriptors(&c.table, 1000), 0);
    }

    #[test]
    fn missing_features_and_limits_are_reasons() {
        let limits = vk::PhysicalDeviceLimits { max_bound_descriptor_sets: 8, ..Default::default() };
        let mut f = all_features();
        f.descriptor_binding_partially_bound = vk::FALSE;
        let e = caps(&limits, &props(1_000_000), &f, &Default::default()).unwrap_err();
        assert!(e.contains("descriptorBindingPartiallyBound"), "{e}");
        let e = caps(&limits, &props(3), &all_features(), &Default::default()).unwrap_err();
        assert!(e.contains("too small"), "{e}");
        let one = vk::PhysicalDeviceLimits { max_bound_descriptor_sets: 1, ..Default::default() };
        assert!(caps(&one, &props(1_000_000), &all_features(), &Default::default()).is_err());
    }
}
