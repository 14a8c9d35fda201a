//! vkCreateDevice with a feature chain like vkd3d-proton's (issue 14): every feature structure
//! the device reports, queried with vkGetPhysicalDeviceFeatures2, newest sTypes in front of
//! Vulkan11/12/13/14Features, every supported bit on, passed to vkCreateDevice as queried.
//! Through the layer, the chain holds the layer's emulated bits (storageInputOutput16 on
//! lavapipe) and structures (VkPhysicalDeviceRawAccessChainsFeaturesNV): the layer must take
//! them out wherever they sit, also behind a structure newer than its own table.
//!
//! Also the table's coverage: every structure the driver can report is in the layer's
//! generated size table (`layer/src/struct_sizes.rs`, included here), checked against the
//! bytes the driver writes.

#[path = "../../layer/src/struct_sizes.rs"]
#[allow(dead_code)]
mod struct_sizes;

use polyfill_e2e::ash::vk;
use polyfill_e2e::{Context, ContextOptions};
use std::collections::{BTreeSet, HashSet};
use std::ffi::{c_void, CString};
use struct_sizes::{struct_size, DEFINED_BY, EXTENSIONS, FEATURE_STRUCTS, REGISTRY_VERSION};

const VULKAN_11_FEATURES: i32 = 49;
/// `VkPhysicalDeviceVulkan11/12/13/14Features`: each covers the structures its version promoted.
const AGGREGATES: [i32; 4] = [49, 51, 53, 55];
/// A structure newer than any registry (the "newer still" case): sType, pNext, three bools.
const NEWER_STILL: i32 = 1_000_999_000;
/// Byte offset of `storageInputOutput16` in `VkPhysicalDeviceVulkan11Features` (sType, pNext,
/// storageBuffer16BitAccess, uniformAndStorageBuffer16BitAccess, storagePushConstant16).
const STORAGE_INPUT_OUTPUT_16: usize = 28;

/// Structures for `owner` (an extension or `VK_VERSION_1_x`), empty if the registry lacks it.
fn defined_by(owner: &str) -> &'static [i32] {
    DEFINED_BY.iter().find(|(o, _)| *o == owner).map_or(&[], |(_, t)| t)
}

fn core_versions(minor: u32) -> impl Iterator<Item = String> {
    (1..=minor).map(|m| format!("VK_VERSION_1_{m}"))
}

/// The device extensions `ctx` reports.
fn extension_names(ctx: &Context) -> Vec<String> {
    ctx.device_extensions().unwrap().into_iter().map(|(n, _)| n).collect()
}

/// The extensions to enable: all reported but the swapchain and presentation ones, which need
/// instance extensions (VK_KHR_surface...) this test does not enable
/// (VUID-vkCreateDevice-ppEnabledExtensionNames-01387).
fn extensions_to_enable(ctx: &Context) -> Vec<String> {
    extension_names(ctx).into_iter().filter(|e| !e.contains("swapchain") && !e.contains("_present")).collect()
}

/// The feature structures of `owners`, without those an aggregate covers at `minor`
/// (VUID-VkDeviceCreateInfo-pNext-02829/02830/06532/10360), newest sType first.
fn feature_chain_types(owners: &[String], minor: u32) -> Vec<i32> {
    let features: HashSet<i32> = FEATURE_STRUCTS.iter().copied().collect();
    let covered: HashSet<i32> = core_versions(minor).flat_map(|v| defined_by(&v).iter().copied()).filter(|t| !AGGREGATES.contains(t)).collect();
    let mut types: BTreeSet<i32> = owners.iter().flat_map(|o| defined_by(o).iter().copied()).collect();
    types.extend(AGGREGATES.iter().take(minor as usize));
    types.into_iter().rev().filter(|t| features.contains(t) && !covered.contains(t)).collect()
}

/// One structure of a [`FeatureChain`].
struct Node {
    s_type: i32,
    /// Storage, 8-byte aligned; `None` for a node that lives elsewhere (a read-only page).
    owned: Option<Box<[u64]>>,
    at: *mut c_void,
}

