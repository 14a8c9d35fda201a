//! VK_KHR_buffer_device_address through the layer (issue 16, the Vulkan side): with
//! `buffer_device_address=force` on lavapipe (which has the feature) the layer hides the
//! driver's and provides its own — the extension and `bufferDeviceAddress` reported (capture
//! replay and multi-device not), devices created with the Vulkan 1.2 aggregate or the KHR
//! structure, addresses `0xD3 << 56 | slot << 32 | 0x80000000` (offset 0, biased) distinct per buffer, slots reused after
//! vkDestroyBuffer, and the validation layer *below* the layer reporting nothing (the driver sees
//! no device-address usage, allocation flag or feature). `auto` and `off` change nothing.

use ash::vk;
use polyfill_e2e::bda_layouts;
use polyfill_e2e::bytes;
use polyfill_e2e::child;
use polyfill_e2e::layer::env_var_name;
use polyfill_e2e::bda::{
    atomics_and_ptr_chains, below_the_buffer, copy_elements, copy_last_byte, copy_scale, chase_ring, graphics_fs, reloaded_pointers, graphics_vs, linked_list, matrix_chains, neighbour_loads, matrix_chains_element, chain_paths, pointer_flows, pointer_flows_spirv13, small_chain_paths, raw_chain_on_pointer, struct_of_pointers, window_sum, window_sum_reference, ELEMENTS,
};
use polyfill_e2e::tools::has_opcode;
use polyfill_e2e::vk::{BufferSpec, ComputeJob};
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
        // Host-visible where there is such a type (tests map it), else the first allowed.
        let allowed = |i: &u32| req.memory_type_bits & (1 << i) != 0;
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let ty = (0..mp.memory_type_count)
            .find(|i| allowed(i) && mp.memory_types[*i as usize].property_flags.contains(host))
            .or_else(|| (0..mp.memory_type_count).find(allowed))
            .unwrap();
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
    // lavapipe reports the same bits itself; that the layer answers is shown by its log
    // (force_is_logged_as_hiding_the_drivers) and by the tagged addresses.
    println!("native: {:?}", reported(&native));
    assert_eq!(ctx.limits().max_bound_descriptor_sets, native.limits().max_bound_descriptor_sets - 1, "the table's set (issue 25)");
}

/// The decision per device, in the log: the driver has it, the layer hides it (in a child
/// process: the log configuration is per process, the last instance's).
#[test]
fn force_is_logged_as_hiding_the_drivers() {
    const NAME: &str = "force_is_logged_as_hiding_the_drivers";
    if child::is_child(NAME) {
        context("force");
        return;
    }
    let (_, text) = child::spawn_logged(NAME, "bda_log", &[(&env_var_name("log_level"), "info")]);
    assert!(text.contains("VK_KHR_buffer_device_address emulated (forced; driver has it)"), "{text}");
    assert!(text.contains("storage buffers (binding 3)"), "the table's storage-buffer array:\n{text}");
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

// ---- shaders: native addresses vs the layer's, byte for byte ---------------------------------

fn words_data(v: impl IntoIterator<Item = u32>) -> Vec<u8> {
    bytes::from_u32s(&v.into_iter().collect::<Vec<_>>())
}

/// Runs `job` natively (the driver's addresses) and through the layer with the emulation
/// forced (validation below it), returning both outputs; every module the layer rewrote passes
/// spirv-val and the validation layer saw nothing wrong.
fn native_and_forced(name: &str, target: &str, spirv: &[u32], job: &ComputeJob) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let want = native.run_compute(spirv, job).unwrap_or_else(|e| panic!("{name} native: {e}"));
    drop(native);
    (want, forced(name, target, spirv, job))
}

/// Through the layer with the emulation forced, rewritten for `target` (`debug_target`: the
/// device's features, or `core`: no Int64 — uvec2 addresses — and no 8/16-bit storage — word
/// views): the outputs (see [`native_and_forced`]).
fn forced(name: &str, target: &str, spirv: &[u32], job: &ComputeJob) -> Vec<Vec<u8>> {
    forced_with(name, target, spirv, job, options("force"))
}

/// [`forced`] with other context options (`o` enables the layer and the emulation).
fn forced_with(name: &str, target: &str, spirv: &[u32], job: &ComputeJob, o: ContextOptions) -> Vec<Vec<u8>> {
    forced_rewritten(name, target, spirv, job, o).0
}

/// [`forced_with`], and the module the layer handed the driver.
fn forced_rewritten(name: &str, target: &str, spirv: &[u32], job: &ComputeJob, o: ContextOptions) -> (Vec<Vec<u8>>, Vec<u32>) {
    polyfill_e2e::rewritten::run_rewritten(&format!("polyfill-bda-{name}-{target}"), spirv, job, o.setting("debug_target", target))
}

/// On lavapipe, whose storage buffers are robust as robustBufferAccess2 says by default (and
/// where the layer turns robustBufferAccess2 on when the application enables only
/// robustBufferAccess), the rewritten accesses leave their bounds checks to the driver (no OpArrayLength, no subgroup waterfall loop); the
/// reads past the end still return 0 and the writes past it are dropped
/// (`out_of_range_reads_zero_and_writes_are_dropped`, which also runs the core target and the
/// poison byte: the lowering's own checks). Those two, and an application that enables
/// pipelineRobustness (a pipeline could opt out), keep the checks, as the device log says.
#[test]
fn robust_buffer_access2_takes_over_the_bounds_checks() {
    const NAME: &str = "robust_buffer_access2_takes_over_the_bounds_checks";
    const ARRAY_LENGTH: u32 = 68;
    const BROADCAST_FIRST: u32 = 338;
    let input: Vec<u32> = (0..32).map(|i| i + 100).collect();
    let job = ComputeJob {
        buffers: vec![BufferSpec::device_address(0, bytes::from_u32s(&input)), BufferSpec::device_address(8, vec![0; 48 * 4])],
        ..Default::default()
    };
    let want: Vec<u32> = (0..48).map(|i| if i < 32 { (i + 100) * 2 + 1 } else { 1 }).collect();
    if child::is_child(NAME) {
        for (target, o, checked) in [
            ("device", options("force"), false),
            ("core", options("force"), true),
            ("device", options("force").setting("debug_oob_poison", "0"), true),
            ("device", options("force").pipeline_robustness(true), true),
            // robustBufferAccess alone: the layer adds robustBufferAccess2.
            ("device", ContextOptions { robust_buffer_access: true, ..options("force") }, false),
        ] {
            let (got, words) = forced_rewritten("robust", target, &copy_scale(), &job, o);
            assert_eq!(bytes::to_u32s(&got[1]), want, "{target}");
            assert_eq!(has_opcode(&words, ARRAY_LENGTH), checked, "{target}: OpArrayLength");
            assert!(!has_opcode(&words, BROADCAST_FIRST) || checked, "{target}: a waterfall loop");
        }
        return;
    }
    let (_, text) = child::spawn_logged(NAME, "bda_robust_log", &[(&env_var_name("log_level"), "info")]);
    if polyfill_e2e::vk::default_storage_robustness() == vk::PipelineRobustnessBufferBehaviorEXT::ROBUST_BUFFER_ACCESS_2 {
        // lavapipe: the device's default already.
        assert!(text.contains("the driver checks the bounds of the lowered storage-buffer accesses of VK_KHR_buffer_device_address (the device's default"), "{text}");
    } else {
        // e.g. NVIDIA: the layer turns both features on.
        assert!(text.contains(", robustBufferAccess, robustBufferAccess2 (the driver checks the bounds of the lowered storage-buffer accesses)"), "{text}");
    }
    assert!(text.contains(", robustBufferAccess2 (the driver checks the bounds of the lowered storage-buffer accesses)"), "{text}");
    for why in ["debug_target=core", "debug_oob_poison is set", "the application enables pipelineRobustness"] {
        assert!(text.contains(&format!("not relying on robustBufferAccess2 ({why}")), "{why}:\n{text}");
    }
}


