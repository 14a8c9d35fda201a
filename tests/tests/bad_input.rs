//! Malformed input through the real loader with the layer enabled ("a layer runs inside other
//! people's processes: it must never be the reason they crash").
//!
//! Every case ends in a clear error or in pass-through — never a crash — and the process keeps
//! working afterwards (valid modules are created after every case, and a checked dispatch runs
//! at the end).
//!
//! - [`malformed_shader_modules`]: `vkCreateShaderModule` with odd code sizes, a null `pCode`,
//!   a bare header, truncated / unknown-opcode / garbage modules that declare
//!   `RawAccessChainsNV`, and a wrong magic number; the rewrite-path failures also go through
//!   `vkCreateComputePipelines` with the code in the stage's pNext (VK_KHR_maintenance5).
//!   A raw-chain module at an unaligned `pCode` is rewritten (read without unaligned loads).
//!   Modules the layer does not rewrite must behave exactly as without the layer (the same
//!   `VkResult` as a run without the layer, in a child process); modules it must rewrite but
//!   cannot parse return `VK_ERROR_INVALID_SHADER_NV` and log a reason.
//!   An input on which lavapipe *itself* crashes (found by running the case without the layer in
//!   a child process first) is not sent through the layer: that crash is not ours (noted in the
//!   output; none on Mesa 25.0 lavapipe when this was written).
//! - [`pnext_chains_with_unknown_structs`]: a structure of an unknown sType (a fake
//!   `{sType 0x7fff0001, pNext, payload}`) before and after the layer's own structures in the
//!   chains the layer walks or copies: `vkGetPhysicalDeviceFeatures2`, `vkCreateDevice`,
//!   `vkCreateShaderModule`, `vkCreateComputePipelines` (the stage's pNext, and a
//!   `VkShaderModuleCreateInfo` in it with `module = VK_NULL_HANDLE`). The application's
//!   structures must come back bit-for-bit unchanged.
//!
//! Not testable without undefined behaviour: garbage *pointers* (a dangling pNext, a pCode
//! shorter than codeSize). Null pNext values and properly terminated chains are covered.

use ash::vk::{self, Handle};
use polyfill_e2e::child::{self, read_log};
use polyfill_e2e::layer::env_var_name;
use polyfill_e2e::{bytes, samples, Context, ContextOptions};
use std::ffi::{c_void, CStr};

const MODE_ENV: &str = "POLYFILL_BAD_INPUT_MODE";
const SKIP_ENV: &str = "POLYFILL_BAD_INPUT_SKIP";
const NATIVE_ENV: &str = "POLYFILL_BAD_INPUT_NATIVE";

const MAGIC: u32 = 0x0723_0203;
const CAP_RAW_ACCESS_CHAINS_NV: u32 = 5414;
const OP_CAPABILITY: u32 = 17;
const OP_RETURN: u32 = 253;
const OP_RAW_ACCESS_CHAIN_NV: u32 = 5398;
/// The error a hook returns when a module that needs rewriting cannot be rewritten.
const REWRITE_FAILED: vk::Result = vk::Result::ERROR_INVALID_SHADER_NV;
/// What the layer logs (error level) for such a module.
const REWRITE_FAILED_LOG: &str = "cannot be emulated";

// ---------------------------------------------------------------------------------------------
// Inputs

/// What the layer must do with an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Not rewritten: the driver's own answer, exactly as without the layer.
    PassThrough,
    /// Declares RawAccessChainsNV but cannot be parsed: `VK_ERROR_INVALID_SHADER_NV` + log line.
    RewriteFails,
}

struct Case {
    name: String,
    /// Backing storage (always at least `size` bytes, so nobody reads out of bounds).
    code: Vec<u32>,
    /// `codeSize` in bytes.
    size: usize,
    /// Pass a null `pCode`.
    null_code: bool,
    expect: Expect,
}

impl Case {
    fn words(name: &str, words: Vec<u32>, expect: Expect) -> Case {
        let size = words.len() * 4;
        Case { name: name.to_string(), code: words, size, null_code: false, expect }
    }
    /// `size` bytes of `words` (which holds more), for sizes that are not whole words.
    fn sized(name: &str, words: &[u32], size: usize) -> Case {
        let mut code = words.to_vec();
        code.resize(size.div_ceil(4).max(1) + 1, 0);
        Case { name: name.to_string(), code, size, null_code: false, expect: Expect::PassThrough }
    }
    fn p_code(&self) -> *const u32 {
        if self.null_code {
            std::ptr::null()
        } else {
            self.code.as_ptr()
        }
    }
}

