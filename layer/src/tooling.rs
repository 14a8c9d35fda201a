//! VK_EXT_tooling_info (core in Vulkan 1.3): the layer lists itself among the tools that modify
//! the device, after the tools below it (the driver's and lower layers'), as the Khronos layers
//! do. Where the driver lacks the extension, the layer provides it (instance.rs adds it to the
//! device extensions).
use crate::dispatch::instance_of;
use crate::emulation::{write_enumeration, LayerExtension};
use crate::ffi_guard::guard;
use crate::settings::LAYER_NAME;
use ash::vk;
use std::ffi::c_char;

/// VK_EXT_tooling_info revision 1.
pub static EXTENSION: LayerExtension =
    LayerExtension { name: vk::EXT_TOOLING_INFO_NAME, spec_version: 1, commands: &["vkGetPhysicalDeviceToolPropertiesEXT"] };

fn copy_str(dst: &mut [c_char], s: &str) {
    crate::vk_layer::copy_c_str(dst, s.as_bytes());
}

/// The layer's own entry.
pub fn own_properties() -> vk::PhysicalDeviceToolProperties<'static> {
    let mut p = vk::PhysicalDeviceToolProperties {
        purposes: vk::ToolPurposeFlags::ADDITIONAL_FEATURES | vk::ToolPurposeFlags::MODIFYING_FEATURES,
        ..Default::default()
    };
    copy_str(&mut p.name, "vkpolyfill");
    copy_str(&mut p.version, env!("CARGO_PKG_VERSION"));
    copy_str(
        &mut p.description,
        "Emulates shader extensions and features the driver lacks (VK_NV_raw_access_chains, 8/16-bit storage, NV bindless textures, buffer device addresses) by rewriting SPIR-V",
    );
    copy_str(&mut p.layer, LAYER_NAME);
    p
}

pub unsafe extern "system" fn get_physical_device_tool_properties(
    pd: vk::PhysicalDevice,
    p_count: *mut u32,
    p_properties: *mut vk::PhysicalDeviceToolProperties,
) -> vk::Result {
    guard("vkGetPhysicalDeviceToolProperties", vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe { tools(pd, p_count, p_properties, false) })
}

pub unsafe extern "system" fn get_physical_device_tool_properties_ext(
    pd: vk::PhysicalDevice,
    p_count: *mut u32,
    p_properties: *mut vk::PhysicalDeviceToolProperties,
) -> vk::Result {
    guard("vkGetPhysicalDeviceToolPropertiesEXT", vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe { tools(pd, p_count, p_properties, true) })
}

/// The tools below (when the next layer has the command), then the layer.
unsafe fn tools(pd: vk::PhysicalDevice, p_count: *mut u32, p_properties: *mut vk::PhysicalDeviceToolProperties, ext: bool) -> vk::Result {
    let Some(inst) = instance_of(pd) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
    let (core, alias) = (inst.get_physical_device_tool_properties, inst.get_physical_device_tool_properties_ext);
    let next = if ext { alias.or(core) } else { core.or(alias) };
    let mut list = Vec::new();
    // Only where the device reports the extension (or 1.3): calling the driver's otherwise is
    // not valid, and the loader's terminator may return nothing useful.
    let below_has_it = inst.physical_device(pd).api_version >= vk::API_VERSION_1_3
        || inst.physical_device(pd).has_extension(vk::EXT_TOOLING_INFO_NAME);
    if let (Some(next), true) = (next, below_has_it) {
        loop {
            let mut n = 0u32;
            let r = next(pd, &mut n, std::ptr::null_mut());
            if r != vk::Result::SUCCESS {
                return r;
            }
            list = vec![vk::PhysicalDeviceToolProperties::default(); n as usize];
            match next(pd, &mut n, list.as_mut_ptr()) {
                vk::Result::SUCCESS => {
                    list.truncate(n as usize);
                    break;
                }
                vk::Result::INCOMPLETE => continue,
                e => return e,
            }
        }
    }
    list.push(own_properties());
    write_enumeration(&list, p_count, p_properties)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_entry() {
        let p = own_properties();
        assert_eq!(p.layer_as_c_str().unwrap().to_str().unwrap(), LAYER_NAME);
        assert_eq!(p.version_as_c_str().unwrap().to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert!(p.purposes.contains(vk::ToolPurposeFlags::MODIFYING_FEATURES | vk::ToolPurposeFlags::ADDITIONAL_FEATURES));
        assert!(p.description_as_c_str().unwrap().to_bytes().len() < 256);
    }
}
