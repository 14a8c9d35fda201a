//! A small Vulkan context on lavapipe (through the real loader), with or without our layer,
//! and a compute-dispatch helper.

use ash::vk;
use std::collections::BTreeMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::layer;
use crate::rewritten::{RewrittenModules, DUMP_SETTING};

/// Which device to use: the first physical device whose name contains this
/// (override with `$POLYFILL_E2E_DEVICE`).
pub const DEFAULT_DEVICE_SUBSTRING: &str = "llvmpipe";
/// The extension the layer emulates.
pub const RAW_ACCESS_CHAINS_EXT: &str = "VK_NV_raw_access_chains";

/// How to build a [`Context`].
#[derive(Debug, Clone)]
pub struct ContextOptions {
    /// Enable `VK_LAYER_POLYFILL_extensions` (registered via `VK_ADD_LAYER_PATH` automatically).
    pub enable_layer: bool,
    /// Enable `VK_LAYER_KHRONOS_validation` *below* our layer and collect its ERROR messages
    /// (see [`Context::validation_errors`]).
    /// `POLYFILL_E2E_VALIDATION=0` turns it off for every context (to tell a fault of the
    /// validation layer from one of ours on another driver).
    pub validation: bool,
    /// Device extensions to enable (e.g. `"VK_NV_raw_access_chains"`).
    pub device_extensions: Vec<String>,
    /// Chain `VkPhysicalDeviceRawAccessChainsFeaturesNV { shaderRawAccessChains = TRUE }` into
    /// `vkCreateDevice`.
    pub raw_access_chains_feature: bool,
    /// Turn on every helpful feature the device has (BDA, 8/16-bit storage, Int8/16/64,
    /// descriptor indexing, variable pointers, scalar layout, ...). Default true.
    pub enable_optional_features: bool,
    /// Enable `robustBufferAccess` (default false: the layer's checks must hold without it).
    pub robust_buffer_access: bool,
    /// `VkLayerSettingsCreateInfoEXT` entries for our layer (key without prefix, e.g.
    /// `("log_level", "debug")`), passed as `VK_LAYER_SETTING_TYPE_STRING_EXT`. Empty: no struct.
    pub layer_settings: Vec<(String, String)>,
    /// Instance API version (default 1.3).
    pub api_version: u32,
    /// Request `storageInputOutput16` in `vkCreateDevice` (lavapipe lacks it; through the layer
    /// it is emulated). Default false.
    pub storage_input_output_16: bool,
    /// Request the descriptor-indexing features a bindless table needs (non-uniform indexing
    /// of sampled/storage image arrays, update-after-bind and partially-bound image bindings,
    /// runtime descriptor arrays). Default false: the layer must turn on what its own
    /// descriptor table needs.
    pub bindless_features: bool,
    /// Enable `VK_EXT_shader_object` and chain `VkPhysicalDeviceShaderObjectFeaturesEXT {
    /// shaderObject = TRUE }` into `vkCreateDevice`. Default false.
    pub shader_object: bool,
    /// Enable VK_EXT_pipeline_robustness and its `pipelineRobustness` feature (pipelines may then
    /// choose their own robustness).
    pub pipeline_robustness: bool,
    /// `VkApplicationInfo::pEngineName` (default "polyfill-e2e"; vkd3d-proton's is "vkd3d").
    pub engine_name: String,
    /// Register a debug-utils messenger for every severity and type (the validation layer's
    /// messenger takes errors and warnings only), also chained in `VkInstanceCreateInfo`, so
    /// it hears `vkCreateInstance` (e.g. `POLYFILL-layer-active`) and `vkDestroyInstance`.
    pub messenger: bool,
    /// More instance extensions to enable (e.g. `"VK_EXT_debug_report"`).
    pub instance_extensions: Vec<String>,
}

/// The extension through which applications get bindless texture handles.
pub const IMAGE_VIEW_HANDLE_EXT: &str = "VK_NVX_image_view_handle";

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            enable_layer: false,
            validation: false,
            device_extensions: Vec::new(),
            raw_access_chains_feature: false,
            enable_optional_features: true,
            robust_buffer_access: false,
            layer_settings: Vec::new(),
            api_version: vk::API_VERSION_1_3,
            storage_input_output_16: false,
            bindless_features: false,
            shader_object: false,
            pipeline_robustness: false,
            engine_name: "polyfill-e2e".to_string(),
            messenger: false,
            instance_extensions: Vec::new(),
        }
    }
}

impl ContextOptions {
    /// No layer, no extra extensions.
    pub fn native() -> Self {
        Self::default()
    }
    /// Our layer enabled, no extension requested.
    pub fn with_layer() -> Self {
        ContextOptions { enable_layer: true, ..Self::default() }
    }
    /// Our layer enabled, `VK_NV_raw_access_chains` + `shaderRawAccessChains` enabled.
    pub fn raw_access_chains() -> Self {
        ContextOptions {
            enable_layer: true,
            device_extensions: vec![RAW_ACCESS_CHAINS_EXT.to_string()],
            raw_access_chains_feature: true,
            ..Self::default()
        }
    }
    /// Our layer enabled, `VK_NVX_image_view_handle` enabled (SPV_NV_bindless_texture shaders).
    pub fn bindless() -> Self {
        ContextOptions { enable_layer: true, device_extensions: vec![IMAGE_VIEW_HANDLE_EXT.to_string()], ..Self::default() }
    }
    /// Builder: request the descriptor-indexing features of [`ContextOptions::bindless_features`].
    pub fn bindless_features(mut self, on: bool) -> Self {
        self.bindless_features = on;
        self
    }
    /// Builder: enable `VK_EXT_shader_object` with its `shaderObject` feature.
    pub fn shader_object(mut self, on: bool) -> Self {
        self.shader_object = on;
        self
    }
    /// Builder: enable `pipelineRobustness` at device creation.
    pub fn pipeline_robustness(mut self, on: bool) -> Self {
        self.pipeline_robustness = on;
        self
    }
    /// Builder: also enable the validation layer below ours.
    pub fn validation(mut self, on: bool) -> Self {
        self.validation = on;
        self
    }
    /// Builder: request `storageInputOutput16` at device creation.
    pub fn storage_input_output_16(mut self, on: bool) -> Self {
        self.storage_input_output_16 = on;
        self
    }
    /// Builder: register a messenger for every message ([`ContextOptions::messenger`]).
    pub fn messenger(mut self, on: bool) -> Self {
        self.messenger = on;
        self
    }
    /// Builder: enable one more instance extension.
    pub fn instance_extension(mut self, name: &str) -> Self {
        self.instance_extensions.push(name.to_string());
        self
    }
    /// Builder: set `VkApplicationInfo::pEngineName`.
    pub fn engine_name(mut self, name: &str) -> Self {
        self.engine_name = name.to_string();
        self
    }
    /// Builder: add a `VkLayerSettingsCreateInfoEXT` entry.
    pub fn setting(mut self, key: &str, value: &str) -> Self {
        self.layer_settings.push((key.to_string(), value.to_string()));
        self
    }
}