fn opcode(w: u32) -> u32 {
    w & 0xffff
}

/// Word offsets of the instructions of a well-formed module.
fn instruction_offsets(words: &[u32]) -> Vec<usize> {
    let mut at = 5;
    let mut out = Vec::new();
    while at < words.len() {
        out.push(at);
        at += (words[at] >> 16) as usize;
    }
    out
}

fn header() -> Vec<u32> {
    vec![MAGIC, 0x0001_0300, 0, 16, 0]
}

/// All malformed inputs (deterministic).
fn cases() -> Vec<Case> {
    let raw = samples::byte_address(None).assemble().expect("assemble byte_address");
    let plain = samples::plain().assemble().expect("assemble plain");
    assert_eq!(raw[0], MAGIC);
    let mut v = Vec::new();

    // Code sizes that are not a SPIR-V word stream: passed down untouched. The bytes behind
    // them are the start of a raw-chain module, so a layer that read past codeSize would see
    // the capability.
    for size in [0usize, 1, 2, 3, 6] {
        v.push(Case::sized(&format!("code_size_{size}"), &raw, size));
    }
    v.push(Case { name: "null_code_size_0".into(), code: vec![], size: 0, null_code: true, expect: Expect::PassThrough });
    v.push(Case::words("header_only", header(), Expect::PassThrough));
    v.push(Case::words("header_minus_one_word", header()[..4].to_vec(), Expect::PassThrough));

    // First capability is RawAccessChainsNV; the next instruction claims 2 words but the
    // module ends after 1.
    let mut t = header();
    t.extend([(2 << 16) | OP_CAPABILITY, CAP_RAW_ACCESS_CHAINS_NV, (2 << 16) | OP_CAPABILITY]);
    v.push(Case::words("raw_cap_then_truncated_capability", t, Expect::RewriteFails));
    // A real raw-chain module cut in the middle of its first OpRawAccessChainNV.
    let at = instruction_offsets(&raw).into_iter().find(|&o| opcode(raw[o]) == OP_RAW_ACCESS_CHAIN_NV).expect("OpRawAccessChainNV");
    v.push(Case::words("raw_truncated_mid_raw_access_chain", raw[..at + 3].to_vec(), Expect::RewriteFails));
    // ... and one cut at an arbitrary point (mid-instruction in the types section).
    v.push(Case::words("raw_truncated_half", raw[..raw.len() / 2 + 1].to_vec(), Expect::RewriteFails));

    // An unknown opcode (0x7ff0, 2 words) before OpReturn in the function body.
    let with_unknown = |words: &[u32]| {
        let ret = instruction_offsets(words).into_iter().rfind(|&o| words[o] == (1 << 16) | OP_RETURN).expect("OpReturn");
        let mut w = words[..ret].to_vec();
        w.extend([(2 << 16) | 0x7ff0, 0x1234_5678]);
        w.extend(&words[ret..]);
        w
    };
    v.push(Case::words("raw_unknown_opcode_in_function", with_unknown(&raw), Expect::RewriteFails));
    // The same in a module without the capability: the driver's business.
    v.push(Case::words("plain_unknown_opcode_in_function", with_unknown(&plain), Expect::PassThrough));

    // Random garbage after a valid header + OpCapability RawAccessChainsNV.
    for seed in 1..=24u32 {
        let n = 1 + (seed as usize * 7) % 40;
        let mut g = header();
        g.extend([(2 << 16) | OP_CAPABILITY, CAP_RAW_ACCESS_CHAINS_NV]);
        let mut garbage = bytes::to_u32s(&bytes::pattern(4 * n, seed));
        if seed % 3 == 0 {
            // Plausible word counts (1..4), random opcodes: gets past the word-count checks.
            for w in &mut garbage {
                *w = (*w & 0xffff) | ((1 + (*w >> 16) % 4) << 16);
            }
        }
        g.extend(garbage);
        v.push(Case::words(&format!("raw_cap_then_garbage_{seed}"), g, Expect::RewriteFails));
    }

    // Not SPIR-V at all: wrong magic (and a byte-swapped one) on a raw-chain module.
    let mut m = raw.clone();
    m[0] = 0xDEAD_BEEF;
    v.push(Case::words("raw_wrong_magic", m, Expect::PassThrough));
    let mut m = raw.clone();
    m[0] = MAGIC.swap_bytes();
    v.push(Case::words("raw_byte_swapped_magic", m, Expect::PassThrough));
    v
}

