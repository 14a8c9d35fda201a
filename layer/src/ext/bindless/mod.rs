//! VK_NVX_image_view_handle on any driver, backed by a layer-owned descriptor table (the Vulkan
//! side of SPV_NV_bindless_texture emulation; the shader side is shader-rewrite's bindless pass).
//!
//! - A handle names slots in the table ([`slots`]): image slot in bits 0..20, sampler slot in
//!   bits 20..32 (`shader_rewrite::BindlessTable::handle`), per (view, descriptor type, sampler),
//!   released on vkDestroyImageView / vkDestroySampler ([`api`]).
//! - The table ([`table`]): one descriptor set of SAMPLED_IMAGE / STORAGE_IMAGE / SAMPLER arrays
//!   (bindings 0/1/2, UPDATE_AFTER_BIND | PARTIALLY_BOUND | UPDATE_UNUSED_WHILE_PENDING) at the
//!   reserved set index `maxBoundDescriptorSets - 1`. The application is told the driver's limits
//!   (only the all-pools budget is lowered by the table's pool).
//! - Every pipeline layout with room for it gets the table appended at the reserved index
//!   ([`layouts`], [`budget`]: a free last set and room under the driver's update-after-bind
//!   limits); the table is bound before each draw / dispatch / trace whose pipeline uses
//!   bindless shaders ([`commands`], [`pipelines`]); a bindless pipeline whose layout has no room
//!   is refused with the limit named.
//! - Shader objects (VK_EXT_shader_object) get the same padded set layouts; a bindless one gets a
//!   layer-created pipeline layout the table is bound with after vkCmdBindShadersEXT
//!   ([`shader_objects`], [`commands`]).
//!
//! All of these hooks exist only on devices where the emulation is active (the application
//! enabled the extension, or `image_view_handle=force` / `force_enable`).
use super::EmulatedExtension;
use crate::device_features::effective_version;
use crate::dispatch::{dispatch_key, load_device, InstanceData, PhysicalDeviceInfo, DEVICES};
use crate::pnext::Chain;
use crate::settings::{Mode, Settings};
use crate::log_info;
use ash::vk::{self, Handle};
use dashmap::DashMap;
use std::ffi::{c_void, CStr};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Casts a hook to `PFN_vkVoidFunction` (as in loader_interface.rs).
macro_rules! pfn {
    ($f:expr) => {
        Some(unsafe { std::mem::transmute::<*const (), unsafe extern "system" fn()>($f as *const ()) })
    };
}

pub mod api;
pub mod budget;
pub mod commands;
pub mod layouts;
pub mod pipelines;
pub mod shader_objects;
pub mod slots;
pub mod table;

pub use table::Caps;

pub struct ImageViewHandle;

pub const NAME: &CStr = vk::NVX_IMAGE_VIEW_HANDLE_NAME;
/// Advertised revision: 1.
///
/// VK_NVX_image_view_handle's version history (Vulkan registry, `VK_NVX_image_view_handle`
/// appendix): revision 1 (2018-12-07) has `vkGetImageViewHandleNVX`; revision 2 (2020-04-03)
/// adds `vkGetImageViewAddressNVX`; revision 3 (2024-11-04) adds `vkGetImageViewHandle64NVX`.
/// `vkGetImageViewAddressNVX` returns the device address and size of the view's memory, which
/// a descriptor-table emulation does not have, so revisions 2 and 3 cannot be claimed honestly.
/// The layer still answers `vkGetImageViewHandle64NVX` (the same handle, zero-extended) for
/// applications that look it up regardless of the revision; `vkGetImageViewAddressNVX` is not
/// provided (vkGetDeviceProcAddr gives the next layer's answer, normally NULL).
pub const SPEC_VERSION: u32 = 1;

impl EmulatedExtension for ImageViewHandle {
    fn name(&self) -> &'static CStr {
        NAME
    }
    fn spec_version(&self) -> u32 {
        SPEC_VERSION
    }
    fn mode_setting(&self, settings: &Settings) -> Mode {
        settings.image_view_handle
    }
    fn feature_struct_types(&self) -> &'static [vk::StructureType] {
        &[]
    }
    unsafe fn report_features(&self, _node: *mut vk::BaseOutStructure<'static>) {}
    unsafe fn feature_requested(&self, _head: *const c_void) -> bool {
        false
    }
    /// The table depends on the device: device.rs sets `options.bindless` from [`caps_for`].
    fn enable_in_options(&self, _options: &mut shader_rewrite::Options) {}
    unsafe fn unavailable(&self, inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Option<String> {
        caps_for(inst, pd, phys).err()
    }
}

/// The table a physical device can hold, or why it cannot (queried once, logged once).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn caps_for(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Result<Caps, String> {
    phys.bindless
        .get_or_init(|| {
            let r = query_caps(inst, pd, phys);
            match &r {
                Ok(c) => log_info!(
                    "bindless: device '{}': VK_NVX_image_view_handle can be emulated: table at set {} ({} sampled images, {} storage images, {} samplers), appended to the pipeline layouts it fits beside; device limits reported unchanged but maxUpdateAfterBindDescriptorsInAllPools (minus the table)",
                    phys.name,
                    c.table.set,
                    c.table.sampled_images_count,
                    c.table.storage_images_count,
                    c.table.samplers_count
                ),
                Err(why) => log_info!("bindless: device '{}': VK_NVX_image_view_handle cannot be emulated: {why}", phys.name),
            }
            r
        })
        .clone()
}

