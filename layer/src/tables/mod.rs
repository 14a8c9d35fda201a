//! The layer-owned descriptor table: a service below the emulations that need descriptors the
//! application never declared. One descriptor set per device, at the reserved set index
//! `maxBoundDescriptorSets - 1`, holding the arrays of every user active on the device (today
//! bindless textures, ext/bindless, and buffer device addresses, ext/bda; this module names
//! neither). A user joins the device's table while its emulation decides ([`join`] with a
//! [`TableUser`]: its arrays, the descriptor-indexing features they need, and which shader code
//! uses them); the table's plan ([`Plan`]) enables those features and `nullDescriptor`, and
//! creates the set after the device ([`TableDevice`], a device component the users find with
//! `dispatch::component`).
//!
//! - [`table`]: the set (layout, pool, set, fillers) holding the users' arrays;
//! - [`layouts`], [`budget`]: every pipeline layout with room for the table (a free last set and
//!   room under the driver's limits, which the users reserve in the limits the application sees:
//!   crate::descriptor_limits, so every layout valid under the reported limits has room) gets it
//!   appended at the reserved index;
//! - [`pipelines`], [`commands`]: pipelines whose shaders use the table are recorded, and the
//!   table is bound before each draw / dispatch / trace with them; such a pipeline whose layout has
//!   no room is refused;
//! - [`shader_objects`]: VK_EXT_shader_object shaders get the same padded set layouts and, when
//!   they use the table, a layer-created pipeline layout to bind it with.
//!
//! All of these hooks exist only on devices where a user is active.
use crate::component::{DeviceComponent, ShaderObserver};
use crate::dispatch::load_device;
use crate::into_any;
use ash::vk;
use dashmap::DashMap;
use std::sync::{Arc, Mutex};


pub mod budget;
pub mod commands;
pub mod device_query;
pub mod features;
pub mod filler_buffer;
pub mod layouts;
pub mod robustness2;
pub mod pipelines;
pub mod shader_objects;
pub mod slot_space;
pub mod table;

pub use table::{TableArray, TableConfig};
pub use user::TableUser;

mod plan;
mod user;

pub use plan::{join, Plan};

/// Next-layer device commands the table hooks (and its users) call.
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

pub(crate) type FxMap<K, V> = DashMap<K, V, std::hash::BuildHasherDefault<rustc_hash::FxHasher>>;

/// Per-device state of the table and its users.
pub struct TableDevice {
    pub device: vk::Device,
    pub name: String,
    pub next: Next,
    pub table: table::Table,
    /// The driver's limits the table must fit under in each layout.
    pub limits: budget::Limits,
    /// Descriptor counts of the application's set layouts (for [`budget::check`]).
    pub set_layouts: FxMap<u64, budget::SetLayoutCounts>,
    /// The emulations whose arrays the table holds.
    pub users: Vec<TableUser>,
    /// Shader modules whose code uses the table (bindless handles or device addresses).
    pub modules: FxMap<u64, ()>,
    /// Pipelines (and pipeline libraries) that use the table → their layout.
    pub pipelines: FxMap<u64, vk::PipelineLayout>,
    /// Shader objects that use the table → the layer-created pipeline layout it is bound with.
    pub shaders: FxMap<u64, vk::PipelineLayout>,
    /// Pipeline layouts created on the device.
    pub layouts: FxMap<u64, layouts::LayoutInfo>,
    /// Command-buffer binding state (only command buffers that bound a pipeline using the table).
    pub cbs: FxMap<u64, commands::CbState>,
    /// Command pool → its command buffers (to drop state on vkDestroyCommandPool).
    pub pools: FxMap<u64, Vec<u64>>,
    /// Held for each write into the table's set: both users write it from their own locks, and
    /// vkUpdateDescriptorSets needs host access to dstSet externally synchronized.
    writes: Mutex<()>,
}

