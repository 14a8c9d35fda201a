//! The exported symbols (LoaderLayerInterface.md "Layer Version Negotiation", "Layer
//! Interface Version 0" introspection) and the two dispatch lookups.
//!
//! Pointer identity: for every command the layer does not intercept, vkGetInstanceProcAddr /
//! vkGetDeviceProcAddr return exactly the next layer's pointer, so the layer costs nothing on
//! those paths (e.g. vkCmdDispatch).
#![allow(non_snake_case)]

use crate::dispatch::{device_data, instance_data};
use crate::emulation::write_enumeration;
use crate::ext;
use crate::ffi_guard::guard;
use crate::settings::LAYER_NAME;
use crate::vk_layer::{VkNegotiateLayerInterface, INTERFACE_VERSION, LAYER_NEGOTIATE_INTERFACE_STRUCT};
use crate::{device, instance, messengers, shader_hooks, tooling};
use ash::vk;
use std::ffi::{c_char, CStr};

/// Vulkan header version the layer is written against (ash 0.38 = 1.3.281).
pub const LAYER_SPEC_VERSION: u32 = vk::make_api_version(0, 1, 3, 281);
/// The crate's version as one number: major * 10000 + minor * 100 + patch (0.1.0 → 100), the
/// manifests' `implementation_version` (generated from the same crate version).
pub const IMPLEMENTATION_VERSION: u32 = version_number(env!("CARGO_PKG_VERSION_MAJOR"), env!("CARGO_PKG_VERSION_MINOR"), env!("CARGO_PKG_VERSION_PATCH"));
pub const LAYER_DESCRIPTION: &str =
    "Emulates shader extensions the driver lacks (raw access chains, 8/16-bit storage, bindless textures, buffer device addresses)";
/// The manifests' `introduction`.
pub const LAYER_INTRODUCTION: &str = "Advertises VK_NV_raw_access_chains, the 8/16-bit storage features (storageInputOutput16 and the others), VK_NVX_image_view_handle with SPV_NV_bindless_texture, and VK_KHR_buffer_device_address on drivers that lack them, and rewrites the SPIR-V that uses them into core-equivalent code before the driver sees it. Everything else goes to the driver untouched.";

const fn parse_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let (mut i, mut n) = (0, 0u32);
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    n
}

pub const fn version_number(major: &str, minor: &str, patch: &str) -> u32 {
    parse_u32(major) * 10000 + parse_u32(minor) * 100 + parse_u32(patch)
}

fn copy_str(dst: &mut [c_char], s: &str) {
    crate::vk_layer::copy_c_str(dst, s.as_bytes());
}

pub fn layer_properties() -> vk::LayerProperties {
    let mut p = vk::LayerProperties {
        spec_version: LAYER_SPEC_VERSION,
        implementation_version: IMPLEMENTATION_VERSION,
        ..Default::default()
    };
    copy_str(&mut p.layer_name, LAYER_NAME);
    copy_str(&mut p.description, LAYER_DESCRIPTION);
    p
}

/// Instance extensions the layer implements: VK_EXT_layer_settings (revision 2).
pub fn layer_instance_extensions() -> Vec<vk::ExtensionProperties> {
    let mut p = vk::ExtensionProperties { spec_version: vk::EXT_LAYER_SETTINGS_SPEC_VERSION, ..Default::default() };
    copy_str(&mut p.extension_name, vk::EXT_LAYER_SETTINGS_NAME.to_str().unwrap_or_default());
    vec![p]
}

unsafe fn is_our_layer(name: *const c_char) -> bool {
    !name.is_null() && CStr::from_ptr(name).to_bytes() == LAYER_NAME.as_bytes()
}

#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(p: *mut VkNegotiateLayerInterface) -> vk::Result {
    guard("vkNegotiateLoaderLayerInterfaceVersion", vk::Result::ERROR_INITIALIZATION_FAILED, || unsafe {
        let Some(s) = p.as_mut() else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        if s.s_type != LAYER_NEGOTIATE_INTERFACE_STRUCT {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        // Answer with min(loader's, ours); never call down from here.
        if s.loader_layer_interface_version >= INTERFACE_VERSION {
            s.loader_layer_interface_version = INTERFACE_VERSION;
            s.pfn_get_instance_proc_addr = Some(vkGetInstanceProcAddr);
            s.pfn_get_device_proc_addr = Some(vkGetDeviceProcAddr);
            // No unknown physical-device commands are intercepted.
            s.pfn_get_physical_device_proc_addr = None;
        }
        vk::Result::SUCCESS
    })
}

#[no_mangle]
pub unsafe extern "system" fn vkGetInstanceProcAddr(instance: vk::Instance, p_name: *const c_char) -> vk::PFN_vkVoidFunction {
    guard("vkGetInstanceProcAddr", None, || unsafe {
        if p_name.is_null() {
            return None;
        }
        get_instance_proc_addr(instance, CStr::from_ptr(p_name))
    })
}

