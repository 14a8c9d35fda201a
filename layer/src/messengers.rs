//! The application's debug callbacks, as the layer learns them (crate::messages delivers to
//! them): vkCreate/DestroyDebugUtilsMessengerEXT, vkCreate/DestroyDebugReportCallbackEXT (only
//! where the instance enabled the extension and the command exists below), and the debug names
//! of objects (vkSetDebugUtilsObjectNameEXT: from vkGetInstanceProcAddr on instances with
//! VK_EXT_debug_utils, where the loader looks it up, and from vkGetDeviceProcAddr on devices
//! where the layer does something).
use crate::dispatch::{self, dispatch_key, instance_data, with_device};
use crate::ffi_guard::guard;
use crate::messages::{self, Messenger};
use crate::log_error;
use ash::vk::{self, Handle};
use std::ffi::CStr;

pub unsafe extern "system" fn create_debug_utils_messenger(
    instance: vk::Instance,
    p_create_info: *const vk::DebugUtilsMessengerCreateInfoEXT,
    p_allocator: *const vk::AllocationCallbacks,
    p_messenger: *mut vk::DebugUtilsMessengerEXT,
) -> vk::Result {
    guard("vkCreateDebugUtilsMessengerEXT", vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe {
        let Some(inst) = instance_data(instance) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = inst.next.create_debug_utils_messenger else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = next(instance, p_create_info, p_allocator, p_messenger);
        if let (vk::Result::SUCCESS, Some(ci), Some(m)) = (r, p_create_info.as_ref(), p_messenger.as_ref()) {
            if let Some(c) = messages::channel(dispatch_key(instance)) {
                c.add(Messenger::utils(m.as_raw(), ci));
            }
        }
        r
    })
}

pub unsafe extern "system" fn destroy_debug_utils_messenger(
    instance: vk::Instance,
    messenger: vk::DebugUtilsMessengerEXT,
    p_allocator: *const vk::AllocationCallbacks,
) {
    guard("vkDestroyDebugUtilsMessengerEXT", (), || unsafe {
        let Some(inst) = instance_data(instance) else { return };
        // Forgotten first (waiting for calls through it to end), then destroyed below.
        if let Some(c) = messages::channel(dispatch_key(instance)) {
            c.remove(messenger.as_raw());
        }
        if let Some(next) = inst.next.destroy_debug_utils_messenger {
            next(instance, messenger, p_allocator);
        }
    })
}

pub unsafe extern "system" fn create_debug_report_callback(
    instance: vk::Instance,
    p_create_info: *const vk::DebugReportCallbackCreateInfoEXT,
    p_allocator: *const vk::AllocationCallbacks,
    p_callback: *mut vk::DebugReportCallbackEXT,
) -> vk::Result {
    guard("vkCreateDebugReportCallbackEXT", vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe {
        let Some(inst) = instance_data(instance) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = inst.next.create_debug_report_callback else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = next(instance, p_create_info, p_allocator, p_callback);
        if let (vk::Result::SUCCESS, Some(ci), Some(cb)) = (r, p_create_info.as_ref(), p_callback.as_ref()) {
            if let Some(c) = messages::channel(dispatch_key(instance)) {
                c.add(Messenger::report(cb.as_raw(), ci));
            }
        }
        r
    })
}

pub unsafe extern "system" fn destroy_debug_report_callback(
    instance: vk::Instance,
    callback: vk::DebugReportCallbackEXT,
    p_allocator: *const vk::AllocationCallbacks,
) {
    guard("vkDestroyDebugReportCallbackEXT", (), || unsafe {
        let Some(inst) = instance_data(instance) else { return };
        if let Some(c) = messages::channel(dispatch_key(instance)) {
            c.remove(callback.as_raw());
        }
        if let Some(next) = inst.next.destroy_debug_report_callback {
            next(instance, callback, p_allocator);
        }
    })
}

pub unsafe extern "system" fn set_debug_utils_object_name(device: vk::Device, p_info: *const vk::DebugUtilsObjectNameInfoEXT) -> vk::Result {
    guard("vkSetDebugUtilsObjectNameEXT", vk::Result::ERROR_OUT_OF_HOST_MEMORY, || unsafe {
        let Some((next, instance)) = with_device(device, |d| (d.next.set_debug_utils_object_name, d.instance_key)) else {
            log_error!(LOADER_INTERFACE, "vkSetDebugUtilsObjectNameEXT: unknown device {device:?}");
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        // Reached through vkGetInstanceProcAddr on a device whose next layer gave no
        // vkGetDeviceProcAddr pointer: the one the next layer gave for the instance.
        let next = next.or_else(|| dispatch::INSTANCES.get(&instance).and_then(|i| i.next.set_debug_utils_object_name));
        let Some(next) = next else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let r = next(device, p_info);
        if let (vk::Result::SUCCESS, Some(info), Some(c)) = (r, p_info.as_ref(), messages::channel(instance)) {
            let name = (!info.p_object_name.is_null()).then(|| CStr::from_ptr(info.p_object_name));
            c.set_name(info.object_type, info.object_handle, name);
        }
        r
    })
}

/// vkGetInstanceProcAddr: our hook for `name` if it is one of the callbacks' commands, the
/// instance enabled their extension and the next layer has the command.
pub fn instance_hook(inst: &dispatch::InstanceData, name: &[u8]) -> vk::PFN_vkVoidFunction {
    let n = &inst.next;
    match name {
        b"vkCreateDebugUtilsMessengerEXT" if inst.debug_utils && n.create_debug_utils_messenger.is_some() => {
            crate::pfn!(create_debug_utils_messenger as vk::PFN_vkCreateDebugUtilsMessengerEXT)
        }
        b"vkDestroyDebugUtilsMessengerEXT" if inst.debug_utils && n.destroy_debug_utils_messenger.is_some() => {
            crate::pfn!(destroy_debug_utils_messenger as vk::PFN_vkDestroyDebugUtilsMessengerEXT)
        }
        b"vkCreateDebugReportCallbackEXT" if inst.debug_report && n.create_debug_report_callback.is_some() => {
            crate::pfn!(create_debug_report_callback as vk::PFN_vkCreateDebugReportCallbackEXT)
        }
        b"vkDestroyDebugReportCallbackEXT" if inst.debug_report && n.destroy_debug_report_callback.is_some() => {
            crate::pfn!(destroy_debug_report_callback as vk::PFN_vkDestroyDebugReportCallbackEXT)
        }
        // A device command, but the loader fills its device dispatch tables' VK_EXT_debug_utils
        // entries through vkGetInstanceProcAddr (vk_loader_extensions.c:
        // `gipa(inst, "vkSetDebugUtilsObjectNameEXT")`): answered only from vkGetDeviceProcAddr,
        // the hook never ran and the application's debug names never reached the messages.
        b"vkSetDebugUtilsObjectNameEXT" if inst.debug_utils && n.set_debug_utils_object_name.is_some() => {
            crate::pfn!(set_debug_utils_object_name as vk::PFN_vkSetDebugUtilsObjectNameEXT)
        }
        _ => None,
    }
}
