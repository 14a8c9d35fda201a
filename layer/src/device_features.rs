//! The driver features the lowering can use (8/16-bit storage, Int8/16/64): what the device
//! supports, turning them on in a copied `VkDeviceCreateInfo` chain, and reading back what the
//! final chain enables (that becomes the rewrite `Target`), and who checks storage-buffer bounds
//! under that chain's robustness (`Target::robust_buffer_access2`, `robust_storage_byte_exact`).
//!
//! Rules followed when adding features:
//! - Set bits inside `VkPhysicalDeviceVulkan11Features`/`Vulkan12Features` when the application
//!   chained them; a dedicated struct next to the aggregate that covers it is invalid
//!   (VUID-VkDeviceCreateInfo-pNext-02829, -02830).
//! - Add a dedicated struct only where it is valid: the effective API version (min of the
//!   instance's `apiVersion` and the device's) includes it, or the application enabled the
//!   extension that defines it (VUID-VkDeviceCreateInfo-pNext-pNext). The layer does not add
//!   extensions on its own.
//! - shaderInt16/shaderInt64 go into `VkPhysicalDeviceFeatures2` when chained, else into (a copy
//!   of) `pEnabledFeatures` (VUID-VkDeviceCreateInfo-pNext-00373: never both).
use crate::dispatch::{InstanceData, PhysicalDeviceInfo};
use crate::pnext::{self, Chain};
use ash::vk;
use shader_rewrite::Target;
use std::ffi::{c_void, CStr};

type S = vk::StructureType;

pub fn effective_version(instance_api: u32, device_api: u32) -> u32 {
    let strip = |v: u32| vk::make_api_version(0, vk::api_version_major(v), vk::api_version_minor(v), 0);
    strip(instance_api).min(strip(device_api))
}

