//! The 8/16-bit storage features through the layer on lavapipe: what
//! vkGetPhysicalDeviceFeatures2 reports (aggregate and dedicated structures), the per-feature
//! `auto`/`force`/`off` settings, vkCreateDevice with an emulated feature (lavapipe lacks
//! `storageInputOutput16`: the driver must never see it), and the per-feature log lines.

use ash::vk;
use polyfill_e2e::child;
use polyfill_e2e::layer::env_var_name;
use polyfill_e2e::{Context, ContextOptions};

/// Feature names in SPIR-V capability order (as the layer logs them).
const NAMES: [&str; 7] = [
    "storageBuffer16BitAccess",
    "uniformAndStorageBuffer16BitAccess",
    "storagePushConstant16",
    "storageInputOutput16",
    "storageBuffer8BitAccess",
    "uniformAndStorageBuffer8BitAccess",
    "storagePushConstant8",
];
const IO16: usize = 3;

fn on(b: vk::Bool32) -> bool {
    b == vk::TRUE
}

/// The seven bits from `VkPhysicalDeviceVulkan11Features` / `Vulkan12Features`.
fn aggregate_bits(ctx: &Context) -> [bool; 7] {
    let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut v11).push_next(&mut v12);
    unsafe { ctx.instance().get_physical_device_features2(ctx.physical_device(), &mut f2) };
    [
        on(v11.storage_buffer16_bit_access),
        on(v11.uniform_and_storage_buffer16_bit_access),
        on(v11.storage_push_constant16),
        on(v11.storage_input_output16),
        on(v12.storage_buffer8_bit_access),
        on(v12.uniform_and_storage_buffer8_bit_access),
        on(v12.storage_push_constant8),
    ]
}

/// The seven bits from `VkPhysicalDevice16BitStorageFeatures` / `8BitStorageFeatures`.
fn dedicated_bits(ctx: &Context) -> [bool; 7] {
    let mut s16 = vk::PhysicalDevice16BitStorageFeatures::default();
    let mut s8 = vk::PhysicalDevice8BitStorageFeatures::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut s16).push_next(&mut s8);
    unsafe { ctx.instance().get_physical_device_features2(ctx.physical_device(), &mut f2) };
    [
        on(s16.storage_buffer16_bit_access),
        on(s16.uniform_and_storage_buffer16_bit_access),
        on(s16.storage_push_constant16),
        on(s16.storage_input_output16),
        on(s8.storage_buffer8_bit_access),
        on(s8.uniform_and_storage_buffer8_bit_access),
        on(s8.storage_push_constant8),
    ]
}

fn native_bits() -> [bool; 7] {
    let ctx = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    let agg = aggregate_bits(&ctx);
    assert_eq!(agg, dedicated_bits(&ctx), "the driver reports different bits in aggregate and dedicated structs");
    agg
}

/// A second device on `ctx`'s physical device (through whatever layers `ctx` has), with
/// `storageInputOutput16` and the given other 16-bit bits requested, in the aggregate
/// (`aggregate`) or the dedicated structure. Destroyed right away.
fn create_device_requesting_io16(ctx: &Context, aggregate: bool, storage_buffer16: bool) -> Result<(), vk::Result> {
    let prio = [1.0f32];
    let qci = [vk::DeviceQueueCreateInfo::default().queue_family_index(ctx.queue_family()).queue_priorities(&prio)];
    let b = |x: bool| if x { vk::TRUE } else { vk::FALSE };
    let mut v11 = vk::PhysicalDeviceVulkan11Features {
        storage_input_output16: vk::TRUE,
        storage_buffer16_bit_access: b(storage_buffer16),
        ..Default::default()
    };
    let mut s16 = vk::PhysicalDevice16BitStorageFeatures {
        storage_input_output16: vk::TRUE,
        storage_buffer16_bit_access: b(storage_buffer16),
        ..Default::default()
    };
    let mut dci = vk::DeviceCreateInfo::default().queue_create_infos(&qci);
    dci = if aggregate { dci.push_next(&mut v11) } else { dci.push_next(&mut s16) };
    let device = unsafe { ctx.instance().create_device(ctx.physical_device(), &dci, None) }?;
    unsafe { device.destroy_device(None) };
    // The application's structures are untouched.
    assert_eq!((v11.storage_input_output16, s16.storage_input_output16), (vk::TRUE, vk::TRUE));
    Ok(())
}

#[test]
fn all_bits_reported_through_layer() {
    let native = native_bits();
    if native[IO16] {
        eprintln!("note: this driver has storageInputOutput16 natively");
    }
    let ctx = Context::new(&ContextOptions::with_layer()).unwrap_or_else(|e| panic!("{e}"));
    assert!(ctx.device_name().contains("llvmpipe"));
    assert_eq!(aggregate_bits(&ctx), [true; 7], "Vulkan11/12Features through the layer ({NAMES:?})");
    assert_eq!(dedicated_bits(&ctx), [true; 7], "16/8BitStorageFeatures through the layer");
}

