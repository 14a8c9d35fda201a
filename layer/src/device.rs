//! vkCreateDevice / vkDestroyDevice. Creating a device is a sequence of steps over the plans of
//! the emulations (crate::emulation, crate::ext::ALL):
//!
//! 1. [`decide`]: each emulation decides what it does on this device (logged); services it
//!    needs join in;
//! 2. [`edit`]: a copy of the application's create info without what the driver must not see
//!    ([`DevicePlan::strip`]) and with the driver features the lowering needs
//!    ([`enable_for_lowering`], [`DevicePlan::enable`]);
//! 3. the call down;
//! 4. [`rewrite_options`]: what shaders are rewritten for, from what the final chain enables;
//! 5. [`set_up`]: each plan's per-device state (services first);
//! 6. [`record`]: the device's state for the other hooks.
//!
//! A device on which nothing is emulated is created from the application's create info as-is.
use crate::component::Components;
use crate::device_features::{self, effective_version};
use crate::dispatch::{self, dispatch_key, load_device, load_instance, DeviceData, DeviceNext, InstanceData, DEVICES};
use crate::emulation::{DeviceEdit, DevicePlan, DeviceRequest, NewDevice, PhysDev, Services};
use crate::ext;
use crate::ffi_guard::guard;
use crate::instance::names;
use crate::pnext::{AppChainLock, Chain};
use crate::settings::DebugTarget;
use crate::vk_layer::{find_link_info, VkLayerDeviceCreateInfo};
use crate::{log_debug, log_error, log_info, log_warn};
use ash::vk;
use std::ffi::c_char;
use std::sync::Arc;

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

/// The next layer's entry points, from the loader's link info.
struct Next {
    create_device: vk::PFN_vkCreateDevice,
    gdpa: vk::PFN_vkGetDeviceProcAddr,
}

/// Every emulation's plan for the device, and the services they joined.
struct Plans {
    emulations: Vec<Box<dyn DevicePlan>>,
    services: Vec<Box<dyn DevicePlan>>,
}

impl Plans {
    fn all(&self) -> impl Iterator<Item = &Box<dyn DevicePlan>> {
        self.emulations.iter().chain(&self.services)
    }
    fn any_emulated(&self) -> bool {
        self.all().any(|p| p.emulated())
    }
    fn any_active(&self) -> bool {
        self.all().any(|p| p.active())
    }
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
        log_error!(LOADER_INTERFACE, "vkCreateDevice: unknown physical device {pd:?}");
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(next) = next_link(&inst, ci) else { return vk::Result::ERROR_INITIALIZATION_FAILED };
    let phys = inst.physical_device(pd);
    let pdev = PhysDev { inst: &inst, pd, info: &phys };
    let app_exts = names(ci.pp_enabled_extension_names, ci.enabled_extension_count);
    let request = DeviceRequest { create_info: ci, extensions: &app_exts };

