//! VK_NV_raw_access_chains / SPV_NV_raw_access_chains: the layer advertises the extension and
//! `VkPhysicalDeviceRawAccessChainsFeaturesNV::shaderRawAccessChains`, removes both from
//! `vkCreateDevice`, and has the rewriter lower `OpRawAccessChainNV` (capability
//! RawAccessChainsNV) into core byte-address accesses.
use super::extension::{Activated, ExtensionEmulation};
use crate::emulation::{LayerExtension, PhysDev, Services};
use crate::pnext;

use ash::vk;
use std::ffi::{c_void, CStr};

pub struct RawAccessChains;

pub const NAME: &CStr = vk::NV_RAW_ACCESS_CHAINS_NAME;
/// VK_NV_raw_access_chains revision 1 (the only one); no commands.
pub static EXTENSION: LayerExtension = LayerExtension { name: NAME, spec_version: 1, commands: &[] };
/// sType 1000555000.
pub const FEATURES: vk::StructureType = vk::StructureType::PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV;

impl ExtensionEmulation for RawAccessChains {
    fn extension(&self) -> &'static LayerExtension {
        &EXTENSION
    }
    fn setting(&self) -> &'static str {
        "raw_access_chains"
    }
    fn feature_structs(&self) -> &'static [vk::StructureType] {
        &[FEATURES]
    }
    unsafe fn report_feature(&self, node: *mut vk::BaseOutStructure<'static>) {
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
    unsafe fn activate(&self, pd: &PhysDev, _services: &mut Services) -> Result<Box<dyn Activated>, String> {
        warn_vkd3d_offset_buffer(pd);
        Ok(Box::new(Lowering))
    }
}

/// The rewriter lowers OpRawAccessChainNV.
struct Lowering;

impl Activated for Lowering {
    fn options(&self, options: &mut shader_rewrite::Options) {
        options.emulate_raw_access_chains = true;
    }
}

/// The warning for vkd3d-proton where the layer provides raw access chains although its client
/// quirk says not to (`raw_access_chains=force`): vkd3d-proton's raw-chain path (dxil-spirv
/// `emit_raw_access_chain`) ignores its SSBO offset buffer, so a structured or byte-address view
/// whose offset is not a multiple of the alignment is bound at the aligned-down offset, and its
/// raw-chain accesses land up to `alignment - 4` bytes early.
fn vkd3d_warning(fact: &str) -> String {
    format!(
        "engine 'vkd3d' (vkd3d-proton) with VK_NV_raw_access_chains provided by the layer (raw_access_chains=force) and {fact}: vkd3d-proton's raw-access-chain shaders ignore its SSBO offset buffer, so structured/byte-address buffer views at offsets that are not multiples of the alignment read and write up to alignment - 4 bytes before the view. This is vkd3d-proton's limitation, not the layer's; the default (raw_access_chains=auto) does not offer the extension to vkd3d-proton here"
    )
}

/// At vkCreateDevice, where the layer provides the extension: logs [`vkd3d_warning`] once per
/// instance when it applies.
///
/// # Safety
/// `pd` is live.
unsafe fn warn_vkd3d_offset_buffer(pd: &PhysDev) {
    if let Some(fact) = crate::quirks::VKD3D_RAW_ACCESS_CHAINS.applies_to(pd) {
        if crate::messages::first_time("vkd3d-offset-buffer") {
            crate::log_warn!(VKD3D_OFFSET_BUFFER, "vkCreateDevice: device '{}': {}", pd.info.name, vkd3d_warning(&fact));
        }
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
            RawAccessChains.report_feature(&mut f as *mut _ as *mut vk::BaseOutStructure);
            assert_eq!(f.shader_raw_access_chains, vk::TRUE);
            assert!(RawAccessChains.feature_requested(&f as *const _ as *const c_void));
            let mut other = vk::PhysicalDeviceVulkan11Features::default();
            RawAccessChains.report_feature(&mut other as *mut _ as *mut vk::BaseOutStructure);
            assert_eq!(other.s_type, vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
        }
        let mut o = shader_rewrite::Options { emulate_raw_access_chains: false, ..Default::default() };
        Lowering.options(&mut o);
        assert!(o.emulate_raw_access_chains);
        assert_eq!(FEATURES.as_raw(), 1_000_555_000);
    }

    #[test]
    fn vkd3d_warning_names_the_fact() {
        let w = vkd3d_warning("minStorageBufferOffsetAlignment 16");
        assert!(w.contains("minStorageBufferOffsetAlignment 16") && w.contains("raw_access_chains=force"), "{w}");
    }
}
