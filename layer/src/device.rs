//! vkCreateDevice / vkDestroyDevice: decide per extension and per 8/16-bit storage feature (off /
//! native / emulated), hand the driver a copied create info without our extension names and
//! feature structs, without emulated 8/16-bit storage bits, and with the features the lowering
//! needs, and build the device's rewrite options from what was enabled.
use crate::device_features::{self, effective_version};
use crate::dispatch::{self, dispatch_key, load_device, load_instance, DeviceData, DeviceNext, DEVICES};
use crate::ext::{self, bda, bindless, small_storage, Decision, EmulatedExtension, Status};
use crate::ffi_guard::guard;
use crate::instance::names;
use crate::pnext::{AppChainLock, Chain};
use crate::settings::DebugTarget;
use crate::tables::{null_descriptor, TableConfig, TableDevice};
use crate::vk_layer::{find_link_info, VkLayerDeviceCreateInfo};
use crate::{log_debug, log_error, log_info, log_warn};
use ash::vk;
use std::ffi::{c_char, CStr};
use std::sync::{Arc, Mutex};

pub unsafe extern "system" fn create_device(
    pd: vk::PhysicalDevice,
    p_create_info: *const vk::DeviceCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_device: *mut vk::Device,
) -> vk::Result {
    guard("vkCreateDevice", vk::Result::ERROR_INITIALIZATION_FAILED, || unsafe {
        create_device_impl(pd, p_create_info, p_allocator, p_device)
    })
}

/// Logs the structures of a VkDeviceCreateInfo chain that the layer's table does not know.
fn log_unknown_structures(chain: &Chain) {
    for t in chain.spliced_s_types() {
        log_info!(
            "vkCreateDevice: pNext chain has a structure newer than the layer's registry {} (sType {}); passed on in place",
            crate::struct_sizes::REGISTRY_VERSION,
            t.as_raw()
        );
    }
    if let Some(t) = chain.tail_s_type() {
        log_warn!(
            "vkCreateDevice: pNext chain has an unknown structure (sType {}) in read-only memory; it and what follows are passed as-is",
            t.as_raw()
        );
    }
}

/// The decision for one extension on this device.
struct Plan {
    ext: &'static dyn EmulatedExtension,
    d: Decision,
}

