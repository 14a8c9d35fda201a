//! Client quirks (issue 23): vkd3d-proton does not get VK_NV_raw_access_chains at default settings
//! on devices where its SSBO offset buffer is in use (`4 < minStorageBufferOffsetAlignment <= 16`,
//! lavapipe: 16), does with `raw_access_chains=force` (warned once per instance), and other
//! clients are unaffected; the decision reaches the log and the application's messenger. And the
//! harm the rule prevents, reproduced: a raw chain without the offset-buffer addition reads a
//! view whose offset is not a multiple of the alignment too early.
use ash::vk;
use polyfill_e2e::bytes;
use polyfill_e2e::spvasm::{Module, GID_X_CHAIN};
use polyfill_e2e::vk::{BufferSpec, ComputeJob};
use polyfill_e2e::{Context, ContextOptions};

const EXT: &str = "VK_NV_raw_access_chains";

/// lavapipe's alignment puts it in vkd3d-proton's offset-buffer window; skip elsewhere.
fn in_window(ctx: &Context) -> bool {
    let a = ctx.limits().min_storage_buffer_offset_alignment;
    a > 4 && a <= 16
}

fn native_has_raw_chains() -> bool {
    Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}")).has_device_extension(EXT)
}

/// A context with the layer, a messenger for every message, `log_level=info` (through
/// VkLayerSettingsCreateInfoEXT), and `engine`.
fn context(engine: &str, raw_access_chains: Option<&str>) -> Context {
    let mut o = ContextOptions::with_layer().engine_name(engine).messenger(true).setting("log_level", "info");
    if let Some(m) = raw_access_chains {
        o = o.setting("raw_access_chains", m);
    }
    Context::new(&o).unwrap_or_else(|e| panic!("{e}"))
}

fn messages_with(ctx: &Context, id: &str) -> Vec<String> {
    ctx.layer_messages().into_iter().filter(|m| m.id == id).map(|m| m.text).collect()
}

#[test]
fn vkd3d_gets_no_raw_access_chains_by_default() {
    if native_has_raw_chains() {
        eprintln!("the driver has {EXT}; nothing is emulated");
        return;
    }
    let ctx = context("vkd3d", None);
    if !in_window(&ctx) {
        eprintln!("minStorageBufferOffsetAlignment {} is outside vkd3d-proton's offset-buffer window", ctx.limits().min_storage_buffer_offset_alignment);
        return;
    }
    assert!(!ctx.has_device_extension(EXT), "advertised to vkd3d-proton at default settings");
    assert!(!ctx.query_raw_access_chains_feature(), "shaderRawAccessChains reported to vkd3d-proton");
    // Asked twice more: still said once per instance.
    assert!(!ctx.has_device_extension(EXT));
    let said: Vec<String> = messages_with(&ctx, "POLYFILL-client-quirk").into_iter().filter(|t| t.contains("'vkd3d-proton raw access chains'")).collect();
    assert_eq!(said.len(), 1, "{said:?}");
    let alignment = ctx.limits().min_storage_buffer_offset_alignment;
    for part in ["engine 'vkd3d'", &format!("minStorageBufferOffsetAlignment {alignment}"), "raw_access_chains=auto means off", "raw_access_chains=force", "vkd3d_bindless_state_get_bindless_flags"] {
        assert!(said[0].contains(part), "{part:?} missing from {}", said[0]);
    }
    let m = ctx.layer_messages().into_iter().find(|m| m.id == "POLYFILL-client-quirk" && m.text.contains("raw access chains")).unwrap();
    assert_eq!(m.severity, vk::DebugUtilsMessageSeverityFlagsEXT::INFO);
    assert!(m.objects.iter().any(|o| o.0 == vk::ObjectType::PHYSICAL_DEVICE), "{:?}", m.objects);
    assert!(messages_with(&ctx, "POLYFILL-vkd3d-offset-buffer").is_empty());
}

#[test]
fn vkd3d_with_force_gets_them_and_one_warning() {
    if native_has_raw_chains() {
        return;
    }
    let o = ContextOptions::raw_access_chains().engine_name("vkd3d").messenger(true).setting("raw_access_chains", "force");
    let ctx = Context::new(&o).unwrap_or_else(|e| panic!("{e}"));
    if !in_window(&ctx) {
        return;
    }
    assert!(ctx.has_device_extension(EXT) && ctx.query_raw_access_chains_feature());
    assert!(messages_with(&ctx, "POLYFILL-client-quirk").is_empty(), "force overrides the quirk");
    // A second device on the same instance: the warning is not repeated.
    second_device(&ctx);
    let warned = messages_with(&ctx, "POLYFILL-vkd3d-offset-buffer");
    assert_eq!(warned.len(), 1, "once per instance: {warned:?}");
    assert!(warned[0].contains("raw_access_chains=force"), "{}", warned[0]);
    let m = ctx.layer_messages().into_iter().find(|m| m.id == "POLYFILL-vkd3d-offset-buffer").unwrap();
    assert_eq!(m.severity, vk::DebugUtilsMessageSeverityFlagsEXT::WARNING);
}

