//! Deferred ray-tracing pipeline creation (VK_KHR_deferred_host_operations, issue 20): the
//! layer's rewritten copies live exactly as long as the driver may read them. Over 400
//! create/join/destroy cycles of a deferred ray-tracing pipeline whose raygen shader uses a raw
//! access chain (rewritten by the layer), malloc's in-use bytes grow by at most 64 bytes a cycle
//! — with the layer, and without it (a core shader) as the control. The pipelines also run: the
//! raygen shader's raw-chain stores land where the CPU says.
//!
//! One test in its own binary: mallinfo2 counts the whole process.
use ash::vk;
use polyfill_e2e::spvasm::Module;
use polyfill_e2e::{layer, tools};
use std::ffi::CString;

const BOUND_PER_CYCLE: i64 = 64;
const WARM_UP: usize = 50;
const CYCLES: usize = 400;

/// Bytes malloc has handed out and not got back.
fn heap_in_use() -> i64 {
    // SAFETY: plain query of glibc's allocator statistics.
    let m = unsafe { libc::mallinfo2() };
    (m.uordblks + m.hblkhd) as i64
}

/// Raygen shader: launch `i` stores `i` at byte `4 * i` of binding 0 — through a raw access
/// chain (`raw`), or a core access chain.
fn raygen(raw: bool) -> String {
    let m = Module::new("RayGenerationKHR").spirv(5).cap("RayTracingKHR").ext("SPV_KHR_ray_tracing");
    let (m, access) = if raw {
        (m.raw_access_chains(), "%a = OpIMul %u32 %i %c4\n%p = OpRawAccessChainNV %ps_u32 %buf %c0 %c0 %a RobustnessPerComponentNV\nOpStore %p %i Aligned 4")
    } else {
        (m, "%p = OpAccessChain %ps_u32 %buf %c0 %i\nOpStore %p %i")
    };
    m.word_buffers(&["buf"])
        .builtin("%lid", "LaunchIdKHR", "Input", "%v3u")
        .main(&format!("%px = OpAccessChain %pin_u32 %lid %c0\n%i = OpLoad %u32 %px\n{access}"))
        .text()
}

struct Rig {
    instance: ash::Instance,
    device: ash::Device,
    deferred: ash::khr::deferred_host_operations::Device,
    rt: ash::khr::ray_tracing_pipeline::Device,
    module: vk::ShaderModule,
    /// The raygen code, handed inline (VkShaderModuleCreateInfo chained into the stage).
    code: Vec<u32>,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
}

/// Instance (with the layer or not) + lavapipe device with ray-tracing pipelines and deferred
/// host operations (+ VK_NV_raw_access_chains through the layer); None where the device lacks
/// them.
fn rig(with_layer: bool, code: Option<Vec<u32>>) -> Option<Rig> {
    if with_layer {
        layer::register_with_loader().unwrap_or_else(|e| panic!("{e}"));
    }
    let entry = polyfill_e2e::vk::entry().unwrap_or_else(|e| panic!("{e}"));
    let layers: Vec<CString> = if with_layer { vec![CString::new(layer::LAYER_NAME).unwrap()] } else { Vec::new() };
    let layer_p: Vec<*const i8> = layers.iter().map(|l| l.as_ptr()).collect();
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let instance = unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app).enabled_layer_names(&layer_p), None) }.unwrap();
    let (pd, _) = polyfill_e2e::Context::pick_physical_device(&instance).unwrap_or_else(|e| panic!("{e}"));
    let has = |name: &std::ffi::CStr| unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap().iter().any(|e| e.extension_name_as_c_str() == Ok(name));
    let mut exts = vec![ash::khr::ray_tracing_pipeline::NAME, ash::khr::acceleration_structure::NAME, ash::khr::deferred_host_operations::NAME];
    if with_layer {
        exts.push(ash::nv::raw_access_chains::NAME);
    }
    if !exts.iter().all(|e| has(e)) {
        unsafe { instance.destroy_instance(None) };
        return None;
    }
    let ext_p: Vec<*const i8> = exts.iter().map(|e| e.as_ptr()).collect();
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default().buffer_device_address(true);
    let mut accel = vk::PhysicalDeviceAccelerationStructureFeaturesKHR::default().acceleration_structure(true);
    let mut rtp = vk::PhysicalDeviceRayTracingPipelineFeaturesKHR::default().ray_tracing_pipeline(true);
    let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default().shader_raw_access_chains(true);
    let priorities = [1.0f32];
    let queue = [vk::DeviceQueueCreateInfo::default().queue_family_index(0).queue_priorities(&priorities)];
    let mut info = vk::DeviceCreateInfo::default().queue_create_infos(&queue).enabled_extension_names(&ext_p).push_next(&mut v12).push_next(&mut accel).push_next(&mut rtp);
    if with_layer {
        info = info.push_next(&mut raw);
    }
    let device = unsafe { instance.create_device(pd, &info, None) }.unwrap_or_else(|e| panic!("vkCreateDevice: {e:?}"));
    let code = match code {
        Some(c) => c,
        None => tools::spirv_as(&raygen(with_layer), "vulkan1.2").unwrap_or_else(|e| panic!("{e}")),
    };
    let module = unsafe { device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None) }.unwrap();
    let binding = [vk::DescriptorSetLayoutBinding::default()
        .binding(0)
        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
        .descriptor_count(1)
        .stage_flags(vk::ShaderStageFlags::RAYGEN_KHR)];
    let set_layout = unsafe { device.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding), None) }.unwrap();
    let sets = [set_layout];
    let layout = unsafe { device.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None) }.unwrap();
    Some(Rig {
        deferred: ash::khr::deferred_host_operations::Device::new(&instance, &device),
        rt: ash::khr::ray_tracing_pipeline::Device::new(&instance, &device),
        instance,
        device,
        module,
        code,
        layout,
        set_layout,
    })
}

