//! Bindless textures end to end: SPV_NV_bindless_texture shaders with VK_NVX_image_view_handle
//! handles, through the layer on lavapipe (which has neither), checked against CPU references.
//! The cases live in `polyfill_e2e::bindless::cases`; this file picks the variants.
//!
//! - `extension_is_advertised_with_entry_points`: the layer lists VK_NVX_image_view_handle (the
//!   driver does not), a device enables it, both handle queries resolve.
//! - `max_bound_descriptor_sets_is_the_drivers`.
//! - `compute_*`: 48 textures (RGBA8 and R32F) sampled (nearest, texel centers) and fetched with
//!   per-invocation handles from a storage buffer, and with uniform push-constant handles;
//!   addressing 32 (u32) and 64 (u64, uvec2 with a garbage high word); SPIR-V 1.3 and 1.6.
//! - `storage_image_*`: OpConvertUToImageNV + OpImageWrite / OpImageRead, read back by copy.
//! - `sampler_only_handles`: OpConvertUToSamplerNV (sampler slot of a combined handle) with a
//!   bound image and with a handle image; clamp/repeat/mirror × nearest/linear differ.
//! - `flow_*`: OpPhi / OpSelect / Function variables / OpConvertSampledImageToUNV.
//! - `psb_table_*`, `block_member_images_*`: handle tables through PhysicalStorageBuffer
//!   pointers; sampled images as 8-byte block members.
//! - `slang_shape_*`: addressing 64, OpConvertUToSampledImageNV for sampled and storage images
//!   (+ OpImage), OpConvertUToSamplerNV.
//! - `fragment_*`: fullscreen draw, per-pixel handles.
//! - `handle_lifetime_concurrent`: 6 threads create/destroy views and samplers and query handles.
//! - `app_rebinds_sets_*`: the application's own sets bound at various indices (incompatible
//!   layouts too) between dispatches / draws.
//! - `offline_rewrite_validates`, `validation_layer_and_dumps_clean`: every module rewritten
//!   offline and by the layer passes spirv-val; VK_LAYER_KHRONOS_validation below the layer
//!   reports nothing.
//!
//! - `garbage_handles_do_not_crash`: garbage handles (child processes) read the free slots'
//!   null descriptors: zero, no crash.
//!
//! `BINDLESS_FULL=1` adds the bigger sweeps (1000 textures, more lifetime rounds).

use polyfill_e2e::bindless::checks::{check_dumped_rewrites, ctx, dump_dir, offline_rewrite_errors, ok, record, validated_context, CAP_BINDLESS_TEXTURE_NV};
use polyfill_e2e::bindless::{cases, shaders, HandleApi, HandleKind};
use polyfill_e2e::child;
use polyfill_e2e::small_storage::run as ss_run;
use polyfill_e2e::tools::{self, has_capability};
use polyfill_e2e::vk::IMAGE_VIEW_HANDLE_EXT;
use polyfill_e2e::{Context, ContextOptions};

fn full() -> bool {
    std::env::var("BINDLESS_FULL").is_ok_and(|v| !v.is_empty() && v != "0")
}

#[test]
fn extension_is_advertised_with_entry_points() {
    let native = Context::new(&ContextOptions::native()).unwrap();
    let driver_has = native.has_device_extension(IMAGE_VIEW_HANDLE_EXT);
    drop(native);
    let plain = Context::new(&ContextOptions::with_layer()).unwrap();
    let listed = plain.device_extensions().unwrap();
    let n = listed.iter().filter(|(name, _)| name == IMAGE_VIEW_HANDLE_EXT).count();
    assert_eq!(n, 1, "{IMAGE_VIEW_HANDLE_EXT} listed {n} times through the layer (driver has it: {driver_has})");
    if !driver_has {
        let own = plain.device_extensions_of(Some(polyfill_e2e::layer::LAYER_NAME)).unwrap();
        assert!(own.iter().any(|(name, _)| name == IMAGE_VIEW_HANDLE_EXT), "the layer's own extension list lacks {IMAGE_VIEW_HANDLE_EXT}: {own:?}");
    }
    drop(plain);
    let api = HandleApi::new(ctx());
    assert!(api.has32(), "vkGetDeviceProcAddr(vkGetImageViewHandleNVX) is NULL with the extension enabled");
    assert!(api.has64(), "vkGetDeviceProcAddr(vkGetImageViewHandle64NVX) is NULL with the extension enabled");
}

/// The table's set is reserved: one set less than the driver's (issue 25).
#[test]
fn max_bound_descriptor_sets_leaves_the_tables_set() {
    let native = Context::new(&ContextOptions::native()).unwrap();
    let driver = native.limits().max_bound_descriptor_sets;
    drop(native);
    let got = ctx().limits().max_bound_descriptor_sets;
    assert_eq!(got, driver - 1, "maxBoundDescriptorSets through the layer: {got}, driver: {driver}");
    // Also through vkGetPhysicalDeviceProperties2.
    let mut p2 = polyfill_e2e::ash::vk::PhysicalDeviceProperties2::default();
    unsafe { ctx().instance().get_physical_device_properties2(ctx().physical_device(), &mut p2) };
    assert_eq!(p2.properties.limits.max_bound_descriptor_sets, got, "vkGetPhysicalDeviceProperties2 disagrees with vkGetPhysicalDeviceProperties");
}

