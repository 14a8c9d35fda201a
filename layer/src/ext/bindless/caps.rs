//! What a physical device allows for the bindless-texture arrays of the descriptor table (a
//! pure function of its limits and features).
use crate::tables::budget;
use crate::tables::features::{self, Indexing};
use crate::tables::table::{SAMPLED_BINDING, SAMPLER_BINDING, STORAGE_BINDING};
use ash::vk;
use shader_rewrite::BindlessTable;

/// Default array sizes; each is further capped by half of the device's update-after-bind limits
/// so that layouts with up to half of them still get the table beside their own descriptors
/// (the reported limits leave room for them: crate::descriptor_limits).
pub const DEFAULT_SAMPLED_IMAGES: u32 = 65536;
pub const DEFAULT_STORAGE_IMAGES: u32 = 65536;
pub const DEFAULT_SAMPLERS: u32 = 4096;

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

/// The descriptor-indexing bits the image arrays and the lowered shaders need.
pub const NEEDED_FEATURES: [Indexing; 6] = [
    Indexing::SampledImageUpdateAfterBind,
    Indexing::StorageImageUpdateAfterBind,
    Indexing::UpdateUnusedWhilePending,
    Indexing::PartiallyBound,
    Indexing::SampledImageNonUniform,
    Indexing::StorageImageNonUniform,
];

/// Decides the table for a device, or why there cannot be one.
pub fn caps(
    limits: &vk::PhysicalDeviceLimits,
    di: &vk::PhysicalDeviceDescriptorIndexingProperties,
    features: &vk::PhysicalDeviceDescriptorIndexingFeatures,
    core: &vk::PhysicalDeviceFeatures,
) -> Result<Caps, String> {
    features::table_room(&NEEDED_FEATURES, features, limits, "bindless pipelines")?;
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
    // Powers of two: a shader then keeps a handle's slot inside an array with one AND
    // (shader_rewrite's bindless materialize::index) instead of a UMin clamp.
    let (sampled, storage, samplers) = (budget::array_size(sampled), budget::array_size(storage), budget::array_size(samplers));
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
        assert_eq!((c.table.sampled_images_count, c.table.storage_images_count, c.table.samplers_count), (65536, 256, 1024), "500 storage images rounded down to a power of two");
        assert_eq!(c.limits.per_stage, [2048, 500_000, 1000, 0, 500_000]);
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
