//! Every path by which SPIR-V reaches the driver:
//! - vkCreateShaderModule;
//! - `VkShaderModuleCreateInfo` chained into a pipeline stage's pNext with `module` ==
//!   VK_NULL_HANDLE (VK_KHR_maintenance5 / VK_EXT_graphics_pipeline_library) in
//!   vkCreateComputePipelines, vkCreateGraphicsPipelines, vkCreateRayTracingPipelinesKHR;
//! - vkCreateShadersEXT (VK_EXT_shader_object, `VK_SHADER_CODE_TYPE_SPIRV_EXT`);
//! - vkGetShaderModuleCreateInfoIdentifierEXT (the identifier must match the module the layer
//!   would create, so it is computed on the rewritten code). vkGetShaderModuleIdentifierEXT
//!   needs no hook: its module was created from rewritten code already.
//!
//! These hooks are only handed out for devices with an active emulation. Nothing the
//! application passed is written to: changed create infos are copies that live until the call
//! down returns (or, for deferred ray-tracing creation, until the device is destroyed).
use crate::dispatch::{device_data, with_device, DeviceData, KeepAlive};
use crate::ffi_guard::guard;
use crate::log_error;
use crate::tables::pipelines::library_info;
use crate::tables::TableDevice;
use crate::module_rewrite::{needs_rewrite, prepare, Prepared, REWRITE_FAILED};
use crate::pnext::{self, Chain};
use ash::vk;
use std::ffi::c_void;
use std::sync::Arc;

type S = vk::StructureType;

/// Result of an internal failure (panic) in these hooks.
const PANIC_RESULT: vk::Result = vk::Result::ERROR_UNKNOWN;

unsafe fn device(device: vk::Device, hook: &str) -> Option<Arc<DeviceData>> {
    let d = device_data(device);
    if d.is_none() {
        log_error!("{hook}: unknown device {device:?}");
    }
    d
}

/// Spec: on failure, handles not created are VK_NULL_HANDLE (e.g. vkCreateGraphicsPipelines
/// "pPipelines ... elements are set to VK_NULL_HANDLE").
unsafe fn null_out<T: Default>(p: *mut T, count: u32) {
    if !p.is_null() {
        for i in 0..count as usize {
            p.add(i).write(T::default());
        }
    }
}

/// Copies that must stay alive while the driver reads them.
#[derive(Default)]
struct Owned<'a> {
    codes: Vec<Vec<u32>>,
    chains: Vec<Chain>,
    stage_arrays: Vec<Vec<vk::PipelineShaderStageCreateInfo<'a>>>,
}

/// Create infos of a deferred ray-tracing pipeline creation, kept alive.
struct DeferredCopies {
    _owned: Owned<'static>,
    _infos: Vec<vk::RayTracingPipelineCreateInfoKHR<'static>>,
}

enum Stage<'a> {
    Unchanged,
    Replaced(vk::PipelineShaderStageCreateInfo<'a>),
    Failed,
}

/// A stage whose pNext carries a `VkShaderModuleCreateInfo` that needs rewriting gets a copied
/// chain with the new code.
unsafe fn rewrite_stage<'a>(dev: &DeviceData, hook: &str, stage: &vk::PipelineShaderStageCreateInfo<'a>, owned: &mut Owned<'a>) -> Stage<'a> {
    let Some(mci) = pnext::find::<vk::ShaderModuleCreateInfo>(stage.p_next, S::SHADER_MODULE_CREATE_INFO) else {
        return Stage::Unchanged;
    };
    match prepare(dev, hook, mci.p_code as *const c_void, mci.code_size) {
        Prepared::PassThrough => Stage::Unchanged,
        Prepared::Failed => Stage::Failed,
        Prepared::Rewritten(words) => {
            let mut chain = Chain::copy(stage.p_next);
            let Some(m) = chain.find_mut::<vk::ShaderModuleCreateInfo>(S::SHADER_MODULE_CREATE_INFO) else {
                log_error!("{hook}: the stage's VkShaderModuleCreateInfo sits behind an unknown structure; cannot replace its code; returning {REWRITE_FAILED:?}");
                return Stage::Failed;
            };
            m.p_code = words.as_ptr();
            m.code_size = words.len() * 4;
            let mut s = *stage;
            s.p_next = chain.link();
            owned.codes.push(words);
            owned.chains.push(chain);
            Stage::Replaced(s)
        }
    }
}