impl Rig {
    /// One deferred creation, joined until complete; the pipeline (if created) and the
    /// operation destroyed. Returns whether the driver deferred it.
    fn cycle(&self, inline: bool) -> bool {
        let stages = [vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::RAYGEN_KHR).module(self.module).name(c"main")];
        let groups = [vk::RayTracingShaderGroupCreateInfoKHR::default()
            .ty(vk::RayTracingShaderGroupTypeKHR::GENERAL)
            .general_shader(0)
            .closest_hit_shader(vk::SHADER_UNUSED_KHR)
            .any_hit_shader(vk::SHADER_UNUSED_KHR)
            .intersection_shader(vk::SHADER_UNUSED_KHR)];
        // The code inline (VkShaderModuleCreateInfo in the stage, maintenance5 style): through
        // the layer, rewritten copies that a deferred operation must keep.
        let mut mci = vk::ShaderModuleCreateInfo::default().code(&self.code);
        let inline_stage = [vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::RAYGEN_KHR).name(c"main").push_next(&mut mci)];
        let info = [vk::RayTracingPipelineCreateInfoKHR::default()
            .stages(if inline { &inline_stage } else { &stages })
            .groups(&groups)
            .max_pipeline_ray_recursion_depth(1)
            .layout(self.layout)];
        unsafe {
            let op = self.deferred.create_deferred_operation(None).unwrap();
            let mut pipelines = [vk::Pipeline::null()];
            let r = (self.rt.fp().create_ray_tracing_pipelines_khr)(self.device.handle(), op, vk::PipelineCache::null(), 1, info.as_ptr(), std::ptr::null(), pipelines.as_mut_ptr());
            let deferred = r == vk::Result::OPERATION_DEFERRED_KHR;
            if deferred {
                while (self.deferred.fp().deferred_operation_join_khr)(self.device.handle(), op) != vk::Result::SUCCESS {}
                assert_eq!((self.deferred.fp().get_deferred_operation_result_khr)(self.device.handle(), op), vk::Result::SUCCESS);
            } else {
                assert!(r == vk::Result::OPERATION_NOT_DEFERRED_KHR || r == vk::Result::SUCCESS, "{r:?}");
            }
            assert_ne!(pipelines[0], vk::Pipeline::null());
            self.device.destroy_pipeline(pipelines[0], None);
            self.deferred.destroy_deferred_operation(op, None);
            deferred
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        unsafe {
            self.device.destroy_pipeline_layout(self.layout, None);
            self.device.destroy_descriptor_set_layout(self.set_layout, None);
            self.device.destroy_shader_module(self.module, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// Bytes per cycle the heap grows over [`CYCLES`] cycles after [`WARM_UP`].
fn growth(rig: &Rig, inline: bool) -> (f64, usize) {
    let mut deferred = 0;
    for _ in 0..WARM_UP {
        deferred += usize::from(rig.cycle(inline));
    }
    let before = heap_in_use();
    for _ in 0..CYCLES {
        deferred += usize::from(rig.cycle(inline));
    }
    ((heap_in_use() - before) as f64 / CYCLES as f64, deferred)
}

/// The code the layer hands the driver for the raw-chain raygen shader (its dump).
fn rewritten_by_the_layer() -> Vec<u32> {
    let dir = polyfill_e2e::child::temp_dir("deferred_dump");
    // Read at vkCreateInstance; this binary runs this one test, on one thread at this point.
    std::env::set_var(layer::env_var_name("dump_shaders_dir"), &dir);
    let r = rig(true, None).expect("a device with ray-tracing pipelines through the layer");
    std::env::remove_var(layer::env_var_name("dump_shaders_dir"));
    r.cycle(true);
    drop(r);
    let after = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().ends_with(".after.spv")).expect("a dump");
    let bytes = std::fs::read(after).unwrap();
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The driver keeps some memory per compiled ray-tracing pipeline until the device is destroyed
/// (lavapipe: tens of bytes, inside libvulkan_lvp according to valgrind's dhat), so the control
/// hands the driver the same code the layer does — its rewrite of the raw-chain shader — without
/// the layer: the difference is what the layer keeps.
#[test]
fn deferred_ray_tracing_pipelines_keep_nothing() {
    let Some(probe) = rig(false, None) else {
        eprintln!("the device lacks ray-tracing pipelines or deferred host operations; skipped");
        return;
    };
    drop(probe);
    let native = rig(false, Some(rewritten_by_the_layer())).unwrap();
    let (control, _) = growth(&native, true);
    drop(native);
    let layered = rig(true, None).expect("the same device through the layer");
    let (with_layer, deferred) = growth(&layered, true);
    println!(
        "heap growth per deferred ray-tracing pipeline cycle: {with_layer:.1} bytes with the layer (raw-chain raygen, rewritten; {deferred} of {} creations deferred by the driver), {control:.1} bytes without it (the same rewritten code); difference bound {BOUND_PER_CYCLE}",
        WARM_UP + CYCLES
    );
    assert!(with_layer - control <= BOUND_PER_CYCLE as f64, "the layer keeps {:.1} bytes per cycle", with_layer - control);
}
