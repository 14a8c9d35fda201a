//! Instance-level hooks: vkCreateInstance / vkDestroyInstance (state), and the physical-device
//! queries that advertise emulated extensions (vkEnumerateDeviceExtensionProperties,
//! vkGetPhysicalDeviceFeatures2 + its KHR alias).
use crate::dispatch::{self, dispatch_key, load_instance, InstanceData, InstanceNext, INSTANCES};
use crate::messages::{self, Channel, Messenger, Object};
use crate::descriptor_limits::Reservation;
use crate::emulation::{merge_extensions, write_enumeration, PhysDev};
use crate::ext;
use crate::ffi_guard::guard;
use crate::pnext;
use crate::settings::{self, Settings, LAYER_NAME};
use crate::tooling;
use crate::vk_layer::{find_link_info, VkLayerInstanceCreateInfo};
use crate::{log_debug, log_error, log_info};
use ash::vk::{self, Handle};
use std::ffi::{c_char, CStr};
use std::sync::Arc;

pub unsafe extern "system" fn create_instance(
    p_create_info: *const vk::InstanceCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_instance: *mut vk::Instance,
) -> vk::Result {
    guard("vkCreateInstance", vk::Result::ERROR_INITIALIZATION_FAILED, || unsafe {
        create_instance_impl(p_create_info, p_allocator, p_instance)
    })
}

unsafe fn create_instance_impl(
    p_create_info: *const vk::InstanceCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_instance: *mut vk::Instance,
) -> vk::Result {
    let Some(ci) = p_create_info.as_ref() else { return vk::Result::ERROR_INITIALIZATION_FAILED };
    let enabled = names(ci.pp_enabled_extension_names, ci.enabled_extension_count);
    let (s, warnings) = Settings::load(ci.p_next);
    let s = Arc::new(s);
    // Messengers chained in the create info hear vkCreateInstance from here on: the channel is
    // registered under a provisional key until the instance exists.
    let chained = if enabled.contains(&vk::EXT_DEBUG_UTILS_NAME) || enabled.contains(&vk::EXT_DEBUG_REPORT_NAME) {
        Messenger::chained(ci.p_next)
    } else {
        Vec::new()
    };
    let channel = Arc::new(Channel::new(s.log_level, s.duplicate_message_limit, chained));
    let provisional = Arc::as_ptr(&channel) as usize;
    messages::register(provisional, channel.clone());
    messages::enter(provisional, None);
    settings::install(s.clone(), &warnings);
    let r = call_down(ci, p_create_info, p_allocator, p_instance);
    messages::unregister(provisional);
    let Ok(next_gipa) = r else { return r.unwrap_err() };
    let instance = *p_instance;
    messages::register(dispatch_key(instance), channel.clone());
    messages::enter(dispatch_key(instance), Some(Object { ty: vk::ObjectType::INSTANCE, handle: instance.as_raw(), module_hash: 0 }));
    let r = record(ci, &enabled, instance, next_gipa, s.clone(), p_allocator);
    if r == vk::Result::SUCCESS {
        log_info!(
            LAYER_ACTIVE,
            "{LAYER_NAME} {} active on instance {instance:?} (apiVersion {}); settings: {}",
            env!("CARGO_PKG_VERSION"),
            version_string(api_version(ci)),
            s.describe()
        );
    } else {
        messages::unregister(dispatch_key(instance));
    }
    channel.set_create_time_active(false);
    r
}

/// The application's apiVersion (1.0 when absent or 0).
unsafe fn api_version(ci: &vk::InstanceCreateInfo) -> u32 {
    ci.p_application_info.as_ref().map(|a| a.api_version).filter(|v| *v != 0).unwrap_or(vk::API_VERSION_1_0)
}

fn version_string(v: u32) -> String {
    format!("{}.{}", vk::api_version_major(v), vk::api_version_minor(v))
}

