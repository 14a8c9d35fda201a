//! Descriptor limits with VK_NVX_image_view_handle emulated (issue 14): the layer must not make a
//! device unusable for a client that works without it.
//!
//! - `limits_are_the_drivers`: through the layer with default settings (the extension enabled,
//!   so the table exists), vkGetPhysicalDeviceProperties2 with
//!   VkPhysicalDeviceDescriptorIndexingProperties and VkPhysicalDeviceVulkan12Properties reports
//!   the driver's maxBoundDescriptorSets and every per-stage / per-set update-after-bind limit;
//!   vkd3d-proton's thresholds (≥ 1 000 000 update-after-bind sampled images, storage images and
//!   storage buffers per stage) hold wherever the driver meets them; only
//!   maxUpdateAfterBindDescriptorsInAllPools is lower, by at most the table's pool.
//! - `full_layouts_stay_valid_bindless_pipelines_without_room_are_refused`: with
//!   VK_LAYER_KHRONOS_validation below the layer, pipeline layouts that use the reported limits
//!   (a 999 999-descriptor update-after-bind sampled-image binding; all maxBoundDescriptorSets
//!   sets) are valid and serve plain pipelines; bindless pipelines with them are refused with
//!   the limit named in the log; a bindless pipeline with room works. Zero validation errors.
//!   (vkd3d-proton's raw-chain quirk: tests/tests/client_quirks.rs.)

use ash::vk;
use polyfill_e2e::bindless::shaders;
use polyfill_e2e::child::{self, read_log};
use polyfill_e2e::layer::env_var_name;
use polyfill_e2e::small_storage::run as ss_run;
use polyfill_e2e::tools;
use polyfill_e2e::vk::IMAGE_VIEW_HANDLE_EXT;
use polyfill_e2e::{Context, ContextOptions};
use std::ffi::CString;

/// vkd3d-proton's VKD3D_MIN_VIEW_DESCRIPTOR_COUNT (D3D12 resource binding tier 3).
const VKD3D_MIN: u32 = 1_000_000;
/// The spec's minimum maxBoundDescriptorSets (Vulkan 1.0 "Required Limits").
const SPEC_MIN_SETS: u32 = 4;
/// The table's largest possible pool: 65536 sampled + 65536 storage images + 4096 samplers.
const MAX_TABLE_DESCRIPTORS: u32 = 65536 + 65536 + 4096;

