//! Room for layer-owned descriptors in the limits an application sees.
//!
//! An emulation that puts descriptors the application never declared into its pipeline layouts
//! (the descriptor table: bindless textures, buffer device addresses) reserves them: where it
//! is emulated, the layer reports `maxBoundDescriptorSets` one lower and every per-stage and
//! per-layout descriptor limit its descriptors count against lower by them, so that any
//! pipeline layout valid under the reported limits has room for them (issue 25). The
//! update-after-bind limits count every descriptor of a layout (VUID-VkPipelineLayoutCreateInfo-
//! descriptorType-03022 and the others), the plain ones only descriptors outside
//! update-after-bind pools; the plain ones are capped at the reduced update-after-bind ones.
use ash::vk;

/// Descriptor counts in the five classes the table takes from: samplers, sampled images,
/// storage images, storage buffers, resources.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts(pub [u64; 5]);

/// Limit names per class: per stage, then per pipeline layout (resources have no per-layout
/// limit).
pub const PER_STAGE_NAMES: [&str; 5] = [
    "maxPerStageDescriptorUpdateAfterBindSamplers",
    "maxPerStageDescriptorUpdateAfterBindSampledImages",
    "maxPerStageDescriptorUpdateAfterBindStorageImages",
    "maxPerStageDescriptorUpdateAfterBindStorageBuffers",
    "maxPerStageUpdateAfterBindResources",
];
pub const PER_LAYOUT_NAMES: [&str; 4] = [
    "maxDescriptorSetUpdateAfterBindSamplers",
    "maxDescriptorSetUpdateAfterBindSampledImages",
    "maxDescriptorSetUpdateAfterBindStorageImages",
    "maxDescriptorSetUpdateAfterBindStorageBuffers",
];

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }

    /// What `count` descriptors of `ty` count towards, per the spec's limit definitions:
    /// samplers = SAMPLER + COMBINED_IMAGE_SAMPLER; sampled images = SAMPLED_IMAGE +
    /// COMBINED_IMAGE_SAMPLER + UNIFORM_TEXEL_BUFFER; storage images = STORAGE_IMAGE +
    /// STORAGE_TEXEL_BUFFER; storage buffers = STORAGE_BUFFER + STORAGE_BUFFER_DYNAMIC;
    /// resources = buffers, images, texel buffers, input attachments.
    /// A MUTABLE_EXT binding counts as each type of its list (`mutable`; an empty list: as
    /// any image or buffer).
    pub fn of(ty: vk::DescriptorType, count: u32, mutable: &[vk::DescriptorType]) -> Counts {
        type T = vk::DescriptorType;
        let c = u64::from(count);
        let class = |s: u64, si: u64, st: u64, sb: u64, r: u64| Counts([s * c, si * c, st * c, sb * c, r * c]);
        match ty {
            T::SAMPLER => class(1, 0, 0, 0, 0),
            T::COMBINED_IMAGE_SAMPLER => class(1, 1, 0, 0, 1),
            T::SAMPLED_IMAGE | T::UNIFORM_TEXEL_BUFFER => class(0, 1, 0, 0, 1),
            T::STORAGE_IMAGE | T::STORAGE_TEXEL_BUFFER => class(0, 0, 1, 0, 1),
            T::STORAGE_BUFFER | T::STORAGE_BUFFER_DYNAMIC => class(0, 0, 0, 1, 1),
            T::UNIFORM_BUFFER | T::UNIFORM_BUFFER_DYNAMIC | T::INPUT_ATTACHMENT => class(0, 0, 0, 0, 1),
            T::MUTABLE_EXT if mutable.is_empty() => class(0, 1, 1, 1, 1),
            T::MUTABLE_EXT => {
                let mut sum = Counts::default();
                mutable.iter().filter(|t| **t != T::MUTABLE_EXT).for_each(|t| sum.add(&Counts::of(*t, count, &[])));
                sum
            }
            _ => Counts::default(),
        }
    }
}

/// The driver's limits the table counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_bound_descriptor_sets: u32,
    /// Per stage: UAB samplers, sampled images, storage images, storage buffers, resources.
    pub per_stage: [u32; 5],
    /// Per pipeline layout: UAB samplers, sampled images, storage images, storage buffers.
    pub per_layout: [u32; 4],
}

