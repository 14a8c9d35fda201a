//! The files generated from the layer's one description (issue 21): both manifests
//! (`manifest/*.json.in`) and the README's tables of settings, message IDs and client quirks.
//! This test fails when one is stale; `UPDATE_GENERATED=1 cargo test -p
//! vk-layer-polyfill-extensions --test generated_files` rewrites them.
//!
//! Sources: the settings (`settings::spec`), the emulations' extensions and commands (`ext::ALL`,
//! `tooling`), the layer's identity (`loader_interface`), the message kinds (`messages::ALL`),
//! the client quirks (`quirks::QUIRKS`); the version is the crate's.
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use VkLayer_polyfill_extensions::emulation::LayerExtension;
use VkLayer_polyfill_extensions::loader_interface::{IMPLEMENTATION_VERSION, LAYER_DESCRIPTION, LAYER_INTRODUCTION, LAYER_SPEC_VERSION};
use VkLayer_polyfill_extensions::messages::{self, Kind};
use VkLayer_polyfill_extensions::settings::spec::{self, Spec, Value as SettingValue};
use VkLayer_polyfill_extensions::settings::{ENV_PREFIX, LAYER_NAME};
use VkLayer_polyfill_extensions::{ext, quirks, tooling};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn version(v: u32) -> String {
    format!("{}.{}.{}", v >> 22, (v >> 12) & 0x3ff, v & 0xfff)
}

fn setting_json(s: &Spec) -> Value {
    let mut m = Map::new();
    m.insert("key".into(), json!(s.key));
    m.insert("env".into(), json!(format!("{ENV_PREFIX}{}", s.key.to_ascii_uppercase())));
    m.insert("label".into(), json!(s.label));
    m.insert("description".into(), json!(s.description));
    let (ty, default) = match &s.value {
        SettingValue::Bool => ("BOOL", json!(s.default == "true")),
        SettingValue::Enum(_) => ("ENUM", json!(s.default)),
        SettingValue::Uint { .. } => ("INT", json!(s.default.parse::<u64>().unwrap())),
        SettingValue::String => ("STRING", json!(s.default)),
        SettingValue::SaveFile => ("SAVE_FILE", json!(s.default)),
        SettingValue::SaveFolder => ("SAVE_FOLDER", json!(s.default)),
    };
    m.insert("type".into(), json!(ty));
    m.insert("default".into(), default);
    match &s.value {
        SettingValue::Enum(flags) => {
            let f: Vec<Value> = flags.iter().map(|f| json!({"key": f.key, "label": f.label, "description": f.description})).collect();
            m.insert("flags".into(), json!(f));
        }
        SettingValue::Uint { min, max } => {
            m.insert("range".into(), json!({"min": min, "max": max}));
        }
        _ => {}
    }
    if s.debug {
        m.insert("view".into(), json!("ADVANCED"));
    }
    m.insert("platforms".into(), json!(["LINUX"]));
    Value::Object(m)
}

fn extension_json(e: &LayerExtension) -> Value {
    json!({"name": e.name.to_str().unwrap(), "spec_version": e.spec_version.to_string(), "entrypoints": e.commands})
}

fn manifest(implicit: bool) -> String {
    let mut layer = Map::new();
    layer.insert("name".into(), json!(LAYER_NAME));
    layer.insert("type".into(), json!("INSTANCE"));
    layer.insert("library_path".into(), json!("@LIBRARY_PATH@"));
    layer.insert("api_version".into(), json!(version(LAYER_SPEC_VERSION)));
    layer.insert("implementation_version".into(), json!(IMPLEMENTATION_VERSION.to_string()));
    layer.insert("description".into(), json!(LAYER_DESCRIPTION));
    layer.insert("introduction".into(), json!(LAYER_INTRODUCTION));
    layer.insert("platforms".into(), json!(["LINUX"]));
    if implicit {
        // The loader takes the device extensions an implicit layer's manifest names for the
        // driver's: the layer would emulate nothing. It reports them itself.
        layer.insert("enable_environment".into(), json!({format!("{ENV_PREFIX}ENABLE"): "1"}));
        layer.insert("disable_environment".into(), json!({format!("{ENV_PREFIX}DISABLE"): "1"}));
    } else {
        layer.insert("instance_extensions".into(), json!([{"name": "VK_EXT_layer_settings", "spec_version": "2"}]));
        let exts: Vec<Value> = ext::ALL.iter().flat_map(|e| e.extensions()).chain([&tooling::EXTENSION]).map(extension_json).collect();
        layer.insert("device_extensions".into(), json!(exts));
    }
    let settings: Vec<Value> = spec::SPECS.iter().map(setting_json).collect();
    let presets: Vec<Value> = spec::PRESETS
        .iter()
        .map(|p| {
            let s: Vec<Value> = p.settings.iter().map(|(k, v)| json!({"key": k, "value": v})).collect();
            json!({"label": p.label, "description": p.description, "platforms": ["LINUX"], "status": "STABLE", "settings": s})
        })
        .collect();
    layer.insert("features".into(), json!({"settings": settings, "presets": presets}));
    let doc = json!({"file_format_version": "1.2.1", "layer": Value::Object(layer)});
    serde_json::to_string_pretty(&doc).unwrap() + "\n"
}