// ---------------------------------------------------------------------------------------------
// Raw Vulkan helpers (the harness's safe wrappers only take well-formed input)

/// `vkCreateShaderModule` with arbitrary `pNext` / `pCode` / `codeSize`.
unsafe fn create_module_raw(dev: &ash::Device, p_next: *const c_void, code: *const u32, size: usize) -> (vk::Result, vk::ShaderModule) {
    let ci = vk::ShaderModuleCreateInfo { p_next, code_size: size, p_code: code, ..Default::default() };
    let mut m = vk::ShaderModule::null();
    let r = (dev.fp_v1_0().create_shader_module)(dev.handle(), &ci, std::ptr::null(), &mut m);
    (r, m)
}

/// Creates (and destroys) a compute pipeline for entry point `main` with a layout of three
/// storage buffers, from `module` or, with `module == VK_NULL_HANDLE`, from the
/// `VkShaderModuleCreateInfo` in `stage_next`. On failure the pipeline handle must be
/// VK_NULL_HANDLE (spec; the layer nulls it when it fails on its own).
unsafe fn compute_pipeline(dev: &ash::Device, stage_next: *const c_void, module: vk::ShaderModule) -> vk::Result {
    let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..3)
        .map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let sl = dev.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None).unwrap();
    let sls = [sl];
    let pl = dev.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sls), None).unwrap();
    let stage = vk::PipelineShaderStageCreateInfo {
        p_next: stage_next,
        stage: vk::ShaderStageFlags::COMPUTE,
        module,
        p_name: c"main".as_ptr(),
        ..Default::default()
    };
    let ci = vk::ComputePipelineCreateInfo { stage, layout: pl, ..Default::default() };
    let sentinel = vk::Pipeline::from_raw(0xdead_beef);
    let mut p = sentinel;
    let r = (dev.fp_v1_0().create_compute_pipelines)(dev.handle(), vk::PipelineCache::null(), 1, &ci, std::ptr::null(), &mut p);
    if r == vk::Result::SUCCESS {
        assert!(p != vk::Pipeline::null() && p != sentinel, "vkCreateComputePipelines succeeded without a pipeline");
        dev.destroy_pipeline(p, None);
    } else {
        assert_eq!(p, vk::Pipeline::null(), "vkCreateComputePipelines failed ({r:?}) but left the pipeline handle set");
    }
    dev.destroy_pipeline_layout(pl, None);
    dev.destroy_descriptor_set_layout(sl, None);
    r
}

/// A structure the layer (and everybody else) does not know.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fake {
    s_type: vk::StructureType,
    p_next: *const c_void,
    payload: [u32; 6],
}
const FAKE_STYPE: vk::StructureType = vk::StructureType::from_raw(0x7fff_0001);

impl Fake {
    fn new(p_next: *const c_void) -> Fake {
        Fake { s_type: FAKE_STYPE, p_next, payload: [0xA5A5_0001, 0xA5A5_0002, 0xA5A5_0003, 0xA5A5_0004, 0xA5A5_0005, 0xA5A5_0006] }
    }
}

fn ptr<T>(t: &T) -> *const c_void {
    t as *const T as *const c_void
}
fn ptr_mut<T>(t: &mut T) -> *mut c_void {
    t as *mut T as *mut c_void
}

/// A second device on `ctx`'s instance with the given extensions and pNext chain (the layer
/// handles it like any other device).
unsafe fn create_device(ctx: &Context, extensions: &[&CStr], p_next: *const c_void) -> Result<ash::Device, vk::Result> {
    let prio = [1.0f32];
    let qci = [vk::DeviceQueueCreateInfo::default().queue_family_index(ctx.queue_family()).queue_priorities(&prio)];
    let ext: Vec<*const i8> = extensions.iter().map(|e| e.as_ptr()).collect();
    let dci = vk::DeviceCreateInfo {
        p_next,
        queue_create_info_count: 1,
        p_queue_create_infos: qci.as_ptr(),
        enabled_extension_count: ext.len() as u32,
        pp_enabled_extension_names: ext.as_ptr(),
        ..Default::default()
    };
    ctx.instance().create_device(ctx.physical_device(), &dci, None)
}