/// LoaderLayerInterface.md "Layer Dispatch Initialization": take the next link's
/// GetInstanceProcAddr, advance pLayerInfo for the next layer, call down. Ok: the next
/// GetInstanceProcAddr (the instance exists).
unsafe fn call_down(
    ci: &vk::InstanceCreateInfo,
    p_create_info: *const vk::InstanceCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_instance: *mut vk::Instance,
) -> Result<vk::PFN_vkGetInstanceProcAddr, vk::Result> {
    let Some(link) = find_link_info::<VkLayerInstanceCreateInfo>(ci.p_next, vk::StructureType::LOADER_INSTANCE_CREATE_INFO)
    else {
        log_error!(LOADER_INTERFACE, "vkCreateInstance: no VkLayerInstanceCreateInfo link info in the chain (not called by the loader?)");
        return Err(vk::Result::ERROR_INITIALIZATION_FAILED);
    };
    let layer_info = (*link).p_layer_info;
    if layer_info.is_null() {
        log_error!(LOADER_INTERFACE, "vkCreateInstance: loader link info is empty");
        return Err(vk::Result::ERROR_INITIALIZATION_FAILED);
    }
    let next_gipa = (*layer_info).pfn_next_get_instance_proc_addr;
    (*link).p_layer_info = (*layer_info).p_next;
    let Some(next_create) = load_instance::<vk::PFN_vkCreateInstance>(next_gipa, vk::Instance::null(), c"vkCreateInstance") else {
        log_error!(LOADER_INTERFACE, "vkCreateInstance: next layer has no vkCreateInstance");
        return Err(vk::Result::ERROR_INITIALIZATION_FAILED);
    };
    let r = if settings::only_ours(ci.p_next) {
        next_create_without_own_settings(ci, next_create, p_allocator, p_instance)
    } else {
        next_create(p_create_info, p_allocator, p_instance)
    };
    match r {
        vk::Result::SUCCESS => Ok(next_gipa),
        r => Err(r),
    }
}

/// Calls down without the application's `VkLayerSettingsCreateInfoEXT` structures, which carry
/// settings for this layer only: layers below that do not know the structure (the validation
/// layer of Vulkan 1.3.239, Debian 12's, reports it as an unknown sType,
/// VUID-VkInstanceCreateInfo-pNext-pNext) never see it. Nothing the application passed is
/// written: known structures are copied, the loader's own link structures spliced in place
/// (pnext.rs). A structure the layer cannot take out (behind an unknown one in read-only memory)
/// stays.
unsafe fn next_create_without_own_settings(
    ci: &vk::InstanceCreateInfo,
    next_create: vk::PFN_vkCreateInstance,
    p_allocator: *const vk::AllocationCallbacks,
    p_instance: *mut vk::Instance,
) -> vk::Result {
    let lock = pnext::AppChainLock::acquire();
    let mut chain = pnext::Chain::copy_splicing(ci.p_next, &lock);
    chain.remove(vk::StructureType::LAYER_SETTINGS_CREATE_INFO_EXT);
    let spliced = chain.splice(&lock);
    let copy = vk::InstanceCreateInfo { p_next: spliced.head(), ..*ci };
    next_create(&copy, p_allocator, p_instance)
}