unsafe fn query_caps(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Result<Caps, String> {
    let version = effective_version(inst.api_version, phys.api_version);
    if version < vk::API_VERSION_1_2 && !phys.has_extension(vk::EXT_DESCRIPTOR_INDEXING_NAME) {
        return Err("needs Vulkan 1.2 (instance and device) or VK_EXT_descriptor_indexing".into());
    }
    let (Some(features2), Some(properties2)) = (inst.features2_for_query(), inst.properties2_for_query()) else {
        return Err("cannot query features (Vulkan 1.0 instance without VK_KHR_get_physical_device_properties2)".into());
    };
    let mut di_f = vk::PhysicalDeviceDescriptorIndexingFeatures::default();
    let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: &mut di_f as *mut _ as *mut c_void, ..Default::default() };
    features2(pd, &mut f2);
    let mut di_p = vk::PhysicalDeviceDescriptorIndexingProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut di_p as *mut _ as *mut c_void, ..Default::default() };
    properties2(pd, &mut p2);
    di_f.p_next = std::ptr::null_mut();
    di_p.p_next = std::ptr::null_mut();
    table::caps(&p2.properties.limits, &di_p, &di_f, &f2.features)
}

fn turn_on(bit: &mut vk::Bool32, name: &'static str, added: &mut Vec<&'static str>) {
    if *bit == vk::FALSE {
        *bit = vk::TRUE;
        added.push(name);
    }
}

/// Turns on the descriptor-indexing features the table and the lowered shaders need in a copied
/// `VkDeviceCreateInfo` chain (rules as in device_features.rs: the Vulkan 1.2 aggregate when
/// chained, else the dedicated struct where valid). Returns the names newly enabled.
///
/// # Safety
/// `chain` is a copy of a valid VkDeviceCreateInfo chain.
pub unsafe fn enable_features(
    chain: &mut Chain,
    enabled_features: &mut Option<vk::PhysicalDeviceFeatures>,
    enabled_extensions: &[&CStr],
    version: u32,
    caps: &Caps,
) -> Result<Vec<&'static str>, String> {
    type S = vk::StructureType;
    let mut added = Vec::new();
    macro_rules! set_bits {
        ($f:expr) => {{
            let f = $f;
            turn_on(&mut f.descriptor_binding_sampled_image_update_after_bind, table::NEEDED_FEATURES[0], &mut added);
            turn_on(&mut f.descriptor_binding_storage_image_update_after_bind, table::NEEDED_FEATURES[1], &mut added);
            turn_on(&mut f.descriptor_binding_update_unused_while_pending, table::NEEDED_FEATURES[2], &mut added);
            turn_on(&mut f.descriptor_binding_partially_bound, table::NEEDED_FEATURES[3], &mut added);
            turn_on(&mut f.shader_sampled_image_array_non_uniform_indexing, table::NEEDED_FEATURES[4], &mut added);
            turn_on(&mut f.shader_storage_image_array_non_uniform_indexing, table::NEEDED_FEATURES[5], &mut added);
        }};
    }
    if let Some(v12) = chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
        set_bits!(v12);
    } else if let Some(di) = chain.find_mut::<vk::PhysicalDeviceDescriptorIndexingFeatures>(S::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES) {
        set_bits!(di);
    } else if chain.tail_contains(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) || chain.tail_contains(S::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES) {
        return Err("the descriptor-indexing feature structure sits behind an unknown structure".into());
    } else if version >= vk::API_VERSION_1_2 || enabled_extensions.contains(&vk::EXT_DESCRIPTOR_INDEXING_NAME) {
        let mut di = vk::PhysicalDeviceDescriptorIndexingFeatures::default();
        set_bits!(&mut di);
        chain.push_front(di);
    } else {
        return Err("needs Vulkan 1.2 or VK_EXT_descriptor_indexing enabled by the application".into());
    }
    // Core dynamic indexing of the arrays: VkPhysicalDeviceFeatures2 when chained, else
    // pEnabledFeatures (never both).
    let core_on = |f: &mut vk::PhysicalDeviceFeatures, added: &mut Vec<&'static str>| {
        if caps.sampled_dynamic_indexing {
            turn_on(&mut f.shader_sampled_image_array_dynamic_indexing, "shaderSampledImageArrayDynamicIndexing", added);
        }
        if caps.storage_dynamic_indexing {
            turn_on(&mut f.shader_storage_image_array_dynamic_indexing, "shaderStorageImageArrayDynamicIndexing", added);
        }
    };
    if let Some(f2) = chain.find_mut::<vk::PhysicalDeviceFeatures2>(S::PHYSICAL_DEVICE_FEATURES_2) {
        core_on(&mut f2.features, &mut added);
    } else if !chain.tail_contains(S::PHYSICAL_DEVICE_FEATURES_2) {
        core_on(enabled_features.get_or_insert_with(vk::PhysicalDeviceFeatures::default), &mut added);
    }
    Ok(added)
}

