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
use crate::component::{PipelineDesc, ShaderObserver};
use crate::dispatch::{device_data, with_device, DeviceData, KeepAlive};
use crate::ffi_guard::guard;
use crate::log_error;
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
        log_error!(LOADER_INTERFACE, "{hook}: unknown device {device:?}");
    }
    d
}

/// The device's components that watch shader and pipeline creation.
fn observers(dev: &DeviceData) -> impl Iterator<Item = &dyn ShaderObserver> {
    dev.components.iter().filter_map(|c| c.shader_observer())
}

/// The pipeline-library info in a pNext chain.
///
/// # Safety
/// `p_next` a valid chain.
unsafe fn library_info<'a>(p_next: *const c_void) -> *const vk::PipelineLibraryCreateInfoKHR<'a> {
    pnext::find::<vk::PipelineLibraryCreateInfoKHR>(p_next, S::PIPELINE_LIBRARY_CREATE_INFO_KHR).map_or(std::ptr::null(), |l| l as *const _)
}

/// A stage array as a slice (empty when null).
///
/// # Safety
/// `p` readable for `n` elements when non-null.
unsafe fn stage_slice<'a>(p: *const vk::PipelineShaderStageCreateInfo<'a>, n: u32) -> &'a [vk::PipelineShaderStageCreateInfo<'a>] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p, n as usize)
    }
}

/// Asks the observers before creating `descs`; on refusal nulls the outputs.
///
/// # Safety
/// `descs` point into valid create infos; `out` holds `descs.len()` handles or is null.
unsafe fn pipelines_allowed(dev: &DeviceData, hook: &str, descs: &[PipelineDesc], deferred: bool, out: *mut vk::Pipeline) -> bool {
    let ok = observers(dev).all(|o| o.pipelines_allowed(hook, descs, deferred));
    if !ok {
        null_out(out, descs.len() as u32);
    }
    ok
}

/// Tells the observers which pipelines were created.
///
/// # Safety
/// As for [`pipelines_allowed`].
unsafe fn pipelines_created(dev: &DeviceData, hook: &str, descs: &[PipelineDesc], out: *const vk::Pipeline) {
    if out.is_null() {
        return;
    }
    let created = std::slice::from_raw_parts(out, descs.len());
    observers(dev).for_each(|o| o.pipelines_created(hook, descs, created));
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
                log_error!(SHADER_REFUSED, "{hook}: the stage's VkShaderModuleCreateInfo sits behind an unknown structure; cannot replace its code; returning {REWRITE_FAILED:?}");
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
                if let (vk::Result::SUCCESS, Some(m)) = (r, p_module.as_ref()) {
                    observers(&dev).for_each(|o| o.module_created(*m, ci.p_code as *const c_void, ci.code_size));
                }
                r
            }
        }
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
        let descs: Vec<PipelineDesc> = infos
            .iter()
            .map(|i| PipelineDesc { layout: i.layout, stages: std::slice::from_ref(&i.stage), libraries: library_info(i.p_next) })
            .collect();
        if !pipelines_allowed(&dev, HOOK, &descs, false, p_pipelines) {
            return REWRITE_FAILED;
        }
        let p = copies.as_ref().map_or(p_infos, |c| c.as_ptr());
        let r = next(device, cache, count, p, p_allocator, p_pipelines);
        pipelines_created(&dev, HOOK, &descs, p_pipelines);
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
        let descs: Vec<PipelineDesc> = infos
            .iter()
            .map(|i| {
                let stages = if graphics_stages_used(i) { stage_slice(i.p_stages, i.stage_count) } else { &[] };
                PipelineDesc { layout: i.layout, stages, libraries: library_info(i.p_next) }
            })
            .collect();
        if !pipelines_allowed(&dev, HOOK, &descs, false, p_pipelines) {
            return REWRITE_FAILED;
        }
        let p = copies.as_ref().map_or(p_infos, |c| c.as_ptr());
        let r = next(device, cache, count, p, p_allocator, p_pipelines);
        pipelines_created(&dev, HOOK, &descs, p_pipelines);
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
        let descs: Vec<PipelineDesc> =
            infos.iter().map(|i| PipelineDesc { layout: i.layout, stages: stage_slice(i.p_stages, i.stage_count), libraries: i.p_library_info }).collect();
        let is_deferred = deferred != vk::DeferredOperationKHR::null();
        if !pipelines_allowed(&dev, HOOK, &descs, is_deferred, p_pipelines) {
            return REWRITE_FAILED;
        }
        let Some(copies) = copies else {
            let r = next(device, deferred, cache, count, p_infos, p_allocator, p_pipelines);
            if !is_deferred {
                pipelines_created(&dev, HOOK, &descs, p_pipelines);
            }
            return r;
        };
        let r = next(device, deferred, cache, count, copies.as_ptr(), p_allocator, p_pipelines);
        if !is_deferred {
            pipelines_created(&dev, HOOK, &descs, p_pipelines);
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
        // Observers may edit the create infos (the table pads every shader's set layouts).
        let mut pending = Vec::new();
        for o in observers(&dev) {
            let copies = copies.get_or_insert_with(|| infos.to_vec());
            match o.shaders_before(HOOK, infos, copies) {
                Ok(p) => pending.push(p),
                Err(e) => {
                    // The observers that agreed undo what they prepared (nothing was created).
                    pending.into_iter().for_each(|p| p.created(HOOK, std::ptr::null()));
                    null_out(p_shaders, count);
                    return e;
                }
            }
        }
        let p = copies.as_ref().map_or(p_infos, |c| c.as_ptr());
        let r = next(device, count, p, p_allocator, p_shaders);
        // Handles are written for the shaders that were created, also on some failures
        // (VK_ERROR_INCOMPATIBLE_SHADER_BINARY_EXT); the others are null.
        pending.into_iter().for_each(|p| p.created(HOOK, p_shaders));
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