/// Markdown cell text (pipes escaped).
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn settings_table() -> String {
    let mut t = String::from("| key | values (default) | meaning |\n|---|---|---|\n");
    for s in spec::SPECS {
        let values = match &s.value {
            SettingValue::Bool => format!("`true`/`false` (`{}`)", s.default),
            SettingValue::Enum(flags) => format!("{} (`{}`)", flags.iter().map(|f| format!("`{}`", f.key)).collect::<Vec<_>>().join("/"), s.default),
            SettingValue::Uint { .. } => format!("count (`{}`)", s.default),
            SettingValue::String => "text (unset)".to_string(),
            SettingValue::SaveFile => "path (unset: stderr)".to_string(),
            SettingValue::SaveFolder => "directory (unset)".to_string(),
        };
        let debug = if s.debug { " *(debugging aid)*" } else { "" };
        t += &format!("| `{}` | {values} | {}{debug} |\n", s.key, cell(s.description));
    }
    t += "\nPresets (vkconfig): ";
    t += &spec::PRESETS
        .iter()
        .map(|p| format!("**{}** ({}): {}", p.label, p.settings.iter().map(|(k, v)| format!("`{k}={v}`")).collect::<Vec<_>>().join(", "), p.description))
        .collect::<Vec<_>>()
        .join("; ");
    t + "\n"
}

fn messages_table() -> String {
    let mut t = String::from("| `pMessageIdName` | `messageIdNumber` | type | what |\n|---|---|---|---|\n");
    for id in messages::ALL {
        let kind = match id.kind {
            Kind::General => "GENERAL",
            Kind::Validation => "VALIDATION",
            Kind::Performance => "PERFORMANCE",
        };
        t += &format!("| `{}` | {} | {kind} | {} |\n", id.id_name().to_str().unwrap(), id.number(), cell(id.what));
    }
    t
}

fn quirks_table() -> String {
    let mut t = String::from("| client | device | setting: `auto` becomes | why | upstream |\n|---|---|---|---|---|\n");
    for q in quirks::QUIRKS {
        t += &format!(
            "| {} | {} | `{}`: `{}` (override: `{}=force`) | {} | {} |\n",
            q.client,
            cell(q.condition),
            q.setting,
            format!("{:?}", q.becomes).to_ascii_lowercase(),
            q.setting,
            cell(q.why),
            cell(q.reference)
        );
    }
    t
}

/// `text` with the block between `<!-- generated:NAME -->` and `<!-- end:NAME -->` replaced.
fn splice(text: &str, name: &str, body: &str) -> String {
    let (start, end) = (format!("<!-- generated:{name} -->\n"), format!("<!-- end:{name} -->"));
    let a = text.find(&start).unwrap_or_else(|| panic!("README has no {start:?} marker")) + start.len();
    let b = text[a..].find(&end).unwrap_or_else(|| panic!("README has no {end:?} marker")) + a;
    format!("{}{body}{}", &text[..a], &text[b..])
}

fn readme() -> String {
    let path = repo().join("README.md");
    let text = std::fs::read_to_string(path).unwrap();
    let text = splice(&text, "settings", &settings_table());
    let text = splice(&text, "messages", &messages_table());
    splice(&text, "quirks", &quirks_table())
}

/// Compares (or with UPDATE_GENERATED=1 writes) one generated file.
fn check(rel: &str, want: &str) -> Option<String> {
    let path = repo().join(rel);
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::write(&path, want).unwrap();
        return None;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    (have != want).then(|| format!("{rel} is stale (UPDATE_GENERATED=1 cargo test -p vk-layer-polyfill-extensions --test generated_files)"))
}

#[test]
fn generated_files_are_fresh() {
    let stale: Vec<String> = [
        check("manifest/VkLayer_polyfill_extensions.json.in", &manifest(false)),
        check("manifest/VkLayer_polyfill_extensions_implicit.json.in", &manifest(true)),
        check("README.md", &readme()),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

#[test]
fn manifests_describe_the_layer() {
    let explicit: Value = serde_json::from_str(&manifest(false)).unwrap();
    let layer = &explicit["layer"];
    assert_eq!(layer["implementation_version"], json!(IMPLEMENTATION_VERSION.to_string()));
    let exts: Vec<&str> = layer["device_extensions"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(exts, ["VK_NV_raw_access_chains", "VK_NVX_image_view_handle", "VK_KHR_buffer_device_address", "VK_EXT_tooling_info"]);
    let nvx = &layer["device_extensions"][1]["entrypoints"];
    assert_eq!(nvx, &json!(["vkGetImageViewHandleNVX", "vkGetImageViewHandle64NVX"]));
    let keys: Vec<&str> = layer["features"]["settings"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), spec::SPECS.len());
    assert!(keys.contains(&"duplicate_message_limit") && keys.contains(&"buffer_device_address"));
    let implicit: Value = serde_json::from_str(&manifest(true)).unwrap();
    assert!(implicit["layer"].get("device_extensions").is_none());
    assert_eq!(implicit["layer"]["features"], layer["features"], "one settings list for both");
    assert!(layer["description"].as_str().unwrap().contains("bindless") && layer["description"].as_str().unwrap().contains("buffer device addresses"));
}