/// Feature bits that were enabled on the device (subset of what the device supports).
#[derive(Debug, Clone, Copy, Default)]
pub struct EnabledFeatures {
    pub shader_int8: bool,
    pub shader_int16: bool,
    pub shader_int64: bool,
    pub shader_float16: bool,
    pub shader_float64: bool,
    pub storage_buffer_8bit: bool,
    pub uniform_and_storage_buffer_8bit: bool,
    pub storage_buffer_16bit: bool,
    pub uniform_and_storage_buffer_16bit: bool,
    pub storage_push_constant_8: bool,
    pub storage_push_constant_16: bool,
    pub storage_input_output_16: bool,
    pub buffer_device_address: bool,
    pub runtime_descriptor_array: bool,
    pub storage_buffer_array_non_uniform_indexing: bool,
    pub uniform_buffer_array_non_uniform_indexing: bool,
    pub variable_pointers: bool,
    pub variable_pointers_storage_buffer: bool,
    pub scalar_block_layout: bool,
    pub vulkan_memory_model: bool,
    pub robust_buffer_access: bool,
    pub raw_access_chains: bool,
}

/// Kind of a buffer in a [`ComputeJob`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferKind {
    /// `VK_DESCRIPTOR_TYPE_STORAGE_BUFFER`.
    Storage,
    /// `VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER` (a `Uniform`/`BufferBlock` or UBO block in SPIR-V).
    Uniform,
    /// No descriptor: the buffer's device address (start + `descriptor_offset`) is written as a
    /// little-endian u64 into the push constants at `push_constant_offset`.
    DeviceAddress { push_constant_offset: u32 },
}

/// One buffer of a [`ComputeJob`]. `data` is the whole buffer's initial contents; the
/// descriptor (or device address) points at `data[descriptor_offset..]` with `range` bytes
/// (`None`: to the end). `descriptor_offset` must be a multiple of
/// `minStorageBufferOffsetAlignment` / `minUniformBufferOffsetAlignment` (16 on lavapipe).
#[derive(Debug, Clone)]
pub struct BufferSpec {
    pub set: u32,
    pub binding: u32,
    pub array_element: u32,
    pub kind: BufferKind,
    pub data: Vec<u8>,
    pub descriptor_offset: u64,
    pub range: Option<u64>,
    /// Allocate this many more bytes than the buffer needs and fill everything past the
    /// buffer's data with this byte (memory a read past the buffer's size would reach).
    pub allocation_tail: Option<(u64, u8)>,
}

impl BufferSpec {
    /// A storage buffer at (set 0, `binding`), whole range.
    pub fn storage(binding: u32, data: Vec<u8>) -> Self {
        BufferSpec { set: 0, binding, array_element: 0, kind: BufferKind::Storage, data, descriptor_offset: 0, range: None, allocation_tail: None }
    }
    /// A uniform buffer at (set 0, `binding`), whole range.
    pub fn uniform(binding: u32, data: Vec<u8>) -> Self {
        BufferSpec { kind: BufferKind::Uniform, ..Self::storage(binding, data) }
    }
    /// A buffer passed by device address in the push constants.
    pub fn device_address(push_constant_offset: u32, data: Vec<u8>) -> Self {
        BufferSpec { kind: BufferKind::DeviceAddress { push_constant_offset }, ..Self::storage(0, data) }
    }
    /// Builder: descriptor set.
    pub fn set(mut self, set: u32) -> Self {
        self.set = set;
        self
    }
    /// Builder: array element of the binding.
    pub fn element(mut self, array_element: u32) -> Self {
        self.array_element = array_element;
        self
    }
    /// Builder: see [`BufferSpec::allocation_tail`].
    pub fn allocation_tail(mut self, bytes: u64, fill: u8) -> Self {
        self.allocation_tail = Some((bytes, fill));
        self
    }
    /// Builder: descriptor offset and range.
    pub fn window(mut self, descriptor_offset: u64, range: Option<u64>) -> Self {
        self.descriptor_offset = descriptor_offset;
        self.range = range;
        self
    }
}

/// A compute dispatch.
#[derive(Debug, Clone)]
pub struct ComputeJob {
    /// Pads the pipeline layout to `Heap::sets` set layouts, the sets the shader does not use
    /// empty but the last one: an update-after-bind, partially bound heap (never bound: the
    /// shader does not use it). For layouts at the reported descriptor limits.
    pub heap: Option<Heap>,
    pub buffers: Vec<BufferSpec>,
    pub push_constants: Vec<u8>,
    pub groups: [u32; 3],
    pub entry: &'static str,
}

impl Default for ComputeJob {
    fn default() -> Self {
        ComputeJob { heap: None, buffers: Vec::new(), push_constants: Vec::new(), groups: [1, 1, 1], entry: "main" }
    }
}

/// See [`ComputeJob::heap`].
#[derive(Debug, Clone, Copy)]
pub struct Heap {
    pub sets: u32,
    pub ty: vk::DescriptorType,
    pub count: u32,
}

/// A collected debug-utils message.
#[derive(Debug, Clone)]
pub struct ValidationMessage {
    pub severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    pub types: vk::DebugUtilsMessageTypeFlagsEXT,
    /// `pMessageIdName` (empty when null).
    pub id: String,
    pub id_number: i32,
    /// `[id] message`.
    pub text: String,
    /// `pObjects`: type, handle, debug name.
    pub objects: Vec<(vk::ObjectType, u64, Option<String>)>,
}

impl ValidationMessage {
    /// From the polyfill layer itself (not the validation layer or the loader).
    pub fn from_layer(&self) -> bool {
        self.id.starts_with("POLYFILL-")
    }
}

/// Instance + lavapipe device + one compute queue. `Send + Sync`; `run_compute` may be called
/// from several threads at once (queue submission is serialized internally).
pub struct Context {
    entry: ash::Entry,
    instance: ash::Instance,
    debug_utils: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    messages: Arc<Mutex<Vec<ValidationMessage>>>,
    physical_device: vk::PhysicalDevice,
    device: ash::Device,
    queue: Mutex<vk::Queue>,
    queue_family: u32,
    properties: vk::PhysicalDeviceProperties,
    memory_properties: vk::PhysicalDeviceMemoryProperties,
    features: EnabledFeatures,
    device_name: String,
    options: ContextOptions,
    /// The layer's dumps of what it rewrote, validated (see [`crate::rewritten`]).
    rewritten: Option<RewrittenModules>,
}

// SAFETY: all members are Vulkan handles/function tables (thread-safe per the Vulkan spec for
// the operations used, with the queue behind a mutex) or std sync types.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    let _ = std::panic::catch_unwind(|| {
        if data.is_null() || user.is_null() {
            return;
        }
        let data = &*data;
        let id = data.message_id_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let msg = data.message_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let text = if id.is_empty() { msg } else { format!("[{id}] {msg}") };
        let objects = if data.p_objects.is_null() {
            Vec::new()
        } else {
            std::slice::from_raw_parts(data.p_objects, data.object_count as usize)
                .iter()
                .map(|o| (o.object_type, o.object_handle, o.object_name_as_c_str().map(|n| n.to_string_lossy().into_owned())))
                .collect()
        };
        let sink = &*(user as *const Mutex<Vec<ValidationMessage>>);
        if let Ok(mut v) = sink.lock() {
            v.push(ValidationMessage { severity, types, id, id_number: data.message_id_number, text, objects });
        }
    });
    vk::FALSE
}

fn cstrings(v: &[String]) -> Result<Vec<CString>, String> {
    v.iter().map(|s| CString::new(s.as_str()).map_err(|e| e.to_string())).collect()
}

/// The loader (cached per process). The first call also registers our manifest directory in
/// `VK_ADD_LAYER_PATH` (if the layer is built) before anything touches the loader, so the
/// environment is not modified while another thread's loader reads it.
pub fn entry() -> Result<ash::Entry, String> {
    static ENTRY: OnceLock<Result<ash::Entry, String>> = OnceLock::new();
    ENTRY
        .get_or_init(|| {
            let _ = layer::register_with_loader();
            unsafe { ash::Entry::load() }.map_err(|e| format!("cannot load libvulkan.so.1: {e} (install libvulkan1)"))
        })
        .clone()
}

