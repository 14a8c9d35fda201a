//! VK_NV_raw_access_chains / SPV_NV_raw_access_chains: the layer advertises the extension and
//! `VkPhysicalDeviceRawAccessChainsFeaturesNV::shaderRawAccessChains`, removes both from
//! `vkCreateDevice`, and has the rewriter lower `OpRawAccessChainNV` (capability
//! RawAccessChainsNV) into core byte-address accesses.
use super::EmulatedExtension;
use crate::pnext;
use crate::settings::{Mode, Settings};
use ash::vk;
use std::ffi::{c_void, CStr};

pub struct RawAccessChains;

pub const NAME: &CStr = vk::NV_RAW_ACCESS_CHAINS_NAME;
/// VK_NV_raw_access_chains revision 1 (the only one).
pub const SPEC_VERSION: u32 = 1;
/// sType 1000555000.
pub const FEATURES: vk::StructureType = vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV;

impl EmulatedExtension for RawAccessChains {
    fn name(&self) -> &'static CStr {
        NAME
    }
    fn spec_version(&self) -> u32 {
        SPEC_VERSION
    }
    fn mode_setting(&self, settings: &Settings) -> Mode {
        settings.raw_access_chains
    }
    fn feature_struct_types(&self) -> &'static [vk::StructureType] {
        &[FEATURES]
    }
    unsafe fn report_features(&self, node: *mut vk::BaseOutStructure<'static>) {
        if (*node).s_type == FEATURES {
            (*(node as *mut vk::PhysicalDeviceRawAccessChainsFeaturesNV)).shader_raw_access_chains = vk::TRUE;
        }
    }
    unsafe fn feature_requested(&self, head: *const c_void) -> bool {
        pnext::walk(head).any(|n| {
            (*n).s_type == FEATURES
                && (*(n as *const vk::PhysicalDeviceRawAccessChainsFeaturesNV)).shader_raw_access_chains != vk::FALSE
        })
    }
    fn enable_in_options(&self, options: &mut shader_rewrite::Options) {
        options.emulate_raw_access_chains = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_and_detects_feature() {
        let mut f = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default();
        unsafe {
            assert!(!RawAccessChains.feature_requested(&f as *const _ as *const c_void));
            RawAccessChains.report_features(&mut f as *mut _ as *mut vk::BaseOutStructure);
            assert_eq!(f.shader_raw_access_chains, vk::TRUE);
            assert!(RawAccessChains.feature_requested(&f as *const _ as *const c_void));
            let mut other = vk::PhysicalDeviceVulkan11Features::default();
            RawAccessChains.report_features(&mut other as *mut _ as *mut vk::BaseOutStructure);
            assert_eq!(other.s_type, vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
        }
        let mut o = shader_rewrite::Options { emulate_raw_access_chains: false, ..Default::default() };
        RawAccessChains.enable_in_options(&mut o);
        assert!(o.emulate_raw_access_chains);
        assert_eq!(FEATURES.as_raw(), 1_000_555_000);
    }
}