    let mut plans = decide(&pdev, &request);
    let mut options = None;
    let result = if !plans.any_emulated() {
        (next.create_device)(pd, p_create_info, p_allocator, p_device)
    } else {
        let mut edit = match edit(&pdev, &request, &mut plans, &app_chain) {
            Ok(e) => e,
            Err(why) => {
                log_error!(DEVICE_REFUSED, "vkCreateDevice: device '{}': {why}; returning VK_ERROR_FEATURE_NOT_PRESENT", phys.name);
                return vk::Result::ERROR_FEATURE_NOT_PRESENT;
            }
        };
        let kept: Vec<*const c_char> = edit.extensions.iter().map(|n| n.as_ptr()).collect();
        let mut copy = *ci;
        // Spliced until the options are read from the final chain.
        let spliced = edit.chain.splice(&app_chain);
        copy.p_next = spliced.head();
        copy.enabled_extension_count = kept.len() as u32;
        copy.pp_enabled_extension_names = if kept.is_empty() { std::ptr::null() } else { kept.as_ptr() };
        copy.p_enabled_features = edit.enabled_features.as_ref().map_or(std::ptr::null(), |f| f as *const _);
        let r = (next.create_device)(pd, &copy, p_allocator, p_device);
        if plans.any_active() {
            options = Some(rewrite_options(&pdev, &plans, &copy));
        }
        r
    };
    if result != vk::Result::SUCCESS {
        log_info!(DEVICE_EMULATION, "vkCreateDevice: device '{}': driver returned {result:?}", phys.name);
        return result;
    }
    let device = *p_device;
    let Some(destroy_device) = load_device::<vk::PFN_vkDestroyDevice>(next.gdpa, device, c"vkDestroyDevice") else {
        log_error!(LOADER_INTERFACE, "vkCreateDevice: next layer has no vkDestroyDevice");
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let new = NewDevice { device, gdpa: next.gdpa, name: &phys.name };
    let components = match set_up(plans, &new) {
        Ok(c) => c,
        Err(why) => {
            log_error!(DEVICE_REFUSED, "vkCreateDevice: device '{}': {why}; destroying the device and returning VK_ERROR_INITIALIZATION_FAILED", phys.name);
            destroy_device(device, p_allocator);
            *p_device = vk::Device::null();
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
    };
    record(&pdev, new, destroy_device, options, components);
    vk::Result::SUCCESS
}

/// LoaderLayerInterface.md "Layer Dispatch Initialization": read the next link, advance
/// pLayerInfo (the loader's own struct) for the next layer, and fetch vkCreateDevice through the
/// next GetInstanceProcAddr *with the instance handle*.
unsafe fn next_link(inst: &InstanceData, ci: &vk::DeviceCreateInfo) -> Option<Next> {
    let Some(link) = find_link_info::<VkLayerDeviceCreateInfo>(ci.p_next, vk::StructureType::LOADER_DEVICE_CREATE_INFO) else {
        log_error!(LOADER_INTERFACE, "vkCreateDevice: no VkLayerDeviceCreateInfo link info in the chain");
        return None;
    };
    let layer_info = (*link).p_layer_info;
    if layer_info.is_null() {
        log_error!(LOADER_INTERFACE, "vkCreateDevice: loader link info is empty");
        return None;
    }
    let next_gipa = (*layer_info).pfn_next_get_instance_proc_addr;
    let gdpa = (*layer_info).pfn_next_get_device_proc_addr;
    (*link).p_layer_info = (*layer_info).p_next;
    let Some(create_device) = load_instance::<vk::PFN_vkCreateDevice>(next_gipa, inst.instance, c"vkCreateDevice") else {
        log_error!(LOADER_INTERFACE, "vkCreateDevice: next layer has no vkCreateDevice");
        return None;
    };
    Some(Next { create_device, gdpa })
}

/// Step 1: every emulation's plan (logged), and the services they joined.
unsafe fn decide(pd: &PhysDev, request: &DeviceRequest) -> Plans {
    let mut services = Services::default();
    let emulations: Vec<Box<dyn DevicePlan>> = ext::ALL.iter().filter_map(|e| e.plan(pd, request, &mut services)).collect();
    for d in emulations.iter().flat_map(|p| p.decisions()) {
        if d.native && d.active() {
            log_info!(EMULATION_FORCED, "vkCreateDevice: device '{}': {}", pd.info.name, d.describe());
        } else {
            log_info!(DEVICE_EMULATION, "vkCreateDevice: device '{}': {}", pd.info.name, d.describe());
        }
    }
    Plans { emulations, services: services.into_plans() }
}

/// Logs the structures of a VkDeviceCreateInfo chain that the layer's table does not know.
fn log_unknown_structures(chain: &Chain) {
    for t in chain.spliced_s_types() {
        log_info!(
            DEVICE_CHAIN,
            "vkCreateDevice: pNext chain has a structure newer than the layer's registry {} (sType {}); passed on in place",
            crate::struct_sizes::REGISTRY_VERSION,
            t.as_raw()
        );
    }
    if let Some(t) = chain.tail_s_type() {
        log_warn!(
            LOADER_INTERFACE,
            "vkCreateDevice: pNext chain has an unknown structure (sType {}) in read-only memory; it and what follows are passed as-is",
            t.as_raw()
        );
    }
}

/// Step 2: the create info the driver gets. Never writes to the application's structures.
unsafe fn edit<'a>(pd: &PhysDev<'a>, request: &DeviceRequest<'a>, plans: &mut Plans, app_chain: &AppChainLock) -> Result<DeviceEdit<'a>, String> {
    let chain = Chain::copy_splicing(request.create_info.p_next, app_chain);
    log_unknown_structures(&chain);
    let mut edit = DeviceEdit {
        chain,
        enabled_features: request.create_info.p_enabled_features.as_ref().copied(),
        extensions: request.extensions.to_vec(),
        version: effective_version(pd.inst.api_version, pd.info.api_version),
        device_name: &pd.info.name,
    };
    for p in plans.all() {
        p.strip(&mut edit)?;
    }
    if plans.any_active() {
        enable_for_lowering(pd, plans, &mut edit);
        for p in plans.emulations.iter_mut().chain(plans.services.iter_mut()) {
            p.enable(pd, &mut edit)?;
        }
    }
    Ok(edit)
}

/// The optional driver features the lowering uses (8/16-bit storage, Int8/16/64, device-scope
/// memory model), turned on where the device has them and no plan emulates them.
unsafe fn enable_for_lowering(pd: &PhysDev, plans: &Plans, edit: &mut DeviceEdit) {
    let mut lowering = device_features::supported_cached(pd.inst, pd.pd, pd.info);
    plans.all().for_each(|p| p.restrict_target(&mut lowering));
    let mut added = device_features::enable_for_lowering(&mut edit.chain, &mut edit.enabled_features, &edit.extensions, edit.version, lowering);
    match device_features::enable_device_scope(pd.inst, pd.pd, &mut edit.chain) {
        Ok(Some(name)) => added.features.push(name),
        Ok(None) => {}
        Err(why) => added.skipped.push(why.into()),
    }
    if !added.features.is_empty() {
        log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{}': enabling driver features for the lowering: {}", pd.info.name, added.features.join(", "));
    }
    for s in &added.skipped {
        log_info!(DEVICE_FEATURES, "vkCreateDevice: device '{}': not enabling {s}", pd.info.name);
    }
}

/// Step 4: the rewrite options, from the features the final create info enables (`ci`).
unsafe fn rewrite_options(pd: &PhysDev, plans: &Plans, ci: &vk::DeviceCreateInfo) -> shader_rewrite::Options {
    let name = &pd.info.name;
    // debug_target=core: rewrite as if the device had none of the optional features (no 8/16-bit
    // storage, no Int8/16/64), to exercise the word-granular bounds and the atomic sub-word
    // stores on a device that has them.
    let mut target = match pd.inst.settings.debug_target {
        DebugTarget::Device => device_features::enabled_target(ci.p_next, ci.p_enabled_features),
        DebugTarget::Core => {
            log_info!(DEVICE_EMULATION, "vkCreateDevice: device '{name}': debug_target=core: rewriting as if the device had no 8/16-bit storage and no Int8/16/64");
            shader_rewrite::Target::core()
        }
    };
    plans.all().for_each(|p| p.restrict_target(&mut target));
    // Who checks storage-buffer bounds, from the robustness the final create info enables
    // (the descriptor table may have turned robustBufferAccess2 on for its users): where the
    // driver does as robustBufferAccess2 says, lowered accesses leave their checks to it.
    if pd.inst.settings.debug_target == DebugTarget::Device {
        let app = crate::device_features::Robustness::in_create_info(ci);
        target.robust_buffer_access2 = crate::device_features::storage_checked_as_robust2(pd.inst, pd.pd, pd.info, app).is_some();
        target.robust_storage_byte_exact = target.robust_buffer_access2 && crate::device_features::storage_checks_to_the_byte(pd.inst, pd.pd, pd.info);
    }
    // lavapipe evaluates OpArrayLength once per subgroup even for a NonUniform descriptor index
    // (seen on Mesa 25.0): the rewriter works around it, in the stages with subgroup ballot
    // (module_rewrite.rs, subgroup_stages.rs).
    let lavapipe = name.starts_with("llvmpipe");
    target.nonuniform_array_length_broken = lavapipe;
    // lavapipe also expands each non-uniformly indexed storage-buffer access per lane: loops of
    // lowered address accesses stay rolled (Target::nonuniform_access_per_lane).
    target.nonuniform_access_per_lane = lavapipe;
    // lavapipe checks each component of a vector storage-buffer access on its own (gallivm's
    // load/store of a storage buffer compares each component's index with the range): shown on
    // the driver by tests/tests/driver_vector_robustness.rs, relied on only for the Mesa
    // releases it was seen on (a later one keeps the lowering's checks until it is shown
    // there too). Only used with the checks above.
    let mesa = if lavapipe && target.robust_storage_byte_exact { crate::device_features::lavapipe_mesa_version(pd.inst, pd.pd, pd.info) } else { None };
    target.robust_vector_components = mesa.is_some_and(mesa_checks_vector_components);
    if let Some((major, minor)) = mesa.filter(|&m| !mesa_checks_vector_components(m)) {
        log_info!(DEVICE_EMULATION, "vkCreateDevice: device '{name}': Mesa {major}.{minor}: its per-component checks of vector accesses are not relied on (seen up to Mesa 25); per-component raw-chain vectors keep their whole-vector checks");
    }
    let mut o = shader_rewrite::Options {
        target,
        emulate_raw_access_chains: false,
        emulate_storage: Default::default(),
        oob_poison: pd.inst.settings.debug_oob_poison,
        bindless: None,
        bda: None,
    };
    plans.all().for_each(|p| p.options(&mut o));
    if o.emulate_raw_access_chains && o.component_bounds_by_driver() {
        log_info!(
            DEVICE_EMULATION,
            "vkCreateDevice: device '{name}': the driver checks storage-buffer bounds to the byte (robustBufferAccess2, robustStorageBufferAccessSizeAlignment 1): per-component raw-chain accesses made of one access per component leave their checks to it"
        );
        if o.target.robust_vector_components {
            log_info!(DEVICE_EMULATION, "vkCreateDevice: device '{name}': the driver checks each component of a vector access on its own: per-component raw-chain accesses of 32/64-bit vectors leave their checks to it too");
        }
    }
    log_debug!(TRACE, "vkCreateDevice: device '{name}': rewrite options {o:?}");
    o
}

/// Does this lavapipe release ((major, minor) of Mesa,
/// `device_features::lavapipe_mesa_version`) check each component of a vector storage-buffer
/// access on its own? Seen in gallivm's sources up to 25.0 and on 25.0.7 (the e2e probe); the
/// tests' copy of this range is `polyfill_e2e::vk::LAVAPIPE_VECTOR_CHECKS_UP_TO`.
fn mesa_checks_vector_components((major, _minor): (u32, u32)) -> bool {
    major <= 25
}

/// Step 5: per-device state, services first (their users look them up).
unsafe fn set_up(plans: Plans, dev: &NewDevice) -> Result<Components, String> {
    let mut components = Components::default();
    for p in plans.services.into_iter().chain(plans.emulations) {
        p.set_up(dev, &mut components)?;
    }
    Ok(components)
}

/// Step 6: the device's state, found by its dispatch key from now on.
unsafe fn record(pd: &PhysDev, new: NewDevice, destroy_device: vk::PFN_vkDestroyDevice, options: Option<shader_rewrite::Options>, components: Components) {
    let (device, gdpa) = (new.device, new.gdpa);
    let next = DeviceNext {
        create_shader_module: load_device(gdpa, device, c"vkCreateShaderModule"),
        create_compute_pipelines: load_device(gdpa, device, c"vkCreateComputePipelines"),
        create_graphics_pipelines: load_device(gdpa, device, c"vkCreateGraphicsPipelines"),
        create_ray_tracing_pipelines_khr: load_device(gdpa, device, c"vkCreateRayTracingPipelinesKHR"),
        create_shaders_ext: load_device(gdpa, device, c"vkCreateShadersEXT"),
        get_shader_module_create_info_identifier_ext: load_device(gdpa, device, c"vkGetShaderModuleCreateInfoIdentifierEXT"),
        set_debug_utils_object_name: load_device(gdpa, device, c"vkSetDebugUtilsObjectNameEXT"),
        create_ray_tracing_pipelines_nv: load_device(gdpa, device, c"vkCreateRayTracingPipelinesNV"),
        create_execution_graph_pipelines_amdx: load_device(gdpa, device, c"vkCreateExecutionGraphPipelinesAMDX"),
        get_pipeline_key_khr: load_device(gdpa, device, c"vkGetPipelineKeyKHR"),
        create_pipeline_binaries_khr: load_device(gdpa, device, c"vkCreatePipelineBinariesKHR"),
        get_pipeline_indirect_memory_requirements_nv: load_device(gdpa, device, c"vkGetPipelineIndirectMemoryRequirementsNV"),
        create_data_graph_pipelines_arm: load_device(gdpa, device, c"vkCreateDataGraphPipelinesARM"),
        deferred_operation_join: load_device(gdpa, device, c"vkDeferredOperationJoinKHR"),
        get_deferred_operation_result: load_device(gdpa, device, c"vkGetDeferredOperationResultKHR"),
        destroy_deferred_operation: load_device(gdpa, device, c"vkDestroyDeferredOperationKHR"),
    };
    let data = DeviceData {
        device,
        instance_key: dispatch::instance_key(pd.inst),
        next_gdpa: gdpa,
        name: pd.info.name.clone(),
        settings: pd.inst.settings.clone(),
        options,
        destroy_device,
        next,
        deferred: Default::default(),
        components,
        subgroup_ballot_stages: crate::subgroup_stages::ballot_stages(pd.inst, pd.pd, pd.info),
        rewrite_cache: crate::rewrite_cache::RewriteCache::new(pd.inst.settings.rewrite_cache_mb as usize * (1 << 20)),
    };
    DEVICES.insert(dispatch_key(device), Arc::new(data));
}

pub unsafe extern "system" fn destroy_device(device: vk::Device, p_allocator: *const vk::AllocationCallbacks) {
    guard("vkDestroyDevice", (), || unsafe {
        if device == vk::Device::null() {
            return;
        }
        match DEVICES.remove(&dispatch_key(device)) {
            Some((_, data)) => {
                // Users before the services they use.
                for c in data.components.iter().rev() {
                    c.destroy();
                }
                (data.destroy_device)(device, p_allocator)
            }
            None => log_error!(LOADER_INTERFACE, "vkDestroyDevice: unknown device {device:?}; cannot call down"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// lavapipe's per-component checks of vector accesses are relied on for the Mesa releases
    /// they were seen on, not for later ones.
    #[test]
    fn vector_checks_only_on_seen_mesa_releases() {
        assert!(mesa_checks_vector_components((25, 0)));
        assert!(mesa_checks_vector_components((24, 2)));
        assert!(!mesa_checks_vector_components((26, 0)));
    }
}