/// A device with VK_NV_raw_access_chains + VK_KHR_maintenance5 (and both features) on `ctx`'s
/// instance: pipeline stages may carry their code in a chained `VkShaderModuleCreateInfo`.
unsafe fn maintenance5_device(ctx: &Context) -> ash::Device {
    let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default().shader_raw_access_chains(true);
    let mut m5 = vk::PhysicalDeviceMaintenance5FeaturesKHR::default().maintenance5(true);
    m5.p_next = ptr_mut(&mut raw);
    create_device(ctx, &[vk::NV_RAW_ACCESS_CHAINS_NAME, vk::KHR_MAINTENANCE5_NAME], ptr(&m5))
        .unwrap_or_else(|e| panic!("vkCreateDevice with VK_KHR_maintenance5 + VK_NV_raw_access_chains: {e:?}"))
}

fn log_path() -> std::path::PathBuf {
    std::env::var_os(env_var_name("log_file")).expect("log_file env").into()
}

/// Valid modules (one rewritten, one plain) still work on `ctx`.
fn still_works(ctx: &Context, raw: &[u32], plain: &[u32], after: &str) {
    for (what, w) in [("raw-chain", raw), ("plain", plain)] {
        let m = ctx.create_shader_module(w).unwrap_or_else(|e| panic!("after `{after}`: valid {what} module fails: {e:?}"));
        ctx.destroy_shader_module(m);
    }
}

// ---------------------------------------------------------------------------------------------
// Malformed modules

fn parse_list(var: &str) -> Vec<String> {
    std::env::var(var).unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(String::from).collect()
}