unsafe fn get_instance_proc_addr(instance: vk::Instance, name: &CStr) -> vk::PFN_vkVoidFunction {
    // Global commands: usable with a NULL instance.
    match name.to_bytes() {
        b"vkGetInstanceProcAddr" => return pfn!(vkGetInstanceProcAddr as vk::PFN_vkGetInstanceProcAddr),
        b"vkCreateInstance" => return pfn!(instance::create_instance as vk::PFN_vkCreateInstance),
        b"vkEnumerateInstanceLayerProperties" => {
            return pfn!(vkEnumerateInstanceLayerProperties as vk::PFN_vkEnumerateInstanceLayerProperties)
        }
        b"vkEnumerateInstanceExtensionProperties" => {
            return pfn!(vkEnumerateInstanceExtensionProperties as vk::PFN_vkEnumerateInstanceExtensionProperties)
        }
        _ => {}
    }
    let inst = instance_data(instance)?;
    let next = (inst.next_gipa)(instance, name.as_ptr());
    // Physical-device queries are hooked only when some emulation may be active.
    let may_emulate = ext::ALL.iter().any(|e| e.may_emulate(&inst.settings));
    let may_adjust_properties = ext::ALL.iter().any(|e| e.may_reserve_descriptors(&inst.settings));
    if let Some(f) = messengers::instance_hook(&inst, name.to_bytes()) {
        return Some(f);
    }
    match name.to_bytes() {
        b"vkGetDeviceProcAddr" => pfn!(vkGetDeviceProcAddr as vk::PFN_vkGetDeviceProcAddr),
        b"vkDestroyInstance" => pfn!(instance::destroy_instance as vk::PFN_vkDestroyInstance),
        b"vkCreateDevice" => pfn!(device::create_device as vk::PFN_vkCreateDevice),
        b"vkEnumerateDeviceExtensionProperties" if may_emulate && next.is_some() => {
            pfn!(instance::enumerate_device_extension_properties as vk::PFN_vkEnumerateDeviceExtensionProperties)
        }
        b"vkGetPhysicalDeviceFeatures2" if may_emulate && next.is_some() => {
            pfn!(instance::get_physical_device_features2 as vk::PFN_vkGetPhysicalDeviceFeatures2)
        }
        b"vkGetPhysicalDeviceFeatures2KHR" if may_emulate && next.is_some() => {
            pfn!(instance::get_physical_device_features2_khr as vk::PFN_vkGetPhysicalDeviceFeatures2)
        }
        b"vkGetPhysicalDeviceToolProperties" => pfn!(tooling::get_physical_device_tool_properties as vk::PFN_vkGetPhysicalDeviceToolProperties),
        b"vkGetPhysicalDeviceToolPropertiesEXT" => pfn!(tooling::get_physical_device_tool_properties_ext as vk::PFN_vkGetPhysicalDeviceToolProperties),
        b"vkGetPhysicalDeviceProperties" if may_adjust_properties => {
            pfn!(instance::get_physical_device_properties as vk::PFN_vkGetPhysicalDeviceProperties)
        }
        b"vkGetPhysicalDeviceProperties2" if may_adjust_properties && next.is_some() => {
            pfn!(instance::get_physical_device_properties2 as vk::PFN_vkGetPhysicalDeviceProperties2)
        }
        b"vkGetPhysicalDeviceProperties2KHR" if may_adjust_properties && next.is_some() => {
            pfn!(instance::get_physical_device_properties2_khr as vk::PFN_vkGetPhysicalDeviceProperties2)
        }
        _ => next,
    }
}

#[no_mangle]
pub unsafe extern "system" fn vkGetDeviceProcAddr(device: vk::Device, p_name: *const c_char) -> vk::PFN_vkVoidFunction {
    guard("vkGetDeviceProcAddr", None, || unsafe {
        if p_name.is_null() {
            return None;
        }
        get_device_proc_addr(device, CStr::from_ptr(p_name))
    })
}

unsafe fn get_device_proc_addr(device: vk::Device, name: &CStr) -> vk::PFN_vkVoidFunction {
    if name.to_bytes() == b"vkGetDeviceProcAddr" {
        return pfn!(vkGetDeviceProcAddr as vk::PFN_vkGetDeviceProcAddr);
    }
    let dev = device_data(device)?;
    let next = (dev.next_gdpa)(device, name.as_ptr());
    if name.to_bytes() == b"vkDestroyDevice" {
        return pfn!(device::destroy_device as vk::PFN_vkDestroyDevice);
    }
    // The commands the device's emulations (and the services they use) intercept: only on
    // devices where they are active.
    if let Some(f) = dev.components.iter().find_map(|c| c.device_hook(name.to_bytes(), next.is_some())) {
        return Some(f);
    }
    // Debug names for the layer's messages, where it does something and the application
    // may name objects (VK_EXT_debug_utils enabled on the instance).
    if name.to_bytes() == b"vkSetDebugUtilsObjectNameEXT" && next.is_some() && (dev.options.is_some() || !dev.components.is_empty()) {
        return pfn!(messengers::set_debug_utils_object_name as vk::PFN_vkSetDebugUtilsObjectNameEXT);
    }
    // Shader hooks only where something is emulated, and only where the command exists below.
    if dev.options.is_none() || next.is_none() {
        return next;
    }
    shader_hooks::device_hook(name.to_bytes()).or(next)
}