/// The instance's state, found by its dispatch key from now on.
unsafe fn record(
    ci: &vk::InstanceCreateInfo,
    enabled: &[&CStr],
    instance: vk::Instance,
    next_gipa: vk::PFN_vkGetInstanceProcAddr,
    settings: Arc<Settings>,
    p_allocator: *const vk::AllocationCallbacks,
) -> vk::Result {
    let load = |name: &CStr| next_gipa(instance, name.as_ptr());
    let (Some(destroy), Some(enumerate), Some(props), Some(feats)) = (
        dispatch::cast_pfn::<vk::PFN_vkDestroyInstance>(load(c"vkDestroyInstance")),
        dispatch::cast_pfn::<vk::PFN_vkEnumerateDeviceExtensionProperties>(load(c"vkEnumerateDeviceExtensionProperties")),
        dispatch::cast_pfn::<vk::PFN_vkGetPhysicalDeviceProperties>(load(c"vkGetPhysicalDeviceProperties")),
        dispatch::cast_pfn::<vk::PFN_vkGetPhysicalDeviceFeatures>(load(c"vkGetPhysicalDeviceFeatures")),
    ) else {
        log_error!(LOADER_INTERFACE, "vkCreateInstance: next layer lacks core instance commands");
        if let Some(destroy) = dispatch::cast_pfn::<vk::PFN_vkDestroyInstance>(load(c"vkDestroyInstance")) {
            destroy(instance, p_allocator);
        }
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let data = InstanceData {
        instance,
        next_gipa,
        debug_utils: enabled.contains(&vk::EXT_DEBUG_UTILS_NAME),
        debug_report: enabled.contains(&vk::EXT_DEBUG_REPORT_NAME),
        next: InstanceNext {
            create_debug_utils_messenger: dispatch::cast_pfn(load(c"vkCreateDebugUtilsMessengerEXT")),
            destroy_debug_utils_messenger: dispatch::cast_pfn(load(c"vkDestroyDebugUtilsMessengerEXT")),
            create_debug_report_callback: dispatch::cast_pfn(load(c"vkCreateDebugReportCallbackEXT")),
            destroy_debug_report_callback: dispatch::cast_pfn(load(c"vkDestroyDebugReportCallbackEXT")),
            set_debug_utils_object_name: dispatch::cast_pfn(load(c"vkSetDebugUtilsObjectNameEXT")),
        },
        settings,
        api_version: api_version(ci),
        engine_name: (ci.p_application_info.as_ref().filter(|a| !a.p_engine_name.is_null()))
            .map_or(String::new(), |a| CStr::from_ptr(a.p_engine_name).to_string_lossy().into_owned()),
        props2_enabled: enabled.contains(&vk::KHR_GET_PHYSICAL_DEVICE_PROPERTIES2_NAME),
        destroy_instance: destroy,
        enumerate_device_extension_properties: enumerate,
        get_physical_device_properties: props,
        get_physical_device_features: feats,
        get_physical_device_features2: dispatch::cast_pfn(load(c"vkGetPhysicalDeviceFeatures2")),
        get_physical_device_features2_khr: dispatch::cast_pfn(load(c"vkGetPhysicalDeviceFeatures2KHR")),
        get_physical_device_properties2: dispatch::cast_pfn(load(c"vkGetPhysicalDeviceProperties2")),
        get_physical_device_properties2_khr: dispatch::cast_pfn(load(c"vkGetPhysicalDeviceProperties2KHR")),
        get_physical_device_tool_properties: dispatch::cast_pfn(load(c"vkGetPhysicalDeviceToolProperties")),
        get_physical_device_tool_properties_ext: dispatch::cast_pfn(load(c"vkGetPhysicalDeviceToolPropertiesEXT")),
        physical_devices: Default::default(),
    };
    INSTANCES.insert(dispatch_key(instance), Arc::new(data));
    vk::Result::SUCCESS
}

/// Extension-name array as CStrs.
pub(crate) unsafe fn names<'a>(pp: *const *const c_char, count: u32) -> Vec<&'a CStr> {
    if pp.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(pp, count as usize)
        .iter()
        .filter(|p| !p.is_null())
        .map(|p| CStr::from_ptr(*p))
        .collect()
}

pub unsafe extern "system" fn destroy_instance(instance: vk::Instance, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroyInstance", (), || unsafe {
        if instance == vk::Instance::null() {
            return;
        }
        let key = dispatch_key(instance);
        // Messengers chained at vkCreateInstance hear vkDestroyInstance too.
        let channel = messages::channel(key);
        if let Some(c) = &channel {
            c.set_create_time_active(true);
        }
        messages::enter(key, Some(Object { ty: vk::ObjectType::INSTANCE, handle: instance.as_raw(), module_hash: 0 }));
        match INSTANCES.remove(&key) {
            Some((_, data)) => {
                log_debug!(TRACE, "vkDestroyInstance: instance {instance:?}");
                (data.destroy_instance)(instance, p_allocator)
            }
            None => log_error!(LOADER_INTERFACE, "vkDestroyInstance: unknown instance {instance:?}; cannot call down"),
        }
        messages::unregister(key);
    })
}

