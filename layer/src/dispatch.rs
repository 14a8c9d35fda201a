//! Global per-instance and per-device state, keyed by the loader's dispatch-table pointer
//! (`*(void**)handle`): every dispatchable handle starts with it, and child handles (physical
//! devices under an instance; queues/command buffers under a device) share their parent's
//! (LoaderLayerInterface.md "Dispatchable Object Creation"; the loader's terminator physical
//! devices carry the instance's dispatch pointer).
//!
//! The maps live in `Lazy` statics that are never dropped (no destructors at unload).
use crate::component::{Components, DeviceComponent, Slots};
use crate::messages::{self, Object};
use crate::settings::Settings;
use ash::vk::{self, Handle};
use dashmap::DashMap;
use once_cell::sync::Lazy;
use std::ffi::{c_char, CStr};
use std::sync::Arc;

pub type DispatchKey = usize;

/// # Safety
/// `handle` must be a live dispatchable Vulkan handle.
pub unsafe fn dispatch_key<H: Handle>(handle: H) -> DispatchKey {
    *(handle.as_raw() as usize as *const usize)
}

/// Looks a command up through a next-link GetInstanceProcAddr and casts it.
///
/// # Safety
/// `F` must be the PFN type of `name`.
pub unsafe fn load_instance<F: Copy>(gipa: vk::PFN_vkGetInstanceProcAddr, instance: vk::Instance, name: &CStr) -> Option<F> {
    cast_pfn(gipa(instance, name.as_ptr()))
}

/// # Safety
/// `F` must be the PFN type of `name`.
pub unsafe fn load_device<F: Copy>(gdpa: vk::PFN_vkGetDeviceProcAddr, device: vk::Device, name: &CStr) -> Option<F> {
    cast_pfn(gdpa(device, name.as_ptr()))
}

/// # Safety
/// `F` must be a function pointer type.
pub unsafe fn cast_pfn<F: Copy>(f: vk::PFN_vkVoidFunction) -> Option<F> {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<unsafe extern "system" fn()>());
    f.map(|f| std::mem::transmute_copy::<unsafe extern "system" fn(), F>(&f))
}

/// What the layer caches about one physical device (read once, through the next layer).
pub struct PhysicalDeviceInfo {
    pub name: String,
    pub api_version: u32,
    /// Device extensions below us (driver + lower layers).
    pub extensions: Vec<vk::ExtensionProperties>,
    /// The optional features the device supports (`device_features::supported_cached`).
    pub supported: std::sync::OnceLock<shader_rewrite::Target>,
    /// What emulations cache about the device (their capabilities there), one value per type.
    pub slots: Slots,
}

impl PhysicalDeviceInfo {
    pub fn has_extension(&self, name: &CStr) -> bool {
        self.extensions.iter().any(|e| e.extension_name_as_c_str().ok() == Some(name))
    }
}

/// Next-layer instance commands of the debug callbacks (crate::messengers).
#[derive(Default, Clone, Copy)]
pub struct InstanceNext {
    pub create_debug_utils_messenger: Option<vk::PFN_vkCreateDebugUtilsMessengerEXT>,
    pub destroy_debug_utils_messenger: Option<vk::PFN_vkDestroyDebugUtilsMessengerEXT>,
    pub create_debug_report_callback: Option<vk::PFN_vkCreateDebugReportCallbackEXT>,
    pub destroy_debug_report_callback: Option<vk::PFN_vkDestroyDebugReportCallbackEXT>,
    /// Through vkGetInstanceProcAddr, where the loader looks it up (crate::messengers).
    pub set_debug_utils_object_name: Option<vk::PFN_vkSetDebugUtilsObjectNameEXT>,
}