/// Names of the instance layers the loader can see (ours only once
/// [`layer::register_with_loader`] ran; `Context::new` does that when the layer is enabled).
pub fn available_instance_layers() -> Result<Vec<String>, String> {
    let entry = entry()?;
    let props = unsafe { entry.enumerate_instance_layer_properties() }.map_err(|e| format!("vkEnumerateInstanceLayerProperties: {e:?}"))?;
    Ok(props.iter().map(|p| p.layer_name_as_c_str().unwrap_or_default().to_string_lossy().into_owned()).collect())
}

impl Context {
    /// Creates instance + device. Errors carry the failing call and `VkResult`.
    pub fn new(options: &ContextOptions) -> Result<Context, String> {
        let without_validation;
        let options = if options.validation && std::env::var("POLYFILL_E2E_VALIDATION").is_ok_and(|v| v == "0") {
            without_validation = ContextOptions { validation: false, ..options.clone() };
            &without_validation
        } else {
            options
        };
        // A missing build is only fatal if the loader cannot find the layer elsewhere either
        // (e.g. installed with packaging/install-layer.sh).
        let register_error = if options.enable_layer { layer::register_with_loader().err() } else { None };
        let entry = entry()?;
        let mut layers: Vec<String> = Vec::new();
        if options.enable_layer || options.validation {
            let available = available_instance_layers()?;
            if options.enable_layer {
                if !available.iter().any(|l| l == layer::LAYER_NAME) {
                    return Err(match register_error {
                        Some(e) => e,
                        None => format!(
                            "the loader does not list {} (manifest dir {:?}); available: {available:?}",
                            layer::LAYER_NAME,
                            layer::try_manifest_dir()
                        ),
                    });
                }
                layers.push(layer::LAYER_NAME.to_string());
            }
            if options.validation {
                if !available.iter().any(|l| l == layer::VALIDATION_LAYER_NAME) {
                    return Err(format!(
                        "{} is not installed (apt-get install vulkan-validationlayers); available: {available:?}",
                        layer::VALIDATION_LAYER_NAME
                    ));
                }
                layers.push(layer::VALIDATION_LAYER_NAME.to_string());
            }
        }
        let layer_c = cstrings(&layers)?;
        let layer_p: Vec<*const i8> = layer_c.iter().map(|c| c.as_ptr()).collect();
        let mut inst_exts: Vec<CString> = Vec::new();
        if options.validation || options.messenger {
            inst_exts.push(CString::from(ash::ext::debug_utils::NAME));
        }
        inst_exts.extend(cstrings(&options.instance_extensions)?);
        let inst_ext_p: Vec<*const i8> = inst_exts.iter().map(|c| c.as_ptr()).collect();
        let app_name = CString::new("polyfill-e2e").unwrap();
        let engine_name = CString::new(options.engine_name.as_str()).map_err(|e| format!("engine name: {e}"))?;
        let app = vk::ApplicationInfo::default()
            .application_name(&app_name)
            .engine_name(&engine_name)
            .api_version(options.api_version);

        // VkLayerSettingsCreateInfoEXT for our layer.
        let own_dumps = options.layer_settings.iter().any(|(k, _)| k == DUMP_SETTING);
        // Every rewrite is validated (crate::rewritten) unless the test checks its own dumps.
        let rewritten = (options.enable_layer && !own_dumps).then(RewrittenModules::default);
        let mut layer_settings = options.layer_settings.clone();
        layer_settings.extend(rewritten.as_ref().map(|r| (DUMP_SETTING.to_string(), r.dir())));
        let setting_layer = CString::new(layer::LAYER_NAME).unwrap();
        let setting_keys = cstrings(&layer_settings.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>())?;
        let setting_vals = cstrings(&layer_settings.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>())?;
        let setting_val_ptrs: Vec<*const i8> = setting_vals.iter().map(|c| c.as_ptr()).collect();
        let settings: Vec<vk::LayerSettingEXT> = setting_keys
            .iter()
            .enumerate()
            .map(|(i, k)| vk::LayerSettingEXT {
                p_layer_name: setting_layer.as_ptr(),
                p_setting_name: k.as_ptr(),
                ty: vk::LayerSettingTypeEXT::STRING,
                value_count: 1,
                p_values: &setting_val_ptrs[i] as *const *const i8 as *const c_void,
                ..Default::default()
            })
            .collect();
        let mut settings_info = vk::LayerSettingsCreateInfoEXT::default().settings(&settings);

        let messages: Arc<Mutex<Vec<ValidationMessage>>> = Arc::new(Mutex::new(Vec::new()));
        type Sev = vk::DebugUtilsMessageSeverityFlagsEXT;
        let severities = if options.messenger { Sev::ERROR | Sev::WARNING | Sev::INFO | Sev::VERBOSE } else { Sev::ERROR | Sev::WARNING };
        let messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(severities)
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(debug_callback))
            .user_data(Arc::as_ptr(&messages) as *mut c_void);
        let mut chained_messenger = messenger_info;

        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_p)
            .enabled_extension_names(&inst_ext_p);
        if !settings.is_empty() {
            info = info.push_next(&mut settings_info);
        }
        if options.messenger {
            info = info.push_next(&mut chained_messenger);
        }
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| format!("vkCreateInstance (layers {layers:?}): {e:?}"))?;

        // From here on, destroy the instance on error.
        let mut debug_utils = None;
        if options.validation || options.messenger {
            let du = ash::ext::debug_utils::Instance::new(&entry, &instance);
            match unsafe { du.create_debug_utils_messenger(&messenger_info, None) } {
                Ok(m) => debug_utils = Some((du, m)),
                Err(e) => {
                    unsafe { instance.destroy_instance(None) };
                    return Err(format!("vkCreateDebugUtilsMessengerEXT: {e:?}"));
                }
            }
        }
        let destroy_instance = |debug_utils: &Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>| unsafe {
            if let Some((du, m)) = debug_utils {
                du.destroy_debug_utils_messenger(*m, None);
            }
            instance.destroy_instance(None);
        };

        match Self::create_device(&instance, options) {
            Ok((physical_device, device, queue, queue_family, properties, features, device_name)) => {
                let memory_properties = unsafe { instance.get_physical_device_memory_properties(physical_device) };
                Ok(Context {
                    entry,
                    instance,
                    debug_utils,
                    messages,
                    physical_device,
                    device,
                    queue: Mutex::new(queue),
                    queue_family,
                    properties,
                    memory_properties,
                    features,
                    device_name,
                    options: options.clone(),
                    rewritten,
                })
            }
            Err(e) => {
                destroy_instance(&debug_utils);
                Err(e)
            }
        }
    }

    /// Picks the lavapipe physical device (or `$POLYFILL_E2E_DEVICE`).
    pub fn pick_physical_device(instance: &ash::Instance) -> Result<(vk::PhysicalDevice, String), String> {
        let want = std::env::var("POLYFILL_E2E_DEVICE").unwrap_or_else(|_| DEFAULT_DEVICE_SUBSTRING.to_string());
        let pdevs = unsafe { instance.enumerate_physical_devices() }.map_err(|e| format!("vkEnumeratePhysicalDevices: {e:?}"))?;
        let mut names = Vec::new();
        for pd in pdevs {
            let props = unsafe { instance.get_physical_device_properties(pd) };
            let name = props.device_name_as_c_str().unwrap_or_default().to_string_lossy().into_owned();
            if name.contains(&want) {
                return Ok((pd, name));
            }
            names.push(name);
        }
        Err(format!(
            "no Vulkan device whose name contains {want:?} (found {names:?}); install Mesa's lavapipe: \
             apt-get install -t bookworm-backports mesa-vulkan-drivers"
        ))
    }

    #[allow(clippy::type_complexity)]
    fn create_device(
        instance: &ash::Instance,
        options: &ContextOptions,
    ) -> Result<(vk::PhysicalDevice, ash::Device, vk::Queue, u32, vk::PhysicalDeviceProperties, EnabledFeatures, String), String> {
        let (pd, name) = Self::pick_physical_device(instance)?;
        let properties = unsafe { instance.get_physical_device_properties(pd) };
        let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
        let queue_family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or("no compute queue family")? as u32;

        // What the device supports.
        let mut s11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut s12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut s2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut s11).push_next(&mut s12);
        unsafe { instance.get_physical_device_features2(pd, &mut s2) };
        let sup = s2.features;
        let (s11, s12) = (s11, s12);
        let on = |b: vk::Bool32| options.enable_optional_features && b == vk::TRUE;
        let f = EnabledFeatures {
            shader_int8: on(s12.shader_int8),
            shader_int16: on(sup.shader_int16),
            shader_int64: on(sup.shader_int64),
            shader_float16: on(s12.shader_float16),
            shader_float64: on(sup.shader_float64),
            storage_buffer_8bit: on(s12.storage_buffer8_bit_access),
            uniform_and_storage_buffer_8bit: on(s12.uniform_and_storage_buffer8_bit_access),
            storage_buffer_16bit: on(s11.storage_buffer16_bit_access),
            uniform_and_storage_buffer_16bit: on(s11.uniform_and_storage_buffer16_bit_access),
            storage_push_constant_8: on(s12.storage_push_constant8),
            storage_push_constant_16: on(s11.storage_push_constant16),
            storage_input_output_16: options.storage_input_output_16,
            buffer_device_address: on(s12.buffer_device_address),
            runtime_descriptor_array: on(s12.runtime_descriptor_array),
            storage_buffer_array_non_uniform_indexing: on(s12.shader_storage_buffer_array_non_uniform_indexing),
            uniform_buffer_array_non_uniform_indexing: on(s12.shader_uniform_buffer_array_non_uniform_indexing),
            variable_pointers: on(s11.variable_pointers),
            variable_pointers_storage_buffer: on(s11.variable_pointers_storage_buffer),
            scalar_block_layout: on(s12.scalar_block_layout),
            vulkan_memory_model: on(s12.vulkan_memory_model),
            robust_buffer_access: options.robust_buffer_access && sup.robust_buffer_access == vk::TRUE,
            raw_access_chains: options.raw_access_chains_feature,
        };
        let b = |x: bool| if x { vk::TRUE } else { vk::FALSE };
        let core = vk::PhysicalDeviceFeatures {
            robust_buffer_access: b(f.robust_buffer_access),
            shader_int16: b(f.shader_int16),
            shader_int64: b(f.shader_int64),
            shader_float64: b(f.shader_float64),
            // Fixed-size descriptor arrays indexed dynamically (capability
            // StorageBufferArrayDynamicIndexing in the matrix and corpus modules).
            shader_storage_buffer_array_dynamic_indexing: b(options.enable_optional_features && sup.shader_storage_buffer_array_dynamic_indexing == vk::TRUE),
            shader_sampled_image_array_dynamic_indexing: b(options.bindless_features && sup.shader_sampled_image_array_dynamic_indexing == vk::TRUE),
            shader_storage_image_array_dynamic_indexing: b(options.bindless_features && sup.shader_storage_image_array_dynamic_indexing == vk::TRUE),
            ..Default::default()
        };
        let mut e11 = vk::PhysicalDeviceVulkan11Features {
            storage_buffer16_bit_access: b(f.storage_buffer_16bit),
            uniform_and_storage_buffer16_bit_access: b(f.uniform_and_storage_buffer_16bit),
            storage_push_constant16: b(f.storage_push_constant_16),
            storage_input_output16: b(f.storage_input_output_16),
            variable_pointers: b(f.variable_pointers),
            variable_pointers_storage_buffer: b(f.variable_pointers_storage_buffer),
            ..Default::default()
        };
        let bl = |x: vk::Bool32| options.bindless_features && x == vk::TRUE;
        let any_indexing = f.runtime_descriptor_array
            || f.storage_buffer_array_non_uniform_indexing
            || f.uniform_buffer_array_non_uniform_indexing
            || bl(s12.shader_sampled_image_array_non_uniform_indexing);
        let mut e12 = vk::PhysicalDeviceVulkan12Features {
            shader_int8: b(f.shader_int8),
            shader_float16: b(f.shader_float16),
            storage_buffer8_bit_access: b(f.storage_buffer_8bit),
            uniform_and_storage_buffer8_bit_access: b(f.uniform_and_storage_buffer_8bit),
            storage_push_constant8: b(f.storage_push_constant_8),
            buffer_device_address: b(f.buffer_device_address),
            descriptor_indexing: b(any_indexing && s12.descriptor_indexing == vk::TRUE),
            runtime_descriptor_array: b(f.runtime_descriptor_array || bl(s12.runtime_descriptor_array)),
            shader_sampled_image_array_non_uniform_indexing: b(bl(s12.shader_sampled_image_array_non_uniform_indexing)),
            shader_storage_image_array_non_uniform_indexing: b(bl(s12.shader_storage_image_array_non_uniform_indexing)),
            descriptor_binding_sampled_image_update_after_bind: b(bl(s12.descriptor_binding_sampled_image_update_after_bind)),
            descriptor_binding_storage_image_update_after_bind: b(bl(s12.descriptor_binding_storage_image_update_after_bind)),
            descriptor_binding_partially_bound: b(bl(s12.descriptor_binding_partially_bound)),
            shader_storage_buffer_array_non_uniform_indexing: b(f.storage_buffer_array_non_uniform_indexing),
            shader_uniform_buffer_array_non_uniform_indexing: b(f.uniform_buffer_array_non_uniform_indexing),
            scalar_block_layout: b(f.scalar_block_layout),
            vulkan_memory_model: b(f.vulkan_memory_model),
            ..Default::default()
        };
        let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default().shader_raw_access_chains(true);
        let mut feats2 = vk::PhysicalDeviceFeatures2::default().features(core);

        let prio = [1.0f32];
        let qci = [vk::DeviceQueueCreateInfo::default().queue_family_index(queue_family).queue_priorities(&prio)];
        let mut so = vk::PhysicalDeviceShaderObjectFeaturesEXT::default().shader_object(true);
        let mut pr = vk::PhysicalDevicePipelineRobustnessFeaturesEXT::default().pipeline_robustness(true);
        let mut exts = options.device_extensions.clone();
        if options.shader_object && !exts.iter().any(|e| e == "VK_EXT_shader_object") {
            exts.push("VK_EXT_shader_object".to_string());
        }
        if options.pipeline_robustness {
            exts.push("VK_EXT_pipeline_robustness".to_string());
        }
        let ext_c = cstrings(&exts)?;
        let ext_p: Vec<*const i8> = ext_c.iter().map(|c| c.as_ptr()).collect();
        let mut dci = vk::DeviceCreateInfo::default()
            .queue_create_infos(&qci)
            .enabled_extension_names(&ext_p)
            .push_next(&mut feats2)
            .push_next(&mut e11)
            .push_next(&mut e12);
        if options.raw_access_chains_feature {
            dci = dci.push_next(&mut raw);
        }
        if options.shader_object {
            dci = dci.push_next(&mut so);
        }
        if options.pipeline_robustness {
            dci = dci.push_next(&mut pr);
        }
        let device = unsafe { instance.create_device(pd, &dci, None) }
            .map_err(|e| format!("vkCreateDevice (extensions {:?}, rawAccessChains feature {}): {e:?}", options.device_extensions, options.raw_access_chains_feature))?;
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        Ok((pd, device, queue, queue_family, properties, f, name))
    }

    // ---- accessors -------------------------------------------------------------------------

    pub fn entry(&self) -> &ash::Entry {
        &self.entry
    }
    pub fn instance(&self) -> &ash::Instance {
        &self.instance
    }
    pub fn device(&self) -> &ash::Device {
        &self.device
    }
    pub fn physical_device(&self) -> vk::PhysicalDevice {
        self.physical_device
    }
    pub fn queue_family(&self) -> u32 {
        self.queue_family
    }
    /// Locks and returns the queue (external synchronization).
    pub fn queue(&self) -> std::sync::MutexGuard<'_, vk::Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn properties(&self) -> &vk::PhysicalDeviceProperties {
        &self.properties
    }
    pub fn limits(&self) -> &vk::PhysicalDeviceLimits {
        &self.properties.limits
    }
    pub fn features(&self) -> &EnabledFeatures {
        &self.features
    }
    pub fn device_name(&self) -> &str {
        &self.device_name
    }
    pub fn options(&self) -> &ContextOptions {
        &self.options
    }

    /// All collected debug-utils messages so far (ERROR and WARNING; every severity with
    /// [`ContextOptions::messenger`]).
    pub fn validation_messages(&self) -> Vec<ValidationMessage> {
        self.messages.lock().map(|v| v.clone()).unwrap_or_default()
    }
    /// ERROR-severity messages so far from the validation layer and the loader (the polyfill
    /// layer's own messages reach the messenger too: [`Self::layer_messages`]).
    pub fn validation_errors(&self) -> Vec<String> {
        self.validation_messages()
            .into_iter()
            .filter(|m| m.severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) && !m.from_layer())
            // Debian's validation layer (1.3.239) predates VK_NV_raw_access_chains, whose feature
            // structure the layer passes down where the driver has the extension (NVIDIA).
            .filter(|m| !m.text.contains("VUID-VkDeviceCreateInfo-pNext-pNext") || !m.text.contains("unknown VkStructureType (1000555000)"))
            .map(|m| m.text)
            .collect()
    }
    /// The polyfill layer's messages so far (`POLYFILL-*` IDs).
    pub fn layer_messages(&self) -> Vec<ValidationMessage> {
        self.validation_messages().into_iter().filter(|m| m.from_layer()).collect()
    }
    /// Forgets collected messages.
    pub fn clear_validation_messages(&self) {
        if let Ok(mut v) = self.messages.lock() {
            v.clear();
        }
    }

    // ---- queries ---------------------------------------------------------------------------

    /// Device extensions as the application sees them (`pLayerName == NULL`, i.e. driver plus
    /// enabled layers).
    pub fn device_extensions(&self) -> Result<Vec<(String, u32)>, String> {
        self.device_extensions_of(None)
    }

    /// Device extensions of one layer (`pLayerName = layer`) or of the whole chain (`None`).
    pub fn device_extensions_of(&self, layer_name: Option<&str>) -> Result<Vec<(String, u32)>, String> {
        let name_c = layer_name.map(|l| CString::new(l).unwrap());
        let p = name_c.as_ref().map(|c| c.as_ptr()).unwrap_or(std::ptr::null());
        let f = self.instance.fp_v1_0().enumerate_device_extension_properties;
        let mut count = 0u32;
        let r = unsafe { f(self.physical_device, p, &mut count, std::ptr::null_mut()) };
        if r != vk::Result::SUCCESS {
            return Err(format!("vkEnumerateDeviceExtensionProperties({layer_name:?}) count: {r}"));
        }
        let mut v = vec![vk::ExtensionProperties::default(); count as usize];
        let r = unsafe { f(self.physical_device, p, &mut count, v.as_mut_ptr()) };
        if r != vk::Result::SUCCESS && r != vk::Result::INCOMPLETE {
            return Err(format!("vkEnumerateDeviceExtensionProperties({layer_name:?}): {r}"));
        }
        v.truncate(count as usize);
        Ok(v.iter()
            .map(|e| (e.extension_name_as_c_str().unwrap_or_default().to_string_lossy().into_owned(), e.spec_version))
            .collect())
    }

    /// True if `name` is among [`device_extensions`](Self::device_extensions).
    pub fn has_device_extension(&self, name: &str) -> bool {
        self.device_extensions().map(|v| v.iter().any(|(n, _)| n == name)).unwrap_or(false)
    }

    /// A native context (no layer) on a driver without device extension `ext`; `None`, with a
    /// note on stderr, where the driver has it (the layer then has nothing to emulate).
    pub fn native_lacking(ext: &str) -> Option<Context> {
        let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
        if native.has_device_extension(ext) {
            eprintln!("the driver has {ext}; nothing to emulate");
            return None;
        }
        Some(native)
    }

    /// `shaderRawAccessChains` as reported by `vkGetPhysicalDeviceFeatures2` (through whatever
    /// layers are enabled).
    pub fn query_raw_access_chains_feature(&self) -> bool {
        let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut raw);
        unsafe { self.instance.get_physical_device_features2(self.physical_device, &mut f2) };
        raw.shader_raw_access_chains == vk::TRUE
    }

    /// `storageInputOutput16` as reported by `vkGetPhysicalDeviceFeatures2` (through whatever
    /// layers are enabled).
    pub fn query_storage_input_output_16_feature(&self) -> bool {
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f11);
        unsafe { self.instance.get_physical_device_features2(self.physical_device, &mut f2) };
        f11.storage_input_output16 == vk::TRUE
    }

    /// Raw `vkGetDeviceProcAddr(device, name)`.
    pub fn get_device_proc_addr(&self, name: &str) -> vk::PFN_vkVoidFunction {
        let c = CString::new(name).unwrap();
        unsafe { (self.instance.fp_v1_0().get_device_proc_addr)(self.device.handle(), c.as_ptr()) }
    }

    /// Raw `vkGetInstanceProcAddr(instance, name)`.
    pub fn get_instance_proc_addr(&self, name: &str) -> vk::PFN_vkVoidFunction {
        let c = CString::new(name).unwrap();
        unsafe { (self.entry.static_fn().get_instance_proc_addr)(self.instance.handle(), c.as_ptr()) }
    }

    // ---- shaders and dispatch --------------------------------------------------------------

    /// `vkCreateShaderModule` (through the layer if enabled).
    pub fn create_shader_module(&self, words: &[u32]) -> Result<vk::ShaderModule, vk::Result> {
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        unsafe { self.device.create_shader_module(&info, None) }
    }

    /// `vkDestroyShaderModule`.
    pub fn destroy_shader_module(&self, module: vk::ShaderModule) {
        unsafe { self.device.destroy_shader_module(module, None) }
    }

    /// Creates a module from `spirv`, runs `job`, returns every buffer's full contents after
    /// the dispatch (in `job.buffers` order).
    pub fn run_compute(&self, spirv: &[u32], job: &ComputeJob) -> Result<Vec<Vec<u8>>, String> {
        let module = self.create_shader_module(spirv).map_err(|e| format!("vkCreateShaderModule: {e:?}"))?;
        let r = self.run_compute_module(module, job);
        self.destroy_shader_module(module);
        self.check_rewritten_modules()?;
        r
    }

    /// Every module the layer rewrote for this context so far passes spirv-val for the
    /// context's API version and enabled layouts (see [`crate::rewritten`]); also checked when
    /// the context is dropped. Ok without the layer or with the test's own dump directory.
    pub fn check_rewritten_modules(&self) -> Result<(), String> {
        let Some(r) = &self.rewritten else { return Ok(()) };
        let target_env = match vk::api_version_minor(self.options.api_version) {
            0 => "vulkan1.0",
            1 => "vulkan1.1",
            2 => "vulkan1.2",
            _ => "vulkan1.3",
        };
        // Scalar block layout relaxes every other layout rule (VK_EXT_scalar_block_layout).
        let flags: &[&str] = if self.features.scalar_block_layout { &["--scalar-block-layout"] } else { &[] };
        r.check(target_env, flags)
    }

    /// Like [`run_compute`](Self::run_compute) with an existing module (not destroyed).
    pub fn run_compute_module(&self, module: vk::ShaderModule, job: &ComputeJob) -> Result<Vec<Vec<u8>>, String> {
        let mut res = Resources::default_for(&self.device);
        self.run_inner(module, job, &mut res)
    }

    fn memory_type(&self, bits: u32, want: vk::MemoryPropertyFlags) -> Option<u32> {
        (0..self.memory_properties.memory_type_count)
            .find(|&i| bits & (1 << i) != 0 && self.memory_properties.memory_types[i as usize].property_flags.contains(want))
    }

    fn run_inner(&self, module: vk::ShaderModule, job: &ComputeJob, res: &mut Resources<'_>) -> Result<Vec<Vec<u8>>, String> {
        let d = &self.device;
        let limits = &self.properties.limits;
        let bda = self.features.buffer_device_address;

        // --- buffers
        let mut mapped: Vec<*mut u8> = Vec::new();
        let mut sizes: Vec<usize> = Vec::new();
        for (i, spec) in job.buffers.iter().enumerate() {
            let align = match spec.kind {
                BufferKind::Storage => limits.min_storage_buffer_offset_alignment,
                BufferKind::Uniform => limits.min_uniform_buffer_offset_alignment,
                BufferKind::DeviceAddress { .. } => 1,
            };
            if spec.descriptor_offset % align.max(1) != 0 {
                return Err(format!("buffer {i}: descriptor_offset {} is not a multiple of {align}", spec.descriptor_offset));
            }
            let size = spec.data.len().max(4);
            if spec.descriptor_offset > size as u64 || spec.range.is_some_and(|r| spec.descriptor_offset + r > size as u64) {
                return Err(format!("buffer {i}: window {}+{:?} exceeds size {size}", spec.descriptor_offset, spec.range));
            }
            if matches!(spec.kind, BufferKind::DeviceAddress { .. }) && !bda {
                return Err(format!("buffer {i}: device address buffer but bufferDeviceAddress is not enabled"));
            }
            let mut usage = vk::BufferUsageFlags::STORAGE_BUFFER
                | vk::BufferUsageFlags::UNIFORM_BUFFER
                | vk::BufferUsageFlags::TRANSFER_SRC
                | vk::BufferUsageFlags::TRANSFER_DST;
            if bda {
                usage |= vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
            }
            let bci = vk::BufferCreateInfo::default().size(size as u64).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
            let buf = unsafe { d.create_buffer(&bci, None) }.map_err(|e| format!("vkCreateBuffer: {e:?}"))?;
            res.buffers.push(buf);
            let req = unsafe { d.get_buffer_memory_requirements(buf) };
            let mt = self
                .memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT)
                .ok_or("no host-visible coherent memory type")?;
            let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
            let tail = spec.allocation_tail.map_or(0, |t| t.0);
            let mut mai = vk::MemoryAllocateInfo::default().allocation_size(req.size + tail).memory_type_index(mt);
            if bda {
                mai = mai.push_next(&mut flags);
            }
            let mem = unsafe { d.allocate_memory(&mai, None) }.map_err(|e| format!("vkAllocateMemory: {e:?}"))?;
            res.memories.push(mem);
            unsafe { d.bind_buffer_memory(buf, mem, 0) }.map_err(|e| format!("vkBindBufferMemory: {e:?}"))?;
            let ptr = unsafe { d.map_memory(mem, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                .map_err(|e| format!("vkMapMemory: {e:?}"))? as *mut u8;
            unsafe {
                std::ptr::write_bytes(ptr, 0, size);
                std::ptr::copy_nonoverlapping(spec.data.as_ptr(), ptr, spec.data.len());
                if let Some((_, fill)) = spec.allocation_tail {
                    std::ptr::write_bytes(ptr.add(size), fill, (req.size + tail) as usize - size);
                }
            }
            mapped.push(ptr);
            sizes.push(size);
        }

        // --- push constants (with device addresses)
        let mut pc = job.push_constants.clone();
        for (i, spec) in job.buffers.iter().enumerate() {
            if let BufferKind::DeviceAddress { push_constant_offset } = spec.kind {
                let o = push_constant_offset as usize;
                if pc.len() < o + 8 {
                    pc.resize(o + 8, 0);
                }
                let addr = unsafe { d.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(res.buffers[i])) }
                    + spec.descriptor_offset;
                pc[o..o + 8].copy_from_slice(&addr.to_le_bytes());
            }
        }
        while !pc.len().is_multiple_of(4) {
            pc.push(0);
        }
        if pc.len() as u32 > limits.max_push_constants_size {
            return Err(format!("push constants: {} bytes > maxPushConstantsSize {}", pc.len(), limits.max_push_constants_size));
        }

        // --- descriptor set layouts: set -> binding -> (type, count)
        let mut sets: BTreeMap<u32, BTreeMap<u32, (vk::DescriptorType, u32)>> = BTreeMap::new();
        for (i, spec) in job.buffers.iter().enumerate() {
            let ty = match spec.kind {
                BufferKind::Storage => vk::DescriptorType::STORAGE_BUFFER,
                BufferKind::Uniform => vk::DescriptorType::UNIFORM_BUFFER,
                BufferKind::DeviceAddress { .. } => continue,
            };
            let e = sets.entry(spec.set).or_default().entry(spec.binding).or_insert((ty, 0));
            if e.0 != ty {
                return Err(format!("buffer {i}: set {} binding {} mixes descriptor types", spec.set, spec.binding));
            }
            e.1 = e.1.max(spec.array_element + 1);
        }
        let max_set = sets.keys().next_back().copied();
        let mut set_layouts = Vec::new();
        if let Some(max_set) = max_set {
            for s in 0..=max_set {
                let bindings: Vec<vk::DescriptorSetLayoutBinding> = sets
                    .get(&s)
                    .map(|m| {
                        m.iter()
                            .map(|(&b, &(ty, n))| {
                                vk::DescriptorSetLayoutBinding::default()
                                    .binding(b)
                                    .descriptor_type(ty)
                                    .descriptor_count(n)
                                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let ci = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
                let l = unsafe { d.create_descriptor_set_layout(&ci, None) }.map_err(|e| format!("vkCreateDescriptorSetLayout: {e:?}"))?;
                res.set_layouts.push(l);
                set_layouts.push(l);
            }
        }
        if let Some(h) = job.heap {
            while (set_layouts.len() as u32) < h.sets {
                let last = set_layouts.len() as u32 + 1 == h.sets;
                let binding = [vk::DescriptorSetLayoutBinding::default().binding(0).descriptor_type(h.ty).descriptor_count(h.count).stage_flags(vk::ShaderStageFlags::ALL)];
                let flags = [vk::DescriptorBindingFlags::UPDATE_AFTER_BIND | vk::DescriptorBindingFlags::PARTIALLY_BOUND];
                let mut flags_info = vk::DescriptorSetLayoutBindingFlagsCreateInfo::default().binding_flags(&flags);
                let mut ci = vk::DescriptorSetLayoutCreateInfo::default();
                if last {
                    ci = ci.flags(vk::DescriptorSetLayoutCreateFlags::UPDATE_AFTER_BIND_POOL).bindings(&binding).push_next(&mut flags_info);
                }
                let l = unsafe { d.create_descriptor_set_layout(&ci, None) }.map_err(|e| format!("vkCreateDescriptorSetLayout (heap): {e:?}"))?;
                res.set_layouts.push(l);
                set_layouts.push(l);
            }
        }
        let pcr = [vk::PushConstantRange::default().stage_flags(vk::ShaderStageFlags::COMPUTE).offset(0).size(pc.len() as u32)];
        let mut plci = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
        if !pc.is_empty() {
            plci = plci.push_constant_ranges(&pcr);
        }
        let layout = unsafe { d.create_pipeline_layout(&plci, None) }.map_err(|e| format!("vkCreatePipelineLayout: {e:?}"))?;
        res.pipeline_layout = layout;

        // --- descriptor pool + sets
        let (mut n_storage, mut n_uniform) = (0u32, 0u32);
        for m in sets.values() {
            for &(ty, n) in m.values() {
                if ty == vk::DescriptorType::STORAGE_BUFFER {
                    n_storage += n
                } else {
                    n_uniform += n
                }
            }
        }
        let mut descriptor_sets: BTreeMap<u32, vk::DescriptorSet> = BTreeMap::new();
        if !sets.is_empty() {
            let mut sizes_p = Vec::new();
            if n_storage > 0 {
                sizes_p.push(vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: n_storage });
            }
            if n_uniform > 0 {
                sizes_p.push(vk::DescriptorPoolSize { ty: vk::DescriptorType::UNIFORM_BUFFER, descriptor_count: n_uniform });
            }
            let dpci = vk::DescriptorPoolCreateInfo::default().max_sets(sets.len() as u32).pool_sizes(&sizes_p);
            let pool = unsafe { d.create_descriptor_pool(&dpci, None) }.map_err(|e| format!("vkCreateDescriptorPool: {e:?}"))?;
            res.descriptor_pool = pool;
            for &s in sets.keys() {
                let l = [set_layouts[s as usize]];
                let ai = vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&l);
                let ds = unsafe { d.allocate_descriptor_sets(&ai) }.map_err(|e| format!("vkAllocateDescriptorSets: {e:?}"))?;
                descriptor_sets.insert(s, ds[0]);
            }
            let infos: Vec<(usize, [vk::DescriptorBufferInfo; 1])> = job
                .buffers
                .iter()
                .enumerate()
                .filter(|(_, s)| !matches!(s.kind, BufferKind::DeviceAddress { .. }))
                .map(|(i, s)| {
                    (
                        i,
                        [vk::DescriptorBufferInfo {
                            buffer: res.buffers[i],
                            offset: s.descriptor_offset,
                            range: s.range.unwrap_or(vk::WHOLE_SIZE),
                        }],
                    )
                })
                .collect();
            let writes: Vec<vk::WriteDescriptorSet> = infos
                .iter()
                .map(|(i, info)| {
                    let s = &job.buffers[*i];
                    vk::WriteDescriptorSet::default()
                        .dst_set(descriptor_sets[&s.set])
                        .dst_binding(s.binding)
                        .dst_array_element(s.array_element)
                        .descriptor_type(if s.kind == BufferKind::Uniform {
                            vk::DescriptorType::UNIFORM_BUFFER
                        } else {
                            vk::DescriptorType::STORAGE_BUFFER
                        })
                        .buffer_info(info)
                })
                .collect();
            unsafe { d.update_descriptor_sets(&writes, &[]) };
        }

        // --- pipeline
        let entry = CString::new(job.entry).map_err(|e| e.to_string())?;
        let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(&entry);
        let cpci = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
        let pipeline = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &cpci, None) }
            .map_err(|(_, e)| format!("vkCreateComputePipelines: {e:?}"))?[0];
        res.pipeline = pipeline;

        // --- command buffer
        let cpi = vk::CommandPoolCreateInfo::default().queue_family_index(self.queue_family).flags(vk::CommandPoolCreateFlags::TRANSIENT);
        let pool = unsafe { d.create_command_pool(&cpi, None) }.map_err(|e| format!("vkCreateCommandPool: {e:?}"))?;
        res.command_pool = pool;
        let cbai = vk::CommandBufferAllocateInfo::default().command_pool(pool).level(vk::CommandBufferLevel::PRIMARY).command_buffer_count(1);
        let cb = unsafe { d.allocate_command_buffers(&cbai) }.map_err(|e| format!("vkAllocateCommandBuffers: {e:?}"))?[0];
        unsafe {
            d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT))
                .map_err(|e| format!("vkBeginCommandBuffer: {e:?}"))?;
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
            for (&s, &ds) in &descriptor_sets {
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, layout, s, &[ds], &[]);
            }
            if !pc.is_empty() {
                d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::COMPUTE, 0, &pc);
            }
            d.cmd_dispatch(cb, job.groups[0], job.groups[1], job.groups[2]);
            cmd_shader_writes_to_host(d, cb);
            d.end_command_buffer(cb).map_err(|e| format!("vkEndCommandBuffer: {e:?}"))?;
        }
        let fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }.map_err(|e| format!("vkCreateFence: {e:?}"))?;
        res.fence = fence;
        let cbs = [cb];
        let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
        {
            let q = self.queue();
            unsafe { d.queue_submit(*q, &submit, fence) }.map_err(|e| format!("vkQueueSubmit: {e:?}"))?;
        }
        let timeout = Duration::from_secs(120).as_nanos() as u64;
        unsafe { d.wait_for_fences(&[fence], true, timeout) }.map_err(|e| format!("vkWaitForFences: {e:?}"))?;

        let out = mapped
            .iter()
            .zip(&sizes)
            .zip(&job.buffers)
            .map(|((&p, &size), spec)| {
                let mut v = vec![0u8; size];
                unsafe { std::ptr::copy_nonoverlapping(p, v.as_mut_ptr(), size) };
                v.truncate(spec.data.len());
                v
            })
            .collect();
        Ok(out)
    }
}