#[test]
fn other_clients_are_unaffected() {
    if native_has_raw_chains() {
        return;
    }
    let ctx = context("polyfill-e2e", None);
    assert!(ctx.has_device_extension(EXT) && ctx.query_raw_access_chains_feature());
    assert!(messages_with(&ctx, "POLYFILL-client-quirk").is_empty());
}

/// Creates and destroys one more device with VK_NV_raw_access_chains on `ctx`'s instance.
fn second_device(ctx: &Context) {
    let priorities = [1.0f32];
    let queue = [vk::DeviceQueueCreateInfo::default().queue_family_index(ctx.queue_family()).queue_priorities(&priorities)];
    let names = [c"VK_NV_raw_access_chains".as_ptr()];
    let mut raw = vk::PhysicalDeviceRawAccessChainsFeaturesNV::default().shader_raw_access_chains(true);
    let info = vk::DeviceCreateInfo::default().queue_create_infos(&queue).enabled_extension_names(&names).push_next(&mut raw);
    let device = unsafe { ctx.instance().create_device(ctx.physical_device(), &info, None) }.unwrap_or_else(|e| panic!("second device: {e:?}"));
    unsafe { device.destroy_device(None) };
}

/// dxil-spirv's byte-address load (`OpRawAccessChainNV`, stride 0, per-component robustness):
/// invocation `i` reads the word at byte `4 * i + BASE` of binding 0 and writes it to word `i`
/// of binding 1. vkd3d-proton's offset-buffer path would add the view's sub-alignment offset;
/// its raw-chain path does not (BASE 0).
fn byte_address_shader(base: u32) -> String {
    Module::compute(8)
        .raw_access_chains()
        .gid()
        .word_buffers(&["in", "out"])
        .globals(&format!("%base = OpConstant %u32 {base}"))
        .main(&format!(
            "{GID_X_CHAIN}
%b = OpIMul %u32 %i %c4
%a = OpIAdd %u32 %b %base
%p = OpRawAccessChainNV %ps_u32 %in %c0 %c0 %a RobustnessPerComponentNV
%v = OpLoad %u32 %p Aligned 4
%po = OpAccessChain %ps_u32 %out %c0 %i
OpStore %po %v"
        ))
        .text()
}

/// The harm behind the vkd3d-proton quirk, on the layer's emulated raw chains: a D3D12 view at
/// byte 20 (a multiple of 4, not of 16) is bound at the aligned-down offset 16, as vkd3d-proton
/// does where `minStorageBufferOffsetAlignment` is 16; the raw-chain shape without the
/// offset-buffer addition reads 4 bytes early (every element is its predecessor), the same
/// shape with the view's remaining offset added reads the view.
#[test]
fn raw_chain_without_the_offset_buffer_reads_early() {
    let ctx = polyfill_e2e::vk::shared_layer_context();
    let alignment = ctx.limits().min_storage_buffer_offset_alignment;
    if alignment != 16 {
        eprintln!("minStorageBufferOffsetAlignment {alignment}: the reproduction assumes 16");
        return;
    }
    const VIEW_OFFSET: u64 = 20;
    let bound = VIEW_OFFSET / alignment * alignment;
    let words: Vec<u32> = (0..64).map(|w| 1000 + w).collect();
    let run = |base: u32| {
        let words_src = polyfill_e2e::tools::spirv_as(&byte_address_shader(base), "vulkan1.1").unwrap_or_else(|e| panic!("{e}"));
        let job = ComputeJob {
            buffers: vec![
                BufferSpec::storage(0, bytes::from_u32s(&words)).window(bound, Some(128)),
                BufferSpec::storage(1, vec![0u8; 32]),
            ],
            groups: [1, 1, 1],
            ..Default::default()
        };
        let out = ctx.run_compute(&words_src, &job).unwrap_or_else(|e| panic!("{e}"));
        bytes::to_u32s(&out[1])
    };
    let view: Vec<u32> = (0..8).map(|i| words[(VIEW_OFFSET / 4) as usize + i]).collect();
    let early: Vec<u32> = (0..8).map(|i| words[(bound / 4) as usize + i]).collect();
    assert_eq!(run(0), early, "without the offset buffer: {} bytes early", VIEW_OFFSET - bound);
    assert_ne!(early, view);
    assert_eq!(run((VIEW_OFFSET - bound) as u32), view, "with the view's remaining offset added (vkd3d-proton's offset-buffer path)");
}