pub struct InstanceData {
    pub instance: vk::Instance,
    pub next_gipa: vk::PFN_vkGetInstanceProcAddr,
    /// The application enabled VK_EXT_debug_utils / VK_EXT_debug_report.
    pub debug_utils: bool,
    pub debug_report: bool,
    pub next: InstanceNext,
    pub settings: Arc<Settings>,
    /// `VkApplicationInfo::apiVersion` (1.0 when absent or 0).
    pub api_version: u32,
    /// `VkApplicationInfo::pEngineName` (empty when absent).
    pub engine_name: String,
    /// VK_KHR_get_physical_device_properties2 enabled on the instance.
    pub props2_enabled: bool,
    pub destroy_instance: vk::PFN_vkDestroyInstance,
    pub enumerate_device_extension_properties: vk::PFN_vkEnumerateDeviceExtensionProperties,
    pub get_physical_device_properties: vk::PFN_vkGetPhysicalDeviceProperties,
    pub get_physical_device_features: vk::PFN_vkGetPhysicalDeviceFeatures,
    pub get_physical_device_features2: Option<vk::PFN_vkGetPhysicalDeviceFeatures2>,
    pub get_physical_device_features2_khr: Option<vk::PFN_vkGetPhysicalDeviceFeatures2>,
    pub get_physical_device_properties2: Option<vk::PFN_vkGetPhysicalDeviceProperties2>,
    pub get_physical_device_properties2_khr: Option<vk::PFN_vkGetPhysicalDeviceProperties2>,
    pub get_physical_device_tool_properties: Option<vk::PFN_vkGetPhysicalDeviceToolProperties>,
    pub get_physical_device_tool_properties_ext: Option<vk::PFN_vkGetPhysicalDeviceToolProperties>,
    pub physical_devices: DashMap<u64, Arc<PhysicalDeviceInfo>>,
}

impl InstanceData {
    /// Features2 through the next layer, when the instance may call it (core 1.1 or the KHR
    /// extension; VUID-vkGetPhysicalDeviceFeatures2-*: calling it otherwise is invalid).
    pub fn features2_for_query(&self) -> Option<vk::PFN_vkGetPhysicalDeviceFeatures2> {
        if self.api_version >= vk::API_VERSION_1_1 {
            self.get_physical_device_features2.or(self.get_physical_device_features2_khr)
        } else if self.props2_enabled {
            self.get_physical_device_features2_khr.or(self.get_physical_device_features2)
        } else {
            None
        }
    }

    /// Properties2 through the next layer, under the same rule as [`Self::features2_for_query`].
    pub fn properties2_for_query(&self) -> Option<vk::PFN_vkGetPhysicalDeviceProperties2> {
        if self.api_version >= vk::API_VERSION_1_1 {
            self.get_physical_device_properties2.or(self.get_physical_device_properties2_khr)
        } else if self.props2_enabled {
            self.get_physical_device_properties2_khr.or(self.get_physical_device_properties2)
        } else {
            None
        }
    }

    /// Cached name, version and extension list of `pd`.
    pub fn physical_device(&self, pd: vk::PhysicalDevice) -> Arc<PhysicalDeviceInfo> {
        if let Some(info) = self.physical_devices.get(&pd.as_raw()) {
            return info.clone();
        }
        // SAFETY: pd is a valid handle of this instance; next-layer pointers.
        let info = unsafe {
            let mut props = vk::PhysicalDeviceProperties::default();
            (self.get_physical_device_properties)(pd, &mut props);
            let extensions = next_device_extensions(self.enumerate_device_extension_properties, pd, std::ptr::null());
            PhysicalDeviceInfo {
                name: props.device_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
                api_version: props.api_version,
                extensions: extensions.unwrap_or_default(),
                supported: std::sync::OnceLock::new(),
                slots: Slots::default(),
            }
        };
        let info = Arc::new(info);
        self.physical_devices.insert(pd.as_raw(), info.clone());
        info
    }
}

/// The full device extension list from the next layer (count/fill, retried on VK_INCOMPLETE).
///
/// # Safety
/// Valid `pd` and next-layer function.
pub unsafe fn next_device_extensions(
    enumerate: vk::PFN_vkEnumerateDeviceExtensionProperties,
    pd: vk::PhysicalDevice,
    layer: *const c_char,
) -> Result<Vec<vk::ExtensionProperties>, vk::Result> {
    loop {
        let mut count = 0u32;
        let r = enumerate(pd, layer, &mut count, std::ptr::null_mut());
        if r != vk::Result::SUCCESS {
            return Err(r);
        }
        let mut list = vec![vk::ExtensionProperties::default(); count as usize];
        let r = enumerate(pd, layer, &mut count, list.as_mut_ptr());
        match r {
            vk::Result::SUCCESS => {
                list.truncate(count as usize);
                return Ok(list);
            }
            vk::Result::INCOMPLETE => continue, // the list grew between the calls
            e => return Err(e),
        }
    }
}