/// The extension that makes `VkPhysicalDeviceRobustness2FeaturesEXT` valid in the chain, if the
/// application enabled one (VK_KHR_robustness2 shares the structure and its sType).
fn robustness2_enabled(extensions: &[&CStr]) -> Option<&'static CStr> {
    const KHR: &CStr = c"VK_KHR_robustness2";
    if extensions.contains(&vk::EXT_ROBUSTNESS2_NAME) {
        Some(vk::EXT_ROBUSTNESS2_NAME)
    } else if extensions.contains(&KHR) {
        Some(KHR)
    } else {
        None
    }
}

/// Whether the physical device supports `nullDescriptor` (VK_EXT_robustness2 /
/// VK_KHR_robustness2), and the extension to enable for it.
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn null_descriptor_support(inst: &InstanceData, pd: vk::PhysicalDevice, phys: &PhysicalDeviceInfo) -> Result<&'static CStr, String> {
    const KHR: &CStr = c"VK_KHR_robustness2";
    let ext = if phys.has_extension(vk::EXT_ROBUSTNESS2_NAME) {
        vk::EXT_ROBUSTNESS2_NAME
    } else if phys.has_extension(KHR) {
        KHR
    } else {
        return Err("the device has neither VK_EXT_robustness2 nor VK_KHR_robustness2".into());
    };
    let Some(features2) = inst.features2_for_query() else {
        return Err("cannot query features (Vulkan 1.0 instance without VK_KHR_get_physical_device_properties2)".into());
    };
    let mut r2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
    let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: &mut r2 as *mut _ as *mut c_void, ..Default::default() };
    features2(pd, &mut f2);
    if r2.null_descriptor == vk::FALSE {
        return Err(format!("{} lacks nullDescriptor", ext.to_str().unwrap_or("?")));
    }
    Ok(ext)
}

/// Turns on `nullDescriptor` in a copied `VkDeviceCreateInfo` chain for the table's free slots:
/// in the application's `VkPhysicalDeviceRobustness2FeaturesEXT` copy when chained, else in a
/// new one, adding `extension` (from [`null_descriptor_support`]) to `enabled_extensions` when
/// the application enabled neither robustness2 extension (the structure is only valid then).
/// Returns the extension added, if any.
///
/// # Safety
/// `chain` is a copy of a valid VkDeviceCreateInfo chain.
pub unsafe fn enable_null_descriptor(
    chain: &mut Chain,
    enabled_extensions: &mut Vec<&CStr>,
    extension: &'static CStr,
) -> Result<Option<&'static CStr>, String> {
    type S = vk::StructureType;
    if let Some(r2) = chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) {
        r2.null_descriptor = vk::TRUE;
        return Ok(None);
    }
    if chain.tail_contains(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) {
        return Err("the robustness2 feature structure sits behind an unknown structure".into());
    }
    let added = match robustness2_enabled(enabled_extensions) {
        Some(_) => None,
        None => {
            enabled_extensions.push(extension);
            Some(extension)
        }
    };
    chain.push_front(vk::PhysicalDeviceRobustness2FeaturesEXT { null_descriptor: vk::TRUE, ..Default::default() });
    Ok(added)
}