/// Lowering features the physical device supports (queried through the next layer).
///
/// # Safety
/// `pd` must belong to `inst`.
pub unsafe fn supported(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Target {
    let version = effective_version(inst.api_version, phys.api_version);
    let Some(features2) = inst.features2_for_query() else {
        let mut f = vk::PhysicalDeviceFeatures::default();
        (inst.get_physical_device_features)(pd, &mut f);
        return Target { int16: f.shader_int16 != 0, int64: f.shader_int64 != 0, ..Target::core() };
    };
    let mut s16 = vk::PhysicalDevice16BitStorageFeatures::default();
    let mut s8 = vk::PhysicalDevice8BitStorageFeatures::default();
    let mut i8 = vk::PhysicalDeviceShaderFloat16Int8Features::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default();
    // Only structures the device knows may be chained (VUID-VkPhysicalDeviceFeatures2-pNext-pNext).
    let want16 = version >= vk::API_VERSION_1_1 || phys.has_extension(vk::KHR_16BIT_STORAGE_NAME);
    let want8 = version >= vk::API_VERSION_1_2 || phys.has_extension(vk::KHR_8BIT_STORAGE_NAME);
    let want_i8 = version >= vk::API_VERSION_1_2 || phys.has_extension(vk::KHR_SHADER_FLOAT16_INT8_NAME);
    let mut head: *mut c_void = std::ptr::null_mut();
    if want16 {
        s16.p_next = head;
        head = &mut s16 as *mut _ as *mut c_void;
    }
    if want8 {
        s8.p_next = head;
        head = &mut s8 as *mut _ as *mut c_void;
    }
    if want_i8 {
        i8.p_next = head;
        head = &mut i8 as *mut _ as *mut c_void;
    }
    f2.p_next = head;
    features2(pd, &mut f2);
    Target {
        storage_buffer_8bit: want8 && s8.storage_buffer8_bit_access != 0,
        uniform_and_storage_buffer_8bit: want8 && s8.uniform_and_storage_buffer8_bit_access != 0,
        storage_buffer_16bit: want16 && s16.storage_buffer16_bit_access != 0,
        uniform_and_storage_buffer_16bit: want16 && s16.uniform_and_storage_buffer16_bit_access != 0,
        storage_push_constant_8: want8 && s8.storage_push_constant8 != 0,
        storage_push_constant_16: want16 && s16.storage_push_constant16 != 0,
        storage_input_output_16: want16 && s16.storage_input_output16 != 0,
        int8: want_i8 && i8.shader_int8 != 0,
        float16: want_i8 && i8.shader_float16 != 0,
        int16: f2.features.shader_int16 != 0,
        int64: f2.features.shader_int64 != 0,
        nonuniform_array_length_broken: false, // a driver quirk, decided in device.rs
        nonuniform_access_per_lane: false,     // the same
        robust_vector_components: false,       // the same
        // From the robustness the final create info enables (device.rs: storage_checked_as_robust2).
        robust_buffer_access2: false,
        robust_storage_byte_exact: false,
    }
}

/// [`supported`], queried once per physical device and instance.
///
/// # Safety
/// `pd` must belong to `inst`; `phys` must be its info.
pub unsafe fn supported_cached(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Target {
    *phys.supported.get_or_init(|| supported(inst, pd, phys))
}

/// Sets `*bit` when `supported`; records `name` if that changed it.
fn turn_on(bit: &mut vk::Bool32, supported: bool, name: &'static str, added: &mut Vec<&'static str>) {
    if supported && *bit == vk::FALSE {
        *bit = vk::TRUE;
        added.push(name);
    }
}

/// What [`enable_for_lowering`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Added {
    /// Feature names newly enabled.
    pub features: Vec<&'static str>,
    /// Why some supported feature could not be enabled.
    pub skipped: Vec<String>,
}

/// Turns on every supported lowering feature in the copied chain / enabled-features copy.
///
/// # Safety
/// `chain` must be a copy of a valid VkDeviceCreateInfo chain.
pub unsafe fn enable_for_lowering(
    chain: &mut Chain,
    enabled_features: &mut Option<vk::PhysicalDeviceFeatures>,
    enabled_extensions: &[&CStr],
    version: u32,
    sup: Target,
) -> Added {
    let mut out = Added::default();
    let ext_on = |name: &CStr| enabled_extensions.contains(&name);
    let added = &mut out.features;

    // 16-bit storage: Vulkan11Features > VkPhysicalDevice16BitStorageFeatures.
    if sup.storage_buffer_16bit || sup.uniform_and_storage_buffer_16bit {
        let (a, b) = (sup.storage_buffer_16bit, sup.uniform_and_storage_buffer_16bit);
        if let Some(v11) = chain.find_mut::<vk::PhysicalDeviceVulkan11Features>(S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES) {
            turn_on(&mut v11.storage_buffer16_bit_access, a, "storageBuffer16BitAccess", added);
            turn_on(&mut v11.uniform_and_storage_buffer16_bit_access, b, "uniformAndStorageBuffer16BitAccess", added);
        } else if let Some(s) = chain.find_mut::<vk::PhysicalDevice16BitStorageFeatures>(S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES) {
            turn_on(&mut s.storage_buffer16_bit_access, a, "storageBuffer16BitAccess", added);
            turn_on(&mut s.uniform_and_storage_buffer16_bit_access, b, "uniformAndStorageBuffer16BitAccess", added);
        } else if chain.tail_contains(S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES)
            || chain.tail_contains(S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES)
        {
            out.skipped.push("16-bit storage: its feature struct sits behind an unknown structure in read-only memory".into());
        } else if version >= vk::API_VERSION_1_1 || ext_on(vk::KHR_16BIT_STORAGE_NAME) {
            let mut s = vk::PhysicalDevice16BitStorageFeatures::default();
            turn_on(&mut s.storage_buffer16_bit_access, a, "storageBuffer16BitAccess", added);
            turn_on(&mut s.uniform_and_storage_buffer16_bit_access, b, "uniformAndStorageBuffer16BitAccess", added);
            chain.push_front(s);
        } else {
            out.skipped.push("16-bit storage: needs Vulkan 1.1 or VK_KHR_16bit_storage enabled".into());
        }
    }

    // 8-bit storage, shaderInt8 and shaderFloat16: Vulkan12Features > dedicated structs.
    let want8 = sup.storage_buffer_8bit || sup.uniform_and_storage_buffer_8bit;
    if want8 || sup.int8 || sup.float16 {
        let (a, b, c, h) = (sup.storage_buffer_8bit, sup.uniform_and_storage_buffer_8bit, sup.int8, sup.float16);
        if let Some(v12) = chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
            turn_on(&mut v12.storage_buffer8_bit_access, a, "storageBuffer8BitAccess", added);
            turn_on(&mut v12.uniform_and_storage_buffer8_bit_access, b, "uniformAndStorageBuffer8BitAccess", added);
            turn_on(&mut v12.shader_int8, c, "shaderInt8", added);
            turn_on(&mut v12.shader_float16, h, "shaderFloat16", added);
        } else if chain.tail_contains(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
            out.skipped.push("8-bit storage/shaderInt8/shaderFloat16: VkPhysicalDeviceVulkan12Features sits behind an unknown structure in read-only memory".into());
        } else {
            if want8 {
                if let Some(s) = chain.find_mut::<vk::PhysicalDevice8BitStorageFeatures>(S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES) {
                    turn_on(&mut s.storage_buffer8_bit_access, a, "storageBuffer8BitAccess", added);
                    turn_on(&mut s.uniform_and_storage_buffer8_bit_access, b, "uniformAndStorageBuffer8BitAccess", added);
                } else if chain.tail_contains(S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES) {
                    out.skipped.push("8-bit storage: its feature struct sits behind an unknown structure in read-only memory".into());
                } else if version >= vk::API_VERSION_1_2 || ext_on(vk::KHR_8BIT_STORAGE_NAME) {
                    let mut s = vk::PhysicalDevice8BitStorageFeatures::default();
                    turn_on(&mut s.storage_buffer8_bit_access, a, "storageBuffer8BitAccess", added);
                    turn_on(&mut s.uniform_and_storage_buffer8_bit_access, b, "uniformAndStorageBuffer8BitAccess", added);
                    chain.push_front(s);
                } else {
                    out.skipped.push("8-bit storage: needs Vulkan 1.2 or VK_KHR_8bit_storage enabled".into());
                }
            }
            if c || h {
                if let Some(s) = chain.find_mut::<vk::PhysicalDeviceShaderFloat16Int8Features>(S::PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES) {
                    turn_on(&mut s.shader_int8, c, "shaderInt8", added);
                    turn_on(&mut s.shader_float16, h, "shaderFloat16", added);
                } else if chain.tail_contains(S::PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES) {
                    out.skipped.push("shaderInt8/shaderFloat16: their feature struct sits behind an unknown structure in read-only memory".into());
                } else if version >= vk::API_VERSION_1_2 || ext_on(vk::KHR_SHADER_FLOAT16_INT8_NAME) {
                    let mut s = vk::PhysicalDeviceShaderFloat16Int8Features::default();
                    turn_on(&mut s.shader_int8, c, "shaderInt8", added);
                    turn_on(&mut s.shader_float16, h, "shaderFloat16", added);
                    chain.push_front(s);
                } else {
                    out.skipped.push("shaderInt8/shaderFloat16: need Vulkan 1.2 or VK_KHR_shader_float16_int8 enabled".into());
                }
            }
        }
    }

    // shaderInt16 / shaderInt64: core 1.0 features.
    if sup.int16 || sup.int64 {
        if let Some(f2) = chain.find_mut::<vk::PhysicalDeviceFeatures2>(S::PHYSICAL_DEVICE_FEATURES_2) {
            turn_on(&mut f2.features.shader_int16, sup.int16, "shaderInt16", added);
            turn_on(&mut f2.features.shader_int64, sup.int64, "shaderInt64", added);
        } else if chain.tail_contains(S::PHYSICAL_DEVICE_FEATURES_2) {
            out.skipped.push("shaderInt16/shaderInt64: VkPhysicalDeviceFeatures2 sits behind an unknown structure in read-only memory".into());
        } else {
            let f = enabled_features.get_or_insert_with(vk::PhysicalDeviceFeatures::default);
            turn_on(&mut f.shader_int16, sup.int16, "shaderInt16", added);
            turn_on(&mut f.shader_int64, sup.int64, "shaderInt64", added);
        }
    }
    out
}

