//! VK_KHR_buffer_device_address through the layer (issue 16, the Vulkan side): with
//! `buffer_device_address=force` on lavapipe (which has the feature) the layer hides the
//! driver's and provides its own — the extension and `bufferDeviceAddress` reported (capture
//! replay and multi-device not), devices created with the Vulkan 1.2 aggregate or the KHR
//! structure, addresses `0xD3 << 56 | slot << 32 | 0` distinct per buffer, slots reused after
//! vkDestroyBuffer, and the validation layer *below* the layer reporting nothing (the driver sees
//! no device-address usage, allocation flag or feature). `auto` and `off` change nothing.

use ash::vk;
use polyfill_e2e::{Context, ContextOptions};
use shader_rewrite::bda::{decode_address, ADDRESS_TAG};

const EXT: &str = "VK_KHR_buffer_device_address";

fn options(mode: &str) -> ContextOptions {
    ContextOptions::with_layer().setting("buffer_device_address", mode).validation(true)
}

fn context(mode: &str) -> Context {
    Context::new(&options(mode)).unwrap_or_else(|e| panic!("{e}"))
}

/// (bufferDeviceAddress, captureReplay, multiDevice) from the dedicated structure and from the
/// Vulkan 1.2 aggregate, as the application sees them.
fn reported(ctx: &Context) -> [(vk::Bool32, vk::Bool32, vk::Bool32); 2] {
    let mut f = vk::PhysicalDeviceBufferDeviceAddressFeatures::default();
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f).push_next(&mut v12);
    unsafe { ctx.instance().get_physical_device_features2(ctx.physical_device(), &mut f2) };
    [
        (f.buffer_device_address, f.buffer_device_address_capture_replay, f.buffer_device_address_multi_device),
        (v12.buffer_device_address, v12.buffer_device_address_capture_replay, v12.buffer_device_address_multi_device),
    ]
}

/// A buffer with device-address usage, bound to its own memory allocated with the
/// DEVICE_ADDRESS flag, the way applications do it.
struct AddressBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
}

impl AddressBuffer {
    fn create(device: &ash::Device, ctx: &Context, size: u64) -> (vk::Buffer, vk::DeviceMemory) {
        let ci = vk::BufferCreateInfo::default()
            .size(size)
            .usage(vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS | vk::BufferUsageFlags::TRANSFER_DST);
        let buffer = unsafe { device.create_buffer(&ci, None) }.unwrap();
        let req = unsafe { device.get_buffer_memory_requirements(buffer) };
        let mp = unsafe { ctx.instance().get_physical_device_memory_properties(ctx.physical_device()) };
        let ty = (0..mp.memory_type_count).find(|i| req.memory_type_bits & (1 << i) != 0).unwrap();
        let mut flags = vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let ai = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty).push_next(&mut flags);
        let memory = unsafe { device.allocate_memory(&ai, None) }.unwrap();
        (buffer, memory)
    }

    /// Bound with vkBindBufferMemory.
    fn new(device: &ash::Device, ctx: &Context, size: u64) -> AddressBuffer {
        let (buffer, memory) = Self::create(device, ctx, size);
        unsafe { device.bind_buffer_memory(buffer, memory, 0) }.unwrap();
        AddressBuffer { buffer, memory }
    }

    /// Several bound with one vkBindBufferMemory2 call.
    fn many(device: &ash::Device, ctx: &Context, n: usize) -> Vec<AddressBuffer> {
        let made: Vec<_> = (0..n).map(|i| Self::create(device, ctx, 64 + 16 * i as u64)).collect();
        let infos: Vec<_> = made.iter().map(|&(b, m)| vk::BindBufferMemoryInfo::default().buffer(b).memory(m)).collect();
        unsafe { device.bind_buffer_memory2(&infos) }.unwrap();
        made.into_iter().map(|(buffer, memory)| AddressBuffer { buffer, memory }).collect()
    }

    fn address(&self, device: &ash::Device) -> u64 {
        unsafe { device.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(self.buffer)) }
    }

    fn destroy(self, device: &ash::Device) {
        unsafe {
            device.destroy_buffer(self.buffer, None);
            device.free_memory(self.memory, None);
        }
    }
}

#[test]
fn force_reports_the_extension_and_feature() {
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let ctx = context("force");
    let exts = ctx.device_extensions().unwrap();
    assert_eq!(exts.iter().filter(|(n, v)| n == EXT && *v == 1).count(), 1, "{exts:?}");
    let own = ctx.device_extensions_of(Some(polyfill_e2e::layer::LAYER_NAME)).unwrap();
    assert!(own.iter().any(|(n, _)| n == EXT), "{own:?}");
    // Capture/replay and multi-device are not provided (README).
    assert_eq!(reported(&ctx), [(vk::TRUE, vk::FALSE, vk::FALSE); 2]);
    // The driver's own report differs (lavapipe has capture/replay), so the layer answered.
    println!("native: {:?}", reported(&native));
    assert_eq!(ctx.limits().max_bound_descriptor_sets, native.limits().max_bound_descriptor_sets);
}