/// Next-layer device commands the bindless hooks call.
#[derive(Default, Clone, Copy)]
pub struct Next {
    pub create_descriptor_set_layout: Option<vk::PFN_vkCreateDescriptorSetLayout>,
    pub destroy_descriptor_set_layout: Option<vk::PFN_vkDestroyDescriptorSetLayout>,
    pub create_descriptor_pool: Option<vk::PFN_vkCreateDescriptorPool>,
    pub destroy_descriptor_pool: Option<vk::PFN_vkDestroyDescriptorPool>,
    pub allocate_descriptor_sets: Option<vk::PFN_vkAllocateDescriptorSets>,
    pub update_descriptor_sets: Option<vk::PFN_vkUpdateDescriptorSets>,
    pub create_pipeline_layout: Option<vk::PFN_vkCreatePipelineLayout>,
    pub destroy_pipeline_layout: Option<vk::PFN_vkDestroyPipelineLayout>,
    pub destroy_image_view: Option<vk::PFN_vkDestroyImageView>,
    pub create_sampler: Option<vk::PFN_vkCreateSampler>,
    pub destroy_sampler: Option<vk::PFN_vkDestroySampler>,
    pub destroy_pipeline: Option<vk::PFN_vkDestroyPipeline>,
    pub destroy_shader_module: Option<vk::PFN_vkDestroyShaderModule>,
    pub destroy_shader_ext: Option<vk::PFN_vkDestroyShaderEXT>,
    pub cmd_bind_shaders_ext: Option<vk::PFN_vkCmdBindShadersEXT>,
    pub cmd_bind_pipeline: Option<vk::PFN_vkCmdBindPipeline>,
    pub cmd_bind_descriptor_sets: Option<vk::PFN_vkCmdBindDescriptorSets>,
    pub cmd_bind_descriptor_sets2_khr: Option<vk::PFN_vkCmdBindDescriptorSets2KHR>,
    pub cmd_bind_descriptor_sets2: Option<vk::PFN_vkCmdBindDescriptorSets2KHR>,
    pub cmd_push_descriptor_set_khr: Option<vk::PFN_vkCmdPushDescriptorSetKHR>,
    pub cmd_push_descriptor_set: Option<vk::PFN_vkCmdPushDescriptorSetKHR>,
    pub cmd_push_descriptor_set_with_template_khr: Option<vk::PFN_vkCmdPushDescriptorSetWithTemplateKHR>,
    pub cmd_push_descriptor_set_with_template: Option<vk::PFN_vkCmdPushDescriptorSetWithTemplateKHR>,
    pub cmd_push_descriptor_set2_khr: Option<vk::PFN_vkCmdPushDescriptorSet2KHR>,
    pub cmd_push_descriptor_set_with_template2_khr: Option<vk::PFN_vkCmdPushDescriptorSetWithTemplate2KHR>,
    pub cmd_execute_commands: Option<vk::PFN_vkCmdExecuteCommands>,
    pub begin_command_buffer: Option<vk::PFN_vkBeginCommandBuffer>,
    pub reset_command_buffer: Option<vk::PFN_vkResetCommandBuffer>,
    pub allocate_command_buffers: Option<vk::PFN_vkAllocateCommandBuffers>,
    pub free_command_buffers: Option<vk::PFN_vkFreeCommandBuffers>,
    pub destroy_command_pool: Option<vk::PFN_vkDestroyCommandPool>,
    pub work: commands::WorkNext,
}

impl Next {
    /// # Safety
    /// Valid device and its next GetDeviceProcAddr.
    pub unsafe fn load(gdpa: vk::PFN_vkGetDeviceProcAddr, d: vk::Device) -> Next {
        Next {
            create_descriptor_set_layout: load_device(gdpa, d, c"vkCreateDescriptorSetLayout"),
            destroy_descriptor_set_layout: load_device(gdpa, d, c"vkDestroyDescriptorSetLayout"),
            create_descriptor_pool: load_device(gdpa, d, c"vkCreateDescriptorPool"),
            destroy_descriptor_pool: load_device(gdpa, d, c"vkDestroyDescriptorPool"),
            allocate_descriptor_sets: load_device(gdpa, d, c"vkAllocateDescriptorSets"),
            update_descriptor_sets: load_device(gdpa, d, c"vkUpdateDescriptorSets"),
            create_pipeline_layout: load_device(gdpa, d, c"vkCreatePipelineLayout"),
            destroy_pipeline_layout: load_device(gdpa, d, c"vkDestroyPipelineLayout"),
            destroy_image_view: load_device(gdpa, d, c"vkDestroyImageView"),
            create_sampler: load_device(gdpa, d, c"vkCreateSampler"),
            destroy_sampler: load_device(gdpa, d, c"vkDestroySampler"),
            destroy_pipeline: load_device(gdpa, d, c"vkDestroyPipeline"),
            destroy_shader_module: load_device(gdpa, d, c"vkDestroyShaderModule"),
            destroy_shader_ext: load_device(gdpa, d, c"vkDestroyShaderEXT"),
            cmd_bind_shaders_ext: load_device(gdpa, d, c"vkCmdBindShadersEXT"),
            cmd_bind_pipeline: load_device(gdpa, d, c"vkCmdBindPipeline"),
            cmd_bind_descriptor_sets: load_device(gdpa, d, c"vkCmdBindDescriptorSets"),
            cmd_bind_descriptor_sets2_khr: load_device(gdpa, d, c"vkCmdBindDescriptorSets2KHR"),
            cmd_bind_descriptor_sets2: load_device(gdpa, d, c"vkCmdBindDescriptorSets2"),
            cmd_push_descriptor_set_khr: load_device(gdpa, d, c"vkCmdPushDescriptorSetKHR"),
            cmd_push_descriptor_set: load_device(gdpa, d, c"vkCmdPushDescriptorSet"),
            cmd_push_descriptor_set_with_template_khr: load_device(gdpa, d, c"vkCmdPushDescriptorSetWithTemplateKHR"),
            cmd_push_descriptor_set_with_template: load_device(gdpa, d, c"vkCmdPushDescriptorSetWithTemplate"),
            cmd_push_descriptor_set2_khr: load_device(gdpa, d, c"vkCmdPushDescriptorSet2KHR"),
            cmd_push_descriptor_set_with_template2_khr: load_device(gdpa, d, c"vkCmdPushDescriptorSetWithTemplate2KHR"),
            cmd_execute_commands: load_device(gdpa, d, c"vkCmdExecuteCommands"),
            begin_command_buffer: load_device(gdpa, d, c"vkBeginCommandBuffer"),
            reset_command_buffer: load_device(gdpa, d, c"vkResetCommandBuffer"),
            allocate_command_buffers: load_device(gdpa, d, c"vkAllocateCommandBuffers"),
            free_command_buffers: load_device(gdpa, d, c"vkFreeCommandBuffers"),
            destroy_command_pool: load_device(gdpa, d, c"vkDestroyCommandPool"),
            work: commands::WorkNext::load(gdpa, d),
        }
    }
}