struct Limits {
    max_bound_descriptor_sets: u32,
    /// (name, VkPhysicalDeviceDescriptorIndexingProperties value, Vulkan12Properties value)
    update_after_bind: Vec<(&'static str, u32, u32)>,
    all_pools: (u32, u32),
}

fn query(ctx: &Context) -> Limits {
    let mut di = vk::PhysicalDeviceDescriptorIndexingProperties::default();
    let mut v = vk::PhysicalDeviceVulkan12Properties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut di).push_next(&mut v);
    unsafe { ctx.instance().get_physical_device_properties2(ctx.physical_device(), &mut p2) };
    let max_bound_descriptor_sets = p2.properties.limits.max_bound_descriptor_sets;
    let update_after_bind = vec![
        ("maxPerStageDescriptorUpdateAfterBindSamplers", di.max_per_stage_descriptor_update_after_bind_samplers, v.max_per_stage_descriptor_update_after_bind_samplers),
        ("maxPerStageDescriptorUpdateAfterBindUniformBuffers", di.max_per_stage_descriptor_update_after_bind_uniform_buffers, v.max_per_stage_descriptor_update_after_bind_uniform_buffers),
        ("maxPerStageDescriptorUpdateAfterBindStorageBuffers", di.max_per_stage_descriptor_update_after_bind_storage_buffers, v.max_per_stage_descriptor_update_after_bind_storage_buffers),
        ("maxPerStageDescriptorUpdateAfterBindSampledImages", di.max_per_stage_descriptor_update_after_bind_sampled_images, v.max_per_stage_descriptor_update_after_bind_sampled_images),
        ("maxPerStageDescriptorUpdateAfterBindStorageImages", di.max_per_stage_descriptor_update_after_bind_storage_images, v.max_per_stage_descriptor_update_after_bind_storage_images),
        ("maxPerStageDescriptorUpdateAfterBindInputAttachments", di.max_per_stage_descriptor_update_after_bind_input_attachments, v.max_per_stage_descriptor_update_after_bind_input_attachments),
        ("maxPerStageUpdateAfterBindResources", di.max_per_stage_update_after_bind_resources, v.max_per_stage_update_after_bind_resources),
        ("maxDescriptorSetUpdateAfterBindSamplers", di.max_descriptor_set_update_after_bind_samplers, v.max_descriptor_set_update_after_bind_samplers),
        ("maxDescriptorSetUpdateAfterBindUniformBuffers", di.max_descriptor_set_update_after_bind_uniform_buffers, v.max_descriptor_set_update_after_bind_uniform_buffers),
        ("maxDescriptorSetUpdateAfterBindUniformBuffersDynamic", di.max_descriptor_set_update_after_bind_uniform_buffers_dynamic, v.max_descriptor_set_update_after_bind_uniform_buffers_dynamic),
        ("maxDescriptorSetUpdateAfterBindStorageBuffers", di.max_descriptor_set_update_after_bind_storage_buffers, v.max_descriptor_set_update_after_bind_storage_buffers),
        ("maxDescriptorSetUpdateAfterBindStorageBuffersDynamic", di.max_descriptor_set_update_after_bind_storage_buffers_dynamic, v.max_descriptor_set_update_after_bind_storage_buffers_dynamic),
        ("maxDescriptorSetUpdateAfterBindSampledImages", di.max_descriptor_set_update_after_bind_sampled_images, v.max_descriptor_set_update_after_bind_sampled_images),
        ("maxDescriptorSetUpdateAfterBindStorageImages", di.max_descriptor_set_update_after_bind_storage_images, v.max_descriptor_set_update_after_bind_storage_images),
        ("maxDescriptorSetUpdateAfterBindInputAttachments", di.max_descriptor_set_update_after_bind_input_attachments, v.max_descriptor_set_update_after_bind_input_attachments),
    ];
    let all_pools = (di.max_update_after_bind_descriptors_in_all_pools, v.max_update_after_bind_descriptors_in_all_pools);
    Limits { max_bound_descriptor_sets, update_after_bind, all_pools }
}

#[test]
fn limits_are_the_drivers() {
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    if native.has_device_extension(IMAGE_VIEW_HANDLE_EXT) {
        eprintln!("the driver has {IMAGE_VIEW_HANDLE_EXT}; nothing to emulate");
        return;
    }
    let want = query(&native);
    drop(native);
    let ctx = Context::new(&ContextOptions::bindless()).unwrap_or_else(|e| panic!("{e}"));
    let got = query(&ctx);

    assert_eq!(got.max_bound_descriptor_sets, want.max_bound_descriptor_sets, "maxBoundDescriptorSets");
    assert!(got.max_bound_descriptor_sets >= SPEC_MIN_SETS, "maxBoundDescriptorSets {} below the spec minimum", got.max_bound_descriptor_sets);
    for ((name, di, v12), (_, native_di, native_v12)) in got.update_after_bind.iter().zip(&want.update_after_bind) {
        assert_eq!((di, v12), (native_di, native_v12), "{name} (DescriptorIndexingProperties, Vulkan12Properties) differs from the driver's");
        println!("{name}: {di}");
    }
    let vkd3d_checks =
        ["maxPerStageDescriptorUpdateAfterBindSampledImages", "maxPerStageDescriptorUpdateAfterBindStorageImages", "maxPerStageDescriptorUpdateAfterBindStorageBuffers"];
    for (name, di, v12) in got.update_after_bind.iter().filter(|(n, ..)| vkd3d_checks.contains(n)) {
        let driver = want.update_after_bind.iter().find(|(n, ..)| n == name).unwrap().1;
        if driver >= VKD3D_MIN {
            assert!(*di >= VKD3D_MIN && *v12 >= VKD3D_MIN, "{name}: {di}/{v12} < vkd3d-proton's {VKD3D_MIN}");
        }
    }
    // The table's pool comes out of the device-wide update-after-bind budget, and nothing else.
    for (got, want) in [(got.all_pools.0, want.all_pools.0), (got.all_pools.1, want.all_pools.1)] {
        assert!(got <= want && want - got <= MAX_TABLE_DESCRIPTORS, "maxUpdateAfterBindDescriptorsInAllPools: {got} through the layer, driver {want}");
        println!("maxUpdateAfterBindDescriptorsInAllPools: driver {want}, through the layer {got}");
    }
}

