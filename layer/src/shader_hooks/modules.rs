//! Modules and shader objects: vkCreateShaderModule, vkGetShaderModuleCreateInfoIdentifierEXT
//! (the identifier must match the module the layer would create, so it is computed on the
//! rewritten code; vkGetShaderModuleIdentifierEXT needs no hook, its module was created from
//! rewritten code already), vkCreateShadersEXT (`VK_SHADER_CODE_TYPE_SPIRV_EXT`).
use super::{device as device_of, null_out, observers, PANIC_RESULT};
use crate::dispatch::with_device;
use crate::ffi_guard::guard;
use crate::module_rewrite::{needs_rewrite, prepare, Prepared, REWRITE_FAILED};
use ash::vk;
use std::ffi::c_void;

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
        let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
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

pub unsafe extern "system" fn create_shaders_ext(
    device: vk::Device,
    count: u32,
    p_infos: *const vk::ShaderCreateInfoEXT,
    p_allocator: *const vk::AllocationCallbacks,
    p_shaders: *mut vk::ShaderEXT,
) -> vk::Result {
    const HOOK: &str = "vkCreateShadersEXT";
    guard(HOOK, PANIC_RESULT, || unsafe {
        let Some(dev) = device_of(device, HOOK) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
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
        let Some(dev) = device_of(device, HOOK) else { return };
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