type FxMap<K, V> = DashMap<K, V, std::hash::BuildHasherDefault<rustc_hash::FxHasher>>;

/// Per-device state of the emulation.
pub struct BindlessDevice {
    pub device: vk::Device,
    pub name: String,
    pub next: Next,
    pub table: table::Table,
    /// The driver's limits the table must fit under in each layout.
    pub limits: budget::Limits,
    /// Descriptor counts of the application's set layouts (for [`budget::check`]).
    pub set_layouts: FxMap<u64, budget::SetLayoutCounts>,
    /// Slot bookkeeping; held while the descriptors of new slots are written.
    pub slots: Mutex<slots::Slots>,
    /// Shader modules whose code uses SPV_NV_bindless_texture.
    pub modules: FxMap<u64, ()>,
    /// Bindless pipelines (and pipeline libraries) → their layout.
    pub pipelines: FxMap<u64, vk::PipelineLayout>,
    /// Bindless shader objects → the layer-created pipeline layout the table is bound with.
    pub shaders: FxMap<u64, vk::PipelineLayout>,
    /// Pipeline layouts created on the device.
    pub layouts: FxMap<u64, layouts::LayoutInfo>,
    /// Command-buffer binding state (only command buffers that bound a bindless pipeline).
    pub cbs: FxMap<u64, commands::CbState>,
    /// Command pool → its command buffers (to drop state on vkDestroyCommandPool).
    pub pools: FxMap<u64, Vec<u64>>,
    /// An out-of-slots error was logged (logged once per device).
    pub exhausted_logged: AtomicBool,
}

impl BindlessDevice {
    /// Creates the table on a freshly created device.
    ///
    /// # Safety
    /// `device` is live and `gdpa` is its next GetDeviceProcAddr.
    /// `null_descriptor`: the device was created with `nullDescriptor` enabled
    /// ([`enable_null_descriptor`]).
    pub unsafe fn create(
        device: vk::Device,
        gdpa: vk::PFN_vkGetDeviceProcAddr,
        name: &str,
        caps: &Caps,
        null_descriptor: bool,
    ) -> Result<BindlessDevice, String> {
        let next = Next::load(gdpa, device);
        let table = table::Table::create(device, &next, caps.table, name, null_descriptor)?;
        let c = caps.table;
        Ok(BindlessDevice {
            device,
            name: name.to_string(),
            next,
            table,
            limits: caps.limits,
            set_layouts: Default::default(),
            slots: Mutex::new(slots::Slots::new(c.sampled_images_count, c.storage_images_count, c.samplers_count)),
            modules: Default::default(),
            pipelines: Default::default(),
            shaders: Default::default(),
            layouts: Default::default(),
            cbs: Default::default(),
            pools: Default::default(),
            exhausted_logged: AtomicBool::new(false),
        })
    }