/// Turns on `vulkanMemoryModelDeviceScope` where the application enabled `vulkanMemoryModel`
/// without it and the device supports it: the sub-word stores the lowering emits are atomics at
/// Device scope, which VUID-RuntimeSpirv-vulkanMemoryModel-06265 forbids in that configuration
/// (QueueFamily scope would need the VulkanMemoryModel capability in every module). Returns the
/// feature name when it was turned on, or why it could not be.
///
/// # Safety
/// `chain` must be a copy of a valid VkDeviceCreateInfo chain; `pd` must belong to `inst`.
pub unsafe fn enable_device_scope(inst: &InstanceData, pd: vk::PhysicalDevice, chain: &mut Chain) -> Result<Option<&'static str>, &'static str> {
    let (model, scope) = if let Some(v12) = chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
        (v12.vulkan_memory_model, v12.vulkan_memory_model_device_scope)
    } else if let Some(m) = chain.find_mut::<vk::PhysicalDeviceVulkanMemoryModelFeatures>(S::PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES) {
        (m.vulkan_memory_model, m.vulkan_memory_model_device_scope)
    } else {
        return Ok(None);
    };
    if model == vk::FALSE || scope != vk::FALSE {
        return Ok(None);
    }
    let Some(features2) = inst.features2_for_query() else { return Err("vulkanMemoryModelDeviceScope: cannot query features") };
    let mut mm = vk::PhysicalDeviceVulkanMemoryModelFeatures::default();
    let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: &mut mm as *mut _ as *mut c_void, ..Default::default() };
    features2(pd, &mut f2);
    if mm.vulkan_memory_model_device_scope == vk::FALSE {
        return Err("vulkanMemoryModelDeviceScope: unsupported, so sub-word stores use Device scope the validation layer will report");
    }
    if let Some(v12) = chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
        v12.vulkan_memory_model_device_scope = vk::TRUE;
    } else if let Some(m) = chain.find_mut::<vk::PhysicalDeviceVulkanMemoryModelFeatures>(S::PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES) {
        m.vulkan_memory_model_device_scope = vk::TRUE;
    }
    Ok(Some("vulkanMemoryModelDeviceScope"))
}