/// Objects of the child below, destroyed before the device.
struct Objects<'a> {
    ctx: &'a Context,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    layouts: Vec<vk::PipelineLayout>,
    modules: Vec<vk::ShaderModule>,
    pipelines: Vec<vk::Pipeline>,
}

impl Drop for Objects<'_> {
    fn drop(&mut self) {
        let d = self.ctx.device();
        unsafe {
            self.pipelines.iter().for_each(|p| d.destroy_pipeline(*p, None));
            self.modules.iter().for_each(|m| d.destroy_shader_module(*m, None));
            self.layouts.iter().for_each(|l| d.destroy_pipeline_layout(*l, None));
            self.set_layouts.iter().for_each(|l| d.destroy_descriptor_set_layout(*l, None));
        }
    }
}

impl Objects<'_> {
    fn set_layout(&mut self, ty: vk::DescriptorType, count: u32, update_after_bind: bool) -> vk::DescriptorSetLayout {
        let bindings = [vk::DescriptorSetLayoutBinding::default().binding(0).descriptor_type(ty).descriptor_count(count).stage_flags(vk::ShaderStageFlags::ALL)];
        let flags = [vk::DescriptorBindingFlags::UPDATE_AFTER_BIND];
        let mut flags_info = vk::DescriptorSetLayoutBindingFlagsCreateInfo::default().binding_flags(&flags);
        let mut ci = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        if update_after_bind {
            ci = ci.flags(vk::DescriptorSetLayoutCreateFlags::UPDATE_AFTER_BIND_POOL).push_next(&mut flags_info);
        }
        let l = unsafe { self.ctx.device().create_descriptor_set_layout(&ci, None) }.unwrap_or_else(|e| panic!("vkCreateDescriptorSetLayout: {e:?}"));
        self.set_layouts.push(l);
        l
    }

    fn pipeline_layout(&mut self, sets: &[vk::DescriptorSetLayout]) -> vk::PipelineLayout {
        let push = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::COMPUTE, offset: 0, size: 8 }];
        let ci = vk::PipelineLayoutCreateInfo::default().set_layouts(sets).push_constant_ranges(&push);
        let l = unsafe { self.ctx.device().create_pipeline_layout(&ci, None) }.unwrap_or_else(|e| panic!("vkCreatePipelineLayout: {e:?}"));
        self.layouts.push(l);
        l
    }

    /// `shaders::rebind_compute(set, bindless)` (its storage buffer at `set`) with `layout`.
    fn pipeline(&mut self, set: u32, bindless: bool, layout: vk::PipelineLayout) -> Result<vk::Pipeline, vk::Result> {
        let words = tools::spirv_as(&shaders::rebind_compute(set, bindless), "vulkan1.3").unwrap_or_else(|e| panic!("{e}"));
        let module = self.ctx.create_shader_module(&words).unwrap_or_else(|e| panic!("vkCreateShaderModule: {e:?}"));
        self.modules.push(module);
        let main = CString::new("main").unwrap();
        let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(&main);
        let ci = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
        let p = unsafe { self.ctx.device().create_compute_pipelines(vk::PipelineCache::null(), &ci, None) }.map_err(|(_, e)| e)?[0];
        self.pipelines.push(p);
        Ok(p)
    }
}