impl TableDevice {
    /// Creates the table on a freshly created device.
    ///
    /// # Safety
    /// `device` is live and `gdpa` is its next GetDeviceProcAddr.
    /// `free`: what fills free slots ([`table::FreeSlots::Null`]: the device was created with
    /// `nullDescriptor` enabled, [`robustness2::enable`]).
    pub unsafe fn create(
        device: vk::Device,
        gdpa: vk::PFN_vkGetDeviceProcAddr,
        name: &str,
        config: TableConfig,
        limits: budget::Limits,
        free: table::FreeSlots,
        users: Vec<TableUser>,
    ) -> Result<TableDevice, String> {
        let next = Next::load(gdpa, device);
        let table = table::Table::create(device, gdpa, &next, config, name, free)?;
        Ok(TableDevice {
            device,
            name: name.to_string(),
            next,
            table,
            limits,
            users,
            set_layouts: Default::default(),
            modules: Default::default(),
            pipelines: Default::default(),
            shaders: Default::default(),
            layouts: Default::default(),
            cbs: Default::default(),
            pools: Default::default(),
            writes: Mutex::new(()),
        })
    }

    /// One descriptor write into the table's set, serialized with every other.
    ///
    /// # Safety
    /// The device is live; `w` is a valid write into the table's set.
    pub unsafe fn write(&self, w: &vk::WriteDescriptorSet) {
        let Some(update) = self.next.update_descriptor_sets else { return };
        let _serialized = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        update(self.device, 1, w, 0, std::ptr::null());
    }

    /// Writes the filler of `ty` back into `count` slots from `first` of `binding`.
    ///
    /// # Safety
    /// The device is live.
    pub unsafe fn refill(&self, binding: u32, ty: vk::DescriptorType, first: u32, count: u32) {
        self.table.filler_write(binding, ty, first, count, |w| unsafe { self.write(w) });
    }

    /// Does this SPIR-V use the table on this device (one of its users' capabilities)?
    /// Unreadable code: no.
    ///
    /// # Safety
    /// `code` readable for `size` bytes when non-null.
    pub unsafe fn code_uses_table(&self, code: *const std::ffi::c_void, size: usize) -> bool {
        crate::module_rewrite::scan(code, size).is_some_and(|r| self.users.iter().any(|u| (u.uses)(&r)))
    }

    /// The binding of `ty` in the table (a user's array).
    pub fn binding_of(&self, ty: vk::DescriptorType) -> Option<u32> {
        self.table.config.arrays.iter().find(|a| a.ty == ty).map(|a| a.binding)
    }
}

impl DeviceComponent for TableDevice {
    fn device_hook(&self, name: &[u8], next_exists: bool) -> vk::PFN_vkVoidFunction {
        device_hook(name, next_exists)
    }
    fn shader_observer(&self) -> Option<&dyn ShaderObserver> {
        Some(self)
    }
    unsafe fn destroy(&self) {
        self.destroy_kept_layouts();
        self.destroy_shader_layouts();
        self.table.destroy(self.device, &self.next);
    }
    into_any!();
}

/// The table state of a device (None: no user active there).
///
/// # Safety
/// `device` is a live device handle.
pub unsafe fn table_device(device: vk::Device) -> Option<Arc<TableDevice>> {
    if device == vk::Device::null() {
        return None;
    }
    crate::dispatch::component::<TableDevice>(device)
}

/// The table state of a command buffer's device.
///
/// # Safety
/// `cb` is a live command buffer handle.
pub unsafe fn table_device_of_cb(cb: vk::CommandBuffer) -> Option<Arc<TableDevice>> {
    crate::dispatch::component_of_cb::<TableDevice>(cb)
}

/// vkGetDeviceProcAddr for a device with a table: our hook for `name`, if it is one of the
/// table's (layouts, pipelines, shader objects, command buffers). `next_exists`: the next layer
/// has the command (hooks that call down are only handed out then).
fn device_hook(name: &[u8], next_exists: bool) -> vk::PFN_vkVoidFunction {
    if !next_exists {
        return None;
    }
    match name {
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
