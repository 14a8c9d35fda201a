//! The layer's messages and tooling info through the API, on the system loader (Debian 12:
//! 1.3.239) and lavapipe (Vulkan 1.4). `tests/tests/messages_c.rs` checks the same from a C
//! program linked with -lvulkan.
//!
//! - [`layer_settings_without_the_extension_name`]: a loader older than 1.3.272 refuses the
//!   `VK_EXT_layer_settings` name; `VkLayerSettingsCreateInfoEXT` chained without it reaches the
//!   layer (`log_level=info` makes `POLYFILL-layer-active` arrive during vkCreateInstance,
//!   `duplicate_message_limit=2` caps the refusals at 2), a control without them differs.
//! - [`messengers_come_and_go_while_modules_are_made`]: threads create and destroy debug-utils
//!   messengers and debug-report callbacks while other threads create modules the layer
//!   rewrites (INFO) or refuses (ERROR), the validation layer below: no deadlock (watchdog), no
//!   message to a destroyed messenger (each one's user data is a canary, marked dead right after
//!   its destroy returns), messages delivered meanwhile, no validation error.
//! - [`tooling_info_lists_the_layer_last`]: `vkGetPhysicalDeviceToolProperties` (core) and its
//!   EXT alias: the driver's tools, then the validation layer's when it is below (1.3.239: for
//!   the EXT alias only), then the layer's entry; `VK_INCOMPLETE` with a short array; the EXT
//!   alias on a Vulkan 1.1 instance.

use ash::vk;
use polyfill_e2e::layer::{LAYER_NAME, VALIDATION_LAYER_NAME};
use polyfill_e2e::vk::{entry, ValidationMessage};
use polyfill_e2e::{samples, Context, ContextOptions};
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const OP_RAW_ACCESS_CHAIN_NV: u32 = 5398;

/// A raw-chain module (the layer rewrites it).
fn good_module() -> Vec<u32> {
    samples::byte_address(None).assemble().unwrap_or_else(|e| panic!("{e}"))
}

/// The same cut in the middle of its first `OpRawAccessChainNV`: refused with
/// `VK_ERROR_INVALID_SHADER_NV` (POLYFILL-shader-refused).
fn truncated_module() -> Vec<u32> {
    let w = good_module();
    let mut at = 5;
    while w[at] & 0xffff != OP_RAW_ACCESS_CHAIN_NV {
        at += (w[at] >> 16) as usize;
    }
    w[..at + 3].to_vec()
}

fn refuse(ctx: &Context, words: &[u32], times: usize) {
    for _ in 0..times {
        assert_eq!(ctx.create_shader_module(words).err(), Some(vk::Result::ERROR_INVALID_SHADER_NV), "the truncated module");
    }
}

fn with_id(ctx: &Context, id: &str) -> Vec<ValidationMessage> {
    ctx.layer_messages().into_iter().filter(|m| m.id == id).collect()
}

// ---------------------------------------------------------------- settings on the system loader

/// The first loader that knows the `VK_EXT_layer_settings` name (header 1.3.272).
const LOADER_KNOWS_LAYER_SETTINGS: u32 = vk::make_api_version(0, 1, 3, 272);

