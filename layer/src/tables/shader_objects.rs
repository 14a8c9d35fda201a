//! Shader objects (VK_EXT_shader_object) on a device with a table.
//!
//! Every `VkShaderCreateInfoEXT` gets its set layouts padded exactly like pipeline layouts
//! ([`TableDevice::with_table`]): the application's sets, empty layouts up to the reserved
//! index, the table — where the table fits beside them. All shaders, not only bindless ones: the
//! application binds its sets with (padded) pipeline layouts, and a shader's set layouts must be
//! compatible with them. A shader using the table without room for the table is refused.
//!
//! A shader using the table (its SPIR-V uses bindless handles or device addresses) also gets a layer-created
//! `VkPipelineLayout` (its padded set layouts and push-constant ranges), recorded per shader:
//! the table is bound with it before work with the shader bound (commands.rs,
//! vkCmdBindShadersEXT). It is compatible with the application's layouts for all of the
//! application's sets (same set layouts, same push-constant ranges, as the spec requires of the
//! layouts used with the shader), so binding the table with it disturbs none of them. It is
//! destroyed with the shader (vkDestroyShaderEXT) or the device.
//!
//! Shaders created from binary code (`VK_SHADER_CODE_TYPE_BINARY_EXT`) are padded too, but the
//! layer cannot tell whether the binary came from SPIR-V that uses the table: the table is not bound for
//! them.
use super::budget::Refusal;
use super::{table_device, layouts, TableDevice};
use crate::component::ShadersPending;
use crate::ffi_guard::guard;
use crate::module_rewrite::REWRITE_FAILED;
use crate::{log_debug, log_error};
use ash::vk::{self, Handle};

/// Padded copies of a vkCreateShadersEXT call's create infos (the set-layout arrays live here).
#[derive(Default)]
pub struct Padded {
    lists: Vec<Vec<vk::DescriptorSetLayout>>,
    /// Per create info: why the table is not at the reserved index (None: it is).
    pub no_table: Vec<Option<Refusal>>,
}

/// What vkCreateShadersEXT keeps across the call down.
pub struct PendingShaders<'a> {
    table: &'a TableDevice,
    /// The padded set-layout arrays the copies point to.
    _padded: Padded,
    /// Per create info: the layout the table is bound with (null: the shader does not use it).
    layouts: Vec<vk::PipelineLayout>,
}

impl ShadersPending for PendingShaders<'_> {
    unsafe fn created(self: Box<Self>, hook: &str, shaders: *const vk::ShaderEXT) {
        self.table.record_shaders(hook, &self.layouts, shaders);
    }
}