    /// Writes the filler (null image descriptor / default sampler) back into released slots.
    /// Call with the `slots` lock still held (the slots are on the free list already, and
    /// another thread may take and write them as soon as the lock is released).
    ///
    /// # Safety
    /// The device is live.
    pub unsafe fn refill(&self, freed: &[slots::Freed]) {
        let Some(update) = self.next.update_descriptor_sets else { return };
        let t = &self.table;
        for f in freed {
            let (binding, slot, ty) = match *f {
                slots::Freed::Image { kind: slots::ImageKind::Sampled, slot } => {
                    (t.config.sampled_images_binding, slot, vk::DescriptorType::SAMPLED_IMAGE)
                }
                slots::Freed::Image { kind: slots::ImageKind::Storage, slot } => {
                    (t.config.storage_images_binding, slot, vk::DescriptorType::STORAGE_IMAGE)
                }
                slots::Freed::Sampler { slot } => (t.config.samplers_binding, slot, vk::DescriptorType::SAMPLER),
            };
            let Some(info) = t.filler(ty) else { continue };
            let w = vk::WriteDescriptorSet {
                dst_set: t.set,
                dst_binding: binding,
                dst_array_element: slot,
                descriptor_count: 1,
                descriptor_type: ty,
                p_image_info: &info,
                ..Default::default()
            };
            update(self.device, 1, &w, 0, std::ptr::null());
        }
    }

    /// At vkDestroyDevice, before calling down.
    ///
    /// # Safety
    /// The device is idle and about to be destroyed.
    pub unsafe fn destroy(&self) {
        self.destroy_kept_layouts();
        self.destroy_shader_layouts();
        self.table.destroy(self.device, &self.next);
    }
}

/// The bindless state of a device (None: not active there).
///
/// # Safety
/// `device` is a live device handle.
pub unsafe fn bindless_device(device: vk::Device) -> Option<Arc<BindlessDevice>> {
    if device == vk::Device::null() {
        return None;
    }
    DEVICES.get(&dispatch_key(device)).and_then(|d| d.bindless.clone())
}

/// The bindless state of a command buffer's device.
///
/// # Safety
/// `cb` is a live command buffer handle.
pub unsafe fn bindless_device_of_cb(cb: vk::CommandBuffer) -> Option<Arc<BindlessDevice>> {
    if cb == vk::CommandBuffer::null() {
        return None;
    }
    DEVICES.get(&dispatch_key(cb)).and_then(|d| d.bindless.clone())
}