#[test]
fn compute_per_invocation_handles_u32() {
    ok(cases::sample_many(ctx(), HandleKind::U32, false, 6, 48));
}
#[test]
fn compute_per_invocation_handles_u64() {
    ok(cases::sample_many(ctx(), HandleKind::U64, false, 6, 48));
}
#[test]
fn compute_per_invocation_handles_uvec2() {
    ok(cases::sample_many(ctx(), HandleKind::UVec2, false, 6, 48));
}
#[test]
fn compute_per_invocation_handles_spirv_1_3() {
    ok(cases::sample_many(ctx(), HandleKind::U32, false, 3, 48));
    ok(cases::sample_many(ctx(), HandleKind::U64, false, 3, 48));
}
#[test]
fn compute_uniform_handles() {
    for k in HandleKind::ALL {
        ok(cases::sample_many(ctx(), k, true, 6, 48));
    }
}
#[test]
fn compute_many_textures_sweep() {
    if !full() {
        eprintln!("BINDLESS_FULL not set: 1000-texture sweep skipped");
        return;
    }
    for k in HandleKind::ALL {
        ok(cases::sample_many(ctx(), k, false, 6, 1000));
    }
}

#[test]
fn storage_image_writes_u32() {
    ok(cases::storage_write(ctx(), HandleKind::U32));
}
#[test]
fn storage_image_writes_u64_and_uvec2() {
    ok(cases::storage_write(ctx(), HandleKind::U64));
    ok(cases::storage_write(ctx(), HandleKind::UVec2));
}

#[test]
fn sampler_only_handles() {
    ok(cases::sampler_handles(ctx()));
}

#[test]
fn flow_phi_select_variables_u32() {
    ok(cases::flow(ctx(), HandleKind::U32));
}
#[test]
fn flow_phi_select_variables_u64_and_uvec2() {
    ok(cases::flow(ctx(), HandleKind::U64));
    ok(cases::flow(ctx(), HandleKind::UVec2));
}

#[test]
fn flow_through_function_calls() {
    for k in HandleKind::ALL {
        ok(cases::flow_calls(ctx(), k));
    }
}

#[test]
fn psb_table_handles() {
    for k in HandleKind::ALL {
        ok(cases::psb_table(ctx(), k));
    }
}

#[test]
fn block_member_images_storage_buffer() {
    ok(cases::block_member_images(ctx(), false));
}
#[test]
fn block_member_images_physical_storage_buffer() {
    ok(cases::block_member_images(ctx(), true));
}

#[test]
fn slang_shape_u64() {
    ok(cases::slang_shape(ctx(), HandleKind::U64));
}
#[test]
fn slang_shape_uvec2() {
    ok(cases::slang_shape(ctx(), HandleKind::UVec2));
}

#[test]
fn fragment_per_pixel_handles() {
    for k in HandleKind::ALL {
        ok(cases::fragment_per_pixel(ctx(), k));
    }
}