/// Child body. `native`: no layer; print each case's `VkResult`. `layer`: the layer with raw
/// access chains enabled; assert the expectations.
fn malformed_child() {
    let mode = std::env::var(MODE_ENV).expect(MODE_ENV);
    let skip = parse_list(SKIP_ENV);
    let cases: Vec<Case> = cases().into_iter().filter(|c| !skip.contains(&c.name)).collect();
    if mode == "native" {
        let ctx = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
        for c in &cases {
            println!("CASE-START {}", c.name);
            let (r, m) = unsafe { create_module_raw(ctx.device(), std::ptr::null(), c.p_code(), c.size) };
            if r == vk::Result::SUCCESS {
                ctx.destroy_shader_module(m);
            }
            println!("CASE-RESULT {} {}", c.name, r.as_raw());
        }
        return;
    }
    assert_eq!(mode, "layer");
    let native: Vec<(String, i32)> = parse_list(NATIVE_ENV)
        .into_iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    let log = log_path();
    let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap_or_else(|e| panic!("{e}"));
    let m5 = unsafe { maintenance5_device(&ctx) };
    let raw_sample = samples::byte_address(None);
    let raw = raw_sample.assemble().unwrap();
    let plain = samples::plain().assemble().unwrap();
    let mut failures = Vec::new();
    for c in &cases {
        println!("CASE-START {}", c.name);
        let before = read_log(&log);
        let (r, m) = unsafe { create_module_raw(ctx.device(), std::ptr::null(), c.p_code(), c.size) };
        if r == vk::Result::SUCCESS {
            ctx.destroy_shader_module(m);
        } else if m != vk::ShaderModule::null() {
            failures.push(format!("{}: failed with {r:?} but returned a module handle", c.name));
        }
        let after = read_log(&log);
        let new_log = &after[before.len().min(after.len())..];
        match c.expect {
            Expect::PassThrough => {
                let want = native.iter().find(|(n, _)| *n == c.name).map(|(_, v)| vk::Result::from_raw(*v));
                if Some(r) != want {
                    failures.push(format!("{}: with the layer {r:?}, without it {want:?} (must be passed through)", c.name));
                }
                if new_log.contains(REWRITE_FAILED_LOG) {
                    failures.push(format!("{}: pass-through case logged a rewrite failure:\n{new_log}", c.name));
                }
            }
            Expect::RewriteFails => {
                if r != REWRITE_FAILED {
                    failures.push(format!("{}: vkCreateShaderModule returned {r:?}, expected {REWRITE_FAILED:?}", c.name));
                }
                if !(new_log.contains("vkCreateShaderModule") && new_log.contains(REWRITE_FAILED_LOG)) {
                    failures.push(format!("{}: no reason logged for the failed rewrite; new log text:\n{new_log}", c.name));
                }
                // The same code in a pipeline stage's pNext (maintenance5): caught before the driver.
                if c.size % 4 == 0 && !c.null_code {
                    let mci = vk::ShaderModuleCreateInfo { code_size: c.size, p_code: c.p_code(), ..Default::default() };
                    let before = read_log(&log);
                    let r = unsafe { compute_pipeline(&m5, ptr(&mci), vk::ShaderModule::null()) };
                    let after = read_log(&log);
                    let new_log = &after[before.len().min(after.len())..];
                    if r != REWRITE_FAILED {
                        failures.push(format!("{}: vkCreateComputePipelines (code in the stage's pNext) returned {r:?}, expected {REWRITE_FAILED:?}", c.name));
                    }
                    if !(new_log.contains("vkCreateComputePipelines") && new_log.contains(REWRITE_FAILED_LOG)) {
                        failures.push(format!("{}: vkCreateComputePipelines logged no reason:\n{new_log}", c.name));
                    }
                }
            }
        }
        println!("CASE-RESULT {} {}", c.name, r.as_raw());
        still_works(&ctx, &raw, &plain, &c.name);
    }
    // A raw-chain module at an odd address (pCode must be 4-byte aligned, but C callers get this
    // wrong): the layer reads it unaligned-safely and rewrites it.
    let mut bytes_buf = vec![0u8; raw.len() * 4 + 1];
    bytes_buf[1..].copy_from_slice(&polyfill_e2e::bytes::from_u32s(&raw));
    let unaligned = unsafe { bytes_buf.as_ptr().add(1) } as *const u32;
    let (r, m) = unsafe { create_module_raw(ctx.device(), std::ptr::null(), unaligned, raw.len() * 4) };
    assert_eq!(r, vk::Result::SUCCESS, "unaligned pCode");
    assert_eq!(unsafe { compute_pipeline(ctx.device(), std::ptr::null(), m) }, vk::Result::SUCCESS, "pipeline from the unaligned module");
    ctx.destroy_shader_module(m);

    // After everything: a real dispatch through the rewriter, checked against the CPU, and a
    // pipeline from a stage-chained module on the maintenance5 device.
    let out = ctx.run_compute(&raw, &raw_sample.job).unwrap_or_else(|e| panic!("dispatch after the bad inputs: {e}"));
    raw_sample.check(&out).unwrap();
    let mci = vk::ShaderModuleCreateInfo::default().code(&raw);
    assert_eq!(unsafe { compute_pipeline(&m5, ptr(&mci), vk::ShaderModule::null()) }, vk::Result::SUCCESS);
    unsafe { m5.destroy_device(None) };
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    let log_text = read_log(&log);
    println!("layer log ({} lines), first rewrite-failure reasons:", log_text.lines().count());
    for l in log_text.lines().filter(|l| l.contains(REWRITE_FAILED_LOG)).take(6) {
        println!("  {l}");
    }
}