/// The lowering features a final create-info chain enables.
///
/// # Safety
/// `head` must be a valid chain; `enabled` null or valid.
pub unsafe fn enabled_target(head: *const c_void, enabled: *const vk::PhysicalDeviceFeatures) -> Target {
    let mut t = Target::core();
    let on = |b: vk::Bool32| b != vk::FALSE;
    if let Some(f) = enabled.as_ref() {
        t.int16 |= on(f.shader_int16);
        t.int64 |= on(f.shader_int64);
    }
    for n in pnext::walk(head) {
        match (*n).s_type {
            S::PHYSICAL_DEVICE_FEATURES_2 => {
                let f = &(*(n as *const vk::PhysicalDeviceFeatures2)).features;
                t.int16 |= on(f.shader_int16);
                t.int64 |= on(f.shader_int64);
            }
            S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES => {
                let f = &*(n as *const vk::PhysicalDeviceVulkan11Features);
                t.storage_buffer_16bit |= on(f.storage_buffer16_bit_access);
                t.uniform_and_storage_buffer_16bit |= on(f.uniform_and_storage_buffer16_bit_access);
                t.storage_push_constant_16 |= on(f.storage_push_constant16);
                t.storage_input_output_16 |= on(f.storage_input_output16);
            }
            S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES => {
                let f = &*(n as *const vk::PhysicalDevice16BitStorageFeatures);
                t.storage_buffer_16bit |= on(f.storage_buffer16_bit_access);
                t.uniform_and_storage_buffer_16bit |= on(f.uniform_and_storage_buffer16_bit_access);
                t.storage_push_constant_16 |= on(f.storage_push_constant16);
                t.storage_input_output_16 |= on(f.storage_input_output16);
            }
            S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES => {
                let f = &*(n as *const vk::PhysicalDeviceVulkan12Features);
                t.storage_buffer_8bit |= on(f.storage_buffer8_bit_access);
                t.uniform_and_storage_buffer_8bit |= on(f.uniform_and_storage_buffer8_bit_access);
                t.storage_push_constant_8 |= on(f.storage_push_constant8);
                t.int8 |= on(f.shader_int8);
                t.float16 |= on(f.shader_float16);
            }
            S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES => {
                let f = &*(n as *const vk::PhysicalDevice8BitStorageFeatures);
                t.storage_buffer_8bit |= on(f.storage_buffer8_bit_access);
                t.uniform_and_storage_buffer_8bit |= on(f.uniform_and_storage_buffer8_bit_access);
                t.storage_push_constant_8 |= on(f.storage_push_constant8);
            }
            S::PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES => {
                let f = &*(n as *const vk::PhysicalDeviceShaderFloat16Int8Features);
                t.int8 |= on(f.shader_int8);
                t.float16 |= on(f.shader_float16);
            }
            _ => {}
        }
    }
    t
}