/// Everything one dispatch creates; destroyed in reverse order on drop.
struct Resources<'a> {
    device: &'a ash::Device,
    buffers: Vec<vk::Buffer>,
    memories: Vec<vk::DeviceMemory>,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    pipeline_layout: vk::PipelineLayout,
    descriptor_pool: vk::DescriptorPool,
    pipeline: vk::Pipeline,
    command_pool: vk::CommandPool,
    fence: vk::Fence,
}

impl<'a> Resources<'a> {
    fn default_for(device: &'a ash::Device) -> Self {
        Resources {
            device,
            buffers: Vec::new(),
            memories: Vec::new(),
            set_layouts: Vec::new(),
            pipeline_layout: vk::PipelineLayout::null(),
            descriptor_pool: vk::DescriptorPool::null(),
            pipeline: vk::Pipeline::null(),
            command_pool: vk::CommandPool::null(),
            fence: vk::Fence::null(),
        }
    }
}

/// Destroys, each where not null, what a submission leaves: its `fence` after waiting for it (a
/// failed or timed-out wait must not free what the GPU may still use), the command `pool`, the
/// `pipeline` and its `layout`.
///
/// # Safety
/// The handles are `d`'s, and nothing else uses them.
pub(crate) unsafe fn destroy_submission(d: &ash::Device, fence: vk::Fence, pool: vk::CommandPool, pipeline: vk::Pipeline, layout: vk::PipelineLayout) {
    if fence != vk::Fence::null() {
        let _ = d.wait_for_fences(&[fence], true, u64::MAX);
        d.destroy_fence(fence, None);
    }
    if pool != vk::CommandPool::null() {
        d.destroy_command_pool(pool, None);
    }
    if pipeline != vk::Pipeline::null() {
        d.destroy_pipeline(pipeline, None);
    }
    if layout != vk::PipelineLayout::null() {
        d.destroy_pipeline_layout(layout, None);
    }
}