/// Rewrites a stage array; `Ok(Some(ptr))` = use this copied array.
unsafe fn rewrite_stages<'a>(
    dev: &DeviceData,
    hook: &str,
    stages: *const vk::PipelineShaderStageCreateInfo<'a>,
    count: u32,
    owned: &mut Owned<'a>,
) -> Result<Option<*const vk::PipelineShaderStageCreateInfo<'a>>, ()> {
    if stages.is_null() || count == 0 {
        return Ok(None);
    }
    let src = std::slice::from_raw_parts(stages, count as usize);
    let mut out: Option<Vec<vk::PipelineShaderStageCreateInfo<'a>>> = None;
    for (i, s) in src.iter().enumerate() {
        match rewrite_stage(dev, hook, s, owned) {
            Stage::Unchanged => {}
            Stage::Failed => return Err(()),
            Stage::Replaced(n) => out.get_or_insert_with(|| src.to_vec())[i] = n,
        }
    }
    Ok(out.map(|v| {
        let p = v.as_ptr();
        owned.stage_arrays.push(v);
        p
    }))
}

pub unsafe extern "system" fn create_shader_module(
    device: vk::Device,
    p_create_info: *const vk::ShaderModuleCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_module: *mut vk::ShaderModule,
) -> vk::Result {
    const HOOK: &str = "vkCreateShaderModule";
    guard(HOOK, PANIC_RESULT, || unsafe {
        // Fast path for modules that need nothing (the common case): decided on the borrowed
        // device entry, no reference counting; the driver is called after the borrow ends.
        let ci = p_create_info.as_ref();
        let decision = with_device(device, |d| {
            (d.next.create_shader_module, ci.is_some_and(|ci| needs_rewrite(d.options.as_ref(), ci.p_code as *const c_void, ci.code_size)))
        });
        if let Some((Some(next), false)) = decision {
            return next(device, p_create_info, p_allocator, p_module);
        }
        let Some(dev) = self::device(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.create_shader_module else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(ci) = p_create_info.as_ref() else { return next(device, p_create_info, p_allocator, p_module) };
        match prepare(&dev, HOOK, ci.p_code as *const c_void, ci.code_size) {
            Prepared::PassThrough => next(device, p_create_info, p_allocator, p_module),
            Prepared::Failed => REWRITE_FAILED,
            Prepared::Rewritten(words) => {
                let mut copy = *ci;
                copy.p_code = words.as_ptr();
                copy.code_size = words.len() * 4;
                let r = next(device, &copy, p_allocator, p_module);
                if let (vk::Result::SUCCESS, Some(b), Some(m)) = (r, dev.tables.as_ref(), p_module.as_ref()) {
                    b.record_module(*m, ci.p_code as *const c_void, ci.code_size);
                }
                r
            }
        }
    })
}

/// Records the pipelines using the table among those just created (`uses_table` decides per create info,
/// from the application's own create infos).
unsafe fn record_pipelines<T>(
    dev: &DeviceData,
    hook: &str,
    infos: &[T],
    out: *mut vk::Pipeline,
    uses_table: impl Fn(&TableDevice, &T) -> (vk::PipelineLayout, bool),
) {
    let Some(b) = dev.tables.as_ref() else { return };
    if out.is_null() {
        return;
    }
    for (i, info) in infos.iter().enumerate() {
        let pipeline = *out.add(i);
        if pipeline != vk::Pipeline::null() {
            let (layout, uses) = uses_table(b, info);
            b.record_pipeline(hook, pipeline, layout, uses);
        }
    }
}

/// Refuses pipelines using the table whose layout has no room for the descriptor table (logged by
/// `TableDevice::layout_ready`), before anything is created.
fn table_layouts_ready<T>(dev: &DeviceData, hook: &str, infos: &[T], uses_table: impl Fn(&TableDevice, &T) -> (vk::PipelineLayout, bool)) -> bool {
    let Some(b) = dev.tables.as_ref() else { return true };
    infos.iter().all(|info| match uses_table(b, info) {
        (layout, true) => b.layout_ready(hook, layout),
        _ => true,
    })
}

pub unsafe extern "system" fn create_compute_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    p_infos: *const vk::ComputePipelineCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_pipelines: *mut vk::Pipeline,
) -> vk::Result {
    const HOOK: &str = "vkCreateComputePipelines";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = self::device(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.create_compute_pipelines else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        if p_infos.is_null() || count == 0 {
            return next(device, cache, count, p_infos, p_allocator, p_pipelines);
        }
        let infos = std::slice::from_raw_parts(p_infos, count as usize);
        let mut owned = Owned::default();
        let mut copies: Option<Vec<vk::ComputePipelineCreateInfo>> = None;
        for (i, info) in infos.iter().enumerate() {
            match rewrite_stage(&dev, HOOK, &info.stage, &mut owned) {
                Stage::Unchanged => {}
                Stage::Failed => {
                    null_out(p_pipelines, count);
                    return REWRITE_FAILED;
                }
                Stage::Replaced(s) => copies.get_or_insert_with(|| infos.to_vec())[i].stage = s,
            }
        }
        let uses_table = |b: &TableDevice, info: &vk::ComputePipelineCreateInfo| {
            (info.layout, b.stage_uses_table(&info.stage) || b.libraries_use_table(library_info(info.p_next)))
        };
        if !table_layouts_ready(&dev, HOOK, infos, uses_table) {
            null_out(p_pipelines, count);
            return REWRITE_FAILED;
        }
        let p = copies.as_ref().map_or(p_infos, |c| c.as_ptr());
        let r = next(device, cache, count, p, p_allocator, p_pipelines);
        record_pipelines(&dev, HOOK, infos, p_pipelines, uses_table);
        r
    })
}