/// Extensions this layer adds for `pd`: the emulated ones the driver does not list, and
/// VK_EXT_tooling_info where the driver lacks it (crate::tooling).
fn added_extensions(inst: &InstanceData, pd: vk::PhysicalDevice) -> Vec<vk::ExtensionProperties> {
    let phys = inst.physical_device(pd);
    let pdev = PhysDev { inst, pd, info: &phys };
    // SAFETY: pd belongs to inst.
    let mut out: Vec<_> = ext::ALL.iter().flat_map(|e| unsafe { e.added_extensions(&pdev) }).collect();
    if !phys.has_extension(tooling::EXTENSION.name) {
        out.push(tooling::EXTENSION.properties());
    }
    out
}

/// The device extensions this layer implements (the answer for `pLayerName == our name`).
pub fn layer_device_extensions() -> Vec<vk::ExtensionProperties> {
    ext::ALL.iter().flat_map(|e| e.extensions()).chain([&tooling::EXTENSION]).map(|e| e.properties()).collect()
}

pub unsafe extern "system" fn enumerate_device_extension_properties(
    pd: vk::PhysicalDevice,
    p_layer_name: *const c_char,
    p_count: *mut u32,
    p_properties: *mut vk::ExtensionProperties,
) -> vk::Result {
    guard("vkEnumerateDeviceExtensionProperties", vk::Result::ERROR_INITIALIZATION_FAILED, || unsafe {
        let layer = (!p_layer_name.is_null()).then(|| CStr::from_ptr(p_layer_name));
        if layer.map(|l| l.to_bytes() == LAYER_NAME.as_bytes()) == Some(true) {
            return write_enumeration(&layer_device_extensions(), p_count, p_properties);
        }
        let Some(inst) = dispatch::instance_of(pd) else {
            if layer.is_some() {
                return vk::Result::ERROR_LAYER_NOT_PRESENT;
            }
            log_error!(LOADER_INTERFACE, "vkEnumerateDeviceExtensionProperties: unknown physical device {pd:?}");
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        };
        let next = inst.enumerate_device_extension_properties;
        if layer.is_some() {
            return next(pd, p_layer_name, p_count, p_properties);
        }
        let ours = added_extensions(&inst, pd);
        if ours.is_empty() {
            return next(pd, p_layer_name, p_count, p_properties);
        }
        let driver = match dispatch::next_device_extensions(next, pd, std::ptr::null()) {
            Ok(l) => l,
            Err(e) => return e,
        };
        write_enumeration(&merge_extensions(driver, &ours), p_count, p_properties)
    })
}

pub unsafe extern "system" fn get_physical_device_features2(pd: vk::PhysicalDevice, p_features: *mut vk::PhysicalDeviceFeatures2) {
    guard("vkGetPhysicalDeviceFeatures2", (), || unsafe { features2(pd, p_features, false) })
}

pub unsafe extern "system" fn get_physical_device_features2_khr(pd: vk::PhysicalDevice, p_features: *mut vk::PhysicalDeviceFeatures2) {
    guard("vkGetPhysicalDeviceFeatures2KHR", (), || unsafe { features2(pd, p_features, true) })
}

