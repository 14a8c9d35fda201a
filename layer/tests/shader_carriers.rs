//! Every structure and command of the Vulkan registry that can hand shader code to the driver is
//! either rewritten by the layer or refused with a reason (issue 20): the registry's list
//! (layer/tools/shader_carriers.py over the pinned vulkan-object package's vk.xml) equals the
//! layer's `shader_hooks::carriers::CARRIERS`, and every rewritten command is hooked.
use std::path::Path;
use std::process::Command;
use VkLayer_polyfill_extensions::shader_hooks::{self, carriers::{Handling, CARRIERS}};

fn registry_carriers() -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/shader_carriers.py");
    let out = Command::new("python3").arg(&script).output().expect("python3");
    assert!(
        out.status.success(),
        "{} failed (pip install vulkan-object, packaging/install-deps.sh): {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn every_carrier_is_handled() {
    let registry = registry_carriers();
    assert!(registry.len() > 20 && registry.contains(&"vkCreateShaderModule".to_string()), "{registry:?}");
    let ours: Vec<&str> = CARRIERS.iter().map(|(n, _)| *n).collect();
    let missing: Vec<&String> = registry.iter().filter(|n| !ours.contains(&n.as_str())).collect();
    let stale: Vec<&&str> = ours.iter().filter(|n| !registry.iter().any(|r| r == *n)).collect();
    assert!(missing.is_empty(), "shader-carrying structures/commands the layer neither rewrites nor refuses: {missing:?}");
    assert!(stale.is_empty(), "CARRIERS names what the registry does not: {stale:?}");
    for (name, handling) in CARRIERS {
        if !name.starts_with("vk") {
            continue;
        }
        // A command is handled only if the layer hands out a hook for it.
        assert!(shader_hooks::device_hook(name.as_bytes()).is_some(), "{name} ({handling:?}) has no hook");
        if let Handling::Refused(why) = handling {
            assert!(!why.is_empty());
        }
    }
}
