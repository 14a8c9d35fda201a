//! Descriptor limits with VK_NVX_image_view_handle emulated (issues 14 and 25): the layer must
//! not make a device unusable for a client that works without it, and must never refuse a
//! layout the reported limits allow.
//!
//! - `limits_leave_room_for_the_table`: through the layer (the extension enabled, so the table
//!   exists), maxBoundDescriptorSets is one less than the driver's and the update-after-bind
//!   limits the table's arrays count against are lower by them (DescriptorIndexingProperties and
//!   Vulkan12Properties agree); the others are the driver's.
//! - `vkd3d_keeps_the_drivers_limits`: engine "vkd3d" is not offered the extension (client
//!   quirk), so its ≥ 1 000 000 thresholds hold.
//! - `layouts_at_the_reported_limits_work_beyond_them_bindless_is_refused`: with
//!   VK_LAYER_KHRONOS_validation below the layer, pipeline layouts at the reported limits (an
//!   update-after-bind sampled-image heap as large as they allow; every reported set) serve plain
//!   and bindless pipelines; layouts at the driver's limits (beyond the reported ones) serve plain
//!   pipelines and bindless ones are refused with the limit named. Zero validation errors.
//!   (vkd3d-proton's raw-chain quirk: tests/tests/client_quirks.rs.)

use ash::vk;
use polyfill_e2e::bindless::shaders;
use polyfill_e2e::child;
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

/// The update-after-bind limits the table's image arrays count against, per class: (samplers,
/// sampled images, storage images, resources) — per stage, then per layout (no resources).
fn deltas(native: &Limits, got: &Limits) -> Vec<(&'static str, u32)> {
    got.update_after_bind.iter().zip(&native.update_after_bind).map(|((name, di, v12), (_, n, _))| {
        assert_eq!(di, v12, "{name}: DescriptorIndexingProperties and Vulkan12Properties disagree");
        (*name, n - di)
    }).collect()
}

/// Issue 25: with VK_NVX_image_view_handle emulated, the reported limits leave room for the
/// descriptor table — one set less, and its sampled-image, storage-image and sampler arrays
/// out of every limit they count against (per stage, per layout, resources, all pools) — so no
/// layout valid under them is refused; the limits the table does not touch are the driver's.
#[test]
fn limits_leave_room_for_the_table() {
    let Some(native) = Context::native_lacking(IMAGE_VIEW_HANDLE_EXT) else { return };
    let want = query(&native);
    drop(native);
    let ctx = Context::new(&ContextOptions::bindless()).unwrap_or_else(|e| panic!("{e}"));
    let got = query(&ctx);
    assert_eq!(got.max_bound_descriptor_sets, want.max_bound_descriptor_sets - 1, "maxBoundDescriptorSets: the table's set");
    assert!(got.max_bound_descriptor_sets >= SPEC_MIN_SETS, "maxBoundDescriptorSets {} below the spec minimum", got.max_bound_descriptor_sets);
    let d = deltas(&want, &got);
    let of = |name: &str| d.iter().find(|(n, _)| *n == name).unwrap().1;
    let (samplers, sampled, storage) =
        (of("maxPerStageDescriptorUpdateAfterBindSamplers"), of("maxPerStageDescriptorUpdateAfterBindSampledImages"), of("maxPerStageDescriptorUpdateAfterBindStorageImages"));
    assert!(samplers > 0 && sampled > 0 && storage > 0, "{d:?}");
    assert_eq!(of("maxPerStageUpdateAfterBindResources"), sampled + storage, "images are resources, samplers are not");
    assert_eq!(
        (of("maxDescriptorSetUpdateAfterBindSamplers"), of("maxDescriptorSetUpdateAfterBindSampledImages"), of("maxDescriptorSetUpdateAfterBindStorageImages")),
        (samplers, sampled, storage)
    );
    for (name, delta) in &d {
        if !name.contains("Sampler") && !name.contains("SampledImages") && !name.contains("StorageImages") && !name.contains("Resources") {
            assert_eq!(*delta, 0, "{name} is not counted by the table");
        }
        println!("{name}: {delta} reserved");
    }
    assert_eq!(want.all_pools.0 - got.all_pools.0, samplers + sampled + storage, "the table's pool");
    assert!(samplers + sampled + storage <= MAX_TABLE_DESCRIPTORS);
    // The plain limits of VkPhysicalDeviceLimits never exceed the reported update-after-bind ones.
    let l = ctx.limits();
    assert!(u64::from(l.max_per_stage_descriptor_sampled_images) <= u64::from(got.update_after_bind.iter().find(|(n, ..)| *n == "maxPerStageDescriptorUpdateAfterBindSampledImages").unwrap().1));
}