/// Next-layer device commands the shader hooks call.
#[derive(Default, Clone, Copy)]
pub struct DeviceNext {
    pub create_shader_module: Option<vk::PFN_vkCreateShaderModule>,
    pub create_compute_pipelines: Option<vk::PFN_vkCreateComputePipelines>,
    pub create_graphics_pipelines: Option<vk::PFN_vkCreateGraphicsPipelines>,
    pub create_ray_tracing_pipelines_khr: Option<vk::PFN_vkCreateRayTracingPipelinesKHR>,
    pub create_shaders_ext: Option<vk::PFN_vkCreateShadersEXT>,
    pub get_shader_module_create_info_identifier_ext: Option<vk::PFN_vkGetShaderModuleCreateInfoIdentifierEXT>,
    pub set_debug_utils_object_name: Option<vk::PFN_vkSetDebugUtilsObjectNameEXT>,
    pub create_ray_tracing_pipelines_nv: Option<vk::PFN_vkCreateRayTracingPipelinesNV>,
    pub create_execution_graph_pipelines_amdx: Option<vk::PFN_vkCreateExecutionGraphPipelinesAMDX>,
    pub get_pipeline_key_khr: Option<crate::vk_layer::PfnGetPipelineKeyKHR>,
    pub create_pipeline_binaries_khr: Option<crate::vk_layer::PfnCreatePipelineBinariesKHR>,
    pub get_pipeline_indirect_memory_requirements_nv: Option<vk::PFN_vkGetPipelineIndirectMemoryRequirementsNV>,
    pub create_data_graph_pipelines_arm: Option<crate::vk_layer::PfnCreateDataGraphPipelinesARM>,
    pub deferred_operation_join: Option<vk::PFN_vkDeferredOperationJoinKHR>,
    pub get_deferred_operation_result: Option<vk::PFN_vkGetDeferredOperationResultKHR>,
    pub destroy_deferred_operation: Option<vk::PFN_vkDestroyDeferredOperationKHR>,
}

pub struct DeviceData {
    pub device: vk::Device,
    /// Dispatch key of its instance (its messages go to that instance's messengers).
    pub instance_key: DispatchKey,
    pub next_gdpa: vk::PFN_vkGetDeviceProcAddr,
    pub name: String,
    pub settings: Arc<Settings>,
    /// `Some` when at least one extension is emulated on this device: what to rewrite and for
    /// which target. `None` = the device is pure pass-through.
    pub options: Option<shader_rewrite::Options>,
    /// Stages with subgroup ballot (`Target::nonuniform_array_length_broken` applies only to
    /// modules whose entry points are all in them; crate::subgroup_stages).
    pub subgroup_ballot_stages: vk::ShaderStageFlags,
    pub destroy_device: vk::PFN_vkDestroyDevice,
    pub next: DeviceNext,
    /// Deferred pipeline creations not yet completed, by operation (shader_hooks::deferred).
    pub deferred: crate::deferred_copies::Pending,
    /// The per-device state of the emulations (and services) active on this device.
    pub components: Components,
    /// Rewrites already made on this device, by module (`rewrite_cache_mb`).
    pub rewrite_cache: crate::rewrite_cache::RewriteCache,
}

/// Keys are dispatch-table pointers: FxHash is enough and much cheaper than SipHash on the
/// per-call lookup of every hook.
type Map<V> = DashMap<DispatchKey, V, std::hash::BuildHasherDefault<rustc_hash::FxHasher>>;
pub static INSTANCES: Lazy<Map<Arc<InstanceData>>> = Lazy::new(Map::default);
pub static DEVICES: Lazy<Map<Arc<DeviceData>>> = Lazy::new(Map::default);