/// The robustness features a VkDeviceCreateInfo being edited enables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Robustness {
    /// Core `robustBufferAccess`.
    pub robust_buffer_access: bool,
    /// `robustBufferAccess2` (VK_EXT_robustness2 / VK_KHR_robustness2).
    pub robust_buffer_access2: bool,
    /// `pipelineRobustness` (VK_EXT_pipeline_robustness, core in Vulkan 1.4): a pipeline may
    /// choose its own robustness, less than the device's.
    pub pipeline_robustness: bool,
}

impl Robustness {
    /// Reads them from the copied chain and `pEnabledFeatures`.
    ///
    /// # Safety
    /// `chain` is a copy of a valid VkDeviceCreateInfo chain.
    pub unsafe fn enabled(chain: &Chain, enabled: Option<&vk::PhysicalDeviceFeatures>) -> Robustness {
        Self::read(chain.copied_nodes().chain(pnext::walk(chain.tail())), enabled)
    }

    /// Reads them from a (final) VkDeviceCreateInfo.
    ///
    /// # Safety
    /// `ci` is a valid VkDeviceCreateInfo.
    pub unsafe fn in_create_info(ci: &vk::DeviceCreateInfo) -> Robustness {
        Self::read(pnext::walk(ci.p_next), ci.p_enabled_features.as_ref())
    }

    unsafe fn read(nodes: impl Iterator<Item = *const vk::BaseInStructure<'static>>, enabled: Option<&vk::PhysicalDeviceFeatures>) -> Robustness {
        let on = |b: vk::Bool32| b != vk::FALSE;
        let mut r = Robustness { robust_buffer_access: enabled.is_some_and(|f| on(f.robust_buffer_access)), ..Default::default() };
        for n in nodes {
            match (*n).s_type {
                S::PHYSICAL_DEVICE_FEATURES_2 => r.robust_buffer_access |= on((*(n as *const vk::PhysicalDeviceFeatures2)).features.robust_buffer_access),
                S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT => r.robust_buffer_access2 |= on((*(n as *const vk::PhysicalDeviceRobustness2FeaturesEXT)).robust_buffer_access2),
                S::PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT => r.pipeline_robustness |= on((*(n as *const vk::PhysicalDevicePipelineRobustnessFeaturesEXT)).pipeline_robustness),
                VULKAN_1_4_FEATURES => r.pipeline_robustness |= on(*((n as *const u8).add(V14_PIPELINE_ROBUSTNESS) as *const vk::Bool32)),
                _ => {}
            }
        }
        r
    }
}

/// The robustness2 extension `has` names, EXT first (VK_KHR_robustness2 shares the structure and
/// its sType).
pub fn robustness2_in(has: impl Fn(&CStr) -> bool) -> Option<&'static CStr> {
    const KHR: &CStr = c"VK_KHR_robustness2";
    [vk::EXT_ROBUSTNESS2_NAME, KHR].into_iter().find(|&n| has(n))
}

/// Whether the device checks storage-buffer accesses as robustBufferAccess2 does even with no
/// robustness feature enabled: VK_EXT_pipeline_robustness's
/// `defaultRobustnessStorageBuffers` ("the behavior of out of bounds accesses made to storage
/// buffers when no robustness features are enabled") is ROBUST_BUFFER_ACCESS_2 (lavapipe).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
unsafe fn default_is_robust2(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> bool {
    // Only structures the device knows may be chained (VUID-VkPhysicalDeviceProperties2-pNext-pNext).
    if !phys.has_extension(vk::EXT_PIPELINE_ROBUSTNESS_NAME) && phys.api_version < vk::make_api_version(0, 1, 4, 0) {
        return false;
    }
    let Some(properties2) = inst.properties2_for_query() else { return false };
    let mut pr = vk::PhysicalDevicePipelineRobustnessPropertiesEXT::default();
    let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut pr as *mut _ as *mut c_void, ..Default::default() };
    properties2(pd, &mut p2);
    pr.default_robustness_storage_buffers == vk::PipelineRobustnessBufferBehaviorEXT::ROBUST_BUFFER_ACCESS_2
}