impl Limits {
    pub fn new(limits: &vk::PhysicalDeviceLimits, di: &vk::PhysicalDeviceDescriptorIndexingProperties) -> Limits {
        Limits {
            max_bound_descriptor_sets: limits.max_bound_descriptor_sets,
            per_stage: [
                di.max_per_stage_descriptor_update_after_bind_samplers,
                di.max_per_stage_descriptor_update_after_bind_sampled_images,
                di.max_per_stage_descriptor_update_after_bind_storage_images,
                di.max_per_stage_descriptor_update_after_bind_storage_buffers,
                di.max_per_stage_update_after_bind_resources,
            ],
            per_layout: [
                di.max_descriptor_set_update_after_bind_samplers,
                di.max_descriptor_set_update_after_bind_sampled_images,
                di.max_descriptor_set_update_after_bind_storage_images,
                di.max_descriptor_set_update_after_bind_storage_buffers,
            ],
        }
    }
}


/// Descriptors an emulation adds to the layouts of a device: a set of its own and `counts`
/// (all stages), against the driver's `limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    /// The driver's limits.
    pub driver: Limits,
    /// Sets taken (the table's one, shared by its users).
    pub sets: u32,
    pub counts: Counts,
    /// Descriptors of its pool (from `maxUpdateAfterBindDescriptorsInAllPools`).
    pub pool: u32,
}

impl Reservation {
    /// `count` descriptors of `ty` in a set of their own.
    pub fn of(driver: Limits, arrays: &[(vk::DescriptorType, u32)]) -> Reservation {
        let mut counts = Counts::default();
        arrays.iter().for_each(|&(ty, n)| counts.add(&Counts::of(ty, n, &[])));
        Reservation { driver, sets: 1, counts, pool: arrays.iter().map(|a| a.1).sum() }
    }

    /// Both reservations (they share their set).
    pub fn and(mut self, o: &Reservation) -> Reservation {
        self.sets = self.sets.max(o.sets);
        self.counts.add(&o.counts);
        self.pool += o.pool;
        self
    }

    fn left(max: u32, used: u64) -> u32 {
        u64::from(max).saturating_sub(used) as u32
    }

    /// The update-after-bind limits the application sees: per stage, per layout.
    pub fn reported(&self) -> ([u32; 5], [u32; 4]) {
        let per_stage = std::array::from_fn(|i| Self::left(self.driver.per_stage[i], self.counts.0[i]));
        let per_layout = std::array::from_fn(|i| Self::left(self.driver.per_layout[i], self.counts.0[i]));
        (per_stage, per_layout)
    }

    /// Applies the reservation to `VkPhysicalDeviceLimits` (the plain limits capped at the
    /// reduced update-after-bind ones).
    pub fn apply_to_limits(&self, l: &mut vk::PhysicalDeviceLimits) {
        let (s, p) = self.reported();
        l.max_bound_descriptor_sets = l.max_bound_descriptor_sets.min(self.driver.max_bound_descriptor_sets.saturating_sub(self.sets));
        let cap = |v: &mut u32, m: u32| *v = (*v).min(m);
        cap(&mut l.max_per_stage_descriptor_samplers, s[0]);
        cap(&mut l.max_per_stage_descriptor_sampled_images, s[1]);
        cap(&mut l.max_per_stage_descriptor_storage_images, s[2]);
        cap(&mut l.max_per_stage_descriptor_storage_buffers, s[3]);
        cap(&mut l.max_per_stage_resources, s[4]);
        cap(&mut l.max_descriptor_set_samplers, p[0]);
        cap(&mut l.max_descriptor_set_sampled_images, p[1]);
        cap(&mut l.max_descriptor_set_storage_images, p[2]);
        cap(&mut l.max_descriptor_set_storage_buffers, p[3]);
    }

