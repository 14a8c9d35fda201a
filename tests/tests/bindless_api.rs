//! VK_NVX_image_view_handle through the layer (the Vulkan side of bindless-texture emulation):
//! advertised at revision 1, `maxBoundDescriptorSets` reported unchanged, handles distinct per
//! key, stable, slot 0 never handed out, slots reused after vkDestroyImageView /
//! vkDestroySampler, the 64-bit query agrees, and ordinary compute work on a device with the
//! emulation active (pipeline layouts carry the table) stays correct and validation-clean.

use ash::vk;
use polyfill_e2e::{samples, Context, ContextOptions};

const EXT: &str = "VK_NVX_image_view_handle";

type GetHandle = unsafe extern "system" fn(vk::Device, *const vk::ImageViewHandleInfoNVX) -> u32;
type GetHandle64 = unsafe extern "system" fn(vk::Device, *const vk::ImageViewHandleInfoNVX) -> u64;

fn bindless_options() -> ContextOptions {
    ContextOptions { enable_layer: true, device_extensions: vec![EXT.to_string()], ..ContextOptions::default() }.validation(true)
}

#[test]
fn advertised_at_revision_1_with_the_tables_set_reserved() {
    let Some(native) = Context::native_lacking(EXT) else { return };
    let ctx = Context::new(&ContextOptions::with_layer()).unwrap_or_else(|e| panic!("{e}"));
    let exts = ctx.device_extensions().unwrap();
    let ours: Vec<_> = exts.iter().filter(|(n, _)| n == EXT).collect();
    assert_eq!(ours.len(), 1, "{exts:?}");
    assert_eq!(ours[0].1, 1, "revision");
    assert_eq!(ctx.limits().max_bound_descriptor_sets, native.limits().max_bound_descriptor_sets - 1, "the table's set (issue 25)");
    // With the setting off: not advertised, limit untouched.
    let off = Context::new(&ContextOptions::with_layer().setting("image_view_handle", "off")).unwrap_or_else(|e| panic!("{e}"));
    assert!(!off.has_device_extension(EXT));
    assert_eq!(off.limits().max_bound_descriptor_sets, native.limits().max_bound_descriptor_sets);
}

struct Objects<'a> {
    ctx: &'a Context,
    image: vk::Image,
    memory: vk::DeviceMemory,
}

impl<'a> Objects<'a> {
    fn new(ctx: &'a Context) -> Objects<'a> {
        let d = ctx.device();
        let ci = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(vk::Format::R8G8B8A8_UNORM)
            .extent(vk::Extent3D { width: 4, height: 4, depth: 1 })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::STORAGE);
        let image = unsafe { d.create_image(&ci, None) }.unwrap();
        let req = unsafe { d.get_image_memory_requirements(image) };
        let mp = unsafe { ctx.instance().get_physical_device_memory_properties(ctx.physical_device()) };
        let ty = (0..mp.memory_type_count).find(|i| req.memory_type_bits & (1 << i) != 0).unwrap();
        let memory = unsafe { d.allocate_memory(&vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty), None) }.unwrap();
        unsafe { d.bind_image_memory(image, memory, 0) }.unwrap();
        Objects { ctx, image, memory }
    }
    fn view(&self) -> vk::ImageView {
        let ci = vk::ImageViewCreateInfo::default()
            .image(self.image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(vk::Format::R8G8B8A8_UNORM)
            .subresource_range(vk::ImageSubresourceRange {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                base_mip_level: 0,
                level_count: 1,
                base_array_layer: 0,
                layer_count: 1,
            });
        unsafe { self.ctx.device().create_image_view(&ci, None) }.unwrap()
    }
    fn sampler(&self) -> vk::Sampler {
        unsafe { self.ctx.device().create_sampler(&vk::SamplerCreateInfo::default(), None) }.unwrap()
    }
}

impl Drop for Objects<'_> {
    fn drop(&mut self) {
        unsafe {
            self.ctx.device().destroy_image(self.image, None);
            self.ctx.device().free_memory(self.memory, None);
        }
    }
}