impl Drop for Resources<'_> {
    fn drop(&mut self) {
        let d = self.device;
        unsafe {
            destroy_submission(d, self.fence, self.command_pool, self.pipeline, self.pipeline_layout);
            if self.descriptor_pool != vk::DescriptorPool::null() {
                d.destroy_descriptor_pool(self.descriptor_pool, None);
            }
            for &l in self.set_layouts.iter().rev() {
                d.destroy_descriptor_set_layout(l, None);
            }
            for &b in self.buffers.iter().rev() {
                d.destroy_buffer(b, None);
            }
            for &m in self.memories.iter().rev() {
                d.free_memory(m, None);
            }
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            if let Some((du, m)) = self.debug_utils.take() {
                du.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
        if !std::thread::panicking() {
            if let Err(e) = self.check_rewritten_modules() {
                panic!("{e}");
            }
        }
    }
}

/// A process-wide context with our layer, `VK_NV_raw_access_chains` and the feature enabled
/// (no validation). Created on first use with the environment at that moment; never dropped.
/// Panics if it cannot be created.
pub fn shared_layer_context() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| Context::new(&ContextOptions::raw_access_chains()).unwrap_or_else(|e| panic!("shared layer context: {e:?}")))
}

/// A process-wide context without any layer (lavapipe native). Never dropped.
pub fn shared_native_context() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("shared native context: {e:?}")))
}