/// A job of two device-address buffers: `input` (its address in push constant
/// 0) and 256 zero bytes for the output (push constant 8).
fn input_output_job(input: &[u32]) -> ComputeJob {
    ComputeJob { buffers: vec![BufferSpec::device_address(0, bytes::from_u32s(input)), BufferSpec::device_address(8, vec![0; 256])], ..Default::default() }
}

fn loads_and_stores_through_push_constant_pointers(target: &str) {
    let input: Vec<u32> = (0..64).map(|i| i * 7 + 3).collect();
    let job = input_output_job(&input);
    let (want, got) = native_and_forced("copy", target, &copy_scale(), &job);
    assert_eq!(bytes::to_u32s(&want[1]), input.iter().map(|v| v * 2 + 1).collect::<Vec<_>>());
    assert_eq!(got, want);
}

/// Reads past the end of a buffer return 0 and writes past the end are dropped, by the layer's
/// checks (natively this is undefined behaviour, so only the emulated run is compared with the
/// expected values).
fn out_of_range_reads_zero_and_writes_are_dropped(target: &str) {
    let input: Vec<u32> = (0..32).map(|i| i + 100).collect();
    let job = ComputeJob {
        buffers: vec![
            BufferSpec::device_address(0, bytes::from_u32s(&input)),
            // 48 words: invocations 48..64 write past its end.
            BufferSpec::device_address(8, vec![0; 48 * 4]),
        ],
        ..Default::default()
    };
    let got = forced("oob", target, &copy_scale(), &job);
    let want: Vec<u32> = (0..48).map(|i| if i < 32 { (i + 100) * 2 + 1 } else { 1 }).collect();
    assert_eq!(bytes::to_u32s(&got[1]), want);
    assert_eq!(got[0], bytes::from_u32s(&input), "the source is untouched");
    // The layer's own check, not the driver's robustness (lavapipe reads 0 past a descriptor's
    // range too): with debug_oob_poison the reads past the end give the pattern.
    let got = forced_with("oob-poison", target, &copy_scale(), &job, options("force").setting("debug_oob_poison", "0x5a"));
    let want: Vec<u32> = (0..48).map(|i| if i < 32 { (i + 100) * 2 + 1 } else { 0x5a5a_5a5au32.wrapping_mul(2) + 1 }).collect();
    assert_eq!(bytes::to_u32s(&got[1]), want, "poisoned reads past the end");
}

/// A pointer located once before a loop and read in both arms of a selection inside it, up to
/// and past its buffer's end: in range natively and through the layer alike; past the end the
/// layer's own check reads 0, or the debug_oob_poison pattern.
fn window_past_the_end(target: &str) {
    let input: Vec<u32> = (0..80).map(|i| i * 3 + 1).collect();
    let job = ComputeJob {
        buffers: vec![BufferSpec::device_address(0, bytes::from_u32s(&input)), BufferSpec::device_address(8, vec![0; 64 * 4])],
        ..Default::default()
    };
    let (want, got) = native_and_forced("window", target, &window_sum(), &job);
    assert_eq!(got, want, "in range: emulated vs native");
    assert_eq!(bytes::to_u32s(&got[1]), window_sum_reference(&input, 0));
    // 60 words: the last 11 invocations read past the end.
    let short = &input[..60];
    let job = ComputeJob {
        buffers: vec![BufferSpec::device_address(0, bytes::from_u32s(short)), BufferSpec::device_address(8, vec![0; 64 * 4])],
        ..Default::default()
    };
    let got = forced("window-edge", target, &window_sum(), &job);
    assert_eq!(bytes::to_u32s(&got[1]), window_sum_reference(short, 0), "past the end");
    let got = forced_with("window-edge-poison", target, &window_sum(), &job, options("force").setting("debug_oob_poison", "0x5a"));
    assert_eq!(bytes::to_u32s(&got[1]), window_sum_reference(short, 0x5a5a_5a5a), "past the end, poisoned");
}

/// Reads past a buffer's size but inside its memory allocation (issue 25): the layer's slot
/// covers the buffer's own range, so they read 0 (natively the allocation's bytes come back —
/// outside the range the spec makes valid, so undefined; README "How buffer device addresses
/// are emulated" says why the layer keeps the buffer's range).
fn reads_past_the_size_inside_the_allocation_read_zero(target: &str) {
    let input: Vec<u32> = (0..4).map(|i| i + 100).collect();
    let job = ComputeJob {
        buffers: vec![
            // 16 bytes in a 16 + 4096-byte allocation whose rest holds 0xAB.
            BufferSpec::device_address(0, bytes::from_u32s(&input)).allocation_tail(4096, 0xAB),
            BufferSpec::device_address(8, vec![0; 64 * 4]),
        ],
        ..Default::default()
    };
    let got = forced("past_size", target, &copy_scale(), &job);
    let out = bytes::to_u32s(&got[1]);
    assert_eq!(out[..4], [201, 203, 205, 207]);
    // Word 15 (byte 60) and every other word past the 16 bytes: read as 0 (0 * 2 + 1).
    assert!(out[4..].iter().all(|&v| v == 1), "{:?}", &out[4..20]);
}