/// vkGetDeviceProcAddr for a device with bindless emulation active: our hook for `name`, if it
/// is one of ours. `next_exists`: the next layer has the command (hooks that call down are only
/// handed out then).
pub fn device_hook(name: &[u8], next_exists: bool) -> vk::PFN_vkVoidFunction {
    // The extension's own commands: implemented here, nothing below.
    match name {
        b"vkGetImageViewHandleNVX" => return pfn!(api::get_image_view_handle_nvx as vk::PFN_vkGetImageViewHandleNVX),
        b"vkGetImageViewHandle64NVX" => return pfn!(api::get_image_view_handle64_nvx as api::PfnGetImageViewHandle64NVX),
        _ => {}
    }
    if !next_exists {
        return None;
    }
    match name {
        b"vkDestroyImageView" => pfn!(api::destroy_image_view as vk::PFN_vkDestroyImageView),
        b"vkDestroySampler" => pfn!(api::destroy_sampler as vk::PFN_vkDestroySampler),
        b"vkCreateDescriptorSetLayout" => pfn!(layouts::create_descriptor_set_layout as vk::PFN_vkCreateDescriptorSetLayout),
        b"vkDestroyDescriptorSetLayout" => pfn!(layouts::destroy_descriptor_set_layout as vk::PFN_vkDestroyDescriptorSetLayout),
        b"vkCreatePipelineLayout" => pfn!(layouts::create_pipeline_layout as vk::PFN_vkCreatePipelineLayout),
        b"vkDestroyPipelineLayout" => pfn!(layouts::destroy_pipeline_layout as vk::PFN_vkDestroyPipelineLayout),
        b"vkDestroyPipeline" => pfn!(pipelines::destroy_pipeline as vk::PFN_vkDestroyPipeline),
        b"vkDestroyShaderModule" => pfn!(pipelines::destroy_shader_module as vk::PFN_vkDestroyShaderModule),
        b"vkDestroyShaderEXT" => pfn!(shader_objects::destroy_shader_ext as vk::PFN_vkDestroyShaderEXT),
        b"vkCmdBindShadersEXT" => pfn!(commands::cmd_bind_shaders_ext as vk::PFN_vkCmdBindShadersEXT),
        b"vkCmdBindPipeline" => pfn!(commands::cmd_bind_pipeline as vk::PFN_vkCmdBindPipeline),
        b"vkCmdBindDescriptorSets" => pfn!(commands::cmd_bind_descriptor_sets as vk::PFN_vkCmdBindDescriptorSets),
        b"vkCmdBindDescriptorSets2KHR" => pfn!(commands::cmd_bind_descriptor_sets2_khr as vk::PFN_vkCmdBindDescriptorSets2KHR),
        b"vkCmdBindDescriptorSets2" => pfn!(commands::cmd_bind_descriptor_sets2 as vk::PFN_vkCmdBindDescriptorSets2KHR),
        b"vkCmdPushDescriptorSetKHR" => pfn!(commands::cmd_push_descriptor_set_khr as vk::PFN_vkCmdPushDescriptorSetKHR),
        b"vkCmdPushDescriptorSet" => pfn!(commands::cmd_push_descriptor_set as vk::PFN_vkCmdPushDescriptorSetKHR),
        b"vkCmdPushDescriptorSetWithTemplateKHR" => {
            pfn!(commands::cmd_push_descriptor_set_with_template_khr as vk::PFN_vkCmdPushDescriptorSetWithTemplateKHR)
        }
        b"vkCmdPushDescriptorSetWithTemplate" => {
            pfn!(commands::cmd_push_descriptor_set_with_template as vk::PFN_vkCmdPushDescriptorSetWithTemplateKHR)
        }
        b"vkCmdPushDescriptorSet2KHR" => pfn!(commands::cmd_push_descriptor_set2_khr as vk::PFN_vkCmdPushDescriptorSet2KHR),
        b"vkCmdPushDescriptorSetWithTemplate2KHR" => {
            pfn!(commands::cmd_push_descriptor_set_with_template2_khr as vk::PFN_vkCmdPushDescriptorSetWithTemplate2KHR)
        }
        b"vkCmdExecuteCommands" => pfn!(commands::cmd_execute_commands as vk::PFN_vkCmdExecuteCommands),
        b"vkBeginCommandBuffer" => pfn!(commands::begin_command_buffer as vk::PFN_vkBeginCommandBuffer),
        b"vkResetCommandBuffer" => pfn!(commands::reset_command_buffer as vk::PFN_vkResetCommandBuffer),
        b"vkAllocateCommandBuffers" => pfn!(commands::allocate_command_buffers as vk::PFN_vkAllocateCommandBuffers),
        b"vkFreeCommandBuffers" => pfn!(commands::free_command_buffers as vk::PFN_vkFreeCommandBuffers),
        b"vkDestroyCommandPool" => pfn!(commands::destroy_command_pool as vk::PFN_vkDestroyCommandPool),
        _ => commands::work_hook(name),
    }
}