/// Runs the malformed-module cases without the layer, then with it.
#[test]
fn malformed_shader_modules() {
    const NAME: &str = "malformed_shader_modules";
    if child::is_child(NAME) {
        return malformed_child();
    }
    // 1. Without the layer: what lavapipe answers, and whether it survives at all. A child that
    //    dies names the case it was in; that case is skipped and the rest re-run.
    let mut driver_crashes: Vec<String> = Vec::new();
    let mut native: Vec<(String, i32)> = Vec::new();
    loop {
        let skip = driver_crashes.join(",");
        let out = child::spawn(NAME, &[(MODE_ENV, "native"), (SKIP_ENV, &skip)], None);
        native.clear();
        let mut in_flight = None;
        for l in out.stdout.lines() {
            if let Some(n) = l.strip_prefix("CASE-START ") {
                in_flight = Some(n.to_string());
            } else if let Some(rest) = l.strip_prefix("CASE-RESULT ") {
                let (n, v) = rest.split_once(' ').unwrap();
                native.push((n.to_string(), v.parse().unwrap()));
                in_flight = None;
            }
        }
        if out.success() {
            break;
        }
        let Some(case) = in_flight else { out.assert_success(); unreachable!() };
        println!("NOTE: lavapipe crashes on `{case}` WITHOUT the layer ({}); not sent through the layer", out.status);
        driver_crashes.push(case);
    }
    assert!(!native.is_empty());
    // 2. With the layer.
    let dir = child::temp_dir("bad-input");
    let log = dir.join("layer.log");
    let native_s = native.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",");
    let skip = driver_crashes.join(",");
    let out = child::spawn(
        NAME,
        &[(MODE_ENV, "layer"), (SKIP_ENV, &skip), (NATIVE_ENV, &native_s), (&env_var_name("log_file"), log.to_str().unwrap())],
        None,
    );
    out.assert_success();
    println!("{} cases; driver crashes without the layer: {driver_crashes:?}", native.len());
    for (n, v) in &native {
        let layer = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("CASE-RESULT ").and_then(|r| r.strip_prefix(n.as_str())).and_then(|r| r.strip_prefix(' ')))
            .map(|v| vk::Result::from_raw(v.parse().unwrap()));
        println!("  {n:40} without layer {:?}, with layer {layer:?}", vk::Result::from_raw(*v));
    }
    for l in out.stdout.lines().filter(|l| l.starts_with("layer log") || l.starts_with("  [polyfill]")) {
        println!("{l}");
    }
}

// ---------------------------------------------------------------------------------------------
// pNext chains with unknown structures

/// The fake struct and the structures around it must be unchanged after a call.
fn assert_unchanged<T: Copy>(what: &str, before: &T, after: &T) {
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(before as *const T as *const u8, std::mem::size_of::<T>()),
            std::slice::from_raw_parts(after as *const T as *const u8, std::mem::size_of::<T>()),
        )
    };
    assert_eq!(a, b, "{what}: the application's structure was modified");
}

/// vkGetPhysicalDeviceFeatures2 with the chain from `first`, which holds `fake`: the fake
/// struct comes back unchanged (`what` in the message) and the chain still starts at `first`.
/// Returns the filled structure.
fn features2_around_fake(ctx: &Context, first: *mut c_void, fake: *const Fake, what: &str) -> vk::PhysicalDeviceFeatures2<'static> {
    let f2fn = ctx.instance().fp_v1_1().get_physical_device_features2;
    let mut f2 = vk::PhysicalDeviceFeatures2 { p_next: first, ..Default::default() };
    // SAFETY: `fake` points at a live Fake of the caller's chain.
    let before = unsafe { *fake };
    unsafe { f2fn(ctx.physical_device(), &mut f2) };
    assert_unchanged(what, &before, unsafe { &*fake });
    assert_eq!(f2.p_next, first, "{what}: the chain's head was replaced");
    f2
}

fn features2_with_unknown(ctx: &Context) {
    // (a) features2 -> fake -> raw -> vulkan12
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV { p_next: ptr_mut(&mut v12), ..Default::default() };
    let mut fake = Fake::new(ptr_mut(&mut raw));
    let f2 = features2_around_fake(ctx, ptr_mut(&mut fake), &fake, "features2: fake before raw");
    assert_eq!(raw.p_next, ptr_mut(&mut v12));
    assert_eq!(raw.shader_raw_access_chains, vk::TRUE, "shaderRawAccessChains not reported behind an unknown struct");
    assert_eq!(v12.buffer_device_address, vk::TRUE, "the driver did not fill VkPhysicalDeviceVulkan12Features");
    assert_eq!(f2.features.shader_int16, vk::TRUE);

    // (b) features2 -> raw -> fake -> vulkan11
    let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut fake = Fake::new(ptr_mut(&mut v11));
    let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV { p_next: ptr_mut(&mut fake), ..Default::default() };
    let _ = features2_around_fake(ctx, ptr_mut(&mut raw), &fake, "features2: fake after raw");
    assert_eq!(raw.p_next, ptr_mut(&mut fake));
    assert_eq!(raw.shader_raw_access_chains, vk::TRUE);
    assert_eq!(v11.storage_buffer16_bit_access, vk::TRUE, "the driver did not fill VkPhysicalDeviceVulkan11Features");

    // (c) only the fake struct.
    let mut fake = Fake::new(std::ptr::null());
    let _ = features2_around_fake(ctx, ptr_mut(&mut fake), &fake, "features2: fake only");
}