fn linked_list_across_buffers(target: &str) {
    let node = |v: u32| words_data([v, 0, 0, 0]);
    let job = ComputeJob {
        buffers: vec![
            BufferSpec::device_address(0, node(10)),
            BufferSpec::device_address(8, node(200)),
            BufferSpec::device_address(16, node(3000)),
            BufferSpec::device_address(24, vec![0; 16]),
        ],
        ..Default::default()
    };
    let (want, got) = native_and_forced("list", target, &linked_list(), &job);
    assert_eq!(bytes::to_u32s(&want[3])[..2], [3210, 3000]);
    assert_eq!(got[3], want[3]);
    // The nodes' values are untouched; their `next` fields hold each run's own addresses: the
    // layer's are tagged and name the next node's slot.
    for (g, w) in got.iter().zip(&want).take(3) {
        assert_eq!(g[..8], w[..8]);
    }
    let next = |b: &[u8]| u64::from_le_bytes(b[8..16].try_into().unwrap());
    let (a_next, b_next) = (next(&got[0]), next(&got[1]));
    assert_eq!((decode_address(a_next).map(|d| d.1), decode_address(b_next).map(|d| d.1)), (Some(0), Some(0)), "{a_next:#x} {b_next:#x}");
    assert_ne!(a_next, b_next);
    assert_eq!(decode_address(next(&want[0])), None, "the driver's own address");
}

fn struct_of_pointers_in_device_memory(target: &str) {
    let a: Vec<u32> = (0..64).map(|i| i * 3).collect();
    let b: Vec<u32> = (0..64).map(|i| 1000 + i).collect();
    let job = ComputeJob {
        buffers: vec![
            BufferSpec::device_address(0, vec![0; 24]),
            BufferSpec::device_address(8, bytes::from_u32s(&a)),
            BufferSpec::device_address(16, bytes::from_u32s(&b)),
            BufferSpec::device_address(24, vec![0; 256]),
        ],
        ..Default::default()
    };
    let (want, got) = native_and_forced("table", target, &struct_of_pointers(), &job);
    assert_eq!(bytes::to_u32s(&want[3]), a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<_>>());
    assert_eq!(got[1..], want[1..]);
}

/// A compute shader object (VK_EXT_shader_object) using pointers: the layer pads its set layouts
/// with the table, gives it a layout and binds the table after vkCmdBindShadersEXT (twice: after
/// an unbind / rebind too). Without the validation layer: 1.3.239 predates shader objects.
fn shader_object_through_pointers(target: &str) {
    use polyfill_e2e::bindless::gpu::Scope;
    let o = ContextOptions::with_layer().setting("buffer_device_address", "force").setting("debug_target", target).shader_object(true);
    let ctx = Context::new(&o).unwrap_or_else(|e| panic!("{e}"));
    let so = ash::ext::shader_object::Device::new(ctx.instance(), ctx.device());
    let mut scope = Scope::new(&ctx).unwrap();
    let input: Vec<u32> = (0..64).map(|i| i * 5 + 1).collect();
    let src = scope.buffer_with(&bytes::from_u32s(&input)).unwrap();
    let dst = [scope.buffer(256).unwrap(), scope.buffer(256).unwrap()];
    assert!(dst.iter().all(|b| decode_address(b.address).is_some()), "layer addresses");
    let words = copy_scale();
    let ranges = [vk::PushConstantRange::default().stage_flags(vk::ShaderStageFlags::COMPUTE).size(16)];
    let shader = polyfill_e2e::bindless::shader_object::compute_shader(&so, &words, &[], &ranges).unwrap_or_else(|e| panic!("vkCreateShadersEXT: {e:?}"));
    // The layout push constants are given with: the shader's range (VUID-vkCmdPushConstants-offset-01796).
    let layout = unsafe { ctx.device().create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&ranges), None) }.unwrap();
    let push = |k: usize| [src.address.to_le_bytes(), dst[k].address.to_le_bytes()].concat();
    scope
        .submit(|d, cmd| unsafe {
            let c = [vk::ShaderStageFlags::COMPUTE];
            so.cmd_bind_shaders(cmd, &c, &[shader]);
            d.cmd_push_constants(cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, &push(0));
            d.cmd_dispatch(cmd, 1, 1, 1);
            so.cmd_bind_shaders(cmd, &c, &[vk::ShaderEXT::null()]);
            so.cmd_bind_shaders(cmd, &c, &[shader]);
            d.cmd_push_constants(cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, &push(1));
            d.cmd_dispatch(cmd, 1, 1, 1);
        })
        .unwrap();
    unsafe {
        so.destroy_shader(shader, None);
        ctx.device().destroy_pipeline_layout(layout, None);
    }
    let want: Vec<u32> = input.iter().map(|v| v * 2 + 1).collect();
    for b in &dst {
        assert_eq!(bytes::to_u32s(&b.read()), want);
    }
}

/// Pointers that name no live buffer: untagged, a free slot (null descriptor), a slot past the
/// array. Loads through them return 0 (the output is `0 * 2 + 1`) and nothing crashes (stores
/// past a buffer's end: out_of_range_*). (Where the driver checks bounds, the shader takes the
/// slot as the high word's low 16 bits, `shader_rewrite::bda`: the untagged pointer names slot
/// 0 and the one past the array slot 65535, both free here.)
fn garbage_pointers_read_zero(target: &str) {
    use shader_rewrite::bda::{encode_address, SLOT_BITS};
    for (what, garbage) in [("untagged", 0x1234u64), ("free slot", encode_address(60_000, 0)), ("slot past the array", encode_address((1 << SLOT_BITS) - 1, 16))] {
        let mut push = garbage.to_le_bytes().to_vec();
        push.extend([0u8; 8]);
        let job = ComputeJob { buffers: vec![BufferSpec::device_address(8, vec![0xAB; 256])], push_constants: push, ..Default::default() };
        let got = forced(&format!("garbage-{}", what.replace(' ', "-")), target, &copy_scale(), &job);
        assert_eq!(bytes::to_u32s(&got[0]), vec![1; 64], "{what} ({garbage:#x})");
    }
}

