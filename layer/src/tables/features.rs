//! The driver features the table and the shaders that index it need, turned on in a copied
//! `VkDeviceCreateInfo` chain: descriptor-indexing bits (update-after-bind, partially bound,
//! non-uniform indexing of the table's arrays) and the core dynamic-indexing bits.
//!
//! Rules (as in device_features.rs): the Vulkan 1.2 aggregate when chained, else the dedicated
//! `VkPhysicalDeviceDescriptorIndexingFeatures` (never both: VUID-VkDeviceCreateInfo-pNext-02830);
//! core bits in `VkPhysicalDeviceFeatures2` when chained, else `pEnabledFeatures` (never both:
//! VUID-VkDeviceCreateInfo-pNext-00373).
use crate::pnext::Chain;
use ash::vk;
use std::ffi::CStr;

/// One descriptor-indexing feature bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexing {
    SampledImageUpdateAfterBind,
    StorageImageUpdateAfterBind,
    StorageBufferUpdateAfterBind,
    UpdateUnusedWhilePending,
    PartiallyBound,
    SampledImageNonUniform,
    StorageImageNonUniform,
    StorageBufferNonUniform,
}

macro_rules! indexing_fields {
    ($($v:ident => $field:ident, $name:literal;)*) => {
        impl Indexing {
            pub fn name(self) -> &'static str {
                match self { $(Indexing::$v => $name,)* }
            }
            fn in_dedicated<'a>(self, f: &'a mut vk::PhysicalDeviceDescriptorIndexingFeatures<'_>) -> &'a mut vk::Bool32 {
                match self { $(Indexing::$v => &mut f.$field,)* }
            }
            fn in_aggregate<'a>(self, f: &'a mut vk::PhysicalDeviceVulkan12Features<'_>) -> &'a mut vk::Bool32 {
                match self { $(Indexing::$v => &mut f.$field,)* }
            }
        }
    };
}

indexing_fields! {
    SampledImageUpdateAfterBind => descriptor_binding_sampled_image_update_after_bind, "descriptorBindingSampledImageUpdateAfterBind";
    StorageImageUpdateAfterBind => descriptor_binding_storage_image_update_after_bind, "descriptorBindingStorageImageUpdateAfterBind";
    StorageBufferUpdateAfterBind => descriptor_binding_storage_buffer_update_after_bind, "descriptorBindingStorageBufferUpdateAfterBind";
    UpdateUnusedWhilePending => descriptor_binding_update_unused_while_pending, "descriptorBindingUpdateUnusedWhilePending";
    PartiallyBound => descriptor_binding_partially_bound, "descriptorBindingPartiallyBound";
    SampledImageNonUniform => shader_sampled_image_array_non_uniform_indexing, "shaderSampledImageArrayNonUniformIndexing";
    StorageImageNonUniform => shader_storage_image_array_non_uniform_indexing, "shaderStorageImageArrayNonUniformIndexing";
    StorageBufferNonUniform => shader_storage_buffer_array_non_uniform_indexing, "shaderStorageBufferArrayNonUniformIndexing";
}

impl Indexing {
    /// The bit in a supported-features structure.
    pub fn supported(self, f: &vk::PhysicalDeviceDescriptorIndexingFeatures) -> bool {
        let mut copy = *f;
        *self.in_dedicated(&mut copy) != vk::FALSE
    }
}

/// The names of `wanted` bits `f` lacks.
pub fn missing(wanted: &[Indexing], f: &vk::PhysicalDeviceDescriptorIndexingFeatures) -> Vec<&'static str> {
    wanted.iter().filter(|b| !b.supported(f)).map(|b| b.name()).collect()
}

/// Whether a device has room for a descriptor table: the `wanted` bits, and two bound sets at
/// least (the table takes the last set of the layouts that use it; `users`' pipelines need one
/// of their own).
pub fn table_room(wanted: &[Indexing], f: &vk::PhysicalDeviceDescriptorIndexingFeatures, limits: &vk::PhysicalDeviceLimits, users: &str) -> Result<(), String> {
    let missing = missing(wanted, f);
    if !missing.is_empty() {
        return Err(format!("the device lacks descriptor-indexing features {}", missing.join(", ")));
    }
    if limits.max_bound_descriptor_sets < 2 {
        return Err(format!("maxBoundDescriptorSets is {} ({users} need one set beside the table)", limits.max_bound_descriptor_sets));
    }
    Ok(())
}

/// One core feature bit (the dynamic-indexing ones, and `robustBufferAccess` for
/// robustBufferAccess2, tables/robustness2.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Core {
    SampledImageDynamic,
    StorageImageDynamic,
    StorageBufferDynamic,
    RobustBufferAccess,
}

impl Core {
    pub fn name(self) -> &'static str {
        match self {
            Core::SampledImageDynamic => "shaderSampledImageArrayDynamicIndexing",
            Core::StorageImageDynamic => "shaderStorageImageArrayDynamicIndexing",
            Core::StorageBufferDynamic => "shaderStorageBufferArrayDynamicIndexing",
            Core::RobustBufferAccess => "robustBufferAccess",
        }
    }
    fn bit(self, f: &mut vk::PhysicalDeviceFeatures) -> &mut vk::Bool32 {
        match self {
            Core::SampledImageDynamic => &mut f.shader_sampled_image_array_dynamic_indexing,
            Core::StorageImageDynamic => &mut f.shader_storage_image_array_dynamic_indexing,
            Core::StorageBufferDynamic => &mut f.shader_storage_buffer_array_dynamic_indexing,
            Core::RobustBufferAccess => &mut f.robust_buffer_access,
        }
    }
}