/// A pNext chain of raw structures behind a `VkPhysicalDeviceFeatures2`.
struct FeatureChain {
    f2: Box<vk::PhysicalDeviceFeatures2<'static>>,
    nodes: Vec<Node>,
}

impl FeatureChain {
    fn new(types: &[i32]) -> FeatureChain {
        let mut chain = FeatureChain { f2: Box::default(), nodes: Vec::new() };
        for &t in types {
            let size = struct_size(t).unwrap_or_else(|| panic!("sType {t} missing from the table"));
            let mut buf = vec![0u64; size.div_ceil(8)].into_boxed_slice();
            buf[0] = t as u32 as u64;
            let at = buf.as_mut_ptr() as *mut c_void;
            chain.nodes.push(Node { s_type: t, owned: Some(buf), at });
        }
        chain.relink();
        chain
    }

    /// The node of `s_type`.
    fn node(&self, s_type: i32) -> *mut c_void {
        self.nodes.iter().find(|n| n.s_type == s_type).expect("node").at
    }

    /// Inserts a node living at `at` (not owned; its pNext already points at the node of sType
    /// `before`) in front of that node.
    fn insert_before(&mut self, before: i32, s_type: i32, at: *mut c_void) {
        let i = self.nodes.iter().position(|n| n.s_type == before).expect("node to insert before");
        self.nodes.insert(i, Node { s_type, owned: None, at });
        self.relink();
    }

    fn relink(&mut self) {
        let mut next: *mut c_void = std::ptr::null_mut();
        for node in self.nodes.iter_mut().rev() {
            if node.owned.is_some() {
                // SAFETY: an owned node is at least a VkBaseOutStructure.
                unsafe { (*(node.at as *mut vk::BaseOutStructure)).p_next = next as *mut _ };
            }
            next = node.at;
        }
        self.f2.p_next = next;
    }

    fn head(&self) -> *const c_void {
        &*self.f2 as *const vk::PhysicalDeviceFeatures2 as *const c_void
    }

    fn query(&mut self, ctx: &Context) {
        unsafe { ctx.instance().get_physical_device_features2(ctx.physical_device(), &mut self.f2) };
    }

    fn bytes_mut(&mut self, s_type: i32) -> &mut [u8] {
        let node = self.nodes.iter_mut().find(|n| n.s_type == s_type).expect("node");
        let buf = node.owned.as_mut().expect("owned node");
        // SAFETY: plain data viewed as bytes.
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut u8, buf.len() * 8) }
    }
}

/// vkCreateDevice with `chain` as pNext and `extensions` enabled; destroys the device again.
fn create_device(ctx: &Context, chain: &FeatureChain, extensions: &[String]) -> vk::Result {
    let names: Vec<CString> = extensions.iter().map(|e| CString::new(e.as_str()).unwrap()).collect();
    let name_ptrs: Vec<*const i8> = names.iter().map(|c| c.as_ptr()).collect();
    let priorities = [1.0f32];
    let queue = [vk::DeviceQueueCreateInfo::default().queue_family_index(ctx.queue_family()).queue_priorities(&priorities)];
    let mut info = vk::DeviceCreateInfo::default().queue_create_infos(&queue).enabled_extension_names(&name_ptrs);
    info.p_next = chain.head();
    match unsafe { ctx.instance().create_device(ctx.physical_device(), &info, None) } {
        Ok(device) => {
            unsafe { device.destroy_device(None) };
            vk::Result::SUCCESS
        }
        Err(e) => e,
    }
}

fn context(layer: bool, validation: bool, minor: u32) -> Context {
    let options = ContextOptions {
        enable_layer: layer,
        api_version: vk::make_api_version(0, 1, minor, 0),
        ..ContextOptions::native().validation(validation)
    };
    Context::new(&options).unwrap_or_else(|e| panic!("{e}"))
}

fn device_minor(ctx: &Context) -> u32 {
    vk::api_version_minor(ctx.properties().api_version).min(4)
}