/// Graphics pipeline libraries without pre-rasterization or fragment shader state ignore
/// pStages (VkGraphicsPipelineCreateInfo: "pStages ... is ignored" unless those states are
/// included), so it may be garbage: do not read it.
unsafe fn graphics_stages_used(info: &vk::GraphicsPipelineCreateInfo) -> bool {
    match pnext::find::<vk::GraphicsPipelineLibraryCreateInfoEXT>(info.p_next, S::GRAPHICS_PIPELINE_LIBRARY_CREATE_INFO_EXT) {
        Some(lib) => lib.flags.intersects(
            vk::GraphicsPipelineLibraryFlagsEXT::PRE_RASTERIZATION_SHADERS | vk::GraphicsPipelineLibraryFlagsEXT::FRAGMENT_SHADER,
        ),
        None => true,
    }
}

pub unsafe extern "system" fn create_graphics_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    p_infos: *const vk::GraphicsPipelineCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_pipelines: *mut vk::Pipeline,
) -> vk::Result {
    const HOOK: &str = "vkCreateGraphicsPipelines";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = self::device(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.create_graphics_pipelines else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        if p_infos.is_null() || count == 0 {
            return next(device, cache, count, p_infos, p_allocator, p_pipelines);
        }
        let infos = std::slice::from_raw_parts(p_infos, count as usize);
        let mut owned = Owned::default();
        let mut copies: Option<Vec<vk::GraphicsPipelineCreateInfo>> = None;
        for (i, info) in infos.iter().enumerate() {
            if !graphics_stages_used(info) {
                continue;
            }
            match rewrite_stages(&dev, HOOK, info.p_stages, info.stage_count, &mut owned) {
                Ok(None) => {}
                Err(()) => {
                    null_out(p_pipelines, count);
                    return REWRITE_FAILED;
                }
                Ok(Some(stages)) => copies.get_or_insert_with(|| infos.to_vec())[i].p_stages = stages,
            }
        }
        let uses_table = |b: &TableDevice, info: &vk::GraphicsPipelineCreateInfo| {
            let stages = graphics_stages_used(info) && b.stages_use_table(info.p_stages, info.stage_count);
            (info.layout, stages || b.libraries_use_table(library_info(info.p_next)))
        };
        if !table_layouts_ready(&dev, HOOK, infos, uses_table) {
            null_out(p_pipelines, count);
            return REWRITE_FAILED;
        }
        let p = copies.as_ref().map_or(p_infos, |c| c.as_ptr());
        let r = next(device, cache, count, p, p_allocator, p_pipelines);
        record_pipelines(&dev, HOOK, infos, p_pipelines, uses_table);
        r
    })
}