/// `shaderRawAccessChains`/extension presence as the plain driver reports them (instance
/// without any layer, no device). `(extension listed, spec version)`.
pub fn driver_has_extension(name: &str) -> Result<bool, String> {
    let entry = entry()?;
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| format!("vkCreateInstance: {e:?}"))?;
    let r = (|| {
        let (pd, _) = Context::pick_physical_device(&instance)?;
        let exts = unsafe { instance.enumerate_device_extension_properties(pd) }.map_err(|e| e.to_string())?;
        Ok(exts.iter().any(|e| e.extension_name_as_c_str().map(|n| n.to_bytes() == name.as_bytes()).unwrap_or(false)))
    })();
    unsafe { instance.destroy_instance(None) };
    r
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn f<T: Send + Sync>() {}
    f::<Context>();
}

/// Records the barrier that makes a compute dispatch's shader writes visible to host reads
/// (after the fence the host maps and reads the buffers).
///
/// # Safety
/// `cb` is a command buffer of `d` in the recording state.
pub unsafe fn cmd_shader_writes_to_host(d: &ash::Device, cb: vk::CommandBuffer) {
    let barrier = [vk::MemoryBarrier::default().src_access_mask(vk::AccessFlags::SHADER_WRITE).dst_access_mask(vk::AccessFlags::HOST_READ)];
    d.cmd_pipeline_barrier(cb, vk::PipelineStageFlags::COMPUTE_SHADER, vk::PipelineStageFlags::HOST, vk::DependencyFlags::empty(), &barrier, &[], &[]);
}