fn turn_on(bit: &mut vk::Bool32, name: &'static str, added: &mut Vec<&'static str>) {
    if *bit == vk::FALSE {
        *bit = vk::TRUE;
        added.push(name);
    }
}

/// Turns on `indexing` and `core` in a copied `VkDeviceCreateInfo` chain (`core` lists only the
/// bits the device supports). Returns the names newly enabled.
///
/// # Safety
/// `chain` is a copy of a valid VkDeviceCreateInfo chain.
pub unsafe fn enable(
    chain: &mut Chain,
    enabled_features: &mut Option<vk::PhysicalDeviceFeatures>,
    enabled_extensions: &[&CStr],
    version: u32,
    indexing: &[Indexing],
    core: &[Core],
) -> Result<Vec<&'static str>, String> {
    type S = vk::StructureType;
    let mut added = Vec::new();
    if let Some(v12) = chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
        indexing.iter().for_each(|b| turn_on(b.in_aggregate(v12), b.name(), &mut added));
    } else if let Some(di) = chain.find_mut::<vk::PhysicalDeviceDescriptorIndexingFeatures>(S::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES) {
        indexing.iter().for_each(|b| turn_on(b.in_dedicated(di), b.name(), &mut added));
    } else if chain.tail_contains(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) || chain.tail_contains(S::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES) {
        return Err("the descriptor-indexing feature structure sits behind an unknown structure".into());
    } else if version >= vk::API_VERSION_1_2 || enabled_extensions.contains(&vk::EXT_DESCRIPTOR_INDEXING_NAME) {
        let mut di = vk::PhysicalDeviceDescriptorIndexingFeatures::default();
        indexing.iter().for_each(|b| turn_on(b.in_dedicated(&mut di), b.name(), &mut added));
        chain.push_front(di);
    } else {
        return Err("needs Vulkan 1.2 or VK_EXT_descriptor_indexing enabled by the application".into());
    }
    added.extend(enable_core(chain, enabled_features, core));
    Ok(added)
}

/// Turns on `core` (bits the device supports) in a copied `VkDeviceCreateInfo`: in
/// `VkPhysicalDeviceFeatures2` when chained, else in `pEnabledFeatures`. Returns the names newly
/// enabled.
///
/// # Safety
/// `chain` is a copy of a valid VkDeviceCreateInfo chain.
pub unsafe fn enable_core(chain: &mut Chain, enabled_features: &mut Option<vk::PhysicalDeviceFeatures>, core: &[Core]) -> Vec<&'static str> {
    let mut added = Vec::new();
    let core_on = |f: &mut vk::PhysicalDeviceFeatures, added: &mut Vec<&'static str>| {
        core.iter().for_each(|b| turn_on(b.bit(f), b.name(), added));
    };
    if let Some(f2) = chain.find_mut::<vk::PhysicalDeviceFeatures2>(vk::StructureType::PHYSICAL_DEVICE_FEATURES_2) {
        core_on(&mut f2.features, &mut added);
    } else if !chain.tail_contains(vk::StructureType::PHYSICAL_DEVICE_FEATURES_2) {
        core_on(enabled_features.get_or_insert_with(vk::PhysicalDeviceFeatures::default), &mut added);
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;

    #[test]
    fn names_and_bits_agree() {
        let di = vk::PhysicalDeviceDescriptorIndexingFeatures { shader_storage_buffer_array_non_uniform_indexing: vk::TRUE, ..Default::default() };
        assert!(Indexing::StorageBufferNonUniform.supported(&di));
        assert_eq!(missing(&[Indexing::StorageBufferNonUniform, Indexing::PartiallyBound], &di), vec!["descriptorBindingPartiallyBound"]);
    }

    #[test]
    fn aggregate_then_dedicated() {
        type S = vk::StructureType;
        let v12 = vk::PhysicalDeviceVulkan12Features { descriptor_binding_partially_bound: vk::TRUE, ..Default::default() };
        let mut chain = unsafe { Chain::copy(&v12 as *const _ as *const c_void) };
        let mut ef = None;
        let wanted = [Indexing::PartiallyBound, Indexing::StorageBufferUpdateAfterBind];
        let added = unsafe { enable(&mut chain, &mut ef, &[], vk::API_VERSION_1_3, &wanted, &[Core::StorageBufferDynamic]) }.unwrap();
        assert_eq!(added, vec!["descriptorBindingStorageBufferUpdateAfterBind", "shaderStorageBufferArrayDynamicIndexing"]);
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES]);
        assert_eq!(ef.unwrap().shader_storage_buffer_array_dynamic_indexing, vk::TRUE);
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        unsafe { enable(&mut chain, &mut None, &[], vk::API_VERSION_1_2, &wanted, &[]) }.unwrap();
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES]);
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(unsafe { enable(&mut chain, &mut None, &[], vk::API_VERSION_1_1, &wanted, &[]) }.is_err());
    }
}