pub unsafe extern "system" fn create_ray_tracing_pipelines_khr(
    device: vk::Device,
    deferred: vk::DeferredOperationKHR,
    cache: vk::PipelineCache,
    count: u32,
    p_infos: *const vk::RayTracingPipelineCreateInfoKHR,
    p_allocator: *const vk::AllocationCallbacks,
    p_pipelines: *mut vk::Pipeline,
) -> vk::Result {
    const HOOK: &str = "vkCreateRayTracingPipelinesKHR";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = self::device(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.create_ray_tracing_pipelines_khr else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        if p_infos.is_null() || count == 0 {
            return next(device, deferred, cache, count, p_infos, p_allocator, p_pipelines);
        }
        let infos = std::slice::from_raw_parts(p_infos, count as usize);
        let mut owned = Owned::default();
        let mut copies: Option<Vec<vk::RayTracingPipelineCreateInfoKHR>> = None;
        for (i, info) in infos.iter().enumerate() {
            match rewrite_stages(&dev, HOOK, info.p_stages, info.stage_count, &mut owned) {
                Ok(None) => {}
                Err(()) => {
                    null_out(p_pipelines, count);
                    return REWRITE_FAILED;
                }
                Ok(Some(stages)) => copies.get_or_insert_with(|| infos.to_vec())[i].p_stages = stages,
            }
        }
        let rt_uses_table = |b: &TableDevice, info: &vk::RayTracingPipelineCreateInfoKHR| {
            (info.layout, b.stages_use_table(info.p_stages, info.stage_count) || b.libraries_use_table(info.p_library_info))
        };
        if !table_layouts_ready(&dev, HOOK, infos, rt_uses_table) {
            null_out(p_pipelines, count);
            return REWRITE_FAILED;
        }
        if dev.tables.is_some() && deferred != vk::DeferredOperationKHR::null() {
            log_error!("{HOOK}: deferred creation of ray-tracing pipelines using the descriptor table is not tracked; the descriptor table will not be bound for them");
        }
        let Some(copies) = copies else {
            let r = next(device, deferred, cache, count, p_infos, p_allocator, p_pipelines);
            if deferred == vk::DeferredOperationKHR::null() {
                record_pipelines(&dev, HOOK, infos, p_pipelines, rt_uses_table);
            }
            return r;
        };
        let r = next(device, deferred, cache, count, copies.as_ptr(), p_allocator, p_pipelines);
        if deferred == vk::DeferredOperationKHR::null() {
            record_pipelines(&dev, HOOK, infos, p_pipelines, rt_uses_table);
        }
        if deferred != vk::DeferredOperationKHR::null() {
            // VK_KHR_deferred_host_operations: the implementation may read the create infos
            // until the deferred operation completes, so the copies must outlive this call.
            // Only phantom lifetimes change: the data is owned and kept until vkDestroyDevice.
            let keep = DeferredCopies {
                _owned: std::mem::transmute::<Owned<'_>, Owned<'static>>(owned),
                _infos: std::mem::transmute::<Vec<vk::RayTracingPipelineCreateInfoKHR<'_>>, Vec<vk::RayTracingPipelineCreateInfoKHR<'static>>>(copies),
            };
            let keep: Box<dyn std::any::Any> = Box::new(keep);
            dev.keep_alive.lock().unwrap_or_else(|e| e.into_inner()).push(KeepAlive(keep));
        }
        r
    })
}