/// A stale address — its buffer destroyed, the memory it was bound to still alive and full of a
/// pattern — never reads the destroyed buffer's bytes: vkDestroyBuffer puts the slot's filler
/// back (a null descriptor; with `debug_target=core`, as on a device without `nullDescriptor`,
/// the layer's zeroed filler buffer, which the log names), and the read past the filler's 256
/// bytes (or past whatever buffer reuses the slot) gives 0. With the slot left as it was
/// (lavapipe keeps the old descriptor), the read returns the pattern.
fn stale_address_reads_zero(target: &str) {
    let ctx = Context::new(&options("force").setting("debug_target", target).messenger(true).setting("log_level", "info")).unwrap_or_else(|e| panic!("{e}"));
    let d = ctx.device();
    let stale = AddressBuffer::new(d, &ctx, 4096);
    let later = AddressBuffer::new(d, &ctx, 64);
    let address = stale.address(d) + 2048;
    unsafe {
        let p = d.map_memory(stale.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()).expect("host-visible memory");
        std::ptr::write_bytes(p.cast::<u8>(), 0xAB, 4096);
        d.unmap_memory(stale.memory);
        d.destroy_buffer(stale.buffer, None);
    }
    // Released slots are reused last-in first-out: the job's buffer takes the slot released
    // last, and the stale one stays free.
    later.destroy(d);
    let mut push = address.to_le_bytes().to_vec();
    push.extend([0u8; 8]);
    let job = ComputeJob { buffers: vec![BufferSpec::device_address(8, vec![0xCD; 256])], push_constants: push, ..Default::default() };
    let got = ctx.run_compute(&copy_scale(), &job).unwrap_or_else(|e| panic!("{e}"));
    unsafe { d.free_memory(stale.memory, None) };
    assert_eq!(bytes::to_u32s(&got[0]), vec![1; 64], "{target}: reads through the stale address {address:#x}");
    assert_eq!(ctx.validation_errors(), Vec::<String>::new(), "{target}");
    let table = ctx.layer_messages().into_iter().find(|m| m.id == "POLYFILL-descriptor-table" && m.text.contains("free slots hold")).expect("the table's message");
    let filler = table.text.contains("a layer-owned 256-byte buffer");
    assert_eq!(filler, target == "core", "{target}: {}", table.text);
    let no_null = ctx.layer_messages().iter().any(|m| m.id == "POLYFILL-no-null-descriptor");
    assert_eq!(no_null, target == "core", "{target}: the missing nullDescriptor is said");
}

