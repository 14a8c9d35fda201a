//! The layer advertises VK_NV_raw_access_chains and shaderRawAccessChains on lavapipe, and
//! nothing is advertised without it.

use polyfill_e2e::layer::{self, LAYER_NAME};
use polyfill_e2e::vk::{driver_has_extension, RAW_ACCESS_CHAINS_EXT};
use polyfill_e2e::{Context, ContextOptions};
use std::process::Command;

fn native_has_it() -> bool {
    driver_has_extension(RAW_ACCESS_CHAINS_EXT).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn extension_and_feature_visible_through_layer() {
    let ctx = Context::new(&ContextOptions::with_layer()).unwrap_or_else(|e| panic!("{e}"));
    let exts = ctx.device_extensions().unwrap();
    let ours: Vec<_> = exts.iter().filter(|(n, _)| n == RAW_ACCESS_CHAINS_EXT).collect();
    assert_eq!(ours.len(), 1, "exactly one {RAW_ACCESS_CHAINS_EXT} expected in {exts:?}");
    assert_eq!(ours[0].1, 1, "spec version");
    let mut names: Vec<_> = exts.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    let n = names.len();
    names.dedup();
    assert_eq!(n, names.len(), "duplicate extensions in the list");
    assert!(ctx.query_raw_access_chains_feature(), "shaderRawAccessChains not reported through the layer");
}

#[test]
fn layer_lists_extension_under_its_own_name() {
    let ctx = Context::new(&ContextOptions::with_layer()).unwrap_or_else(|e| panic!("{e}"));
    let exts = ctx.device_extensions_of(Some(LAYER_NAME)).unwrap();
    assert!(exts.iter().any(|(n, v)| n == RAW_ACCESS_CHAINS_EXT && *v == 1), "{exts:?}");
}

#[test]
fn not_visible_without_layer() {
    let ctx = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    assert!(!ctx.has_device_extension(RAW_ACCESS_CHAINS_EXT), "lavapipe lists {RAW_ACCESS_CHAINS_EXT} natively?");
    assert!(!ctx.query_raw_access_chains_feature());
    assert!(!native_has_it());
}

#[test]
fn device_with_extension_and_feature() {
    let ctx = Context::new(&ContextOptions::raw_access_chains()).unwrap_or_else(|e| panic!("{e}"));
    assert!(ctx.device_name().contains("llvmpipe"));
    assert!(ctx.features().raw_access_chains);
}

#[test]
fn device_with_extension_fails_without_layer() {
    let opts = ContextOptions { enable_layer: false, ..ContextOptions::raw_access_chains() };
    match Context::new(&opts) {
        Ok(_) => panic!("vkCreateDevice with {RAW_ACCESS_CHAINS_EXT} succeeded without the layer"),
        Err(e) => assert!(e.contains("EXTENSION_NOT_PRESENT"), "{e}"),
    }
}

#[test]
fn device_with_extension_and_validation() {
    let ctx = Context::new(&ContextOptions::raw_access_chains().validation(true)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}

fn vulkaninfo(with_layer: bool) -> String {
    let mut cmd = Command::new("vulkaninfo");
    for k in ["VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE"] {
        cmd.env_remove(k);
    }
    if with_layer {
        for (k, v) in layer::child_env_enabling_layer() {
            cmd.env(k, v);
        }
    }
    let out = cmd.output().expect("running vulkaninfo (apt-get install vulkan-tools)");
    assert!(out.status.success(), "vulkaninfo failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The llvmpipe GPU section of vulkaninfo's output.
fn llvmpipe_section(all: &str) -> String {
    let start = all.find("GPU id : 0 (llvmpipe").or_else(|| all.find("llvmpipe")).expect("no llvmpipe in vulkaninfo output");
    all[start..].to_string()
}

#[test]
fn vulkaninfo_shows_extension_and_feature() {
    let text = vulkaninfo(true);
    let gpu = llvmpipe_section(&text);
    assert!(gpu.contains(RAW_ACCESS_CHAINS_EXT), "vulkaninfo with the layer does not list {RAW_ACCESS_CHAINS_EXT}");
    // vulkaninfo prints feature structs it knows; Debian's 1.3.239 predates
    // VkPhysicalDeviceRawAccessChainsFeaturesNV, newer ones print it.
    if gpu.contains("shaderRawAccessChains") {
        let line = gpu.lines().find(|l| l.contains("shaderRawAccessChains")).unwrap();
        assert!(line.contains("true"), "{line}");
    } else {
        eprintln!("note: this vulkaninfo does not know VkPhysicalDeviceRawAccessChainsFeaturesNV; feature checked via the API instead");
    }
    let without = vulkaninfo(false);
    assert!(!llvmpipe_section(&without).contains(RAW_ACCESS_CHAINS_EXT), "listed without the layer");
}