/// The queried vkd3d-proton-like chain of everything `ctx` reports, with its extensions.
fn vkd3d_like_chain(ctx: &Context, keep: impl Fn(i32) -> bool, extensions: Vec<String>) -> (FeatureChain, Vec<String>) {
    let minor = device_minor(ctx);
    let types: Vec<i32> = feature_chain_types(&extensions, minor).into_iter().filter(|t| keep(*t)).collect();
    let mut chain = FeatureChain::new(&types);
    chain.query(ctx);
    (chain, extensions)
}

/// A `NEWER_STILL` structure with its bools set and `p_next`, at `at`.
fn write_newer_still(at: *mut u8, p_next: *mut c_void) {
    let mut node = [0u8; 32];
    node[..4].copy_from_slice(&NEWER_STILL.to_le_bytes());
    node[8..16].copy_from_slice(&(p_next as usize).to_le_bytes());
    for b in 0..3 {
        node[16 + 4 * b] = 1;
    }
    unsafe { std::ptr::copy_nonoverlapping(node.as_ptr(), at, node.len()) };
}

/// Control: lavapipe itself refuses storageInputOutput16, so a device created through the layer
/// with it set proves the layer cleared it.
#[test]
fn driver_refuses_storage_input_output_16() {
    let ctx = context(false, false, 3);
    let mut chain = FeatureChain::new(&[VULKAN_11_FEATURES]);
    chain.bytes_mut(VULKAN_11_FEATURES)[STORAGE_INPUT_OUTPUT_16] = 1;
    assert_eq!(create_device(&ctx, &chain, &[]), vk::Result::ERROR_FEATURE_NOT_PRESENT, "lavapipe now has storageInputOutput16: pick another emulated bit");
}