#[test]
fn layer_settings_without_the_extension_name() {
    let entry = entry().unwrap_or_else(|e| panic!("{e}"));
    let loader = unsafe { entry.try_enumerate_instance_version() }.ok().flatten().unwrap_or(vk::API_VERSION_1_0);
    let (major, minor, patch) = (vk::api_version_major(loader), vk::api_version_minor(loader), vk::api_version_patch(loader));
    eprintln!("loader {major}.{minor}.{patch}");
    polyfill_e2e::layer::register_with_loader().unwrap_or_else(|e| panic!("{e}"));

    // Enabling the name, with the layer (whose manifest lists the extension) enabled.
    let layers = [c"VK_LAYER_POLYFILL_extensions".as_ptr()];
    let extensions = [c"VK_EXT_layer_settings".as_ptr()];
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let info = vk::InstanceCreateInfo::default().application_info(&app).enabled_layer_names(&layers).enabled_extension_names(&extensions);
    match unsafe { entry.create_instance(&info, None) } {
        Ok(instance) => {
            unsafe { instance.destroy_instance(None) };
            assert!(loader >= LOADER_KNOWS_LAYER_SETTINGS, "loader {major}.{minor}.{patch} accepted the VK_EXT_layer_settings name: the README's version is wrong");
        }
        Err(e) => {
            assert!(loader < LOADER_KNOWS_LAYER_SETTINGS, "loader {major}.{minor}.{patch} refused the VK_EXT_layer_settings name: {e:?}");
            assert_eq!(e, vk::Result::ERROR_EXTENSION_NOT_PRESENT);
        }
    }

    // Chained without the name (the harness enables VK_EXT_debug_utils only).
    let refused = truncated_module();
    let ctx = Context::new(
        &ContextOptions::raw_access_chains().messenger(true).setting("log_level", "info").setting("duplicate_message_limit", "2"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(ctx.options().instance_extensions.is_empty());
    let active = with_id(&ctx, "POLYFILL-layer-active");
    assert_eq!(active.len(), 1, "log_level=info: POLYFILL-layer-active arrives during vkCreateInstance: {active:?}");
    assert!(active[0].text.contains("log_level=info") && active[0].text.contains("duplicate_message_limit=2"), "{}", active[0].text);
    assert_eq!(active[0].severity, vk::DebugUtilsMessageSeverityFlagsEXT::INFO);
    refuse(&ctx, &refused, 5);
    let said = with_id(&ctx, "POLYFILL-shader-refused");
    assert_eq!(said.len(), 2, "duplicate_message_limit=2: {said:?}");
    assert!(!said[0].text.contains("duplicate_message_limit") && said[1].text.contains("duplicate_message_limit 2 reached"), "{said:?}");
    drop(ctx);

    // Control: the same without the two settings.
    let ctx = Context::new(&ContextOptions::raw_access_chains().messenger(true)).unwrap_or_else(|e| panic!("{e}"));
    assert!(with_id(&ctx, "POLYFILL-layer-active").is_empty(), "log_level warn (default): no INFO message");
    refuse(&ctx, &refused, 5);
    assert_eq!(with_id(&ctx, "POLYFILL-shader-refused").len(), 5, "the default limit is 10");
}

// ---------------------------------------------------------------- messengers and threads

const ALIVE: u32 = 0x00A1_1CE0;
const DEAD: u32 = 0x0000_DEAD;

/// A messenger's user data: marked dead right after its destroy returns, never freed before
/// the test ends, so a late call reads it safely and is counted.
struct Canary {
    state: AtomicU32,
}

/// The layer's messages delivered to live messengers / callbacks, and to dead ones.
static UTILS_HITS: AtomicU64 = AtomicU64::new(0);
static REPORT_HITS: AtomicU64 = AtomicU64::new(0);
static LATE: AtomicU64 = AtomicU64::new(0);
/// Messages from others (loader, validation layer) to dead messengers: not the layer's doing.
static LATE_OTHERS: AtomicU64 = AtomicU64::new(0);

fn heard(user: *mut c_void, ours: bool, hits: &AtomicU64) {
    // SAFETY: every messenger of this test has a Canary as user data, alive until the end.
    let canary = unsafe { &*(user as *const Canary) };
    match (canary.state.load(Ordering::SeqCst), ours) {
        (ALIVE, true) => {
            hits.fetch_add(1, Ordering::Relaxed);
        }
        (ALIVE, false) => {}
        (_, true) => {
            LATE.fetch_add(1, Ordering::SeqCst);
        }
        (_, false) => {
            LATE_OTHERS.fetch_add(1, Ordering::SeqCst);
        }
    }
}

unsafe extern "system" fn on_message(
    _severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    let ours = data
        .as_ref()
        .and_then(|d| d.message_id_name_as_c_str())
        .is_some_and(|n| n.to_bytes().starts_with(b"POLYFILL-"));
    heard(user, ours, &UTILS_HITS);
    vk::FALSE
}

unsafe extern "system" fn on_report(
    _flags: vk::DebugReportFlagsEXT,
    _ty: vk::DebugReportObjectTypeEXT,
    _object: u64,
    _location: usize,
    _code: i32,
    prefix: *const c_char,
    _message: *const c_char,
    user: *mut c_void,
) -> vk::Bool32 {
    let ours = !prefix.is_null() && CStr::from_ptr(prefix) == c"POLYFILL";
    heard(user, ours, &REPORT_HITS);
    vk::FALSE
}

/// How long the threads churn.
const CHURN: Duration = Duration::from_secs(3);
/// A deadlock shows as no end within this.
const WATCHDOG: Duration = Duration::from_secs(60);

/// Creates and destroys messengers (or callbacks) until `stop`; returns how many.
#[allow(deprecated)] // VK_EXT_debug_report: deprecated by VK_EXT_debug_utils, still used
fn churn_messengers(ctx: &Context, report: bool, stop: &AtomicBool) -> Result<usize, String> {
    let utils = ash::ext::debug_utils::Instance::new(ctx.entry(), ctx.instance());
    let debug_report = ash::ext::debug_report::Instance::new(ctx.entry(), ctx.instance());
    let mut canaries: Vec<Box<Canary>> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let canary = Box::new(Canary { state: AtomicU32::new(ALIVE) });
        let user = &*canary as *const Canary as *mut c_void;
        let hold = || {
            // Some live a while (messages arrive), some are gone at once.
            if canaries.len().is_multiple_of(4) {
                std::thread::sleep(Duration::from_micros(300));
            } else {
                std::thread::yield_now();
            }
        };
        unsafe {
            if report {
                type F = vk::DebugReportFlagsEXT;
                let flags = F::ERROR | F::WARNING | F::PERFORMANCE_WARNING | F::INFORMATION | F::DEBUG;
                let ci = vk::DebugReportCallbackCreateInfoEXT::default().flags(flags).pfn_callback(Some(on_report)).user_data(user);
                let cb = debug_report.create_debug_report_callback(&ci, None).map_err(|e| format!("vkCreateDebugReportCallbackEXT: {e:?}"))?;
                hold();
                debug_report.destroy_debug_report_callback(cb, None);
            } else {
                let ci = vk::DebugUtilsMessengerCreateInfoEXT::default()
                    .message_severity(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR | vk::DebugUtilsMessageSeverityFlagsEXT::INFO)
                    .message_type(vk::DebugUtilsMessageTypeFlagsEXT::GENERAL | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION)
                    .pfn_user_callback(Some(on_message))
                    .user_data(user);
                let m = utils.create_debug_utils_messenger(&ci, None).map_err(|e| format!("vkCreateDebugUtilsMessengerEXT: {e:?}"))?;
                hold();
                utils.destroy_debug_utils_messenger(m, None);
            }
        }
        canary.state.store(DEAD, Ordering::SeqCst);
        canaries.push(canary);
    }
    Ok(canaries.len())
}

/// Creates the good module (rewritten, INFO) and the truncated one (refused, ERROR) until
/// `stop`; returns how many pairs.
fn churn_modules(ctx: &Context, stop: &AtomicBool) -> Result<usize, String> {
    let (good, bad) = (good_module(), truncated_module());
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let m = ctx.create_shader_module(&good).map_err(|e| format!("the good module: {e:?}"))?;
        ctx.destroy_shader_module(m);
        match ctx.create_shader_module(&bad) {
            Err(vk::Result::ERROR_INVALID_SHADER_NV) => {}
            r => return Err(format!("the truncated module: {r:?}")),
        }
        n += 1;
    }
    Ok(n)
}