/// Does the driver check every storage-buffer access of the device's pipelines as
/// robustBufferAccess2 says, given the robustness the create info enables (`app`), and why?
/// Where robustBufferAccess2 is enabled (with robustBufferAccess, which it requires), or no
/// robustness is and the device's default is robustBufferAccess2 ([`default_is_robust2`]);
/// never where pipelineRobustness is enabled (a pipeline may opt out of the device's
/// robustness). `None`: it does not.
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn storage_checked_as_robust2(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo, app: Robustness) -> Option<&'static str> {
    if app.pipeline_robustness {
        return None;
    }
    match (app.robust_buffer_access, app.robust_buffer_access2) {
        (true, true) => Some("the application enables robustBufferAccess2"),
        (false, false) if default_is_robust2(inst, pd, phys) => {
            Some("the device's default storage-buffer robustness is robustBufferAccess2, VK_EXT_pipeline_robustness")
        }
        _ => None,
    }
}

/// The Mesa release of a lavapipe device, (major, minor), from `VkPhysicalDeviceDriverProperties`
/// (`driverID` MESA_LLVMPIPE, `driverInfo` "Mesa 25.0.7-…": lavapipe's `driverVersion` is 0.0.1,
/// so it says nothing). None for any other driver, or where the device cannot say (no Vulkan
/// 1.2 and no VK_KHR_driver_properties, or no vkGetPhysicalDeviceProperties2).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn lavapipe_mesa_version(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Option<(u32, u32)> {
    // Only structures the device knows may be chained (VUID-VkPhysicalDeviceProperties2-pNext-pNext).
    if effective_version(inst.api_version, phys.api_version) < vk::API_VERSION_1_2 && !phys.has_extension(vk::KHR_DRIVER_PROPERTIES_NAME) {
        return None;
    }
    let properties2 = inst.properties2_for_query()?;
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut driver as *mut _ as *mut c_void, ..Default::default() };
    properties2(pd, &mut p2);
    if driver.driver_id != vk::DriverId::MESA_LLVMPIPE {
        return None;
    }
    mesa_release(driver.driver_info_as_c_str().ok()?.to_str().ok()?)
}