#[test]
fn handles_distinct_stable_and_reused() {
    let ctx = Context::new(&bindless_options()).unwrap_or_else(|e| panic!("{e}"));
    let get: GetHandle = unsafe { std::mem::transmute(ctx.get_device_proc_addr("vkGetImageViewHandleNVX").expect("vkGetImageViewHandleNVX")) };
    let get64: GetHandle64 =
        unsafe { std::mem::transmute(ctx.get_device_proc_addr("vkGetImageViewHandle64NVX").expect("vkGetImageViewHandle64NVX")) };
    // Revision 1: no vkGetImageViewAddressNVX from the layer.
    assert!(ctx.get_device_proc_addr("vkGetImageViewAddressNVX").is_none());
    let dev = ctx.device().handle();
    let h = |view, ty, sampler| {
        let info = vk::ImageViewHandleInfoNVX::default().image_view(view).descriptor_type(ty).sampler(sampler);
        let a = unsafe { get(dev, &info) };
        let b = unsafe { get64(dev, &info) };
        assert_eq!(a as u64, b, "32- and 64-bit handles differ");
        a
    };
    let o = Objects::new(&ctx);
    let (v1, v2) = (o.view(), o.view());
    let (s1, s2) = (o.sampler(), o.sampler());
    let sampled = vk::DescriptorType::SAMPLED_IMAGE;
    let storage = vk::DescriptorType::STORAGE_IMAGE;
    let combined = vk::DescriptorType::COMBINED_IMAGE_SAMPLER;
    let a = h(v1, sampled, vk::Sampler::null());
    let b = h(v2, sampled, vk::Sampler::null());
    assert!(a != 0 && b != 0 && a != b, "{a:#x} {b:#x}");
    assert_eq!(h(v1, sampled, vk::Sampler::null()), a, "stable per key");
    // Storage images: their own slot space, slot 0 reserved there too.
    let st = h(v1, storage, vk::Sampler::null());
    assert!(st != 0 && st & 0xf_ffff != 0);
    // Combined: the view's sampled slot, plus a sampler slot in the high 12 bits.
    let c1 = h(v1, combined, s1);
    let c2 = h(v1, combined, s2);
    assert_eq!(c1 & 0xf_ffff, a & 0xf_ffff);
    assert!(c1 >> 20 != 0 && c2 >> 20 != 0 && c1 != c2);
    assert_eq!(h(v2, combined, s1) >> 20, c1 >> 20, "one sampler slot per sampler");
    // Destroying a view frees its slot for the next view.
    unsafe { ctx.device().destroy_image_view(v2, None) };
    let v3 = o.view();
    assert_eq!(h(v3, sampled, vk::Sampler::null()), b, "slot of the destroyed view reused");
    // Destroying a sampler frees its slot.
    unsafe { ctx.device().destroy_sampler(s2, None) };
    let s3 = o.sampler();
    assert_eq!(h(v1, combined, s3) >> 20, c2 >> 20, "sampler slot reused");
    unsafe {
        ctx.device().destroy_image_view(v1, None);
        ctx.device().destroy_image_view(v3, None);
        ctx.device().destroy_sampler(s1, None);
        ctx.device().destroy_sampler(s3, None);
    }
    drop(o);
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

/// Plain compute on a device with the emulation active: every pipeline layout gets the table
/// appended, the result is unchanged and validation stays clean.
#[test]
fn plain_compute_on_bindless_device() {
    let ctx = Context::new(&bindless_options()).unwrap_or_else(|e| panic!("{e}"));
    samples::plain().run_checked(&ctx).unwrap();
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

/// Forced on (driver or not): a device that did not ask for the extension still works, with
/// validation, and gets the command hooks; without the emulation they are not intercepted
/// (checked by passthrough.rs).
#[test]
fn forced_emulation_keeps_plain_work_valid() {
    let ctx = Context::new(&ContextOptions::with_layer().setting("image_view_handle", "force").validation(true)).unwrap_or_else(|e| panic!("{e}"));
    samples::plain().run_checked(&ctx).unwrap();
    assert!(ctx.get_device_proc_addr("vkGetImageViewHandleNVX").is_some());
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}