#[test]
fn messengers_come_and_go_while_modules_are_made() {
    let options = ContextOptions::raw_access_chains()
        .validation(true)
        .instance_extension("VK_EXT_debug_report")
        .setting("log_level", "info")
        .setting("duplicate_message_limit", "0");
    let ctx = Arc::new(Context::new(&options).unwrap_or_else(|e| panic!("{e}")));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let worker = {
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let stop = Arc::new(AtomicBool::new(false));
            let spawn = |what: &'static str, report: Option<bool>| {
                let (ctx, stop) = (ctx.clone(), stop.clone());
                std::thread::spawn(move || {
                    let r = match report {
                        Some(report) => churn_messengers(&ctx, report, &stop),
                        None => churn_modules(&ctx, &stop),
                    };
                    (what, r)
                })
            };
            let threads = vec![
                spawn("debug-utils messengers", Some(false)),
                spawn("debug-utils messengers", Some(false)),
                spawn("debug-report callbacks", Some(true)),
                spawn("debug-report callbacks", Some(true)),
                spawn("modules", None),
                spawn("modules", None),
                spawn("modules", None),
            ];
            std::thread::sleep(CHURN);
            stop.store(true, Ordering::Relaxed);
            let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap_or(("a thread", Err("panicked".into())))).collect();
            let _ = done_tx.send(results);
        })
    };
    let Ok(results) = done_rx.recv_timeout(WATCHDOG) else {
        // The deadlocked threads may hold the loader's global lock (its messenger trampolines
        // call down under it): every other test of this process would hang too. End it (the
        // message written past the test harness's capture, which exit would lose).
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "messengers_come_and_go_while_modules_are_made: no end {WATCHDOG:?} after starting {CHURN:?} of churn: deadlock");
        std::process::exit(101);
    };
    worker.join().expect("worker");
    let mut counts = std::collections::BTreeMap::new();
    for (what, r) in results {
        let n = r.unwrap_or_else(|e| panic!("{what}: {e}"));
        *counts.entry(what).or_insert(0) += n;
    }
    let (utils, report, late, others) =
        (UTILS_HITS.load(Ordering::SeqCst), REPORT_HITS.load(Ordering::SeqCst), LATE.load(Ordering::SeqCst), LATE_OTHERS.load(Ordering::SeqCst));
    eprintln!("{counts:?}; the layer's messages to live messengers {utils}, to live callbacks {report}; to destroyed ones {late} (others' {others})");
    assert_eq!(late, 0, "the layer called {late} destroyed messengers or callbacks");
    assert!(counts.values().all(|n| *n > 10), "too little happened: {counts:?}");
    assert!(utils > 0 && report > 0, "no message reached the churned messengers ({utils}) or callbacks ({report}): nothing was tested");
    let errors = ctx.validation_errors();
    assert!(errors.is_empty(), "validation errors:\n{}", errors.join("\n"));
}