#[test]
fn auto_and_off_change_nothing() {
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reported(&native)[0].0, vk::TRUE, "lavapipe has bufferDeviceAddress");
    for mode in ["auto", "off"] {
        let ctx = context(mode);
        assert_eq!(reported(&ctx), reported(&native), "{mode}");
        assert!(ctx.features().buffer_device_address, "{mode}: the harness enabled the driver's feature");
        // The driver's address: not one of the layer's tagged ones.
        let d = ctx.device();
        let b = AddressBuffer::new(d, &ctx, 256);
        let a = b.address(d);
        assert_ne!(a, 0);
        assert_eq!(decode_address(a), None, "{mode}: {a:#x} carries the layer's tag");
        b.destroy(d);
        assert_eq!(ctx.validation_errors(), Vec::<String>::new(), "{mode}");
    }
}

/// The harness enables `VkPhysicalDeviceVulkan12Features::bufferDeviceAddress` (the Vulkan 1.2
/// way) since the layer reports it.
#[test]
fn addresses_encode_distinct_slots_and_slots_are_reused() {
    let ctx = context("force");
    assert!(ctx.features().buffer_device_address);
    let d = ctx.device();
    let mut buffers = vec![AddressBuffer::new(d, &ctx, 1024), AddressBuffer::new(d, &ctx, 4)];
    buffers.extend(AddressBuffer::many(d, &ctx, 5));
    let addrs: Vec<u64> = buffers.iter().map(|b| b.address(d)).collect();
    let mut slots = Vec::new();
    for &a in &addrs {
        assert_ne!(a, 0);
        assert_eq!(a >> 56, ADDRESS_TAG, "{a:#x}");
        let (slot, offset) = decode_address(a).unwrap();
        assert_eq!(offset, 0, "{a:#x}");
        assert_ne!(slot, 0, "slot 0 is never handed out");
        slots.push(slot);
    }
    let mut unique = slots.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), slots.len(), "distinct slots: {slots:?}");
    // Asking again gives the same address; the KHR alias agrees.
    assert_eq!(buffers[0].address(d), addrs[0]);
    let khr: vk::PFN_vkGetBufferDeviceAddress = unsafe { std::mem::transmute(ctx.get_device_proc_addr("vkGetBufferDeviceAddressKHR").unwrap()) };
    assert_eq!(unsafe { khr(d.handle(), &vk::BufferDeviceAddressInfo::default().buffer(buffers[1].buffer)) }, addrs[1]);
    // A destroyed buffer's slot is reused by the next one.
    let freed = slots[2];
    buffers.remove(2).destroy(d);
    let next = AddressBuffer::new(d, &ctx, 32);
    assert_eq!(decode_address(next.address(d)).unwrap().0, freed);
    buffers.push(next);
    // No capture/replay: the opaque-capture commands answer 0.
    let capture: vk::PFN_vkGetBufferOpaqueCaptureAddress =
        unsafe { std::mem::transmute(ctx.get_device_proc_addr("vkGetBufferOpaqueCaptureAddress").unwrap()) };
    assert_eq!(unsafe { capture(d.handle(), &vk::BufferDeviceAddressInfo::default().buffer(buffers[0].buffer)) }, 0);
    for b in buffers {
        b.destroy(d);
    }
    // Below the layer nothing asked for device addresses: no usage bit, no allocation flag, no
    // feature the device was not created with.
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

/// A second device on the same instance, created the VK_KHR_buffer_device_address way: the
/// extension name and `VkPhysicalDeviceBufferDeviceAddressFeatures`.
#[test]
fn device_with_the_khr_structure() {
    let ctx = context("force");
    let instance = ctx.instance();
    let prio = [1.0f32];
    let qci = [vk::DeviceQueueCreateInfo::default().queue_family_index(ctx.queue_family()).queue_priorities(&prio)];
    let ext = [c"VK_KHR_buffer_device_address".as_ptr()];
    let mut bda = vk::PhysicalDeviceBufferDeviceAddressFeatures::default().buffer_device_address(true);
    let ci = vk::DeviceCreateInfo::default().queue_create_infos(&qci).enabled_extension_names(&ext).push_next(&mut bda);
    ctx.clear_validation_messages();
    let device = unsafe { instance.create_device(ctx.physical_device(), &ci, None) }.unwrap();
    let b = AddressBuffer::new(&device, &ctx, 64);
    let a = b.address(&device);
    assert_eq!(a >> 56, ADDRESS_TAG, "{a:#x}");
    b.destroy(&device);
    unsafe { device.destroy_device(None) };
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}