/// (major, minor) of a Mesa `driverInfo` string ("Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)").
fn mesa_release(info: &str) -> Option<(u32, u32)> {
    let mut parts = info.strip_prefix("Mesa ")?.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Is the device's `robustStorageBufferAccessSizeAlignment` 1: robustBufferAccess2 checks
/// storage-buffer accesses against the descriptor's range to the byte (else the range is rounded
/// up to whole words)? False where the device has neither robustness2 extension to say so.
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn storage_checks_to_the_byte(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> bool {
    if robustness2_in(|n| phys.has_extension(n)).is_none() {
        return false;
    }
    let Some(properties2) = inst.properties2_for_query() else { return false };
    let mut r2 = vk::PhysicalDeviceRobustness2PropertiesEXT::default();
    let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut r2 as *mut _ as *mut c_void, ..Default::default() };
    properties2(pd, &mut p2);
    r2.robust_storage_buffer_access_size_alignment == 1
}

/// `VkPhysicalDeviceVulkan14Features` (not in ash 0.38): its sType, and the byte offset of
/// `pipelineRobustness` (after sType, pNext and 18 VkBool32 members).
const VULKAN_1_4_FEATURES: S = S::from_raw(55);
const V14_PIPELINE_ROBUSTNESS: usize = 16 + 18 * 4;

#[cfg(test)]
mod tests {
    use super::*;

    fn s_types(head: *const c_void) -> Vec<S> {
        unsafe { pnext::walk(head).map(|n| (*n).s_type).collect() }
    }

    /// What `enable_for_lowering` turns on out of `sup`: the byte-address lowering uses 8/16-bit
    /// storage-buffer views and Int8/16/64, never push-constant or Input/Output 8/16-bit storage.
    /// (robustBufferAccess2 is the descriptor table's to decide, not the lowering's.)
    fn lowering_features(sup: Target) -> Target {
        Target { storage_push_constant_8: false, storage_push_constant_16: false, storage_input_output_16: false, robust_buffer_access2: false, robust_storage_byte_exact: false, ..sup }
    }

    /// The robustness features of a create info: core robustBufferAccess in pEnabledFeatures or
    /// VkPhysicalDeviceFeatures2, robustBufferAccess2, and pipelineRobustness from its own
    /// structure or the Vulkan 1.4 aggregate.
    #[test]
    fn robustness_enabled_reads_every_structure() {
        let r2 = vk::PhysicalDeviceRobustness2FeaturesEXT { robust_buffer_access2: vk::TRUE, ..Default::default() };
        let head = &r2 as *const _ as *const c_void;
        let rba = vk::PhysicalDeviceFeatures { robust_buffer_access: vk::TRUE, ..Default::default() };
        let read = |head: *const c_void, ef: Option<&vk::PhysicalDeviceFeatures>| unsafe { Robustness::enabled(&Chain::copy(head), ef) };
        assert_eq!(read(head, Some(&rba)), Robustness { robust_buffer_access: true, robust_buffer_access2: true, pipeline_robustness: false });
        assert_eq!(read(head, None), Robustness { robust_buffer_access2: true, ..Default::default() });
        let f2 = vk::PhysicalDeviceFeatures2 { p_next: head as *mut c_void, features: rba, ..Default::default() };
        assert!(read(&f2 as *const _ as *const c_void, None).robust_buffer_access);
        let pr = vk::PhysicalDevicePipelineRobustnessFeaturesEXT { pipeline_robustness: vk::TRUE, ..Default::default() };
        assert!(read(&pr as *const _ as *const c_void, None).pipeline_robustness);
        // VkPhysicalDeviceVulkan14Features: sType 55, pipelineRobustness the 19th VkBool32.
        let mut v14 = [0u64; 13];
        let base = v14.as_mut_ptr() as *mut u8;
        let set_pr = |on: vk::Bool32| unsafe { *(base.add(V14_PIPELINE_ROBUSTNESS) as *mut vk::Bool32) = on };
        unsafe { *(base as *mut i32) = 55 };
        set_pr(vk::TRUE);
        assert!(read(base as *const c_void, None).pipeline_robustness, "Vulkan 1.4 pipelineRobustness");
        set_pr(vk::FALSE);
        assert!(!read(base as *const c_void, None).pipeline_robustness);
    }

    #[test]
    fn mesa_releases_from_driver_info() {
        assert_eq!(mesa_release("Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)"), Some((25, 0)));
        assert_eq!(mesa_release("Mesa 24.2.8"), Some((24, 2)));
        assert_eq!(mesa_release("Mesa 26.1.0-devel (git-abc)"), Some((26, 1)));
        assert_eq!(mesa_release("NVIDIA 580.159"), None);
        assert_eq!(mesa_release("Mesa"), None);
    }

    #[test]
    fn versions() {
        assert_eq!(effective_version(vk::API_VERSION_1_3, vk::make_api_version(0, 1, 4, 305)), vk::API_VERSION_1_3);
        assert_eq!(effective_version(vk::API_VERSION_1_0, vk::API_VERSION_1_3), vk::API_VERSION_1_0);
    }

    #[test]
    fn adds_dedicated_structs_and_enabled_features_on_1_3() {
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut ef = None;
        let added = unsafe { enable_for_lowering(&mut chain, &mut ef, &[], vk::API_VERSION_1_3, Target::all()) };
        assert_eq!(added.features.len(), 8, "{added:?}");
        assert!(added.features.contains(&"shaderFloat16"), "{added:?}");
        assert!(added.skipped.is_empty());
        let head = chain.link();
        let types = s_types(head);
        assert!(types.contains(&S::PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES));
        assert!(types.contains(&S::PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES));
        assert!(types.contains(&S::PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES));
        let ef = ef.unwrap();
        assert_eq!((ef.shader_int16, ef.shader_int64), (vk::TRUE, vk::TRUE));
        assert_eq!(unsafe { enabled_target(head, &ef) }, lowering_features(Target::all()));
    }

    #[test]
    fn uses_aggregates_and_features2_when_chained() {
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut v11 = vk::PhysicalDeviceVulkan11Features { p_next: &mut v12 as *mut _ as *mut c_void, ..Default::default() };
        let f2 = vk::PhysicalDeviceFeatures2 { p_next: &mut v11 as *mut _ as *mut c_void, ..Default::default() };
        let mut chain = unsafe { Chain::copy(&f2 as *const _ as *const c_void) };
        let mut ef = None;
        let sup = Target { int8: false, ..Target::all() };
        let added = unsafe { enable_for_lowering(&mut chain, &mut ef, &[], vk::API_VERSION_1_3, sup) };
        assert_eq!(added.features.len(), 7);
        assert!(ef.is_none());
        let head = chain.link();
        // No dedicated struct next to the aggregates.
        assert_eq!(
            s_types(head),
            vec![S::PHYSICAL_DEVICE_FEATURES_2, S::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES]
        );
        assert_eq!(unsafe { enabled_target(head, std::ptr::null()) }, lowering_features(sup));
        // The application's structs are untouched.
        assert_eq!(v12.storage_buffer8_bit_access, vk::FALSE);
        assert_eq!(v11.storage_buffer16_bit_access, vk::FALSE);
        assert_eq!(f2.features.shader_int64, vk::FALSE);
    }

    #[test]
    fn vulkan_1_0_without_extensions_adds_only_core_features() {
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut ef = Some(vk::PhysicalDeviceFeatures { robust_buffer_access: vk::TRUE, ..Default::default() });
        let added = unsafe { enable_for_lowering(&mut chain, &mut ef, &[], vk::API_VERSION_1_0, Target::all()) };
        assert_eq!(added.features, vec!["shaderInt16", "shaderInt64"]);
        assert_eq!(added.skipped.len(), 3);
        assert!(chain.link().is_null());
        assert_eq!(ef.unwrap().robust_buffer_access, vk::TRUE);
        // With the extension enabled, the dedicated struct is allowed.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let added = unsafe {
            enable_for_lowering(&mut chain, &mut None, &[vk::KHR_8BIT_STORAGE_NAME], vk::API_VERSION_1_0, Target::all())
        };
        assert!(added.features.contains(&"storageBuffer8BitAccess"));
    }

    #[test]
    fn only_supported_bits() {
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut ef = None;
        let sup = Target { storage_buffer_8bit: true, ..Target::core() };
        let added = unsafe { enable_for_lowering(&mut chain, &mut ef, &[], vk::API_VERSION_1_3, sup) };
        assert_eq!(added.features, vec!["storageBuffer8BitAccess"]);
        assert!(ef.is_none());
        assert_eq!(unsafe { enabled_target(chain.link(), std::ptr::null()) }, sup);
    }

    /// A feature being emulated is masked out of the support handed to `enable_for_lowering`
    /// (device.rs does that with `small_storage::mask_target`): it stays off, the others go on.
    #[test]
    fn masked_features_stay_off() {
        let mut sup = Target::all();
        sup.storage_buffer_16bit = false;
        sup.uniform_and_storage_buffer_8bit = false;
        let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
        let s8 = vk::PhysicalDevice8BitStorageFeatures { p_next: &mut v11 as *mut _ as *mut c_void, ..Default::default() };
        let mut chain = unsafe { Chain::copy(&s8 as *const _ as *const c_void) };
        let added = unsafe { enable_for_lowering(&mut chain, &mut None, &[], vk::API_VERSION_1_3, sup) };
        assert!(!added.features.contains(&"storageBuffer16BitAccess") && !added.features.contains(&"uniformAndStorageBuffer8BitAccess"));
        let t = unsafe { enabled_target(chain.link(), std::ptr::null()) };
        assert!(!t.storage_buffer_16bit && !t.uniform_and_storage_buffer_8bit);
        assert!(t.uniform_and_storage_buffer_16bit && t.storage_buffer_8bit && t.int8);
    }

    /// `enabled_target` reads every 8/16-bit storage bit the application enabled, from the
    /// aggregate and the dedicated structures.
    #[test]
    fn enabled_target_reads_push_constant_and_io_bits() {
        let v12 = vk::PhysicalDeviceVulkan12Features { storage_push_constant8: vk::TRUE, ..Default::default() };
        let v11 = vk::PhysicalDeviceVulkan11Features {
            p_next: &v12 as *const _ as *mut c_void,
            storage_input_output16: vk::TRUE,
            ..Default::default()
        };
        let t = unsafe { enabled_target(&v11 as *const _ as *const c_void, std::ptr::null()) };
        assert_eq!(t, Target { storage_push_constant_8: true, storage_input_output_16: true, ..Target::core() });
        let s8 = vk::PhysicalDevice8BitStorageFeatures { storage_push_constant8: vk::TRUE, ..Default::default() };
        let s16 = vk::PhysicalDevice16BitStorageFeatures {
            p_next: &s8 as *const _ as *mut c_void,
            storage_push_constant16: vk::TRUE,
            storage_input_output16: vk::TRUE,
            ..Default::default()
        };
        let t = unsafe { enabled_target(&s16 as *const _ as *const c_void, std::ptr::null()) };
        assert_eq!(
            t,
            Target { storage_push_constant_8: true, storage_push_constant_16: true, storage_input_output_16: true, ..Target::core() }
        );
    }
}