/// The child of `full_layouts_stay_valid_bindless_pipelines_without_room_are_refused`.
fn full_layouts_child() {
    let ctx = Context::new(&ContextOptions::bindless().bindless_features(true).validation(true)).unwrap_or_else(|e| panic!("{e}"));
    let limits = query(&ctx);
    let get = |name: &str| limits.update_after_bind.iter().find(|(n, ..)| *n == name).unwrap().1;
    // As many sampled images as the reported limits allow beside the one storage buffer.
    let n = get("maxPerStageDescriptorUpdateAfterBindSampledImages")
        .min(get("maxDescriptorSetUpdateAfterBindSampledImages"))
        .min(get("maxPerStageUpdateAfterBindResources") - 1);
    let mut o = Objects { ctx: &ctx, set_layouts: vec![], layouts: vec![], modules: vec![], pipelines: vec![] };
    let ssbo = o.set_layout(vk::DescriptorType::STORAGE_BUFFER, 1, false);
    let heap = o.set_layout(vk::DescriptorType::SAMPLED_IMAGE, n, true);
    let empty = {
        let ci = vk::DescriptorSetLayoutCreateInfo::default();
        let l = unsafe { ctx.device().create_descriptor_set_layout(&ci, None) }.unwrap();
        o.set_layouts.push(l);
        l
    };
    let big = o.pipeline_layout(&[ssbo, heap]);
    let last = limits.max_bound_descriptor_sets - 1;
    let mut all_sets = vec![empty; last as usize];
    all_sets.push(ssbo);
    let all = o.pipeline_layout(&all_sets);
    let small = o.pipeline_layout(&[ssbo]);

    // Plain pipelines use the full layouts.
    o.pipeline(0, false, big).unwrap_or_else(|e| panic!("plain pipeline, {n}-image layout: {e:?}"));
    o.pipeline(last, false, all).unwrap_or_else(|e| panic!("plain pipeline, {} sets: {e:?}", last + 1));
    // Bindless pipelines need room for the table: refused where there is none, fine elsewhere.
    assert_eq!(o.pipeline(0, true, big).err(), Some(vk::Result::ERROR_INVALID_SHADER_NV), "bindless pipeline, {n}-image layout");
    assert_eq!(o.pipeline(last, true, all).err(), Some(vk::Result::ERROR_INVALID_SHADER_NV), "bindless pipeline, {} sets", last + 1);
    o.pipeline(0, true, small).unwrap_or_else(|e| panic!("bindless pipeline, small layout: {e:?}"));
    drop(o);
    let errors = ss_run::relevant_validation_errors(&ctx);
    assert!(errors.is_empty(), "{} validation errors:\n  {}", errors.len(), errors.join("\n  "));
    println!("LAYOUT-IMAGES {n} SETS {}", last + 1);
}

#[test]
fn full_layouts_stay_valid_bindless_pipelines_without_room_are_refused() {
    const NAME: &str = "full_layouts_stay_valid_bindless_pipelines_without_room_are_refused";
    if child::is_child(NAME) {
        return full_layouts_child();
    }
    if Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}")).has_device_extension(IMAGE_VIEW_HANDLE_EXT) {
        eprintln!("the driver has {IMAGE_VIEW_HANDLE_EXT}; nothing to emulate");
        return;
    }
    let dir = child::temp_dir("descriptor_limits");
    let log = dir.join("layer.log");
    let out = child::spawn(NAME, &[(&env_var_name("log_file"), log.to_str().unwrap())], None);
    let text = read_log(&log);
    assert!(out.success(), "child failed:\n{}\n{}\nlog:\n{text}", out.stdout, out.stderr);
    let refusals: Vec<&str> = text.lines().filter(|l| l.contains("refusing the pipeline")).collect();
    assert_eq!(refusals.len(), 2, "one refusal per bindless pipeline without room:\n{text}");
    assert!(refusals[0].contains("maxPerStageDescriptorUpdateAfterBindSampledImages is"), "{}", refusals[0]);
    assert!(refusals[1].contains("maxBoundDescriptorSets is"), "{}", refusals[1]);
    assert_eq!(text.lines().filter(|l| l.contains("ERROR")).count(), 2, "no other errors:\n{text}");
    println!("{}", out.stdout.lines().find(|l| l.contains("LAYOUT-IMAGES")).unwrap_or("(child printed no LAYOUT-IMAGES line)"));
    refusals.iter().for_each(|l| println!("{l}"));
}