/// # Safety
/// `instance` must be a live instance handle.
pub unsafe fn instance_data(instance: vk::Instance) -> Option<Arc<InstanceData>> {
    if instance == vk::Instance::null() {
        return None;
    }
    let key = dispatch_key(instance);
    let inst = INSTANCES.get(&key).map(|e| e.clone());
    if inst.is_some() {
        messages::enter(key, Some(Object { ty: vk::ObjectType::INSTANCE, handle: instance.as_raw(), module_hash: 0 }));
    }
    inst
}

/// Messages from here on concern `pd` of `inst` (crate::messages).
fn enter_physical_device(inst: &InstanceData, pd: vk::PhysicalDevice) {
    messages::enter(instance_key(inst), Some(Object { ty: vk::ObjectType::PHYSICAL_DEVICE, handle: pd.as_raw(), module_hash: 0 }));
}

/// Messages from here on concern `dev` (crate::messages).
fn enter_device(dev: &DeviceData) {
    messages::enter(dev.instance_key, Some(Object { ty: vk::ObjectType::DEVICE, handle: dev.device.as_raw(), module_hash: 0 }));
}

/// The instance's dispatch key.
pub fn instance_key(inst: &InstanceData) -> DispatchKey {
    // SAFETY: a live instance handle.
    unsafe { dispatch_key(inst.instance) }
}

/// The instance a physical device belongs to.
///
/// # Safety
/// `pd` must be a live physical device handle.
pub unsafe fn instance_of(pd: vk::PhysicalDevice) -> Option<Arc<InstanceData>> {
    if pd == vk::PhysicalDevice::null() {
        return None;
    }
    if let Some(e) = INSTANCES.get(&dispatch_key(pd)) {
        enter_physical_device(&e, pd);
        return Some(e.clone());
    }
    // Defensive fallback for loaders whose physical-device handles carry their own dispatch
    // pointer: with a single instance there is only one candidate.
    if INSTANCES.len() == 1 {
        crate::log_debug!(TRACE, "physical device {pd:?}: dispatch key unknown; using the only instance");
        let inst = INSTANCES.iter().next().map(|e| e.value().clone());
        if let Some(i) = &inst {
            enter_physical_device(i, pd);
        }
        return inst;
    }
    None
}

/// Runs `f` on the device's state without taking a reference count (the map entry is borrowed
/// for the duration of `f`, so `f` must not call down or block).
///
/// # Safety
/// `device` must be a live device handle.
pub unsafe fn with_device<R>(device: vk::Device, f: impl FnOnce(&DeviceData) -> R) -> Option<R> {
    if device == vk::Device::null() {
        return None;
    }
    DEVICES.get(&dispatch_key(device)).map(|e| {
        enter_device(&e);
        f(&e)
    })
}

/// # Safety
/// `device` must be a live device handle.
pub unsafe fn device_data(device: vk::Device) -> Option<Arc<DeviceData>> {
    if device == vk::Device::null() {
        return None;
    }
    DEVICES.get(&dispatch_key(device)).map(|e| {
        enter_device(&e);
        e.clone()
    })
}

/// The component of type `T` of a device, if it has one.
///
/// # Safety
/// `device` must be a live device handle.
pub unsafe fn component<T: DeviceComponent>(device: vk::Device) -> Option<Arc<T>> {
    if device == vk::Device::null() {
        return None;
    }
    DEVICES.get(&dispatch_key(device)).and_then(|d| {
        enter_device(&d);
        d.components.get::<T>()
    })
}

/// The component of type `T` of a command buffer's device.
///
/// # Safety
/// `cb` must be a live command buffer handle.
pub unsafe fn component_of_cb<T: DeviceComponent>(cb: vk::CommandBuffer) -> Option<Arc<T>> {
    if cb == vk::CommandBuffer::null() {
        return None;
    }
    DEVICES.get(&dispatch_key(cb)).and_then(|d| {
        enter_device(&d);
        d.components.get::<T>()
    })
}
