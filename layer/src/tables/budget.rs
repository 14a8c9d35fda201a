//! Whether the descriptor table fits beside an application's set layouts.
//!
//! Where a user of the table is emulated, the limits the application sees are the driver's less
//! the table (crate::descriptor_limits: one set, and the table's descriptors in every per-stage and
//! per-layout limit they count against), so every layout valid under the reported limits has room
//! and gets the table. The check stays for layouts beyond the reported limits (invalid usage the
//! driver may still accept): a pipeline using the table with such a layout is refused with the
//! limit named ([`Refusal`]).
//!
//! The limits the table counts against (VkPipelineLayoutCreateInfo's valid usage):
//! `setLayoutCount` ≤ maxBoundDescriptorSets (VUID-VkPipelineLayoutCreateInfo-setLayoutCount-
//! 00286); per stage, over all set layouts, the update-after-bind samplers (-descriptorType-03022),
//! sampled images (-03025), storage images (-03026), storage buffers (-03023) and resources
//! (maxPerStageUpdateAfterBindResources); per layout the update-after-bind samplers
//! (-pSetLayouts-03036), sampled images (-03041), storage images (-03042) and storage buffers
//! (-03038). These count the
//! descriptors of every set layout, with or without UPDATE_AFTER_BIND_POOL. The table's set
//! layout is an update-after-bind one, so it never counts against the plain limits.
use ash::vk;
use super::table::TableConfig;
pub use crate::descriptor_limits::{Counts, Limits, PER_LAYOUT_NAMES, PER_STAGE_NAMES};
use std::fmt;

/// The largest power of two at most `n` (0 for 0): the size of a table array, so that a shader
/// keeps an index inside it with one AND (`index & (size - 1)`, shader_rewrite's address decode
/// and bindless index) instead of a clamp.
pub fn array_size(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        1 << n.ilog2()
    }
}

/// A descriptor set layout's counts: per binding stage mask (bindings with the same stages
/// merged), recorded at vkCreateDescriptorSetLayout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetLayoutCounts(Vec<(vk::ShaderStageFlags, Counts)>);

impl SetLayoutCounts {
    /// # Safety
    /// `ci` is a valid VkDescriptorSetLayoutCreateInfo.
    pub unsafe fn from_create_info(ci: &vk::DescriptorSetLayoutCreateInfo) -> SetLayoutCounts {
        if ci.p_bindings.is_null() || ci.binding_count == 0 {
            return SetLayoutCounts::default();
        }
        let lists = crate::pnext::find::<vk::MutableDescriptorTypeCreateInfoEXT>(
            ci.p_next,
            vk::StructureType::MUTABLE_DESCRIPTOR_TYPE_CREATE_INFO_EXT,
        )
        .filter(|m| !m.p_mutable_descriptor_type_lists.is_null())
        .map_or(&[][..], |m| std::slice::from_raw_parts(m.p_mutable_descriptor_type_lists, m.mutable_descriptor_type_list_count as usize));
        let mut out = SetLayoutCounts::default();
        for (i, b) in std::slice::from_raw_parts(ci.p_bindings, ci.binding_count as usize).iter().enumerate() {
            // VkMutableDescriptorTypeCreateInfoEXT: list i belongs to pBindings[i].
            let mutable = match lists.get(i) {
                Some(l) if !l.p_descriptor_types.is_null() => std::slice::from_raw_parts(l.p_descriptor_types, l.descriptor_type_count as usize),
                _ => &[],
            };
            out.add(b.stage_flags, Counts::of(b.descriptor_type, b.descriptor_count, mutable));
        }
        out
    }

    fn add(&mut self, stages: vk::ShaderStageFlags, c: Counts) {
        match self.0.iter_mut().find(|(s, _)| *s == stages) {
            Some((_, sum)) => sum.add(&c),
            None => self.0.push((stages, c)),
        }
    }

    fn total(&self) -> Counts {
        let mut t = Counts::default();
        self.0.iter().for_each(|(_, c)| t.add(c));
        t
    }