/// The driver reports nothing the table lacks: every extension is in the registry the table
/// was generated from, every structure of those extensions and of the device's core versions
/// has a size, and every feature structure is exactly as large as the bytes the driver writes
/// into a sentinel-filled buffer (padding aside). Fails when a newer driver or registry
/// appears: regenerate with layer/tools/gen_struct_sizes.py.
#[test]
fn table_covers_every_structure_the_driver_reports() {
    let ctx = context(false, false, 4);
    let minor = device_minor(&ctx);
    assert!(vk::api_version_minor(ctx.properties().api_version) <= 4, "device API newer than 1.4");
    let mut owners = extension_names(&ctx);
    // NVIDIA's driver also lists private extensions no registry defines (so no application can
    // chain their structures): not the table's to know.
    const UNREGISTERED: [&str; 2] = ["VK_NV_disk_cache_utils", "VK_NV_internal_nvpresent"];
    owners.retain(|e| !UNREGISTERED.contains(&e.as_str()));
    let unknown: Vec<&String> = owners.iter().filter(|e| EXTENSIONS.binary_search(&e.as_str()).is_err()).collect();
    assert!(unknown.is_empty(), "extensions missing from registry {REGISTRY_VERSION}: {unknown:?}");
    owners.extend(core_versions(minor));
    let missing: Vec<i32> = owners.iter().flat_map(|o| defined_by(o).iter().copied()).filter(|t| struct_size(*t).is_none()).collect();
    assert!(missing.is_empty(), "sTypes without a size: {missing:?}");

    let mut wrong = Vec::new();
    let types: BTreeSet<i32> = owners.iter().flat_map(|o| defined_by(o).iter().copied()).filter(|t| FEATURE_STRUCTS.contains(t)).collect();
    for t in types {
        let written = driver_written_size(&ctx, t);
        let size = struct_size(t).unwrap();
        if written == HEADER {
            // Reported but not filled in (lavapipe: provisional VK_AMDX_shader_enqueue).
            eprintln!("sType {t}: the driver writes no member; size not compared");
        } else if written > size || written + 8 <= size {
            wrong.push(format!("sType {t}: table {size}, driver writes {written}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// sType and pNext.
const HEADER: usize = 16;

/// Bytes up to the last one vkGetPhysicalDeviceFeatures2 writes into a 4 KiB sentinel-filled
/// structure of `s_type`, rounded up to a VkBool32.
fn driver_written_size(ctx: &Context, s_type: i32) -> usize {
    const SENTINEL: u64 = 0xA5A5_A5A5_A5A5_A5A5;
    let mut buf = vec![SENTINEL; 512];
    buf[0] = s_type as u32 as u64;
    buf[1] = 0;
    let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: buf.as_mut_ptr() as *mut c_void, ..Default::default() };
    unsafe { ctx.instance().get_physical_device_features2(ctx.physical_device(), &mut f2) };
    let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, 4096) };
    bytes.iter().rposition(|b| *b != 0xA5).map_or(0, |last| last + 1).next_multiple_of(4).max(HEADER)
}

/// The whole chain through the layer (default settings, Vulkan 1.4): succeeds.
#[test]
fn vkd3d_like_chain_through_the_layer() {
    let ctx = context(true, false, 4);
    let (mut chain, extensions) = vkd3d_like_chain(&ctx, |_| true, extensions_to_enable(&ctx));
    assert!(chain.nodes.len() > 40, "only {} feature structures", chain.nodes.len());
    assert_eq!(chain.bytes_mut(VULKAN_11_FEATURES)[STORAGE_INPUT_OUTPUT_16], 1, "the layer reports storageInputOutput16");
    assert_eq!(create_device(&ctx, &chain, &extensions), vk::Result::SUCCESS);
}

/// A structure newer than the layer's table in front of Vulkan11Features: the layer splices
/// it in place and still clears storageInputOutput16 behind it (the driver would refuse it).
#[test]
fn newer_still_structure_in_front_of_vulkan11() {
    let ctx = context(true, false, 4);
    let (mut chain, extensions) = vkd3d_like_chain(&ctx, |_| true, extensions_to_enable(&ctx));
    let mut newer = [0u64; 4];
    write_newer_still(newer.as_mut_ptr() as *mut u8, chain.node(VULKAN_11_FEATURES));
    chain.insert_before(VULKAN_11_FEATURES, NEWER_STILL, newer.as_mut_ptr() as *mut c_void);
    let before = newer;
    assert_eq!(create_device(&ctx, &chain, &extensions), vk::Result::SUCCESS);
    assert_eq!(newer, before, "the application's structure is restored");
}

/// The same structure in read-only memory cannot be spliced: the layer cannot clear
/// storageInputOutput16 behind it and refuses the device instead of letting the driver see it.
#[test]
fn newer_still_structure_in_read_only_memory_is_refused() {
    let ctx = context(true, false, 4);
    let (mut chain, extensions) = vkd3d_like_chain(&ctx, |_| true, extensions_to_enable(&ctx));
    let result = with_read_only_newer_still(&mut chain, VULKAN_11_FEATURES, |chain| create_device(&ctx, chain, &extensions));
    assert_eq!(result, vk::Result::ERROR_FEATURE_NOT_PRESENT);
}

/// Runs `f` with a `NEWER_STILL` structure in a read-only page inserted in front of the node of
/// sType `before` (the layer can neither edit nor splice it: it and what follows stay as-is).
fn with_read_only_newer_still<R>(chain: &mut FeatureChain, before: i32, f: impl FnOnce(&FeatureChain) -> R) -> R {
    unsafe {
        let page = libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        assert_ne!(page, libc::MAP_FAILED);
        write_newer_still(page as *mut u8, chain.node(before));
        assert_eq!(libc::mprotect(page, 4096, libc::PROT_READ), 0);
        chain.insert_before(before, NEWER_STILL, page);
        let r = f(chain);
        libc::munmap(page, 4096);
        r
    }
}

/// sTypes and extension names of the Vulkan headers installed with the validation layer
/// (Debian: both 1.3.239), or None without headers.
fn validation_layer_vintage() -> Option<(HashSet<i32>, HashSet<String>)> {
    let text = std::fs::read_to_string("/usr/include/vulkan/vulkan_core.h").ok()?;
    let s_types = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("VK_STRUCTURE_TYPE_"))
        .filter_map(|l| l.split_once(" = ")?.1.trim_end_matches(',').parse().ok())
        .collect();
    let extensions = text
        .lines()
        .filter(|l| l.starts_with("#define VK_") && l.contains("_EXTENSION_NAME "))
        .filter_map(|l| Some(l.split('"').nth(1)?.to_string()))
        .collect();
    Some((s_types, extensions))
}

/// The chain through the layer with VK_LAYER_KHRONOS_validation below it: validation reports
/// nothing, so the driver sees neither the layer's structures nor its emulated bits. Debian's
/// validation layer (1.3.239) predates many structures lavapipe reports and flags sTypes it
/// does not know (VUID-VkDeviceCreateInfo-pNext-pNext), so the chain holds only structures and
/// extensions of its vintage (Vulkan 1.3, headers of the same version) plus the layer's own,
/// which must not reach it.
#[test]
fn vkd3d_like_chain_is_valid_below_the_layer() {
    let Some((known_types, known_extensions)) = validation_layer_vintage() else {
        eprintln!("skipped: no /usr/include/vulkan/vulkan_core.h (libvulkan-dev)");
        return;
    };
    let ctx = context(true, true, 3);
    let layer_own: Vec<String> = ctx.device_extensions_of(Some(polyfill_e2e::layer::LAYER_NAME)).unwrap().into_iter().map(|(n, _)| n).collect();
    let layer_types: HashSet<i32> = layer_own.iter().flat_map(|e| defined_by(e).iter().copied()).collect();
    let extensions = extensions_to_enable(&ctx).into_iter().filter(|e| known_extensions.contains(e) || layer_own.contains(e)).collect();
    let (mut chain, extensions) = vkd3d_like_chain(&ctx, |t| known_types.contains(&t) || layer_types.contains(&t), extensions);
    assert!(layer_types.iter().any(|t| chain.nodes.iter().any(|n| n.s_type == *t)), "the chain holds a layer structure");
    assert_eq!(chain.bytes_mut(VULKAN_11_FEATURES)[STORAGE_INPUT_OUTPUT_16], 1);
    ctx.clear_validation_messages();
    assert_eq!(create_device(&ctx, &chain, &extensions), vk::Result::SUCCESS);
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

/// With addresses emulated, the table wants robustBufferAccess2 (the application enables only
/// robustBufferAccess, so the device default does not count) and nullDescriptor, but the
/// application's robustness2 structure sits behind an unknown structure in read-only memory,
/// where the layer cannot edit it: the device is still created, the lowering keeps its own
/// bounds checks and a buffer fills the table's free slots, and the log says so.
#[test]
fn robustness2_behind_a_read_only_structure_keeps_the_lowerings_checks() {
    const ROBUSTNESS_2: i32 = 1_000_286_000;
    let options = ContextOptions { enable_layer: true, api_version: vk::make_api_version(0, 1, 3, 0), ..ContextOptions::native() }
        .setting("buffer_device_address", "force")
        .setting("log_level", "info")
        .messenger(true);
    let ctx = Context::new(&options).unwrap_or_else(|e| panic!("{e}"));
    let mut chain = FeatureChain::new(&[ROBUSTNESS_2]);
    chain.f2.features.robust_buffer_access = vk::TRUE;
    ctx.clear_validation_messages();
    let result = with_read_only_newer_still(&mut chain, ROBUSTNESS_2, |chain| create_device(&ctx, chain, &["VK_EXT_robustness2".to_string()]));
    assert_eq!(result, vk::Result::SUCCESS);
    let texts: Vec<String> = ctx.layer_messages().into_iter().map(|m| m.text).collect();
    let said = |what: &str| texts.iter().any(|t| t.contains(what));
    assert!(said("not relying on robustBufferAccess2 (the robustness2 feature structure sits behind an unknown structure)"), "{texts:#?}");
    assert!(said("no null descriptors for the descriptor table"), "{texts:#?}");
}