/// Each case runs on the device's features and again with `debug_target=core` (uvec2 addresses,
/// word views); `#[attr]`s before a case apply to both.
macro_rules! both_targets {
    ($($(#[$attr:meta])* $case:ident => $device:ident, $core:ident;)*) => {$(
        #[test]
        $(#[$attr])*
        fn $device() {
            $case("device")
        }
        #[test]
        $(#[$attr])*
        fn $core() {
            $case("core")
        }
    )*};
}

both_targets! {
    loads_and_stores_through_push_constant_pointers => copy_device_target, copy_core_target;
    out_of_range_reads_zero_and_writes_are_dropped => out_of_range_device_target, out_of_range_core_target;
    reads_past_the_size_inside_the_allocation_read_zero => past_size_device_target, past_size_core_target;
    linked_list_across_buffers => linked_list_device_target, linked_list_core_target;
    window_past_the_end => window_device_target, window_core_target;
    struct_of_pointers_in_device_memory => struct_of_pointers_device_target, struct_of_pointers_core_target;
    shader_object_through_pointers => shader_object_device_target, shader_object_core_target;
    matrices_through_chains => matrices_device_target, matrices_core_target;
    chain_shapes => chain_shapes_device_target, chain_shapes_core_target;
    pointer_chasing_in_loops => chasing_device_target, chasing_core_target;
    neighbouring_loads => neighbours_device_target, neighbours_core_target;
    random_layouts => random_layouts_device_target, random_layouts_core_target;
}

/// Whole-element copies of every [`ELEMENTS`] type (vectors, 8/16/64-bit scalars, f64, structs,
/// arrays, both matrix majorities), native vs forced, byte for byte.
fn element_sweep(target: &str) {
    for e in ELEMENTS {
        let n = 64 * e.stride as usize;
        // Bit patterns of small integers: no float is a NaN whose payload a driver might change.
        let input: Vec<u8> = (0..n).map(|i| ((i * 37 + 11) % 251) as u8 & 0x3f).collect();
        let job = ComputeJob {
            buffers: vec![BufferSpec::device_address(0, input), BufferSpec::device_address(8, vec![0; n])],
            ..Default::default()
        };
        let name = format!("elements-{}", e.ty.trim_start_matches('%'));
        let (want, got) = native_and_forced(&name, target, &copy_elements(e), &job);
        assert_eq!(got, want, "{}: emulated vs native", e.name);
        assert!(want[1].iter().any(|b| *b != 0), "{}: the native copy wrote", e.name);
        // The lowering's own checks too (an application with pipelineRobustness): a buffer's
        // length counted in the one 8/16-byte unit every access is must still be its bytes.
        let checked = forced_with(&format!("{name}-checked"), target, &copy_elements(e), &job, options("force").pipeline_robustness(true));
        assert_eq!(checked, want, "{}: emulated with the lowering's checks vs native", e.name);
    }
}

/// Pointers chased in loops ([`chase_ring`]: phis of pointers in loop headers, stores of
/// pointers in a loop), native vs forced, with the driver's bounds checks and with the
/// lowering's own (where lavapipe's quirk takes a root's length in a subgroup loop), and a
/// pointer reloaded from memory around an aliasing write, against the sums the CPU computes.
fn pointer_chasing_in_loops(target: &str) {
    let job = ComputeJob {
        buffers: vec![BufferSpec::device_address(0, vec![0; 64 * 8 * 16]), BufferSpec::device_address(8, vec![0; 64 * 4])],
        ..Default::default()
    };
    let (want, got) = native_and_forced("chase-ring", target, &chase_ring(), &job);
    let sums: Vec<u32> = (0..64u32).map(|i| (0..12).map(|h| 8 * i + h % 8 + 1).sum()).collect();
    assert_eq!(bytes::to_u32s(&want[1]), sums, "native");
    assert_eq!(got[1], want[1], "emulated vs native");
    let checked = forced_with("chase-ring-checked", target, &chase_ring(), &job, options("force").pipeline_robustness(true));
    assert_eq!(checked[1], want[1], "emulated with the lowering's checks vs native");
    // A pointer reloaded from memory, with an aliasing write between ([`reloaded_pointers`]).
    let job = ComputeJob {
        buffers: vec![BufferSpec::device_address(0, vec![0; 128 * 16]), BufferSpec::device_address(8, vec![0; 64 * 4])],
        ..Default::default()
    };
    let (want, got) = native_and_forced("reloaded", target, &reloaded_pointers(), &job);
    let sums: Vec<u32> = (0..64u32).map(|i| (20 + i) + 100 * (20 + i) + 10000 * (10 + i)).collect();
    assert_eq!(bytes::to_u32s(&want[1]), sums, "native");
    assert_eq!(got[1], want[1], "reloaded pointers: emulated vs native");
}

/// Neighbouring members of one record loaded in one block ([`neighbour_loads`]), native vs
/// forced byte for byte: where lavapipe checks bounds per component (the device target) the
/// layer reads `a` to `d`, `e` and `f`, and `n` (a pointer), `g`, `h` as one 16-byte unit each —
/// 9 loads in the module it hands the driver (the push constants, gl_GlobalInvocationID, the
/// three units, `a` and `c` again after the stores, `b` through another chain) instead of 15 —
/// and every word must still be the native one; with the lowering's own checks (core) nothing
/// is combined.
fn neighbouring_loads(target: &str) {
    let n = 64;
    let recs: Vec<u8> = (0..n * 48).map(|i| (i * 29 + 7) as u8).collect();
    let job = ComputeJob { buffers: vec![BufferSpec::device_address(0, recs), BufferSpec::device_address(8, vec![0; n * 15 * 4])], ..Default::default() };
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let want = native.run_compute(&neighbour_loads(), &job).unwrap_or_else(|e| panic!("native: {e}"));
    drop(native);
    let (got, module) = forced_rewritten("neighbours", target, &neighbour_loads(), &job, options("force"));
    assert_eq!(got[1], want[1], "{target}: emulated vs native");
    if target == "device" {
        assert_eq!(count_opcode(&module, 61), 9, "loads in the rewritten module (the groups not combined?)");
    }
}

/// How many instructions of `opcode` `words` (a module) holds.
fn count_opcode(words: &[u32], opcode: u32) -> usize {
    let mut at = 5;
    let mut n = 0;
    while at < words.len() {
        n += (words[at] & 0xffff == opcode) as usize;
        at += ((words[at] >> 16) as usize).max(1);
    }
    n
}

/// Matrices, their columns and their components through access chains into the struct that
/// holds them ([`matrix_chains`]: column- and row-major, 32- and 16-bit floats), native vs
/// forced, byte for byte: the accesses must use the member's MatrixStride and RowMajor, which
/// only the chain carries.
fn matrices_through_chains(target: &str) {
    for (row_major, bits) in [(false, 32), (true, 32), (false, 16), (true, 16)] {
        let n = 64 * matrix_chains_element(bits) as usize;
        let input: Vec<u8> = (0..n).map(|i| ((i * 37 + 11) % 251) as u8 & 0x3f).collect();
        let job = ComputeJob { buffers: vec![BufferSpec::device_address(0, input), BufferSpec::device_address(8, vec![0; n])], ..Default::default() };
        let what = format!("{}-major f{bits}", if row_major { "row" } else { "column" });
        let name = format!("matrix-chains-{}-{bits}", if row_major { "row" } else { "col" });
        let (want, got) = native_and_forced(&name, target, &matrix_chains(row_major, bits), &job);
        assert!(want[1].iter().any(|b| *b != 0), "{what}: the native shader wrote");
        let element = matrix_chains_element(bits) as usize;
        if let Some(at) = (0..n).find(|&k| got[1][k] != want[1][k]) {
            let e = at - at % element;
            panic!("{what}: emulated vs native differ first at byte {at} (element {}, byte {} of it): {:?} vs {:?}", e / element, at - e, &got[1][e..e + element], &want[1][e..e + element]);
        }
        assert_eq!(got, want, "{what}: emulated vs native");
    }
}

/// Every access-chain shape of [`chain_paths`] (dynamic indices into vectors, column- and
/// row-major matrices, arrays, arrays of matrices, structs in arrays; chains on chains;
/// OpPtrAccessChain), a load and a store each, and every way [`pointer_flows`] passes pointers
/// around first (calls, selects, phis, Function variables, integers; OpCopyMemory, whole
/// structs, atomics), and the 8/16-bit shapes of [`small_chain_paths`] (sub-word members,
/// vectors and arrays, dynamic components, a whole struct), native vs forced, byte for byte.
fn chain_shapes(target: &str) {
    let mut failed = vec![];
    for (element, shaders) in [(256, chain_paths().into_iter().chain(pointer_flows()).chain(pointer_flows_spirv13()).collect::<Vec<_>>()), (32, small_chain_paths())] {
        let n = 64 * element;
        let input: Vec<u8> = (0..n).map(|i| ((i * 37 + 11) % 251) as u8 & 0x3f).collect();
        let job = ComputeJob { buffers: vec![BufferSpec::device_address(0, input), BufferSpec::device_address(8, vec![0; n])], ..Default::default() };
        for (name, spirv) in shaders {
            let (want, got) = native_and_forced(&format!("chain-{}", name.replace(' ', "-")), target, &spirv, &job);
            assert!(want[1].iter().any(|b| *b != 0), "{name}: the native shader wrote");
            // And with the lowering's own bounds checks (an application with pipelineRobustness).
            let checked = forced_with(&format!("chain-{}-checked", name.replace(' ', "-")), target, &spirv, &job, options("force").pipeline_robustness(true));
            for (how, got) in [("", &got), (" (the lowering's checks)", &checked)] {
                if let Some(at) = (0..n).find(|&k| got[1][k] != want[1][k]) {
                    failed.push(format!("{name}{how}: first difference at byte {} of element {}", at % element, at / element));
                }
            }
        }
    }
    assert!(failed.is_empty(), "emulated vs native:\n{}", failed.join("\n"));
}

/// Generated cases of [`polyfill_e2e::bda_layouts`]: random nested layouts (padded strides,
/// both matrix majorities, 64-bit scalars) and random chains into them, each value copied from
/// `src[i]` to `dst[i]`, native vs forced (with the driver's bounds checks, and every third
/// case also with the lowering's own), byte for byte. `BDA_RANDOM_CASES` cases (default 24;
/// 1000 under `POLYFILL_FULL_SWEEP=1`) from seed `BDA_RANDOM_SEED` (default 1) on; a failure
/// names its seed and layout.
fn random_layouts(target: &str) {
    let mut failed = vec![];
    for seed in bda_layouts::seeds() {
        let case = bda_layouts::Case::new(seed);
        eprintln!("seed {seed}: {}", case.describe()); // shown if the shader does not validate
        let spirv = case.shader();
        let element = bda_layouts::element_stride(&case) as usize;
        let n = 64 * element;
        let job = ComputeJob { buffers: vec![BufferSpec::device_address(0, bda_layouts::input(&case)), BufferSpec::device_address(8, vec![0; n])], ..Default::default() };
        let (want, got) = native_and_forced(&format!("random-{seed}"), target, &spirv, &job);
        assert!(want[1].iter().any(|b| *b != 0), "seed {seed}: the native shader wrote ({})", case.describe());
        let checked = (seed % 3 == 0).then(|| forced_with(&format!("random-{seed}-checked"), target, &spirv, &job, options("force").pipeline_robustness(true)));
        for (how, got) in [("", Some(&got)), (" (the lowering's checks)", checked.as_ref())] {
            if let Some(at) = got.and_then(|got| (0..n).find(|&k| got[1][k] != want[1][k])) {
                failed.push(format!("seed {seed}{how}: first difference at byte {} of element {}: {}", at % element, at / element, case.describe()));
            }
        }
    }
    assert!(failed.is_empty(), "emulated vs native:\n{}", failed.join("\n"));
}

/// A pointer 16 bytes below its buffer, accessed back inside it (`polyfill_e2e::bda::below_the_buffer`):
/// natively and through the layer every invocation reads its own input element.
fn pointer_below_its_buffer(target: &str) {
    let input: Vec<u32> = (0..64).map(|i| i * 7 + 1).collect();
    let job = input_output_job(&input);
    let (want, got) = native_and_forced("below", target, &below_the_buffer(), &job);
    assert_eq!(bytes::to_u32s(&want[1]), input, "native");
    assert_eq!(bytes::to_u32s(&got[1]), input, "through the layer");
}

/// 64 atomic adds on one counter through a pointer, and stores through OpPtrAccessChain.
fn atomics_and_pointer_arithmetic(target: &str) {
    let job = ComputeJob { buffers: vec![BufferSpec::device_address(0, vec![0; 65 * 4])], ..Default::default() };
    let (want, got) = native_and_forced("atomics", target, &atomics_and_ptr_chains(), &job);
    let words = bytes::to_u32s(&want[0]);
    assert_eq!(words[0], (0..64).sum::<u32>());
    assert_eq!(words[1..], (0..64).collect::<Vec<u32>>());
    assert_eq!(got, want);
}

/// A raw access chain on a physical base: both emulations at once (lavapipe has no raw chains,
/// so the expected values come from the CPU).
fn raw_chain_on_a_pointer(target: &str) {
    let input: Vec<u32> = (0..256).map(|i| i * 3 + 7).collect();
    let job = input_output_job(&input);
    let o = ContextOptions::raw_access_chains().setting("buffer_device_address", "force").validation(true);
    let got = forced_with("raw", target, &raw_chain_on_pointer(), &job, o);
    assert_eq!(bytes::to_u32s(&got[1]), (0..64).map(|i| input[4 * i + 1]).collect::<Vec<_>>());
}

/// A draw whose vertex shader reads positions and whose fragment shader reads per-pixel colours
/// through pointers (the table bound before the draw, two stages rewritten), natively and
/// through the layer: the same image, the expected colours, validation clean (lavapipe has no
/// subgroup operations in vertex shaders: the layer rewrites that stage without its
/// array-length workaround, crate subgroup_stages).
fn draw_through_pointers(target: &str) {
    use polyfill_e2e::bindless::gpu::{Scope, ALL_STAGES};
    const W: u32 = 32;
    let positions: Vec<f32> = [[-1.0, -1.0], [3.0, -1.0], [-1.0, 3.0]].iter().flat_map(|[x, y]| [*x, *y, 0.0, 1.0]).collect();
    let colors: Vec<u32> = (0..W * W).map(|i| i.wrapping_mul(2654435761) | 0xff00_0000).collect();
    let (vs, fs) = (graphics_vs(), graphics_fs(W));
    let draw = |o: &ContextOptions| {
        let ctx = Context::new(o).unwrap_or_else(|e| panic!("{e}"));
        let mut scope = Scope::new(&ctx).unwrap();
        let pos = scope.buffer_with(&positions.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let col = scope.buffer_with(&bytes::from_u32s(&colors)).unwrap();
        let target = scope.image(vk::Format::R8G8B8A8_UNORM, W, W, vk::ImageUsageFlags::COLOR_ATTACHMENT, None, vk::ImageLayout::TRANSFER_SRC_OPTIMAL).unwrap();
        let (rp, fb) = scope.render_target(&target).unwrap();
        let pl = scope.pipeline_layout(&[], 16).unwrap();
        let pipe = scope.graphics_pipeline(&vs, &fs, pl, rp, W, W).unwrap();
        let push = [pos.address.to_le_bytes(), col.address.to_le_bytes()].concat();
        scope
            .submit(|d, cmd| unsafe {
                let clear = [vk::ClearValue { color: vk::ClearColorValue { uint32: [0; 4] } }];
                let area = vk::Rect2D { offset: vk::Offset2D { x: 0, y: 0 }, extent: vk::Extent2D { width: W, height: W } };
                let rpbi = vk::RenderPassBeginInfo::default().render_pass(rp).framebuffer(fb).render_area(area).clear_values(&clear);
                d.cmd_begin_render_pass(cmd, &rpbi, vk::SubpassContents::INLINE);
                d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, pipe);
                d.cmd_push_constants(cmd, pl, ALL_STAGES, 0, &push);
                d.cmd_draw(cmd, 3, 1, 0, 0);
                d.cmd_end_render_pass(cmd);
            })
            .unwrap();
        let image = scope.read_image(&target, 4).unwrap();
        drop(scope);
        assert_eq!(ctx.validation_errors(), Vec::<String>::new());
        image
    };
    let native = draw(&ContextOptions::native().validation(true));
    assert_eq!(native, bytes::from_u32s(&colors), "native image = the colours");
    let emulated = draw(&options("force").setting("debug_target", target));
    assert_eq!(emulated, native);
}

both_targets! {
    garbage_pointers_read_zero => garbage_pointers_device_target, garbage_pointers_core_target;
    stale_address_reads_zero => stale_address_device_target, stale_address_core_target;
    draw_through_pointers => draw_through_pointers_device_target, draw_through_pointers_core_target;
    raw_chain_on_a_pointer => raw_chain_on_a_pointer_device_target, raw_chain_on_a_pointer_core_target;
    element_sweep => element_sweep_device_target, element_sweep_core_target;
    atomics_and_pointer_arithmetic => atomics_and_pointer_arithmetic_device_target, atomics_and_pointer_arithmetic_core_target;
    pointer_below_its_buffer => pointer_below_its_buffer_device_target, pointer_below_its_buffer_core_target;
}

/// Buffers created, bound (alternately with vkBindBufferMemory and vkBindBufferMemory2),
/// addressed and destroyed on 4 threads while 2 more churn bindless handles in the same table:
/// concurrently live buffers never share a slot, addresses are stable while live, and the
/// validation layer below reports nothing. (Its 1.3.239 thread checks did not catch unserialized
/// writes into the shared set either; the layer serializes them by construction,
/// `TableDevice::write`.)
#[test]
fn concurrent_buffers_and_bindless_handles_share_the_table() {
    use std::collections::HashSet;
    use std::sync::Mutex;
    // Handles emulated (lavapipe's default; forced for drivers that have them): the layer's.
    let o = ContextOptions::bindless().setting("buffer_device_address", "force").setting("image_view_handle", "force").validation(true);
    let ctx = Context::new(&o).unwrap_or_else(|e| panic!("{e}"));
    let live: Mutex<HashSet<u32>> = Mutex::new(HashSet::new());
    std::thread::scope(|s| {
        s.spawn(|| polyfill_e2e::bindless::cases::lifetime(&ctx, 2, 150).unwrap_or_else(|e| panic!("{e}")));
        for t in 0..4 {
            let (ctx, live) = (&ctx, &live);
            s.spawn(move || {
                let d = ctx.device();
                for round in 0..150 {
                    let b = if (round + t) % 2 == 0 { AddressBuffer::new(d, ctx, 64 + round as u64) } else { AddressBuffer::many(d, ctx, 1).remove(0) };
                    let a = b.address(d);
                    let (slot, offset) = decode_address(a).unwrap_or_else(|| panic!("thread {t} round {round}: {a:#x}"));
                    assert_eq!(offset, 0);
                    assert!(live.lock().unwrap().insert(slot), "slot {slot} handed out twice");
                    assert_eq!(b.address(d), a, "stable while live");
                    live.lock().unwrap().remove(&slot);
                    b.destroy(d);
                }
            });
        }
    });
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

/// `(maxBoundDescriptorSets, per-stage and per-set update-after-bind storage buffers,
/// all-pools budget, per-stage update-after-bind resources)` as the application sees them.
fn descriptor_limits(ctx: &Context) -> (u32, u32, u32, u32, u32) {
    let mut v12 = vk::PhysicalDeviceVulkan12Properties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut v12);
    unsafe { ctx.instance().get_physical_device_properties2(ctx.physical_device(), &mut p2) };
    (
        p2.properties.limits.max_bound_descriptor_sets,
        v12.max_per_stage_descriptor_update_after_bind_storage_buffers,
        v12.max_descriptor_set_update_after_bind_storage_buffers,
        v12.max_update_after_bind_descriptors_in_all_pools,
        v12.max_per_stage_update_after_bind_resources,
    )
}

/// Issue 25: where the emulation is active the reported limits leave room for the table — the
/// table's set (one set less than the driver's) and its storage-buffer array (65536 on
/// lavapipe) in every storage-buffer limit and the all-pools budget — so that no layout valid
/// under the reported limits is refused. `auto` (native addresses) reserves only the bindless
/// arrays (VK_NVX_image_view_handle emulated: lavapipe's default, forced here for drivers that
/// have it).
#[test]
fn limits_reserve_the_table() {
    let native = descriptor_limits(&Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}")));
    let with_handles = |mode: &str| Context::new(&options(mode).setting("image_view_handle", "force")).unwrap_or_else(|e| panic!("{e}"));
    let auto = descriptor_limits(&with_handles("auto"));
    let forced = descriptor_limits(&with_handles("force"));
    assert_eq!(auto.0, native.0 - 1, "the table's set (bindless)");
    assert_eq!((auto.1, auto.2), (native.1, native.2), "no storage-buffer array with native addresses");
    assert_eq!(forced.0, native.0 - 1, "one set for both users");
    let array = native.1 - forced.1;
    assert!(array > 0 && native.2 - forced.2 == array, "{native:?} -> {forced:?}");
    assert_eq!(auto.3 - forced.3, array, "the array comes out of the all-pools budget too: {auto:?} vs {forced:?}");
    println!("storage-buffer array: {array} slots; maxBoundDescriptorSets {} -> {}", native.0, forced.0);
}

/// A pipeline using pointers whose layout sits exactly at the reported limits — every set
/// (`maxBoundDescriptorSets`) and the last one an update-after-bind heap of as many storage
/// buffers as a stage, a layout and the stage's resources may have — is created and runs (the
/// copy through push-constant pointers), the validation layer below reporting nothing; also
/// with bindless handles emulated beside the addresses.
#[test]
fn pipelines_using_pointers_at_the_reported_limits_work() {
    // With bindless handles emulated too (both arrays in the table): the same holds.
    for o in [options("force"), options("force").setting("image_view_handle", "force")] {
        let ctx = Context::new(&o).unwrap_or_else(|e| panic!("{e}"));
        // Every resource of a stage counts once more in maxPerStageUpdateAfterBindResources,
        // which the layer lowers by all its arrays.
        let (sets, per_stage, per_set, _, per_stage_resources) = descriptor_limits(&ctx);
        let count = per_stage.min(per_set).min(per_stage_resources);
        let input: Vec<u32> = (0..64).map(|i| i * 3 + 1).collect();
        let mut job = ComputeJob { groups: [1, 1, 1], ..input_output_job(&input) };
        job.heap = Some(polyfill_e2e::vk::Heap { sets, ty: vk::DescriptorType::STORAGE_BUFFER, count });
        let out = ctx.run_compute(&copy_scale(), &job).unwrap_or_else(|e| panic!("{sets} sets, {count} storage buffers: {e}"));
        let want: Vec<u32> = input.iter().map(|v| v * 2 + 1).collect();
        assert_eq!(bytes::to_u32s(&out[1]), want);
        assert_eq!(ctx.validation_errors(), Vec::<String>::new());
    }
}

/// Beyond the reported limits (the driver's: valid for the validation layer below, which sees
/// the driver's limits, but not for the limits the layer reports) a layout has no room for the
/// table: a pipeline using pointers with it is refused, the log naming the limit.
#[test]
fn pipelines_using_pointers_beyond_the_reported_limits_are_refused() {
    const NAME: &str = "pipelines_using_pointers_beyond_the_reported_limits_are_refused";
    if child::is_child(NAME) {
        let ctx = context("force");
        let d = ctx.device();
        let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
        let (_, per_stage, per_set, _, _) = descriptor_limits(&native);
        drop(native);
        let n = per_stage.min(per_set);
        let binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(n)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)];
        let flags = [vk::DescriptorBindingFlags::UPDATE_AFTER_BIND | vk::DescriptorBindingFlags::PARTIALLY_BOUND];
        let mut flags_info = vk::DescriptorSetLayoutBindingFlagsCreateInfo::default().binding_flags(&flags);
        let ci = vk::DescriptorSetLayoutCreateInfo::default()
            .flags(vk::DescriptorSetLayoutCreateFlags::UPDATE_AFTER_BIND_POOL)
            .bindings(&binding)
            .push_next(&mut flags_info);
        let set_layout = unsafe { d.create_descriptor_set_layout(&ci, None) }.unwrap();
        let ranges = [vk::PushConstantRange::default().stage_flags(vk::ShaderStageFlags::COMPUTE).size(16)];
        let sets = [set_layout];
        let layout = unsafe { d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets).push_constant_ranges(&ranges), None) }.unwrap();
        let module = ctx.create_shader_module(&copy_scale()).unwrap();
        let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(c"main");
        let r = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)], None) };
        assert_eq!(r.map_err(|(p, e)| (p[0], e)).unwrap_err(), (vk::Pipeline::null(), vk::Result::ERROR_INVALID_SHADER_NV));
        unsafe {
            ctx.destroy_shader_module(module);
            d.destroy_pipeline_layout(layout, None);
            d.destroy_descriptor_set_layout(set_layout, None);
        }
        assert_eq!(ctx.validation_errors(), Vec::<String>::new());
        return;
    }
    let (_, text) = child::spawn_logged(NAME, "bda_refused", &[]);
    let refusals: Vec<&str> = text.lines().filter(|l| l.contains("refusing the pipeline")).collect();
    assert_eq!(refusals.len(), 1, "{text}");
    assert!(refusals[0].contains("maxPerStageDescriptorUpdateAfterBindStorageBuffers is"), "{}", refusals[0]);
}