pub unsafe extern "system" fn create_shaders_ext(
    device: vk::Device,
    count: u32,
    p_infos: *const vk::ShaderCreateInfoEXT,
    p_allocator: *const vk::AllocationCallbacks,
    p_shaders: *mut vk::ShaderEXT,
) -> vk::Result {
    const HOOK: &str = "vkCreateShadersEXT";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = self::device(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        let Some(next) = dev.next.create_shaders_ext else { return vk::Result::ERROR_INITIALIZATION_FAILED };
        if p_infos.is_null() || count == 0 {
            return next(device, count, p_infos, p_allocator, p_shaders);
        }
        let infos = std::slice::from_raw_parts(p_infos, count as usize);
        let mut codes: Vec<Vec<u32>> = Vec::new();
        let mut copies: Option<Vec<vk::ShaderCreateInfoEXT>> = None;
        // Uses the table (decided on the application's code, before the rewrite lowers it).
        let uses_table: Vec<bool> = infos
            .iter()
            .map(|info| {
                info.code_type == vk::ShaderCodeTypeEXT::SPIRV && dev.tables.as_ref().is_some_and(|t| t.code_uses_table(info.p_code, info.code_size))
            })
            .collect();
        for (i, info) in infos.iter().enumerate() {
            if info.code_type != vk::ShaderCodeTypeEXT::SPIRV {
                continue; // binary code: created from previously rewritten SPIR-V
            }
            match prepare(&dev, HOOK, info.p_code, info.code_size) {
                Prepared::PassThrough => {}
                Prepared::Failed => {
                    null_out(p_shaders, count);
                    return REWRITE_FAILED;
                }
                Prepared::Rewritten(words) => {
                    let c = &mut copies.get_or_insert_with(|| infos.to_vec())[i];
                    c.p_code = words.as_ptr() as *const c_void;
                    c.code_size = words.len() * 4;
                    codes.push(words);
                }
            }
        }
        let Some(b) = dev.tables.as_ref() else {
            let p = copies.as_ref().map_or(p_infos, |c| c.as_ptr());
            return next(device, count, p, p_allocator, p_shaders);
        };
        // Device with a table: every shader's set layouts padded to the table (as pipeline layouts
        // are); shaders using the table get a layout to bind the table with.
        let copies = copies.get_or_insert_with(|| infos.to_vec());
        let padded = b.pad_shader_infos(HOOK, copies);
        let mut layouts = vec![vk::PipelineLayout::null(); infos.len()];
        for (i, c) in copies.iter().enumerate() {
            if !uses_table[i] {
                continue;
            }
            if !b.shader_ready(HOOK, i, &padded) {
                layouts.iter().for_each(|&l| b.destroy_shader_layout(l));
                null_out(p_shaders, count);
                return REWRITE_FAILED;
            }
            match b.create_shader_layout(c) {
                Ok(l) => layouts[i] = l,
                Err(e) => {
                    log_error!("{HOOK}: device '{}': cannot create the pipeline layout for shader object {i} (it uses the descriptor table): {e:?}", dev.name);
                    layouts.iter().for_each(|&l| b.destroy_shader_layout(l));
                    null_out(p_shaders, count);
                    return e;
                }
            }
        }
        let r = next(device, count, copies.as_ptr(), p_allocator, p_shaders);
        drop(padded);
        // Handles are written for the shaders that were created, also on some failures
        // (VK_ERROR_INCOMPATIBLE_SHADER_BINARY_EXT); the others are null.
        b.record_shaders(HOOK, &layouts, p_shaders);
        r
    })
}

pub unsafe extern "system" fn get_shader_module_create_info_identifier_ext(
    device: vk::Device,
    p_create_info: *const vk::ShaderModuleCreateInfo,
    p_identifier: *mut vk::ShaderModuleIdentifierEXT,
) {
    const HOOK: &str = "vkGetShaderModuleCreateInfoIdentifierEXT";
    guard(HOOK, (), || unsafe {
        let Some(dev) = self::device(device, HOOK) else { return };
        let Some(next) = dev.next.get_shader_module_create_info_identifier_ext else { return };
        let Some(ci) = p_create_info.as_ref() else { return next(device, p_create_info, p_identifier) };
        match prepare(&dev, HOOK, ci.p_code as *const c_void, ci.code_size) {
            Prepared::PassThrough => next(device, p_create_info, p_identifier),
            Prepared::Failed => {
                // No module can be created from this code, so there is no identifier for it.
                if let Some(id) = p_identifier.as_mut() {
                    id.identifier_size = 0;
                }
            }
            Prepared::Rewritten(words) => {
                let mut copy = *ci;
                copy.p_code = words.as_ptr();
                copy.code_size = words.len() * 4;
                next(device, &copy, p_identifier)
            }
        }
    })
}
