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
    for k in ["VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE", "VK_ADD_LAYER_PATH"] {
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

/// The llvmpipe `GPUn:` section of vulkaninfo's output (not the layer list above it).
fn llvmpipe_section(all: &str) -> String {
    let mut sections: Vec<String> = Vec::new();
    for line in all.lines() {
        let is_header = line.starts_with("GPU") && line.trim_end().ends_with(':') && line[3..line.len() - 1].chars().all(|c| c.is_ascii_digit());
        if is_header {
            sections.push(String::new());
        }
        if let Some(s) = sections.last_mut() {
            s.push_str(line);
            s.push('\n');
        }
    }
    sections.into_iter().find(|s| s.contains("llvmpipe")).expect("no llvmpipe GPU section in vulkaninfo output")
}

/// The `Device Extensions:` block of a GPU section.
fn device_extension_block(gpu: &str) -> String {
    let start = gpu.find("Device Extensions:").expect("no Device Extensions in vulkaninfo output");
    let rest = &gpu[start..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    rest[..end].to_string()
}

#[test]
fn vulkaninfo_shows_extension_and_feature() {
    let text = vulkaninfo(true);
    let gpu = llvmpipe_section(&text);
    let exts = device_extension_block(&gpu);
    let line = exts.lines().find(|l| l.contains(RAW_ACCESS_CHAINS_EXT));
    assert!(line.is_some(), "vulkaninfo with the layer does not list {RAW_ACCESS_CHAINS_EXT}:\n{exts}");
    assert!(line.unwrap().contains("revision 1"), "{line:?}");
    // vulkaninfo prints the feature structs it knows; Debian's 1.3.239 predates
    // VkPhysicalDeviceRawAccessChainsFeaturesNV (newer ones print it).
    if let Some(l) = gpu.lines().find(|l| l.contains("shaderRawAccessChains")) {
        assert!(l.contains("true"), "{l}");
    } else {
        eprintln!("note: this vulkaninfo does not know VkPhysicalDeviceRawAccessChainsFeaturesNV; the feature is checked via the API");
    }
    let without = vulkaninfo(false);
    let exts = device_extension_block(&llvmpipe_section(&without));
    assert!(!exts.contains(RAW_ACCESS_CHAINS_EXT), "listed without the layer");
}

/// The repository's manifest template is what the tests load (so its JSON is exercised), and
/// its `features.settings` list names exactly the documented settings keys.
#[test]
fn manifest_template_used_and_lists_settings() {
    let t = layer::manifest_template().expect("manifest/VkLayer_polyfill_extensions.json.in with @LIBRARY_PATH@");
    let json = std::fs::read_to_string(layer::manifest_dir().join(layer::MANIFEST_FILE)).unwrap();
    assert_eq!(json, t.replace("@LIBRARY_PATH@", &layer::library_path().display().to_string()));
    let mut keys: Vec<&str> = t.split("\"key\"").skip(1).filter_map(|s| s.split('"').nth(1)).collect();
    keys.sort();
    keys.dedup();
    let mut want = vec![
        "debug_inject_panic",
        "debug_oob_poison",
        "dump_shaders_dir",
        "rewrite_cache_mb",
        "duplicate_message_limit",
        "force_enable",
        "log_file",
        "log_level",
        "raw_access_chains",
        "image_view_handle",
        "buffer_device_address",
        "debug_target",
        "storage_buffer_16bit_access",
        "uniform_and_storage_buffer_16bit_access",
        "storage_push_constant_16",
        "storage_input_output_16",
        "storage_buffer_8bit_access",
        "uniform_and_storage_buffer_8bit_access",
        "storage_push_constant_8",
    ];
    want.sort();
    // The enum settings' values carry "key" fields too.
    keys.retain(|k| !["auto", "force", "off", "device", "core", "error", "warn", "info", "debug"].contains(k));
    assert_eq!(keys, want, "manifest features.settings keys");
}

/// `packaging/make-manifest.sh <dir>` (relative `library_path`) works with the real loader.
#[test]
fn make_manifest_script_output_loads() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/make-manifest.sh");
    if !script.exists() {
        eprintln!("packaging/make-manifest.sh not present; skipped");
        return;
    }
    let dir = polyfill_e2e::child::temp_dir("make-manifest");
    std::fs::copy(layer::library_path(), dir.join(layer::LIBRARY_FILE)).unwrap();
    let st = Command::new("bash").arg(&script).arg(&dir).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let out = Command::new("vulkaninfo")
        .env_remove("VK_LOADER_LAYERS_ENABLE")
        .env("VK_ADD_LAYER_PATH", &dir)
        .env("VK_INSTANCE_LAYERS", LAYER_NAME)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let exts = device_extension_block(&llvmpipe_section(&text));
    assert!(exts.contains(RAW_ACCESS_CHAINS_EXT), "not listed with the make-manifest.sh manifest:\n{exts}");
    let _ = std::fs::remove_dir_all(&dir);
}