/// On `dev`, a device with the raw-access-chains feature: a pipeline from `raw_words` (which use
/// raw access chains) is created, so shaders are rewritten; then destroys `dev`.
unsafe fn rewrites_and_destroy(dev: ash::Device, raw_words: &[u32], what: &str) {
    let (r, m) = create_module_raw(&dev, std::ptr::null(), raw_words.as_ptr(), raw_words.len() * 4);
    assert_eq!(r, vk::Result::SUCCESS, "{what}: vkCreateShaderModule");
    assert_eq!(compute_pipeline(&dev, std::ptr::null(), m), vk::Result::SUCCESS, "{what}: shaders are not rewritten");
    dev.destroy_shader_module(m, None);
    dev.destroy_device(None);
}

/// Device creation with the fake struct after / before the layer's own feature struct.
fn devices_with_unknown(ctx: &Context) {
    let raw_words = samples::byte_address(None).assemble().unwrap();
    let exts = [vk::NV_RAW_ACCESS_CHAINS_NAME];

    // raw -> fake: the layer copies and removes its struct, the fake one is passed on as-is.
    let mut fake = Fake::new(std::ptr::null());
    let raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV { p_next: ptr_mut(&mut fake), shader_raw_access_chains: vk::TRUE, ..Default::default() };
    let (fake_before, raw_before) = (fake, raw);
    let dev = unsafe { create_device(ctx, &exts, ptr(&raw)) }.unwrap_or_else(|e| panic!("vkCreateDevice raw -> fake: {e:?}"));
    assert_unchanged("vkCreateDevice raw -> fake: fake", &fake_before, &fake);
    assert_unchanged("vkCreateDevice raw -> fake: raw", &raw_before, &raw);
    unsafe { rewrites_and_destroy(dev, &raw_words, "raw -> fake device") };

    // fake -> raw: the layer keeps the unknown struct in place and splices its own copy of the
    // rest behind it for the call (pnext.rs), so its struct is removed there too; the fake
    // struct gets its own pNext back.
    let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV { shader_raw_access_chains: vk::TRUE, ..Default::default() };
    let mut fake = Fake::new(ptr_mut(&mut raw));
    let (fake_before, raw_before) = (fake, raw);
    let dev = unsafe { create_device(ctx, &exts, ptr_mut(&mut fake)) }.unwrap_or_else(|e| panic!("vkCreateDevice fake -> raw: {e:?}"));
    assert_unchanged("vkCreateDevice fake -> raw: fake", &fake_before, &fake);
    assert_unchanged("vkCreateDevice fake -> raw: raw", &raw_before, &raw);
    unsafe { rewrites_and_destroy(dev, &raw_words, "fake -> raw device") };

    // fake only, extension by name: shaders rewritten, fake passed on.
    let fake = Fake::new(std::ptr::null());
    let fake_before = fake;
    let dev = unsafe { create_device(ctx, &exts, ptr(&fake)) }.unwrap_or_else(|e| panic!("vkCreateDevice fake only: {e:?}"));
    assert_unchanged("vkCreateDevice fake only", &fake_before, &fake);
    unsafe { rewrites_and_destroy(dev, &raw_words, "fake-only device") };
}