/// vkd3d-proton (engine "vkd3d") gets no VK_NVX_image_view_handle at default settings (its
/// client quirk: it uses the handles only for CUDA interop, and the table's reservation would
/// take lavapipe's update-after-bind limits below the 1 000 000 it requires), so it sees the
/// driver's limits and its thresholds hold wherever the driver meets them.
#[test]
fn vkd3d_keeps_the_drivers_limits() {
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    if native.has_device_extension(IMAGE_VIEW_HANDLE_EXT) {
        return;
    }
    let want = query(&native);
    drop(native);
    let ctx = Context::new(&ContextOptions::with_layer().engine_name("vkd3d").messenger(true).setting("log_level", "info")).unwrap_or_else(|e| panic!("{e}"));
    assert!(!ctx.has_device_extension(IMAGE_VIEW_HANDLE_EXT), "offered to vkd3d-proton");
    let got = query(&ctx);
    assert_eq!(got.max_bound_descriptor_sets, want.max_bound_descriptor_sets);
    assert!(deltas(&want, &got).iter().all(|(_, d)| *d == 0), "{:?}", deltas(&want, &got));
    let vkd3d_checks =
        ["maxPerStageDescriptorUpdateAfterBindSampledImages", "maxPerStageDescriptorUpdateAfterBindStorageImages", "maxPerStageDescriptorUpdateAfterBindStorageBuffers"];
    for (name, di, _) in got.update_after_bind.iter().filter(|(n, ..)| vkd3d_checks.contains(n)) {
        let driver = want.update_after_bind.iter().find(|(n, ..)| n == name).unwrap().1;
        assert!(driver < VKD3D_MIN || *di >= VKD3D_MIN, "{name}: {di} < vkd3d-proton's {VKD3D_MIN}");
    }
    let quirk = ctx.layer_messages().into_iter().filter(|m| m.id == "POLYFILL-client-quirk").map(|m| m.text).collect::<Vec<_>>();
    assert!(quirk.iter().any(|t| t.contains("image_view_handle=auto means off")), "{quirk:?}");
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

/// The child of `layouts_at_the_reported_limits_work_beyond_them_bindless_is_refused`.
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

    // Plain and bindless pipelines use the layouts at the reported limits (issue 25: the
    // reported limits leave room for the table).
    o.pipeline(0, false, big).unwrap_or_else(|e| panic!("plain pipeline, {n}-image layout: {e:?}"));
    o.pipeline(last, false, all).unwrap_or_else(|e| panic!("plain pipeline, {} sets: {e:?}", last + 1));
    o.pipeline(0, true, big).unwrap_or_else(|e| panic!("bindless pipeline, {n}-image layout: {e:?}"));
    o.pipeline(last, true, all).unwrap_or_else(|e| panic!("bindless pipeline, {} sets: {e:?}", last + 1));
    o.pipeline(0, true, small).unwrap_or_else(|e| panic!("bindless pipeline, small layout: {e:?}"));
    // Beyond them (the driver's limits: valid below, where the validation layer sees the
    // driver's limits), a bindless pipeline has no room: refused, plain ones work.
    let native = query(&Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}")));
    let nget = |name: &str| native.update_after_bind.iter().find(|(n, ..)| *n == name).unwrap().1;
    let n_driver = nget("maxPerStageDescriptorUpdateAfterBindSampledImages")
        .min(nget("maxDescriptorSetUpdateAfterBindSampledImages"))
        .min(nget("maxPerStageUpdateAfterBindResources") - 1);
    let driver_heap = o.set_layout(vk::DescriptorType::SAMPLED_IMAGE, n_driver, true);
    let over = o.pipeline_layout(&[ssbo, driver_heap]);
    let mut all_driver_sets = vec![empty; limits.max_bound_descriptor_sets as usize];
    all_driver_sets.push(ssbo);
    let over_sets = o.pipeline_layout(&all_driver_sets);
    o.pipeline(0, false, over).unwrap_or_else(|e| panic!("plain pipeline, {n_driver}-image layout: {e:?}"));
    assert_eq!(o.pipeline(0, true, over).err(), Some(vk::Result::ERROR_INVALID_SHADER_NV), "bindless pipeline, {n_driver}-image layout");
    assert_eq!(o.pipeline(last + 1, true, over_sets).err(), Some(vk::Result::ERROR_INVALID_SHADER_NV), "bindless pipeline, {} sets", last + 2);
    drop(o);
    let errors = ss_run::relevant_validation_errors(&ctx);
    assert!(errors.is_empty(), "{} validation errors:\n  {}", errors.len(), errors.join("\n  "));
    println!("LAYOUT-IMAGES {n} SETS {} (beyond: {n_driver} images, {} sets)", last + 1, last + 2);
}

#[test]
fn layouts_at_the_reported_limits_work_beyond_them_bindless_is_refused() {
    const NAME: &str = "layouts_at_the_reported_limits_work_beyond_them_bindless_is_refused";
    if child::is_child(NAME) {
        return full_layouts_child();
    }
    if Context::native_lacking(IMAGE_VIEW_HANDLE_EXT).is_none() {
        return;
    }
    let (out, text) = child::spawn_logged(NAME, "descriptor_limits", &[]);
    let refusals: Vec<&str> = text.lines().filter(|l| l.contains("refusing the pipeline")).collect();
    assert_eq!(refusals.len(), 2, "one refusal per bindless pipeline without room:\n{text}");
    assert!(refusals[0].contains("maxPerStageDescriptorUpdateAfterBindSampledImages is"), "{}", refusals[0]);
    assert!(refusals[1].contains("maxBoundDescriptorSets is"), "{}", refusals[1]);
    assert_eq!(text.lines().filter(|l| l.contains("ERROR")).count(), 2, "no other errors:\n{text}");
    println!("{}", out.stdout.lines().find(|l| l.contains("LAYOUT-IMAGES")).unwrap_or("(child printed no LAYOUT-IMAGES line)"));
    refusals.iter().for_each(|l| println!("{l}"));
}
