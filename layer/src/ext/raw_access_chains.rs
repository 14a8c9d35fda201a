//! VK_NV_raw_access_chains / SPV_NV_raw_access_chains: the layer advertises the extension and
//! `VkPhysicalDeviceRawAccessChainsFeaturesNV::shaderRawAccessChains`, removes both from
//! `vkCreateDevice`, and has the rewriter lower `OpRawAccessChainNV` (capability
//! RawAccessChainsNV) into core byte-address accesses.
use super::extension::{Activated, ExtensionEmulation};
use crate::emulation::{LayerExtension, PhysDev, Services};
use crate::pnext;
use crate::settings::{Mode, Settings};
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
    fn mode(&self, settings: &Settings) -> Mode {
        settings.raw_access_chains
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

/// vkd3d-proton's `VkApplicationInfo::pEngineName` (libs/vkd3d/device.c).
pub const VKD3D_ENGINE: &str = "vkd3d";

/// The warning for vkd3d-proton on a device where the layer provides raw access chains, if it
/// applies: vkd3d-proton's raw-chain path (dxil-spirv `emit_raw_access_chain`) ignores its SSBO
/// offset buffer, which vkd3d-proton uses only where `minStorageBufferOffsetAlignment` > 4 (it
/// forces 4 on NVIDIA's driver, the one driver with the extension). Elsewhere a structured or
/// byte-address view whose offset is not a multiple of the alignment is bound at the aligned-down
/// offset, and its raw-chain accesses land up to `alignment - 4` bytes early.
fn vkd3d_warning(engine: &str, emulated: bool, alignment: u64) -> Option<String> {
    (engine == VKD3D_ENGINE && emulated && alignment > 4).then(|| {
        format!(
            "engine '{VKD3D_ENGINE}' (vkd3d-proton) with VK_NV_raw_access_chains provided by the layer and minStorageBufferOffsetAlignment {alignment}: vkd3d-proton's raw-access-chain shaders ignore its SSBO offset buffer (used only where the alignment is above 4), so structured/byte-address buffer views at offsets that are not multiples of {alignment} read and write up to {} bytes before the view. This is vkd3d-proton's limitation, not the layer's; to avoid it, set raw_access_chains=off (vkd3d-proton then uses its offset-buffer path)",
            alignment - 4
        )
    })
}

/// At vkCreateDevice, where the layer provides the extension: logs [`vkd3d_warning`] once for
/// the device when it applies.
///
/// # Safety
/// `pd` is live.
unsafe fn warn_vkd3d_offset_buffer(pd: &PhysDev) {
    if pd.inst.engine_name != VKD3D_ENGINE {
        return;
    }
    let mut props = vk::PhysicalDeviceProperties::default();
    (pd.inst.get_physical_device_properties)(pd.pd, &mut props);
    if let Some(w) = vkd3d_warning(&pd.inst.engine_name, true, props.limits.min_storage_buffer_offset_alignment) {
        crate::log_warn!("vkCreateDevice: device '{}': {w}", pd.info.name);
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
    fn vkd3d_warning_only_where_it_applies() {
        let w = vkd3d_warning("vkd3d", true, 16).unwrap();
        assert!(w.contains("minStorageBufferOffsetAlignment 16") && w.contains("up to 12 bytes"), "{w}");
        assert!(vkd3d_warning("vkd3d", true, 4).is_none(), "NVIDIA-like alignment: the offset buffer is not needed");
        assert!(vkd3d_warning("vkd3d", false, 16).is_none(), "native or off: not the layer's chains");
        assert!(vkd3d_warning("DXVK", true, 16).is_none());
    }
}