/// Shader module / pipeline stage chains with the fake struct, on a maintenance5 device.
fn pipelines_with_unknown(ctx: &Context, log: &std::path::Path) {
    let raw = samples::byte_address(None).assemble().unwrap();
    let plain = samples::plain().assemble().unwrap();
    let dev = unsafe { maintenance5_device(ctx) };
    unsafe {
        // vkCreateShaderModule: VkShaderModuleCreateInfo.pNext = fake.
        for (what, w) in [("raw", &raw), ("plain", &plain)] {
            let fake = Fake::new(std::ptr::null());
            let fake_before = fake;
            let (r, m) = create_module_raw(&dev, ptr(&fake), w.as_ptr(), w.len() * 4);
            assert_eq!(r, vk::Result::SUCCESS, "vkCreateShaderModule {what} with an unknown pNext struct");
            assert_unchanged("vkCreateShaderModule pNext", &fake_before, &fake);
            // And a pipeline from it with the fake struct in the stage's pNext.
            let stage_fake = Fake::new(std::ptr::null());
            assert_eq!(compute_pipeline(&dev, ptr(&stage_fake), m), vk::Result::SUCCESS, "{what}: stage pNext = fake, module handle");
            dev.destroy_shader_module(m, None);
        }

        // module = VK_NULL_HANDLE, stage pNext = VkShaderModuleCreateInfo -> fake: the layer
        // copies the create info with the rewritten code and keeps the fake tail.
        for (what, w) in [("raw", &raw), ("plain", &plain)] {
            let fake = Fake::new(std::ptr::null());
            let mci = vk::ShaderModuleCreateInfo { p_next: ptr(&fake), code_size: w.len() * 4, p_code: w.as_ptr(), ..Default::default() };
            let (fake_before, mci_before) = (fake, mci);
            let r = compute_pipeline(&dev, ptr(&mci), vk::ShaderModule::null());
            assert_eq!(r, vk::Result::SUCCESS, "{what}: stage pNext = VkShaderModuleCreateInfo -> fake");
            assert_unchanged("stage VkShaderModuleCreateInfo", &mci_before, &mci);
            assert_unchanged("stage fake after VkShaderModuleCreateInfo", &fake_before, &fake);
        }

        // module = VK_NULL_HANDLE, stage pNext = fake -> VkShaderModuleCreateInfo (raw): the
        // layer cannot replace code that sits behind a structure it cannot copy, so it refuses
        // with a logged reason instead of handing the driver RawAccessChainsNV.
        let mci = vk::ShaderModuleCreateInfo { code_size: raw.len() * 4, p_code: raw.as_ptr(), ..Default::default() };
        let fake = Fake::new(ptr(&mci));
        let (fake_before, mci_before) = (fake, mci);
        let before = read_log(log);
        let r = compute_pipeline(&dev, ptr(&fake), vk::ShaderModule::null());
        let after = read_log(log);
        let new_log = &after[before.len().min(after.len())..];
        assert_eq!(r, REWRITE_FAILED, "raw code behind an unknown stage struct");
        assert!(new_log.contains("behind an unknown structure"), "no reason logged:\n{new_log}");
        assert_unchanged("stage fake before VkShaderModuleCreateInfo", &fake_before, &fake);
        assert_unchanged("stage VkShaderModuleCreateInfo behind fake", &mci_before, &mci);

        // The same with plain code: nothing to rewrite, passed through.
        let mci = vk::ShaderModuleCreateInfo { code_size: plain.len() * 4, p_code: plain.as_ptr(), ..Default::default() };
        let fake = Fake::new(ptr(&mci));
        assert_eq!(compute_pipeline(&dev, ptr(&fake), vk::ShaderModule::null()), vk::Result::SUCCESS, "plain code behind fake");

        // fake -> VkShaderModuleCreateInfo -> fake2 with plain code, and a null-terminated
        // chain of only known structs for control.
        let fake2 = Fake::new(std::ptr::null());
        let mci = vk::ShaderModuleCreateInfo { p_next: ptr(&fake2), code_size: plain.len() * 4, p_code: plain.as_ptr(), ..Default::default() };
        let fake = Fake::new(ptr(&mci));
        assert_eq!(compute_pipeline(&dev, ptr(&fake), vk::ShaderModule::null()), vk::Result::SUCCESS);
        let mci = vk::ShaderModuleCreateInfo::default().code(&raw);
        assert_eq!(compute_pipeline(&dev, ptr(&mci), vk::ShaderModule::null()), vk::Result::SUCCESS);

        dev.destroy_device(None);
    }
}

#[test]
fn pnext_chains_with_unknown_structs() {
    const NAME: &str = "pnext_chains_with_unknown_structs";
    let child_body = || {
        let log = log_path();
        let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap_or_else(|e| panic!("{e}"));
        features2_with_unknown(&ctx);
        devices_with_unknown(&ctx);
        pipelines_with_unknown(&ctx, &log);
        // Still working: a checked dispatch on the context's own device.
        samples::structured(None).run_checked(&ctx).unwrap();
    };
    if child::run_child(NAME, child_body) {
        return;
    }
    let (out, log) = child::spawn_logged(NAME, "bad-pnext", &[(&env_var_name("log_level"), "warn")]);
    out.assert_completed();
    println!("layer log:\n{log}");
}
