//! Which pipelines need the table: a pipeline uses it when one of its stages' SPIR-V uses one of
//! the device's table users — capability BindlessTextureNV where bindless textures are emulated,
//! PhysicalStorageBufferAddresses where buffer device addresses are — (a module created through
//! vkCreateShaderModule, recorded here, or a `VkShaderModuleCreateInfo` chained into the stage),
//! or when it links such a pipeline library. Recorded at creation (pipeline → layout), forgotten
//! on vkDestroyPipeline.
use super::{table_device, TableDevice};
use crate::component::{PipelineDesc, ShaderObserver, ShadersPending};
use crate::ffi_guard::guard;
use crate::pnext;
use crate::{log_debug, log_error};
use ash::vk::{self, Handle};
use std::ffi::c_void;

type S = vk::StructureType;

impl TableDevice {
    /// After a successful vkCreateShaderModule.
    ///
    /// # Safety
    /// `code` readable for `size` bytes when non-null.
    pub unsafe fn record_module(&self, module: vk::ShaderModule, code: *const c_void, size: usize) {
        if module != vk::ShaderModule::null() && self.code_uses_table(code, size) {
            self.modules.insert(module.as_raw(), ());
        }
    }

    /// Does this stage run code that uses the table?
    ///
    /// # Safety
    /// `stage` is a valid stage create info.
    pub unsafe fn stage_uses_table(&self, stage: &vk::PipelineShaderStageCreateInfo) -> bool {
        if stage.module != vk::ShaderModule::null() {
            return self.modules.contains_key(&stage.module.as_raw());
        }
        match pnext::find::<vk::ShaderModuleCreateInfo>(stage.p_next, S::SHADER_MODULE_CREATE_INFO) {
            Some(m) => self.code_uses_table(m.p_code as *const c_void, m.code_size),
            None => false,
        }
    }

    /// # Safety
    /// `libs` null or a valid VkPipelineLibraryCreateInfoKHR.
    pub unsafe fn libraries_use_table(&self, libs: *const vk::PipelineLibraryCreateInfoKHR) -> bool {
        let Some(l) = libs.as_ref() else { return false };
        if l.p_libraries.is_null() {
            return false;
        }
        std::slice::from_raw_parts(l.p_libraries, l.library_count as usize).iter().any(|p| self.pipelines.contains_key(&p.as_raw()))
    }

    /// Before creating a pipeline using the table with `layout`: is the table in it? If not, logs why
    /// and the creation must be refused — the rewritten shaders use the table's set, which a
    /// layout without it lacks (VUID-VkComputePipelineCreateInfo-layout-07988 and the graphics
    /// and ray-tracing equivalents).
    pub fn layout_ready(&self, hook: &str, layout: vk::PipelineLayout) -> bool {
        let _in_scope = crate::messages::with_object(crate::messages::Object { ty: vk::ObjectType::PIPELINE_LAYOUT, handle: layout.as_raw(), module_hash: 0 });
        let why = match self.layout_table(layout) {
            Ok(()) => return true,
            Err(Some(refusal)) => refusal.to_string(),
            Err(None) => "the layout was not created through the layer".to_string(),
        };
        log_error!(
            PIPELINE_REFUSED,
            "{hook}: device '{}': a pipeline uses the descriptor table (bindless textures or buffer device addresses) but its layout {layout:?} has no room for the descriptor table at set {}: {why}; refusing the pipeline",
            self.name,
            self.table.config.set
        );
        false
    }

    /// Can the table be bound for work at `bp`? If not, logs why (the pipeline must be refused:
    /// its rewritten shaders would read an unbound set).
    fn bind_point_ready(&self, hook: &str, bp: vk::PipelineBindPoint) -> bool {
        if super::commands::bind_point_index(bp).is_some() {
            return true;
        }
        log_error!(
            PIPELINE_REFUSED,
            "{hook}: device '{}': a pipeline at bind point {bp:?} uses the descriptor table (bindless textures or buffer device addresses), which the layer binds only for graphics, compute and ray-tracing work; refusing the pipeline",
            self.name
        );
        false
    }

    /// Records one created pipeline (its layout passed [`Self::layout_ready`]).
    pub fn record_pipeline(&self, hook: &str, pipeline: vk::Pipeline, layout: vk::PipelineLayout, uses_table: bool) {
        if !uses_table || pipeline == vk::Pipeline::null() || self.layout_table(layout).is_err() {
            return;
        }
        self.retain_layout(layout);
        self.pipelines.insert(pipeline.as_raw(), layout);
        log_debug!(TRACE, "{hook}: device '{}': pipeline {pipeline:?} (layout {layout:?}) uses the descriptor table", self.name);
    }
}

impl TableDevice {
    /// Does this pipeline run code that uses the table, or link a library that does?
    ///
    /// # Safety
    /// `p` points into a valid create info.
    unsafe fn pipeline_uses_table(&self, p: &PipelineDesc) -> bool {
        p.stages.iter().any(|s| self.stage_uses_table(s)) || self.libraries_use_table(p.libraries)
    }
}

impl ShaderObserver for TableDevice {
    unsafe fn module_created(&self, module: vk::ShaderModule, code: *const c_void, size: usize) {
        self.record_module(module, code, size);
    }
    unsafe fn pipelines_allowed(&self, hook: &str, pipelines: &[PipelineDesc], deferred: bool) -> bool {
        let using: Vec<&PipelineDesc> = pipelines.iter().filter(|p| self.pipeline_uses_table(p)).collect();
        if deferred && !using.is_empty() {
            log_error!(DEFERRED_OPERATION, "{hook}: deferred creation of ray-tracing pipelines using the descriptor table is not tracked; the descriptor table will not be bound for them");
        }
        using.iter().all(|p| self.bind_point_ready(hook, p.bind_point) && self.layout_ready(hook, p.layout))
    }
    unsafe fn pipelines_created(&self, hook: &str, pipelines: &[PipelineDesc], created: &[vk::Pipeline]) {
        for (p, &pipeline) in pipelines.iter().zip(created) {
            if pipeline != vk::Pipeline::null() {
                self.record_pipeline(hook, pipeline, p.layout, self.pipeline_uses_table(p));
            }
        }
    }
    unsafe fn shaders_before<'a>(
        &'a self,
        hook: &str,
        app: &[vk::ShaderCreateInfoEXT],
        copies: &mut [vk::ShaderCreateInfoEXT],
    ) -> Result<Box<dyn ShadersPending + 'a>, vk::Result> {
        self.prepare_shaders(hook, app, copies).map(|p| Box::new(p) as Box<dyn ShadersPending + 'a>)
    }
}

pub unsafe extern "system" fn destroy_pipeline(device: vk::Device, pipeline: vk::Pipeline, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroyPipeline", (), || unsafe {
        let Some(b) = table_device(device) else { return };
        let layout = b.pipelines.remove(&pipeline.as_raw()).map(|(_, l)| l);
        if let Some(f) = b.next.destroy_pipeline {
            f(device, pipeline, p_allocator);
        }
        if let Some(l) = layout {
            b.release_layout(l);
        }
    })
}

pub unsafe extern "system" fn destroy_shader_module(device: vk::Device, module: vk::ShaderModule, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroyShaderModule", (), || unsafe {
        let Some(b) = table_device(device) else { return };
        b.modules.remove(&module.as_raw());
        if let Some(f) = b.next.destroy_shader_module {
            f(device, module, p_allocator);
        }
    })
}