    /// Counts of the bindings visible to stage bit `bit`.
    fn stage(&self, bit: u32) -> Counts {
        let mut t = Counts::default();
        self.0.iter().filter(|(s, _)| s.as_raw() & (1 << bit) != 0).for_each(|(_, c)| t.add(c));
        t
    }
}

/// Why the table is not appended to a layout: `app` + `table` would exceed the driver's
/// `limit` (`max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub limit: &'static str,
    pub max: u64,
    pub app: u64,
    pub table: u64,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (limit, max, app, table) = (self.limit, self.max, self.app, self.table);
        write!(f, "{limit} is {max}: the application's set layouts use {app} and the layer's descriptor table needs {table} more")
    }
}

/// The table's own counts (all stages).
fn table_counts(t: &TableConfig) -> Counts {
    let mut c = Counts::default();
    t.bindings().iter().for_each(|b| c.add(&Counts::of(b.descriptor_type, b.descriptor_count, &[])));
    c
}

/// Does the table fit beside `app` (the application's set layouts, in order; None for a null
/// layout)? The table sits at set `table.set`, so the application may use that many sets.
pub fn check(app: &[Option<&SetLayoutCounts>], table: &TableConfig, limits: &Limits) -> Result<(), Refusal> {
    if app.len() > table.set as usize {
        return Err(Refusal {
            limit: "maxBoundDescriptorSets",
            max: limits.max_bound_descriptor_sets.into(),
            app: app.len() as u64,
            table: 1,
        });
    }
    let t = table_counts(table);
    let over = |names: &[&'static str], maxes: &[u32], used: Counts| {
        (0..names.len()).find(|&i| used.0[i] + t.0[i] > u64::from(maxes[i])).map(|i| Refusal {
            limit: names[i],
            max: maxes[i].into(),
            app: used.0[i],
            table: t.0[i],
        })
    };
    let layouts = || app.iter().flatten();
    for bit in 0..u32::BITS {
        let mut used = Counts::default();
        layouts().for_each(|l| used.add(&l.stage(bit)));
        if let Some(r) = over(&PER_STAGE_NAMES, &limits.per_stage, used) {
            return Err(r);
        }
    }
    let mut used = Counts::default();
    layouts().for_each(|l| used.add(&l.total()));
    match over(&PER_LAYOUT_NAMES, &limits.per_layout, used) {
        Some(r) => Err(r),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    type T = vk::DescriptorType;
    type St = vk::ShaderStageFlags;

    fn table() -> TableConfig {
        let a = |binding, ty, count| super::super::table::TableArray { binding, ty, count };
        TableConfig { set: 7, arrays: vec![a(0, T::SAMPLED_IMAGE, 65536), a(1, T::STORAGE_IMAGE, 65536), a(2, T::SAMPLER, 4096)] }
    }

    /// lavapipe 25.0: 8 sets, 1 000 000 of everything.
    fn lavapipe() -> Limits {
        Limits { max_bound_descriptor_sets: 8, per_stage: [1_000_000; 5], per_layout: [1_000_000; 4] }
    }

    fn layout(bindings: &[(St, T, u32)]) -> SetLayoutCounts {
        let mut l = SetLayoutCounts::default();
        bindings.iter().for_each(|&(s, t, n)| l.add(s, Counts::of(t, n, &[])));
        l
    }

    #[test]
    fn classes_follow_the_spec_limits() {
        assert_eq!(Counts::of(T::COMBINED_IMAGE_SAMPLER, 3, &[]), Counts([3, 3, 0, 0, 3]));
        assert_eq!(Counts::of(T::UNIFORM_TEXEL_BUFFER, 2, &[]), Counts([0, 2, 0, 0, 2]));
        assert_eq!(Counts::of(T::STORAGE_TEXEL_BUFFER, 2, &[]), Counts([0, 0, 2, 0, 2]));
        assert_eq!(Counts::of(T::STORAGE_BUFFER, 5, &[]), Counts([0, 0, 0, 5, 5]));
        assert_eq!(Counts::of(T::INLINE_UNIFORM_BLOCK, 256, &[]), Counts::default());
        // vkd3d-proton's mutable heap binding: each listed type counts.
        let list = [T::SAMPLED_IMAGE, T::STORAGE_IMAGE, T::UNIFORM_TEXEL_BUFFER, T::STORAGE_BUFFER];
        assert_eq!(Counts::of(T::MUTABLE_EXT, 10, &list), Counts([0, 20, 10, 10, 40]));
    }

    #[test]
    fn small_layouts_get_the_table() {
        let l = layout(&[(St::COMPUTE, T::STORAGE_BUFFER, 4), (St::ALL, T::SAMPLED_IMAGE, 1000)]);
        assert_eq!(check(&[Some(&l), None], &table(), &lavapipe()), Ok(()));
        // Exactly at the limit: the table's 65536 + 934464 = 1 000 000 sampled images (but the
        // table's 131072 images also count as resources).
        let l = layout(&[(St::FRAGMENT, T::SAMPLED_IMAGE, 1_000_000 - 65536)]);
        let mut limits = lavapipe();
        assert_eq!(check(&[Some(&l)], &table(), &limits).unwrap_err().limit, "maxPerStageUpdateAfterBindResources");
        limits.per_stage[4] = 2_000_000;
        assert_eq!(check(&[Some(&l)], &table(), &limits), Ok(()));
        // Seven application sets: the table is the eighth.
        let sets = vec![None; 7];
        assert_eq!(check(&sets, &table(), &lavapipe()), Ok(()));
    }

    #[test]
    fn full_layouts_name_the_limit() {
        // vkd3d-proton: a 1 000 000-descriptor heap per stage.
        let l = layout(&[(St::ALL, T::SAMPLED_IMAGE, 1_000_000)]);
        let r = check(&[Some(&l)], &table(), &lavapipe()).unwrap_err();
        assert_eq!(r, Refusal { limit: "maxPerStageDescriptorUpdateAfterBindSampledImages", max: 1_000_000, app: 1_000_000, table: 65536 });
        assert!(r.to_string().contains("maxPerStageDescriptorUpdateAfterBindSampledImages is 1000000"), "{r}");
        // Resources: 500k storage buffers + 500k uniform texel buffers leave no room for images.
        let l = layout(&[(St::VERTEX, T::STORAGE_BUFFER, 500_000), (St::VERTEX, T::UNIFORM_TEXEL_BUFFER, 450_000)]);
        assert_eq!(check(&[Some(&l)], &table(), &lavapipe()).unwrap_err().limit, "maxPerStageUpdateAfterBindResources");
        // Per layout: two stages, each within its own limit, together over the layout's.
        let a = layout(&[(St::VERTEX, T::STORAGE_IMAGE, 500_000)]);
        let b = layout(&[(St::FRAGMENT, T::STORAGE_IMAGE, 450_000)]);
        let mut limits = lavapipe();
        limits.per_stage[4] = 2_000_000; // resources
        assert_eq!(check(&[Some(&a), Some(&b)], &table(), &limits).unwrap_err().limit, "maxDescriptorSetUpdateAfterBindStorageImages");
        // All eight sets used.
        assert_eq!(check(&[None; 8], &table(), &lavapipe()).unwrap_err().limit, "maxBoundDescriptorSets");
    }

    #[test]
    fn storage_buffer_array_counts_as_storage_buffers() {
        let t = TableConfig { set: 7, arrays: vec![super::super::table::TableArray { binding: 3, ty: T::STORAGE_BUFFER, count: 65536 }] };
        // vkd3d-proton's 1 000 000 storage buffers per stage leave no room for the BDA array.
        let l = layout(&[(St::ALL, T::STORAGE_BUFFER, 1_000_000)]);
        assert_eq!(check(&[Some(&l)], &t, &lavapipe()).unwrap_err().limit, "maxPerStageDescriptorUpdateAfterBindStorageBuffers");
        // A million sampled images do not touch it (only resources, which have room here).
        let l = layout(&[(St::ALL, T::STORAGE_BUFFER, 1000)]);
        let mut limits = lavapipe();
        limits.per_stage[4] = 2_000_000;
        assert_eq!(check(&[Some(&l)], &t, &limits), Ok(()));
    }
}