unsafe fn create_device_impl(
    pd: vk::PhysicalDevice,
    p_create_info: *const vk::DeviceCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_device: *mut vk::Device,
) -> vk::Result {
    let Some(ci) = p_create_info.as_ref() else { return vk::Result::ERROR_INITIALIZATION_FAILED };
    // Held until the driver returns: the chain may be spliced (pnext.rs), and no other
    // vkCreateDevice may read it meanwhile.
    let app_chain = AppChainLock::acquire();
    let Some(inst) = dispatch::instance_of(pd) else {
        log_error!("vkCreateDevice: unknown physical device {pd:?}");
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // LoaderLayerInterface.md "Layer Dispatch Initialization": read the next link, advance
    // pLayerInfo (the loader's own struct) for the next layer, and fetch vkCreateDevice through
    // the next GetInstanceProcAddr *with the instance handle*.
    let Some(link) = find_link_info::<VkLayerDeviceCreateInfo>(ci.p_next, vk::StructureType::LOADER_DEVICE_CREATE_INFO)
    else {
        log_error!("vkCreateDevice: no VkLayerDeviceCreateInfo link info in the chain");
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let layer_info = (*link).p_layer_info;
    if layer_info.is_null() {
        log_error!("vkCreateDevice: loader link info is empty");
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    let next_gipa = (*layer_info).pfn_next_get_instance_proc_addr;
    let next_gdpa = (*layer_info).pfn_next_get_device_proc_addr;
    (*link).p_layer_info = (*layer_info).p_next;
    let Some(next_create) = load_instance::<vk::PFN_vkCreateDevice>(next_gipa, inst.instance, c"vkCreateDevice") else {
        log_error!("vkCreateDevice: next layer has no vkCreateDevice");
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };

    let phys = inst.physical_device(pd);
    let app_exts = names(ci.pp_enabled_extension_names, ci.enabled_extension_count);
    let plans: Vec<Plan> = ext::ALL
        .iter()
        .map(|e| {
            let native = e.driver_has(&inst, pd, &phys);
            let d = Decision {
                name: e.name().to_str().unwrap_or("?"),
                native,
                status: ext::status_on(*e, &inst, pd, &phys),
                requested: app_exts.contains(&e.name()) || e.feature_requested(ci.p_next),
            };
            Plan { ext: *e, d }
        })
        .collect();
    let supported = device_features::supported_cached(&inst, pd, &phys);
    let storage = small_storage::Plan::new(&inst.settings, &supported, ci.p_next);
    for d in plans.iter().map(|p| &p.d).chain(storage.decisions.iter().map(|(_, d)| d)) {
        log_info!("vkCreateDevice: device '{}': {}", phys.name, d.describe());
    }
    for p in plans.iter().filter(|p| p.d.requested && p.d.status == Status::Unavailable) {
        if let Some(why) = p.ext.unavailable(&inst, pd, &phys) {
            log_error!(
                "vkCreateDevice: device '{}': the application enabled {} but it cannot be emulated: {why}",
                phys.name,
                p.d.name
            );
        }
    }
    ext::raw_access_chains::warn_vkd3d_offset_buffer(&inst, pd, &phys);
    // The descriptor table this device gets: the arrays of each active user (bindless
    // textures, buffer device addresses).
    let active = |name: &CStr| plans.iter().any(|p| p.ext.name() == name && p.d.active());
    let image_caps = if active(bindless::NAME) { bindless::caps_for(&inst, pd, &phys).ok() } else { None };
    let buffer_caps = if active(bda::NAME) { bda::caps_for(&inst, pd, &phys).ok() } else { None };
    let table_limits = image_caps.map(|c| c.limits).or(buffer_caps.map(|c| c.limits));
    let table_config = table_limits.map(|l| TableConfig {
        set: l.max_bound_descriptor_sets - 1,
        images: image_caps.map(|c| c.table),
        buffers: buffer_caps.map(|c| c.table),
    });
    let storage_emulated = storage.emulated();
    let storage_active = storage.active();

    let mut options = None;
    // nullDescriptor was enabled for the descriptor table's free slots.
    let mut null_descriptor = false;
    let result = if !plans.iter().any(|p| p.d.emulated()) && !storage_emulated.any() {
        next_create(pd, p_create_info, p_allocator, p_device)
    } else {
        // Never write to the application's structures: edit copies.
        let mut chain = Chain::copy_splicing(ci.p_next, &app_chain);
        log_unknown_structures(&chain);
        let ours: Vec<&CStr> = plans.iter().filter(|p| p.d.emulated()).map(|p| p.ext.name()).collect();
        let mut kept: Vec<&CStr> = app_exts.iter().copied().filter(|n| !ours.contains(n)).collect();
        for p in plans.iter().filter(|p| p.d.emulated()) {
            if let Err(why) = p.ext.clear_features(&mut chain) {
                log_error!(
                    "vkCreateDevice: device '{}': cannot clear the emulated {} feature bits: {why}; returning VK_ERROR_FEATURE_NOT_PRESENT",
                    phys.name,
                    p.d.name
                );
                return vk::Result::ERROR_FEATURE_NOT_PRESENT;
            }
            for st in p.ext.feature_struct_types() {
                chain.remove(*st);
                if chain.tail_contains(*st) {
                    log_error!(
                        "vkCreateDevice: device '{}': cannot remove the layer's structure (sType {}) from behind an unknown structure in read-only memory; returning VK_ERROR_FEATURE_NOT_PRESENT",
                        phys.name,
                        st.as_raw()
                    );
                    return vk::Result::ERROR_FEATURE_NOT_PRESENT;
                }
            }
        }
        // Emulated 8/16-bit storage bits: the driver must not see them (it may lack them, and a
        // forced one must not be used natively), wherever they sit.
        let stuck = small_storage::clear(&mut chain, &storage_emulated);
        if stuck.any() {
            log_error!(
                "vkCreateDevice: device '{}': cannot clear the emulated {} behind an unknown structure in read-only memory; returning VK_ERROR_FEATURE_NOT_PRESENT",
                phys.name,
                stuck.names().join(", ")
            );
            return vk::Result::ERROR_FEATURE_NOT_PRESENT;
        }
        let active: Vec<&Plan> = plans.iter().filter(|p| p.d.active()).collect();
        let any_active = !active.is_empty() || storage_active.any();
        let mut enabled_features = ci.p_enabled_features.as_ref().copied();
        if any_active {
            let version = effective_version(inst.api_version, phys.api_version);
            // Never turn on a feature the layer emulates (that would defeat a `force`).
            let mut lowering = supported;
            small_storage::mask_target(&mut lowering, &storage_emulated);
            let mut added = device_features::enable_for_lowering(&mut chain, &mut enabled_features, &kept, version, lowering);
            match device_features::enable_device_scope(&inst, pd, &mut chain) {
                Ok(Some(name)) => added.features.push(name),
                Ok(None) => {}
                Err(why) => added.skipped.push(why.into()),
            }
            if !added.features.is_empty() {
                log_info!("vkCreateDevice: device '{}': enabling driver features for the lowering: {}", phys.name, added.features.join(", "));
            }
            for s in &added.skipped {
                log_info!("vkCreateDevice: device '{}': not enabling {s}", phys.name);
            }
            // The descriptor table's users: the features their arrays and lowered shaders need.
            let mut table_features: Vec<(&CStr, Result<Vec<&'static str>, String>)> = Vec::new();
            if let Some(caps) = &image_caps {
                table_features.push((bindless::NAME, bindless::enable_features(&mut chain, &mut enabled_features, &kept, version, caps)));
            }
            if let Some(caps) = &buffer_caps {
                table_features.push((bda::NAME, bda::enable_features(&mut chain, &mut enabled_features, &kept, version, caps)));
            }
            for (ext_name, r) in table_features {
                let ext_name = ext_name.to_str().unwrap_or("?");
                match r {
                    Ok(names) if names.is_empty() => {}
                    Ok(names) => log_info!(
                        "vkCreateDevice: device '{}': enabling driver features for the descriptor table ({ext_name}): {}",
                        phys.name,
                        names.join(", ")
                    ),
                    Err(why) => {
                        log_error!(
                            "vkCreateDevice: device '{}': {ext_name} cannot be emulated: {why}; returning VK_ERROR_FEATURE_NOT_PRESENT",
                            phys.name
                        );
                        return vk::Result::ERROR_FEATURE_NOT_PRESENT;
                    }
                }
            }
            if table_config.is_some() {
                // Null descriptors for the table's free slots (a garbage handle or address then
                // reads zero instead of an unwritten descriptor).
                let why = match null_descriptor::support(&inst, pd, &phys) {
                    Ok(ext) => match null_descriptor::enable(&mut chain, &mut kept, ext) {
                        Ok(added) => {
                            null_descriptor = true;
                            match added {
                                Some(e) => log_info!(
                                    "vkCreateDevice: device '{}': enabling {} (nullDescriptor) for the descriptor table's free slots",
                                    phys.name,
                                    e.to_str().unwrap_or("?")
                                ),
                                None => log_info!(
                                    "vkCreateDevice: device '{}': enabling nullDescriptor for the descriptor table's free slots",
                                    phys.name
                                ),
                            }
                            None
                        }
                        Err(why) => Some(why),
                    },
                    Err(why) => Some(why),
                };
                if let Some(why) = why {
                    log_warn!(
                        "vkCreateDevice: device '{}': no null descriptors for the descriptor table ({why}): free slots stay unwritten, and a garbage handle or address naming one is undefined behaviour (may crash)",
                        phys.name
                    );
                }
            }
        }
        let kept_ptrs: Vec<*const c_char> = kept.iter().map(|n| n.as_ptr()).collect();
        let mut copy = *ci;
        // Spliced until the end of this block (enabled_target below still walks the chain).
        let spliced = chain.splice(&app_chain);
        copy.p_next = spliced.head();
        copy.enabled_extension_count = kept_ptrs.len() as u32;
        copy.pp_enabled_extension_names = if kept_ptrs.is_empty() { std::ptr::null() } else { kept_ptrs.as_ptr() };
        copy.p_enabled_features = enabled_features.as_ref().map_or(std::ptr::null(), |f| f as *const _);
        let r = next_create(pd, &copy, p_allocator, p_device);
        if any_active {
            // debug_target=core: rewrite as if the device had none of the optional features
            // (no 8/16-bit storage, no Int8/16/64), to exercise the word-granular bounds and the
            // atomic sub-word stores on a device that has them.
            let mut target = match inst.settings.debug_target {
                DebugTarget::Device => device_features::enabled_target(copy.p_next, copy.p_enabled_features),
                DebugTarget::Core => {
                    log_info!(
                        "vkCreateDevice: device '{}': debug_target=core: rewriting as if the device had no 8/16-bit storage and no Int8/16/64",
                        phys.name
                    );
                    shader_rewrite::Target::core()
                }
            };
            // The lowering must not use what it emulates (cleared above already; a bit stuck
            // behind an unknown structure must not count either).
            small_storage::mask_target(&mut target, &storage_emulated);
            let mut o = shader_rewrite::Options {
                target,
                emulate_raw_access_chains: false,
                emulate_storage: storage_active,
                oob_poison: inst.settings.debug_oob_poison,
                bindless: None,
                bda: None,
            };
            // lavapipe evaluates OpArrayLength once per subgroup even for a NonUniform
            // descriptor index (seen on Mesa 25.0): the rewriter works around it, in the stages
            // with subgroup ballot (module_rewrite.rs, subgroup_stages.rs).
            o.target.nonuniform_array_length_broken = phys.name.starts_with("llvmpipe");
            for p in &active {
                p.ext.enable_in_options(&mut o);
            }
            o.bindless = image_caps.map(|c| c.table);
            o.bda = buffer_caps.map(|c| c.table);
            log_debug!("vkCreateDevice: device '{}': rewrite options {o:?}", phys.name);
            options = Some(o);
        }
        drop(spliced);
        r
    };
    if result != vk::Result::SUCCESS {
        log_info!("vkCreateDevice: device '{}': driver returned {result:?}", phys.name);
        return result;
    }

    let device = *p_device;
    let Some(destroy_device) = load_device::<vk::PFN_vkDestroyDevice>(next_gdpa, device, c"vkDestroyDevice") else {
        log_error!("vkCreateDevice: next layer has no vkDestroyDevice");
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let next = DeviceNext {
        create_shader_module: load_device(next_gdpa, device, c"vkCreateShaderModule"),
        create_compute_pipelines: load_device(next_gdpa, device, c"vkCreateComputePipelines"),
        create_graphics_pipelines: load_device(next_gdpa, device, c"vkCreateGraphicsPipelines"),
        create_ray_tracing_pipelines_khr: load_device(next_gdpa, device, c"vkCreateRayTracingPipelinesKHR"),
        create_shaders_ext: load_device(next_gdpa, device, c"vkCreateShadersEXT"),
        get_shader_module_create_info_identifier_ext: load_device(next_gdpa, device, c"vkGetShaderModuleCreateInfoIdentifierEXT"),
    };
    let tables = match (table_config, table_limits) {
        (Some(config), Some(limits)) => match TableDevice::create(device, next_gdpa, &phys.name, config, limits, null_descriptor, buffer_caps.map_or(0, |c| c.max_range)) {
            Ok(t) => {
                log_info!(
                    "vkCreateDevice: device '{}': descriptor table ({}) appended to every pipeline layout it fits beside at set {} and bound before work that uses it",
                    phys.name,
                    config.describe(),
                    config.set
                );
                Some(Arc::new(t))
            }
            Err(why) => {
                log_error!(
                    "vkCreateDevice: device '{}': cannot create the descriptor table: {why}; destroying the device and returning VK_ERROR_INITIALIZATION_FAILED",
                    phys.name
                );
                destroy_device(device, p_allocator);
                *p_device = vk::Device::null();
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            }
        },
        _ => None,
    };
    let data = DeviceData {
        device,
        next_gdpa,
        name: phys.name.clone(),
        settings: inst.settings.clone(),
        options,
        destroy_device,
        next,
        keep_alive: Mutex::new(Vec::new()),
        tables,
        subgroup_ballot_stages: crate::subgroup_stages::ballot_stages(&inst, pd, &phys),
    };
    DEVICES.insert(dispatch_key(device), Arc::new(data));
    vk::Result::SUCCESS
}

pub unsafe extern "system" fn destroy_device(device: vk::Device, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroyDevice", (), || unsafe {
        if device == vk::Device::null() {
            return;
        }
        match DEVICES.remove(&dispatch_key(device)) {
            Some((_, data)) => {
                if let Some(t) = &data.tables {
                    t.destroy();
                }
                (data.destroy_device)(device, p_allocator)
            }
            None => log_error!("vkDestroyDevice: unknown device {device:?}; cannot call down"),
        }
    })
}