impl TableDevice {
    /// Before vkCreateShadersEXT: pads every shader's set layouts (`copies`); a shader using the
    /// table (decided on the application's code, before the rewrite lowered it) must have room
    /// for it and gets a layout to bind it with. `Err`: refused (logged).
    ///
    /// # Safety
    /// `app` and `copies` are valid create infos of the same length.
    pub unsafe fn prepare_shaders<'a>(
        &'a self,
        hook: &str,
        app: &[vk::ShaderCreateInfoEXT],
        copies: &mut [vk::ShaderCreateInfoEXT],
    ) -> Result<PendingShaders<'a>, vk::Result> {
        let uses_table: Vec<bool> =
            app.iter().map(|info| info.code_type == vk::ShaderCodeTypeEXT::SPIRV && self.code_uses_table(info.p_code, info.code_size)).collect();
        let padded = self.pad_shader_infos(hook, copies);
        let mut layouts = vec![vk::PipelineLayout::null(); copies.len()];
        for (i, c) in copies.iter().enumerate() {
            if !uses_table[i] {
                continue;
            }
            let made = if self.shader_ready(hook, i, &padded) { self.create_shader_layout(c) } else { Err(REWRITE_FAILED) };
            match made {
                Ok(l) => layouts[i] = l,
                Err(e) => {
                    if e != REWRITE_FAILED {
                        log_error!(PIPELINE_REFUSED, "{hook}: device '{}': cannot create the pipeline layout for shader object {i} (it uses the descriptor table): {e:?}", self.name);
                    }
                    layouts.iter().for_each(|&l| self.destroy_shader_layout(l));
                    return Err(e);
                }
            }
        }
        Ok(PendingShaders { table: self, _padded: padded, layouts })
    }

    /// Pads the set layouts of `infos` (copies, changed in place); the returned arrays must
    /// outlive the call down.
    ///
    /// # Safety
    /// `infos` are valid create infos.
    unsafe fn pad_shader_infos(&self, hook: &str, infos: &mut [vk::ShaderCreateInfoEXT]) -> Padded {
        let mut out = Padded::default();
        for (i, info) in infos.iter_mut().enumerate() {
            match self.with_table(layouts::app_sets(info.p_set_layouts, info.set_layout_count)) {
                Ok(list) => {
                    info.set_layout_count = list.len() as u32;
                    info.p_set_layouts = list.as_ptr();
                    out.lists.push(list);
                    out.no_table.push(None);
                }
                Err(why) => {
                    log_debug!(TRACE, "{hook}: shader {i}: no descriptor table in its set layouts: {why}");
                    out.no_table.push(Some(why));
                }
            }
        }
        out
    }

    /// Before creating shader using the table `i`: is the table in its set layouts? If not, logs why;
    /// the creation must be refused (its code uses the table's set).
    pub fn shader_ready(&self, hook: &str, i: usize, padded: &Padded) -> bool {
        let Some(why) = padded.no_table[i] else { return true };
        log_error!(
            PIPELINE_REFUSED,
            "{hook}: device '{}': shader object {i} uses the descriptor table (bindless textures or buffer device addresses) but its set layouts have no room for the descriptor table at set {}: {why}; refusing the shaders",
            self.name,
            self.table.config.set
        );
        false
    }

    /// The layout the table is bound with for a shader using the table created from `info` (padded).
    ///
    /// # Safety
    /// `info` is a valid, padded create info.
    pub unsafe fn create_shader_layout(&self, info: &vk::ShaderCreateInfoEXT) -> Result<vk::PipelineLayout, vk::Result> {
        let Some(create) = self.next.create_pipeline_layout else { return Err(vk::Result::ERROR_INITIALIZATION_FAILED) };
        let ci = vk::PipelineLayoutCreateInfo {
            set_layout_count: info.set_layout_count,
            p_set_layouts: info.p_set_layouts,
            push_constant_range_count: info.push_constant_range_count,
            p_push_constant_ranges: info.p_push_constant_ranges,
            ..Default::default()
        };
        let mut l = vk::PipelineLayout::null();
        match create(self.device, &ci, std::ptr::null(), &mut l) {
            vk::Result::SUCCESS => Ok(l),
            e => Err(e),
        }
    }

    /// # Safety
    /// `layout` was made by [`Self::create_shader_layout`] and is no longer used.
    pub unsafe fn destroy_shader_layout(&self, layout: vk::PipelineLayout) {
        if let (false, Some(d)) = (layout == vk::PipelineLayout::null(), self.next.destroy_pipeline_layout) {
            d(self.device, layout, std::ptr::null());
        }
    }

    /// After vkCreateShadersEXT: records each created shader that has a layout (`layouts[i]`
    /// non-null); destroys the layouts of shaders that were not created.
    ///
    /// # Safety
    /// `shaders` holds `layouts.len()` handles (or is null).
    pub unsafe fn record_shaders(&self, hook: &str, layouts: &[vk::PipelineLayout], shaders: *const vk::ShaderEXT) {
        for (i, &l) in layouts.iter().enumerate() {
            if l == vk::PipelineLayout::null() {
                continue;
            }
            let s = if shaders.is_null() { vk::ShaderEXT::null() } else { *shaders.add(i) };
            if s == vk::ShaderEXT::null() {
                self.destroy_shader_layout(l);
            } else {
                log_debug!(TRACE, "{hook}: device '{}': shader object {s:?} uses the descriptor table (layout {l:?})", self.name);
                if let Some(old) = self.shaders.insert(s.as_raw(), l) {
                    self.destroy_shader_layout(old); // a stale entry for a reused handle value
                }
            }
        }
    }

    /// The layout to bind the table with for a bound shader (None: it does not use the table).
    pub fn shader_layout(&self, shader: vk::ShaderEXT) -> Option<vk::PipelineLayout> {
        self.shaders.get(&shader.as_raw()).map(|l| *l)
    }

    /// At vkDestroyDevice: layouts of shaders the application did not destroy.
    ///
    /// # Safety
    /// Calls down.
    pub unsafe fn destroy_shader_layouts(&self) {
        let all: Vec<vk::PipelineLayout> = self.shaders.iter().map(|e| *e.value()).collect();
        self.shaders.clear();
        for l in all {
            self.destroy_shader_layout(l);
        }
    }
}

pub unsafe extern "system" fn destroy_shader_ext(device: vk::Device, shader: vk::ShaderEXT, p_allocator: *const vk::AllocationCallbacks) {
    const HOOK: &str = "vkDestroyShaderEXT";
    guard(HOOK, (), || unsafe {
        let Some(b) = table_device(device) else {
            log_error!(LOADER_INTERFACE, "{HOOK}: device {device:?} has no descriptor table");
            return;
        };
        let layout = b.shaders.remove(&shader.as_raw()).map(|(_, l)| l);
        if let Some(f) = b.next.destroy_shader_ext {
            f(device, shader, p_allocator);
        }
        if let Some(l) = layout {
            b.destroy_shader_layout(l);
        }
    })
}