#[test]
fn handle_lifetime_concurrent() {
    // Own context: the churn must not disturb the other tests' handles, and vice versa.
    let c = Context::new(&ContextOptions::bindless()).unwrap_or_else(|e| panic!("{e}"));
    let rounds = if full() { 3000 } else { 700 };
    match cases::lifetime(&c, 6, rounds) {
        Ok(summary) => println!("lifetime: {summary}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn app_rebinds_sets_between_dispatches() {
    let native = Context::new(&ContextOptions::native()).unwrap();
    let driver_max = native.limits().max_bound_descriptor_sets;
    drop(native);
    ok(cases::rebinding(ctx(), driver_max));
}

#[test]
fn app_rebinds_sets_between_draws() {
    ok(cases::draw_rebinds(ctx()));
}

/// The application enables the descriptor-indexing features itself (the layer must not add
/// duplicate feature structs or fail).
#[test]
fn app_enables_indexing_features_too() {
    let c = Context::new(&ContextOptions::bindless().bindless_features(true)).unwrap_or_else(|e| panic!("{e}"));
    ok(cases::sample_many(&c, HandleKind::U32, false, 6, 16));
    ok(cases::storage_write(&c, HandleKind::U32));
}

/// Garbage handles (kept inside the table by the lowering: their slot's low bits for the layer's
/// power-of-two arrays) do not crash; child processes. Every free slot of
/// the table holds a null image descriptor / the default sampler (`nullDescriptor`, which
/// lavapipe has), so they read zero (checked in `cases::garbage_handles`).
#[test]
fn garbage_handles_do_not_crash() {
    const NAME: &str = "garbage_handles_do_not_crash";
    if child::is_child(NAME) {
        let c = Context::new(&ContextOptions::bindless()).unwrap();
        let pattern = std::env::var("BINDLESS_GARBAGE").ok().and_then(|v| u32::from_str_radix(v.trim_start_matches("0x"), 16).ok());
        ok(cases::garbage_handles(&c, pattern));
        println!("GARBAGE-OK");
        return;
    }
    let mut report = Vec::new();
    for p in ["0", "1", "000fffff", "00000400", "fff00001", "12345678"] {
        let out = child::spawn(NAME, &[("BINDLESS_GARBAGE", p)], None);
        let ok = out.success() && out.stdout.contains("GARBAGE-OK");
        report.push(format!("handle 0x{p}: {}", if ok { "ok".to_string() } else { format!("{}", out.status) }));
    }
    println!("{}", report.join("\n"));
    let out = child::spawn(NAME, &[], None);
    assert!(
        out.success() && out.stdout.contains("GARBAGE-OK") && report.iter().all(|r| r.ends_with("ok")),
        "per-handle results:\n{}\nmixed garbage handles, one dispatch ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
        report.join("\n"),
        out.status,
        out.stdout,
        out.stderr.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    );
}

// ---- SPIR-V validity ---------------------------------------------------------------------------


/// The inputs themselves are what a producer would emit: they assemble and carry the capability.
#[test]
fn shaders_assemble() {
    let all = cases::all_shaders().unwrap_or_else(|e| panic!("{e}"));
    for (name, w, _) in &all {
        assert!(has_capability(w, CAP_BINDLESS_TEXTURE_NV), "{name} lacks BindlessTextureNV");
    }
    // Non-bindless helpers assemble too.
    tools::spirv_as(&shaders::fullscreen_vs(), "vulkan1.3").unwrap();
    tools::spirv_as(&shaders::cell_vs(), "vulkan1.3").unwrap();
    tools::spirv_as(&shaders::draw_fs(false), "vulkan1.3").unwrap();
    tools::spirv_as(&shaders::rebind_compute(0, false), "vulkan1.3").unwrap();
}

/// `shader_rewrite::rewrite` with a bindless table: every module passes spirv-val (Vulkan env)
/// and no longer declares BindlessTextureNV.
#[test]
fn offline_rewrite_validates() {
    let errs = offline_rewrite_errors(&cases::all_shaders().unwrap_or_else(|e| panic!("{e}")));
    assert!(errs.is_empty(), "{} failures:\n{}", errs.len(), errs.join("\n\n"));
}


/// Every case once more with VK_LAYER_KHRONOS_validation below the layer and shader dumps on:
/// zero validation errors, and every module the layer rewrote passes spirv-val.
#[test]
fn validation_layer_and_dumps_clean() {
    let dir = dump_dir("bindless");
    let c = validated_context(&dir);
    let native = Context::new(&ContextOptions::native()).unwrap();
    let driver_max = native.limits().max_bound_descriptor_sets;
    drop(native);
    let mut errs = Vec::new();
    let mut run = |name: &str, r: Result<(), String>| record(&c, name, r, &mut errs);
    run("sample_many u32", cases::sample_many(&c, HandleKind::U32, false, 6, 48));
    run("sample_many u64 uniform", cases::sample_many(&c, HandleKind::U64, true, 6, 48));
    run("sample_many uvec2 spv1.3", cases::sample_many(&c, HandleKind::UVec2, false, 3, 16));
    run("storage_write uvec2", cases::storage_write(&c, HandleKind::UVec2));
    run("sampler_handles", cases::sampler_handles(&c));
    run("flow u64", cases::flow(&c, HandleKind::U64));
    run("psb_table u32", cases::psb_table(&c, HandleKind::U32));
    run("block_member_images", cases::block_member_images(&c, false));
    run("slang_shape u64", cases::slang_shape(&c, HandleKind::U64));
    run("fragment u32", cases::fragment_per_pixel(&c, HandleKind::U32));
    run("rebinding", cases::rebinding(&c, driver_max));
    run("draw_rebinds", cases::draw_rebinds(&c));
    run("lifetime", cases::lifetime(&c, 2, 50).map(|_| ()));
    // Dumps: every bindless module the cases created was rewritten and validates.
    let seen = check_dumped_rewrites(&dir, &cases::all_shaders().unwrap(), false, &mut errs);
    if seen == 0 && errs.is_empty() {
        errs.push(format!("no rewritten module was dumped into {}", dir.display()));
    }
    println!("{seen} of the case modules were dumped by the layer and validated");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(errs.is_empty(), "{}", errs.join("\n\n"));
}

/// Control without the layer: a hand-written descriptor-array shader (what the lowering should
/// produce) against the same textures, samplers and CPU references. If this fails, the harness
/// is wrong, not the layer.
#[test]
fn control_native_descriptor_arrays_match_references() {
    let c = Context::new(&ContextOptions::native().bindless_features(true).validation(true)).unwrap_or_else(|e| panic!("{e}"));
    ok(cases::control_native(&c));
    ok(cases::draw_rebinds_with(&c, false));
    let v = ss_run::relevant_validation_errors(&c);
    assert!(v.is_empty(), "validation errors in the control run:\n{}", v.join("\n"));
}