// ---------------------------------------------------------------- tooling info

#[derive(Debug, Clone, PartialEq)]
struct Tool {
    name: String,
    version: String,
    layer: String,
    purposes: vk::ToolPurposeFlags,
    description: String,
}

fn tool(p: &vk::PhysicalDeviceToolProperties) -> Tool {
    let s = |r: Result<&CStr, _>| r.map(|c: &CStr| c.to_string_lossy().into_owned()).unwrap_or_default();
    Tool {
        name: s(p.name_as_c_str()),
        version: s(p.version_as_c_str()),
        layer: s(p.layer_as_c_str()),
        purposes: p.purposes,
        description: s(p.description_as_c_str()),
    }
}

/// `command` (the core name or the EXT alias) through vkGetInstanceProcAddr, with an array of
/// `capacity` entries (None: as many as the count query says). (result, tools written).
fn tools_with(ctx: &Context, command: &str, capacity: Option<u32>) -> (vk::Result, Vec<Tool>) {
    let f = ctx.get_instance_proc_addr(command).unwrap_or_else(|| panic!("no {command}"));
    // SAFETY: the command's type.
    let f: vk::PFN_vkGetPhysicalDeviceToolProperties = unsafe { std::mem::transmute(f) };
    let mut n = 0u32;
    let r = unsafe { f(ctx.physical_device(), &mut n, std::ptr::null_mut()) };
    assert_eq!(r, vk::Result::SUCCESS, "{command} (count)");
    let mut n = capacity.unwrap_or(n);
    let mut list = vec![vk::PhysicalDeviceToolProperties::default(); n as usize];
    let r = unsafe { f(ctx.physical_device(), &mut n, list.as_mut_ptr()) };
    (r, list[..n as usize].iter().map(tool).collect())
}

fn tools(ctx: &Context, command: &str) -> Vec<Tool> {
    let (r, list) = tools_with(ctx, command, None);
    assert_eq!(r, vk::Result::SUCCESS, "{command}");
    list
}