#[test]
fn off_reports_what_the_driver_has() {
    let native = native_bits();
    let ctx = Context::new(&ContextOptions::with_layer().setting("storage_input_output_16", "off")).unwrap_or_else(|e| panic!("{e}"));
    let mut want = [true; 7];
    want[IO16] = native[IO16];
    assert_eq!(aggregate_bits(&ctx), want);
    assert_eq!(dedicated_bits(&ctx), want);
    if !native[IO16] {
        // Not emulated: the driver gets the request and refuses it.
        assert_eq!(create_device_requesting_io16(&ctx, true, false), Err(vk::Result::ERROR_FEATURE_NOT_PRESENT));
    }
}

/// The driver lacks storageInputOutput16; the layer withholds it from vkCreateDevice, from the
/// aggregate and from the dedicated structure. The validation layer below ours sees a valid
/// create info.
#[test]
fn device_with_emulated_feature() {
    if native_bits()[IO16] {
        eprintln!("storageInputOutput16 is native here; nothing to emulate");
        return;
    }
    let plain = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(create_device_requesting_io16(&plain, true, true), Err(vk::Result::ERROR_FEATURE_NOT_PRESENT));
    let ctx = Context::new(&ContextOptions::with_layer().validation(true)).unwrap_or_else(|e| panic!("{e}"));
    for aggregate in [true, false] {
        create_device_requesting_io16(&ctx, aggregate, true).unwrap_or_else(|e| panic!("vkCreateDevice (aggregate {aggregate}): {e:?}"));
    }
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

/// `force` on a feature the driver has: still reported, device creation (which then enables it
/// through the harness) works, also with the feature requested next to an emulated one.
#[test]
fn force_on_native_feature() {
    let native = native_bits();
    assert!(native[0], "lavapipe should have storageBuffer16BitAccess");
    let opts = ContextOptions::with_layer().setting("storage_buffer_16bit_access", "force").setting("storage_push_constant_8", "force");
    let ctx = Context::new(&opts.validation(true)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(aggregate_bits(&ctx), [true; 7]);
    assert_eq!(dedicated_bits(&ctx), [true; 7]);
    assert!(ctx.features().storage_buffer_16bit && ctx.features().storage_push_constant_8, "{:?}", ctx.features());
    for aggregate in [true, false] {
        create_device_requesting_io16(&ctx, aggregate, true).unwrap_or_else(|e| panic!("vkCreateDevice (aggregate {aggregate}): {e:?}"));
    }
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

/// One info line per feature and device, from settings in the environment; the rewrite options
/// emulate what was requested or forced, and the target claims none of it.
#[test]
fn decisions_are_logged() {
    const NAME: &str = "decisions_are_logged";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::with_layer()).unwrap_or_else(|e| panic!("{e}"));
        create_device_requesting_io16(&ctx, true, false).unwrap_or_else(|e| panic!("vkCreateDevice: {e:?}"));
        return;
    }
    if native_bits()[IO16] {
        eprintln!("storageInputOutput16 is native here; the expected lines differ");
        return;
    }
    let (_, text) = child::spawn_logged(
        NAME,
        "small-storage-log",
        &[
            (&env_var_name("log_level"), "debug"),
            (&env_var_name("storage_buffer_16bit_access"), "force"),
            (&env_var_name("storage_push_constant_8"), "off"),
        ],
    );
    let decisions: Vec<&str> = text.lines().filter(|l| l.starts_with("[polyfill] INFO: vkCreateDevice: device '")).collect();
    for name in NAMES {
        let n = decisions.iter().filter(|l| l.contains(&format!("': {name} "))).count();
        assert_eq!(n, 2, "expected one line for {name} per device (2 devices):\n{text}");
    }
    for want in [
        "llvmpipe",
        "storageBuffer16BitAccess emulated (forced; driver has it)",
        "uniformAndStorageBuffer16BitAccess native (driver supports it)",
        "storageInputOutput16 available but not enabled by the application; not emulated",
        "storageInputOutput16 emulated (driver lacks it)",
        "storagePushConstant8 off (setting)",
    ] {
        assert!(decisions.iter().any(|l| l.contains(want)), "no line with `{want}`:\n{text}");
    }
    // The second device's rewrite options: storageInputOutput16 and the forced
    // storageBuffer16BitAccess are emulated, and its target has neither.
    let opts: Vec<&str> = text.lines().filter(|l| l.contains("rewrite options")).collect();
    assert!(!opts.is_empty(), "no rewrite options logged:\n{text}");
    let last = opts.last().unwrap();
    let (target, rest) = last.split_once("emulate_storage:").unwrap_or_else(|| panic!("{last}"));
    let emulate = rest.split('}').next().unwrap();
    for f in ["storage_input_output_16", "storage_buffer_16bit"] {
        assert_eq!(field(emulate, f), Some(true), "{f} not emulated: {last}");
        assert_eq!(field(target, f), Some(false), "{f} in the target: {last}");
    }
    assert_eq!(field(emulate, "storage_push_constant_8"), Some(false), "{last}");
    assert_eq!(field(emulate, "uniform_and_storage_buffer_16bit"), Some(false), "{last}");
}

/// `name: true|false` in a `Debug`-printed struct.
fn field(debug: &str, name: &str) -> Option<bool> {
    debug.split([',', '{', '}']).find_map(|item| match item.trim().strip_prefix(name)?.strip_prefix(": ")? {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    })
}