/// Raw handle of a non-dispatchable object, for map keys.
pub fn raw<H: Handle>(h: H) -> u64 {
    h.as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_descriptor_enabling() {
        type S = vk::StructureType;
        let ext = vk::EXT_ROBUSTNESS2_NAME;
        // Nothing chained, extension not enabled: new struct + extension added.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut exts: Vec<&CStr> = vec![vk::KHR_SWAPCHAIN_NAME];
        assert_eq!(unsafe { enable_null_descriptor(&mut chain, &mut exts, ext) }, Ok(Some(ext)));
        assert_eq!(exts, vec![vk::KHR_SWAPCHAIN_NAME, ext]);
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT]);
        let r2 = unsafe { chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) }.unwrap();
        assert_eq!(r2.null_descriptor, vk::TRUE);
        // The application enabled VK_KHR_robustness2: no extension added.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        let mut exts: Vec<&CStr> = vec![c"VK_KHR_robustness2"];
        assert_eq!(unsafe { enable_null_descriptor(&mut chain, &mut exts, ext) }, Ok(None));
        assert_eq!(exts.len(), 1);
        // The application chained its own struct: its copy gets the bit, nothing is added.
        let app = vk::PhysicalDeviceRobustness2FeaturesEXT { robust_image_access2: vk::TRUE, ..Default::default() };
        let mut chain = unsafe { Chain::copy(&app as *const _ as *const c_void) };
        let mut exts: Vec<&CStr> = vec![ext];
        assert_eq!(unsafe { enable_null_descriptor(&mut chain, &mut exts, ext) }, Ok(None));
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT]);
        let r2 = unsafe { chain.find_mut::<vk::PhysicalDeviceRobustness2FeaturesEXT>(S::PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT) }.unwrap();
        assert_eq!((r2.null_descriptor, r2.robust_image_access2), (vk::TRUE, vk::TRUE));
        assert_eq!(app.null_descriptor, vk::FALSE, "application's struct untouched");
    }

    #[test]
    fn extension_identity() {
        assert_eq!(ImageViewHandle.name(), c"VK_NVX_image_view_handle");
        assert_eq!(ImageViewHandle.spec_version(), 1);
        let mut s = Settings::default();
        assert_eq!(ImageViewHandle.mode_setting(&s), Mode::Auto);
        s.image_view_handle = Mode::Off;
        assert_eq!(ImageViewHandle.mode_setting(&s), Mode::Off);
        assert!(ImageViewHandle.feature_struct_types().is_empty());
    }

    #[test]
    fn hooks_only_for_our_names() {
        assert!(device_hook(b"vkGetImageViewHandleNVX", false).is_some());
        assert!(device_hook(b"vkGetImageViewHandle64NVX", false).is_some());
        assert!(device_hook(b"vkGetImageViewAddressNVX", true).is_none());
        assert!(device_hook(b"vkCmdDraw", true).is_some());
        assert!(device_hook(b"vkCmdDraw", false).is_none());
        assert!(device_hook(b"vkCmdCopyBuffer", true).is_none());
        assert!(device_hook(b"vkCmdTraceRaysKHR", true).is_some());
        assert!(device_hook(b"vkCmdBindShadersEXT", true).is_some());
        assert!(device_hook(b"vkCmdBindShadersEXT", false).is_none());
        assert!(device_hook(b"vkDestroyShaderEXT", true).is_some());
    }

    #[test]
    fn features_go_into_the_aggregate() {
        let caps = table::caps(
            &vk::PhysicalDeviceLimits { max_bound_descriptor_sets: 8, ..Default::default() },
            &vk::PhysicalDeviceDescriptorIndexingProperties {
                max_per_stage_update_after_bind_resources: 1 << 20,
                max_update_after_bind_descriptors_in_all_pools: u32::MAX,
                max_descriptor_set_update_after_bind_sampled_images: 1 << 20,
                max_per_stage_descriptor_update_after_bind_sampled_images: 1 << 20,
                max_descriptor_set_update_after_bind_storage_images: 1 << 20,
                max_per_stage_descriptor_update_after_bind_storage_images: 1 << 20,
                max_descriptor_set_update_after_bind_samplers: 1 << 20,
                max_per_stage_descriptor_update_after_bind_samplers: 1 << 20,
                ..Default::default()
            },
            &vk::PhysicalDeviceDescriptorIndexingFeatures {
                descriptor_binding_sampled_image_update_after_bind: 1,
                descriptor_binding_storage_image_update_after_bind: 1,
                descriptor_binding_update_unused_while_pending: 1,
                descriptor_binding_partially_bound: 1,
                shader_sampled_image_array_non_uniform_indexing: 1,
                shader_storage_image_array_non_uniform_indexing: 1,
                ..Default::default()
            },
            &vk::PhysicalDeviceFeatures { shader_sampled_image_array_dynamic_indexing: 1, ..Default::default() },
        )
        .unwrap();
        type S = vk::StructureType;
        // Aggregate chained: bits go there, no dedicated struct is added.
        let v12 = vk::PhysicalDeviceVulkan12Features { descriptor_binding_partially_bound: vk::TRUE, ..Default::default() };
        let mut chain = unsafe { Chain::copy(&v12 as *const _ as *const c_void) };
        let mut ef = None;
        let added = unsafe { enable_features(&mut chain, &mut ef, &[], vk::API_VERSION_1_3, &caps) }.unwrap();
        assert_eq!(added.len(), 6, "{added:?}");
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES]);
        assert_eq!(ef.unwrap().shader_sampled_image_array_dynamic_indexing, vk::TRUE);
        assert_eq!(ef.unwrap().shader_storage_image_array_dynamic_indexing, vk::FALSE);
        let v = unsafe { chain.find_mut::<vk::PhysicalDeviceVulkan12Features>(S::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) }.unwrap();
        assert_eq!(v.shader_storage_image_array_non_uniform_indexing, vk::TRUE);
        assert_eq!(v12.shader_storage_image_array_non_uniform_indexing, vk::FALSE, "application's struct untouched");
        // Nothing chained, Vulkan 1.2+: the dedicated struct.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        unsafe { enable_features(&mut chain, &mut None, &[], vk::API_VERSION_1_2, &caps) }.unwrap();
        assert_eq!(chain.s_types(), vec![S::PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES]);
        // Vulkan 1.1 without the extension: not possible.
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(unsafe { enable_features(&mut chain, &mut None, &[], vk::API_VERSION_1_1, &caps) }.is_err());
        let mut chain = unsafe { Chain::copy(std::ptr::null()) };
        assert!(unsafe { enable_features(&mut chain, &mut None, &[vk::EXT_DESCRIPTOR_INDEXING_NAME], vk::API_VERSION_1_1, &caps) }.is_ok());
    }
}