#[no_mangle]
pub unsafe extern "system" fn vkEnumerateInstanceLayerProperties(p_count: *mut u32, p_properties: *mut vk::LayerProperties) -> vk::Result {
    guard("vkEnumerateInstanceLayerProperties", vk::Result::ERROR_UNKNOWN, || unsafe {
        write_enumeration(&[layer_properties()], p_count, p_properties)
    })
}

#[no_mangle]
pub unsafe extern "system" fn vkEnumerateInstanceExtensionProperties(
    p_layer_name: *const c_char,
    p_count: *mut u32,
    p_properties: *mut vk::ExtensionProperties,
) -> vk::Result {
    guard("vkEnumerateInstanceExtensionProperties", vk::Result::ERROR_UNKNOWN, || unsafe {
        if is_our_layer(p_layer_name) {
            write_enumeration(&layer_instance_extensions(), p_count, p_properties)
        } else {
            vk::Result::ERROR_LAYER_NOT_PRESENT
        }
    })
}

#[no_mangle]
pub unsafe extern "system" fn vkEnumerateDeviceLayerProperties(
    _pd: vk::PhysicalDevice,
    p_count: *mut u32,
    p_properties: *mut vk::LayerProperties,
) -> vk::Result {
    guard("vkEnumerateDeviceLayerProperties", vk::Result::ERROR_UNKNOWN, || unsafe {
        write_enumeration(&[layer_properties()], p_count, p_properties)
    })
}

#[no_mangle]
pub unsafe extern "system" fn vkEnumerateDeviceExtensionProperties(
    pd: vk::PhysicalDevice,
    p_layer_name: *const c_char,
    p_count: *mut u32,
    p_properties: *mut vk::ExtensionProperties,
) -> vk::Result {
    instance::enumerate_device_extension_properties(pd, p_layer_name, p_count, p_properties)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::null_mut;

    #[test]
    fn negotiate_v2() {
        let mut s = VkNegotiateLayerInterface {
            s_type: LAYER_NEGOTIATE_INTERFACE_STRUCT,
            p_next: null_mut(),
            loader_layer_interface_version: 3,
            pfn_get_instance_proc_addr: None,
            pfn_get_device_proc_addr: None,
            pfn_get_physical_device_proc_addr: None,
        };
        assert_eq!(unsafe { vkNegotiateLoaderLayerInterfaceVersion(&mut s) }, vk::Result::SUCCESS);
        assert_eq!(s.loader_layer_interface_version, 2);
        assert!(s.pfn_get_instance_proc_addr.is_some() && s.pfn_get_device_proc_addr.is_some());
        s.s_type = 0;
        assert_eq!(unsafe { vkNegotiateLoaderLayerInterfaceVersion(&mut s) }, vk::Result::ERROR_INITIALIZATION_FAILED);
    }

    #[test]
    fn introspection() {
        let name = std::ffi::CString::new(LAYER_NAME).unwrap();
        let mut count = 0;
        unsafe {
            assert_eq!(vkEnumerateInstanceLayerProperties(&mut count, null_mut()), vk::Result::SUCCESS);
            assert_eq!(count, 1);
            let mut p = vk::LayerProperties::default();
            assert_eq!(vkEnumerateInstanceLayerProperties(&mut count, &mut p), vk::Result::SUCCESS);
            assert_eq!(p.layer_name_as_c_str().unwrap(), name.as_c_str());
            assert_eq!(vkEnumerateInstanceExtensionProperties(name.as_ptr(), &mut count, null_mut()), vk::Result::SUCCESS);
            assert_eq!(count, 1);
            let mut e = vk::ExtensionProperties::default();
            assert_eq!(vkEnumerateInstanceExtensionProperties(name.as_ptr(), &mut count, &mut e), vk::Result::SUCCESS);
            assert_eq!(e.extension_name_as_c_str().unwrap(), c"VK_EXT_layer_settings");
            assert_eq!(e.spec_version, 2);
            assert_eq!(
                vkEnumerateInstanceExtensionProperties(std::ptr::null(), &mut count, null_mut()),
                vk::Result::ERROR_LAYER_NOT_PRESENT
            );
            assert_eq!(
                vkEnumerateDeviceExtensionProperties(vk::PhysicalDevice::null(), name.as_ptr(), &mut count, null_mut()),
                vk::Result::SUCCESS
            );
            assert_eq!(count, 4);
            let mut d = vk::ExtensionProperties::default();
            count = 1;
            assert_eq!(
                vkEnumerateDeviceExtensionProperties(vk::PhysicalDevice::null(), name.as_ptr(), &mut count, &mut d),
                vk::Result::INCOMPLETE
            );
            assert_eq!(d.extension_name_as_c_str().unwrap(), c"VK_NV_raw_access_chains");
            assert!(vkGetInstanceProcAddr(vk::Instance::null(), c"vkCreateInstance".as_ptr()).is_some());
            assert!(vkGetInstanceProcAddr(vk::Instance::null(), c"vkCmdDispatch".as_ptr()).is_none());
        }
    }
}