fn context(options: ContextOptions) -> Context {
    Context::new(&options).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_ours(t: &Tool) {
    assert_eq!((t.name.as_str(), t.version.as_str(), t.layer.as_str()), ("vkpolyfill", env!("CARGO_PKG_VERSION"), LAYER_NAME), "{t:?}");
    assert!(t.purposes.contains(vk::ToolPurposeFlags::ADDITIONAL_FEATURES | vk::ToolPurposeFlags::MODIFYING_FEATURES), "{t:?}");
    assert!(t.description.contains("SPIR-V"), "{t:?}");
}

#[test]
fn tooling_info_lists_the_layer_last() {
    let native = context(ContextOptions::native());
    let driver = tools(&native, "vkGetPhysicalDeviceToolProperties");
    eprintln!("the driver's tools: {driver:?}");
    drop(native);

    // The layer alone: the driver's tools, then the layer's entry; the EXT alias agrees.
    let ctx = context(ContextOptions::with_layer());
    assert!(ctx.has_device_extension("VK_EXT_tooling_info"), "VK_EXT_tooling_info is listed (the driver's or the layer's)");
    let list = tools(&ctx, "vkGetPhysicalDeviceToolProperties");
    assert_eq!(list.len(), driver.len() + 1, "{list:?}");
    assert_eq!(list[..driver.len()], driver[..], "the driver's tools come first");
    assert_ours(list.last().unwrap());
    assert_eq!(tools(&ctx, "vkGetPhysicalDeviceToolPropertiesEXT"), list, "the EXT alias");
    // A short array: VK_INCOMPLETE and the first entries.
    for capacity in 0..list.len() as u32 {
        let (r, short) = tools_with(&ctx, "vkGetPhysicalDeviceToolProperties", Some(capacity));
        assert_eq!((r, short.as_slice()), (vk::Result::INCOMPLETE, &list[..capacity as usize]), "capacity {capacity}");
    }
    drop(ctx);

    // The validation layer below: its entry before the layer's. Version 1.3.239 answers the
    // EXT alias only (the core command passes it by, without the layer too).
    let ctx = context(ContextOptions::with_layer().validation(true));
    for command in ["vkGetPhysicalDeviceToolProperties", "vkGetPhysicalDeviceToolPropertiesEXT"] {
        let list = tools(&ctx, command);
        eprintln!("{command}, the validation layer below: {list:?}");
        assert_eq!(list[..driver.len()], driver[..], "{command}");
        assert_ours(list.last().unwrap());
        assert_eq!(list.iter().filter(|t| t.layer == LAYER_NAME).count(), 1, "{command}");
    }
    let list = tools(&ctx, "vkGetPhysicalDeviceToolPropertiesEXT");
    let validation = list.iter().position(|t| t.layer == VALIDATION_LAYER_NAME);
    assert_eq!(validation, Some(list.len() - 2), "the validation layer's entry, then the layer's: {list:?}");
    let errors = ctx.validation_errors();
    assert!(errors.is_empty(), "validation errors:\n{}", errors.join("\n"));
    drop(ctx);

    // A Vulkan 1.1 instance: the core command is not for it, the EXT alias is.
    let (list, errors) = tools_on_vulkan_1_1_instance();
    assert_ours(list.last().unwrap_or_else(|| panic!("Vulkan 1.1 instance: no tool")));
    assert!(errors.is_empty(), "Vulkan 1.1 instance, validation errors:\n{}", errors.join("\n"));
}

unsafe extern "system" fn collect_errors(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    let d = &*data;
    let id = d.message_id_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) && !id.starts_with("POLYFILL-") {
        let text = d.message_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        (*(user as *const std::sync::Mutex<Vec<String>>)).lock().unwrap().push(text);
    }
    vk::FALSE
}

/// `vkGetPhysicalDeviceToolPropertiesEXT` on a Vulkan 1.1 instance (no device: the harness's
/// device creation chains Vulkan 1.2 structures), the validation layer below the layer and a
/// messenger for errors (also chained: it hears vkCreateInstance). (tools, validation errors)
fn tools_on_vulkan_1_1_instance() -> (Vec<Tool>, Vec<String>) {
    let entry = entry().unwrap_or_else(|e| panic!("{e}"));
    let errors = std::sync::Mutex::new(Vec::new());
    let layers = [c"VK_LAYER_POLYFILL_extensions".as_ptr(), c"VK_LAYER_KHRONOS_validation".as_ptr()];
    let extensions = [ash::ext::debug_utils::NAME.as_ptr()];
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_1);
    let messenger = vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR)
        .message_type(vk::DebugUtilsMessageTypeFlagsEXT::GENERAL | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION)
        .pfn_user_callback(Some(collect_errors))
        .user_data(&errors as *const _ as *mut c_void);
    let mut chained = messenger;
    let info = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_layer_names(&layers)
        .enabled_extension_names(&extensions)
        .push_next(&mut chained);
    let instance = unsafe { entry.create_instance(&info, None) }.unwrap_or_else(|e| panic!("vkCreateInstance (1.1): {e:?}"));
    let utils = ash::ext::debug_utils::Instance::new(&entry, &instance);
    let m = unsafe { utils.create_debug_utils_messenger(&messenger, None) }.unwrap_or_else(|e| panic!("{e:?}"));
    let (pd, _) = Context::pick_physical_device(&instance).unwrap_or_else(|e| panic!("{e}"));
    let f = unsafe { (entry.static_fn().get_instance_proc_addr)(instance.handle(), c"vkGetPhysicalDeviceToolPropertiesEXT".as_ptr()) };
    // SAFETY: the command's type.
    let f: vk::PFN_vkGetPhysicalDeviceToolProperties = unsafe { std::mem::transmute(f.expect("vkGetPhysicalDeviceToolPropertiesEXT")) };
    let mut n = 0u32;
    assert_eq!(unsafe { f(pd, &mut n, std::ptr::null_mut()) }, vk::Result::SUCCESS);
    let mut list = vec![vk::PhysicalDeviceToolProperties::default(); n as usize];
    assert_eq!(unsafe { f(pd, &mut n, list.as_mut_ptr()) }, vk::Result::SUCCESS);
    unsafe {
        utils.destroy_debug_utils_messenger(m, None);
        instance.destroy_instance(None);
    }
    let tools = list[..n as usize].iter().map(tool).collect();
    (tools, errors.into_inner().unwrap())
}