/// vkGetDeviceBufferMemoryRequirements (Vulkan 1.3) with device-address usage answers for the
/// buffer the driver really gets (STORAGE_BUFFER usage), and the validation layer below sees no
/// device-address usage there either.
#[test]
fn device_buffer_memory_requirements_match_created_buffers() {
    let ctx = context("force");
    let d = ctx.device();
    let ci = vk::BufferCreateInfo::default().size(1000).usage(vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS | vk::BufferUsageFlags::TRANSFER_SRC);
    let mut queried = vk::MemoryRequirements2::default();
    unsafe { d.get_device_buffer_memory_requirements(&vk::DeviceBufferMemoryRequirements::default().create_info(&ci), &mut queried) };
    let buffer = unsafe { d.create_buffer(&ci, None) }.unwrap();
    let actual = unsafe { d.get_buffer_memory_requirements(buffer) };
    unsafe { d.destroy_buffer(buffer, None) };
    assert_eq!(
        (queried.memory_requirements.size, queried.memory_requirements.alignment, queried.memory_requirements.memory_type_bits),
        (actual.size, actual.alignment, actual.memory_type_bits)
    );
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

/// The last byte of a buffer whose size is not whole words (43 bytes, in an allocation with
/// room after it), loaded and stored through pointers under `debug_target=core` (no 8-bit
/// view: the rewritten shader counts the buffer in words and moves whole words): natively and
/// through the layer the same bytes, as the slot's descriptor names a whole-word alias of the
/// buffer on its memory (word_alias.rs); and with the device's features too.
#[test]
fn last_bytes_of_a_buffer_that_is_not_whole_words() {
    let input: Vec<u8> = (0..43u8).map(|b| b.wrapping_mul(37).wrapping_add(11)).collect();
    let job = ComputeJob {
        buffers: vec![
            BufferSpec::device_address(0, input.clone()).allocation_tail(64, 0),
            BufferSpec::device_address(8, vec![0xEE; 43]).allocation_tail(64, 0),
        ],
        push_constants: [vec![0u8; 16], 43u32.to_le_bytes().to_vec(), vec![0; 4]].concat(),
        ..Default::default()
    };
    for target in ["core", "device"] {
        let (want, got) = native_and_forced("last-byte", target, &copy_last_byte(), &job);
        assert_eq!(want[1][42], input[42], "natively");
        assert_eq!(got, want, "{target}: emulated vs native");
    }
}

/// Open file descriptors and threads of this process (drivers hold device files and worker
/// threads per device: lavapipe a queue thread).
fn fds_and_threads() -> (usize, usize) {
    let count = |dir: &str| std::fs::read_dir(dir).map_or(0, |d| d.count());
    (count("/proc/self/fd"), count("/proc/self/task"))
}

/// Devices created and destroyed through the layer with the emulation forced give back what
/// the driver gave them: after 12 contexts that each ran a kernel through pointers, this
/// process holds no more file descriptors or threads than after 12 native ones, and a native
/// context still works after them.
#[test]
fn contexts_give_back_the_drivers_resources() {
    // In a child process of its own: other tests' contexts would come and go beside it.
    const NAME: &str = "contexts_give_back_the_drivers_resources";
    if !child::is_child(NAME) {
        let out = child::spawn(NAME, &[], None);
        assert!(out.success(), "child failed:\n{}\n{}", out.stdout, out.stderr);
        return;
    }
    let input: Vec<u32> = (0..64).collect();
    let job = input_output_job(&input);
    let cycle = |o: &ContextOptions| {
        let ctx = Context::new(o).unwrap_or_else(|e| panic!("{e}"));
        let got = ctx.run_compute(&copy_scale(), &job).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bytes::to_u32s(&got[1]), input.iter().map(|v| v * 2 + 1).collect::<Vec<_>>());
    };
    let mut held = vec![];
    for (what, o) in [("native", ContextOptions::native()), ("forced", options("force")), ("native again", ContextOptions::native())] {
        for _ in 0..12 {
            cycle(&o);
        }
        held.push((what, fds_and_threads()));
    }
    println!("(open file descriptors, threads) after each batch of 12 contexts: {held:?}");
    let (base, forced, after) = (held[0].1, held[1].1, held[2].1);
    assert!(forced.0 <= base.0 + 2 && forced.1 <= base.1 + 2 && after.0 <= base.0 + 2 && after.1 <= base.1 + 2, "resources grow: {held:?}");
}