/// Unlinks the emulations' own feature structures (the driver may not know them;
/// VUID-VkPhysicalDeviceFeatures2-pNext-pNext), calls down, relinks them exactly as they were,
/// then lets every emulation report its bits.
unsafe fn features2(pd: vk::PhysicalDevice, p_features: *mut vk::PhysicalDeviceFeatures2, khr: bool) {
    let Some(inst) = dispatch::instance_of(pd) else {
        log_error!(LOADER_INTERFACE, "vkGetPhysicalDeviceFeatures2: unknown physical device {pd:?}");
        return;
    };
    let (core, alias) = (inst.get_physical_device_features2, inst.get_physical_device_features2_khr);
    let Some(next) = (if khr { alias.or(core) } else { core.or(alias) }) else {
        log_error!(LOADER_INTERFACE, "vkGetPhysicalDeviceFeatures2: next layer has no such command");
        return;
    };
    if p_features.is_null() {
        return next(pd, p_features);
    }
    let phys = inst.physical_device(pd);
    let pdev = PhysDev { inst: &inst, pd, info: &phys };
    let reports: Vec<_> = ext::ALL.iter().filter_map(|e| e.features(&pdev)).collect();
    if reports.is_empty() {
        return next(pd, p_features);
    }
    let hidden: Vec<vk::StructureType> = reports.iter().flat_map(|r| r.hidden.iter().copied()).collect();
    pnext::with_unlinked(p_features as *mut vk::BaseOutStructure, &hidden, || next(pd, p_features));
    let mut at = p_features as *mut vk::BaseOutStructure;
    while !at.is_null() {
        reports.iter().for_each(|r| (r.report)(at));
        at = (*at).p_next;
    }
}

pub unsafe extern "system" fn get_physical_device_properties2(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties2) {
    guard("vkGetPhysicalDeviceProperties2", (), || unsafe { properties2(pd, p, false) })
}

pub unsafe extern "system" fn get_physical_device_properties2_khr(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties2) {
    guard("vkGetPhysicalDeviceProperties2KHR", (), || unsafe { properties2(pd, p, true) })
}

/// The descriptors the emulations reserve on `pd`, together (they share the table's set).
unsafe fn reservation(inst: &InstanceData, pd: vk::PhysicalDevice) -> Option<Reservation> {
    let phys = inst.physical_device(pd);
    let pdev = PhysDev { inst, pd, info: &phys };
    ext::ALL.iter().filter_map(|e| e.descriptor_reservation(&pdev)).reduce(|a, b| a.and(&b))
}

pub unsafe extern "system" fn get_physical_device_properties(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties) {
    guard("vkGetPhysicalDeviceProperties", (), || unsafe {
        let Some(inst) = dispatch::instance_of(pd) else {
            log_error!(LOADER_INTERFACE, "vkGetPhysicalDeviceProperties: unknown physical device {pd:?}");
            return;
        };
        (inst.get_physical_device_properties)(pd, p);
        if let (Some(r), Some(props)) = (reservation(&inst, pd), p.as_mut()) {
            r.apply_to_limits(&mut props.limits);
        }
    })
}

/// Calls down, then applies the descriptors the emulations reserve.
unsafe fn properties2(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties2, khr: bool) {
    let Some(inst) = dispatch::instance_of(pd) else {
        log_error!(LOADER_INTERFACE, "vkGetPhysicalDeviceProperties2: unknown physical device {pd:?}");
        return;
    };
    let (core, alias) = (inst.get_physical_device_properties2, inst.get_physical_device_properties2_khr);
    let Some(next) = (if khr { alias.or(core) } else { core.or(alias) }) else {
        log_error!(LOADER_INTERFACE, "vkGetPhysicalDeviceProperties2: next layer has no such command");
        return;
    };
    next(pd, p);
    if p.is_null() {
        return;
    }
    if let Some(r) = reservation(&inst, pd) {
        r.apply(p.cast::<vk::PhysicalDeviceProperties2<'static>>());
    }
}