    /// Applies the reservation to a filled properties chain: the limits and the
    /// update-after-bind limits of `VkPhysicalDeviceDescriptorIndexingProperties` and
    /// `VkPhysicalDeviceVulkan12Properties`.
    ///
    /// # Safety
    /// `props` is a valid, writable VkPhysicalDeviceProperties2 chain.
    pub unsafe fn apply(&self, props: *mut vk::PhysicalDeviceProperties2<'static>) {
        let Some(props) = props.as_mut() else { return };
        self.apply_to_limits(&mut props.properties.limits);
        let (s, p) = self.reported();
        let mut at = props.p_next as *mut vk::BaseOutStructure;
        while let Some(node) = at.as_mut() {
            macro_rules! uab {
                ($t:ty) => {{
                    let d = &mut *(at as *mut $t);
                    d.max_per_stage_descriptor_update_after_bind_samplers = d.max_per_stage_descriptor_update_after_bind_samplers.min(s[0]);
                    d.max_per_stage_descriptor_update_after_bind_sampled_images = d.max_per_stage_descriptor_update_after_bind_sampled_images.min(s[1]);
                    d.max_per_stage_descriptor_update_after_bind_storage_images = d.max_per_stage_descriptor_update_after_bind_storage_images.min(s[2]);
                    d.max_per_stage_descriptor_update_after_bind_storage_buffers = d.max_per_stage_descriptor_update_after_bind_storage_buffers.min(s[3]);
                    d.max_per_stage_update_after_bind_resources = d.max_per_stage_update_after_bind_resources.min(s[4]);
                    d.max_descriptor_set_update_after_bind_samplers = d.max_descriptor_set_update_after_bind_samplers.min(p[0]);
                    d.max_descriptor_set_update_after_bind_sampled_images = d.max_descriptor_set_update_after_bind_sampled_images.min(p[1]);
                    d.max_descriptor_set_update_after_bind_storage_images = d.max_descriptor_set_update_after_bind_storage_images.min(p[2]);
                    d.max_descriptor_set_update_after_bind_storage_buffers = d.max_descriptor_set_update_after_bind_storage_buffers.min(p[3]);
                    // The table's pool takes its descriptors from the device-wide budget.
                    d.max_update_after_bind_descriptors_in_all_pools = d.max_update_after_bind_descriptors_in_all_pools.saturating_sub(self.pool);
                }};
            }
            match node.s_type {
                vk::StructureType::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_PROPERTIES => uab!(vk::PhysicalDeviceDescriptorIndexingProperties),
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES => uab!(vk::PhysicalDeviceVulkan12Properties),
                _ => {}
            }
            at = node.p_next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    type T = vk::DescriptorType;

    fn lavapipe() -> Limits {
        Limits { max_bound_descriptor_sets: 8, per_stage: [1_000_000; 5], per_layout: [1_000_000; 4] }
    }

    #[test]
    fn reserved_room() {
        let images = Reservation::of(lavapipe(), &[(T::SAMPLED_IMAGE, 65536), (T::STORAGE_IMAGE, 65536), (T::SAMPLER, 4096)]);
        let buffers = Reservation::of(lavapipe(), &[(T::STORAGE_BUFFER, 65536)]);
        let both = images.and(&buffers);
        assert_eq!(both.sets, 1, "one table for both");
        let (s, p) = both.reported();
        assert_eq!(s, [1_000_000 - 4096, 1_000_000 - 65536, 1_000_000 - 65536, 1_000_000 - 65536, 1_000_000 - 3 * 65536]);
        assert_eq!(p, [1_000_000 - 4096, 1_000_000 - 65536, 1_000_000 - 65536, 1_000_000 - 65536]);
        let mut l = vk::PhysicalDeviceLimits {
            max_bound_descriptor_sets: 8,
            max_per_stage_descriptor_sampled_images: 1_000_000,
            max_per_stage_descriptor_uniform_buffers: 1_000_000,
            max_per_stage_resources: 500_000,
            ..Default::default()
        };
        both.apply_to_limits(&mut l);
        assert_eq!(l.max_bound_descriptor_sets, 7);
        assert_eq!(l.max_per_stage_descriptor_sampled_images, 1_000_000 - 65536);
        assert_eq!(l.max_per_stage_descriptor_uniform_buffers, 1_000_000, "the table has none");
        assert_eq!(l.max_per_stage_resources, 500_000, "already below the reduced update-after-bind one");
        let mut di = vk::PhysicalDeviceDescriptorIndexingProperties {
            max_per_stage_descriptor_update_after_bind_storage_buffers: 1_000_000,
            max_update_after_bind_descriptors_in_all_pools: 1_000_000,
            ..Default::default()
        };
        let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut di as *mut _ as *mut std::ffi::c_void, ..Default::default() };
        unsafe { buffers.apply((&mut p2 as *mut vk::PhysicalDeviceProperties2).cast()) };
        assert_eq!(di.max_per_stage_descriptor_update_after_bind_storage_buffers, 1_000_000 - 65536);
        assert_eq!(di.max_update_after_bind_descriptors_in_all_pools, 1_000_000 - 65536);
        assert_eq!(p2.properties.limits.max_bound_descriptor_sets, 0, "min with the queried value (0 here)");
    }
}