/// `CStr` helper for callers.
pub fn cstr(s: &CStr) -> String {
    s.to_string_lossy().into_owned()
}

/// The last Mesa release (major version) whose lavapipe the layer takes to check each
/// component of a vector storage-buffer access on its own (`mesa_checks_vector_components` in
/// layer/src/device.rs, which this mirrors; tests/tests/driver_vector_robustness.rs).
pub const LAVAPIPE_VECTOR_CHECKS_UP_TO: u32 = 25;

/// The Mesa release's major version of a lavapipe device (`driverID` MESA_LLVMPIPE,
/// `driverInfo` "Mesa 25.0.7-…"; its `driverVersion` is 0.0.1), None for another driver.
pub fn lavapipe_mesa_major(ctx: &Context) -> Option<u32> {
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
    unsafe { ctx.instance().get_physical_device_properties2(ctx.physical_device(), &mut p2) };
    if driver.driver_id != vk::DriverId::MESA_LLVMPIPE {
        return None;
    }
    let info = driver.driver_info_as_c_str().ok()?.to_str().ok()?;
    info.strip_prefix("Mesa ")?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Is this device a lavapipe whose per-component checks of vector accesses the layer relies on
/// ([`LAVAPIPE_VECTOR_CHECKS_UP_TO`])?
pub fn lavapipe_with_vector_checks(ctx: &Context) -> bool {
    lavapipe_mesa_major(ctx).is_some_and(|major| major <= LAVAPIPE_VECTOR_CHECKS_UP_TO)
}

/// The driver's `defaultRobustnessStorageBuffers` (VK_EXT_pipeline_robustness; DEVICE_DEFAULT
/// where it does not say), `robustStorageBufferAccessSizeAlignment` (VK_EXT_robustness2; 0
/// where it does not say), and whether the layer relies on its per-component checks of vectors
/// ([`lavapipe_with_vector_checks`]), from one native context.
fn storage_robustness() -> (vk::PipelineRobustnessBufferBehaviorEXT, vk::DeviceSize, bool) {
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let mut robustness = vk::PhysicalDevicePipelineRobustnessPropertiesEXT::default();
    let mut r2 = vk::PhysicalDeviceRobustness2PropertiesEXT::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut robustness).push_next(&mut r2);
    unsafe { native.instance().get_physical_device_properties2(native.physical_device(), &mut p2) };
    (robustness.default_robustness_storage_buffers, r2.robust_storage_buffer_access_size_alignment, lavapipe_with_vector_checks(&native))
}

/// The driver's `defaultRobustnessStorageBuffers` (VK_EXT_pipeline_robustness; DEVICE_DEFAULT
/// where it does not say).
pub fn default_storage_robustness() -> vk::PipelineRobustnessBufferBehaviorEXT {
    storage_robustness().0
}

/// Does the driver check storage buffers as robustBufferAccess2 says, to the byte, with no
/// robustness feature enabled: `defaultRobustnessStorageBuffers` robustBufferAccess2 and
/// `robustStorageBufferAccessSizeAlignment` 1 (lavapipe)?
pub fn default_storage_robustness_to_the_byte() -> bool {
    storage_robustness_per_component().0
}

/// [`default_storage_robustness_to_the_byte`], and whether the layer also takes the driver's
/// checks of a vector access as per-component ones there (lavapipe:
/// `Target::robust_vector_components`, tests/tests/driver_vector_robustness.rs).
pub fn storage_robustness_per_component() -> (bool, bool) {
    let (behavior, alignment, vectors) = storage_robustness();
    let to_the_byte = (behavior, alignment) == (vk::PipelineRobustnessBufferBehaviorEXT::ROBUST_BUFFER_ACCESS_2, 1);
    (to_the_byte, to_the_byte && vectors)
}
