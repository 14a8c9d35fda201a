//! Finding the built layer and giving the loader a manifest for it.
//!
//! The harness always writes its own manifest (into a per-process temp dir) pointing at the
//! absolute path of the built `.so`, so tests never depend on an install step having run.
//! Build the layer first: `cargo build --release -p vk-layer-polyfill-extensions`
//! (`packaging/test.sh` builds the whole workspace in release before running the tests).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The layer's name as the loader knows it.
pub const LAYER_NAME: &str = "VK_LAYER_POLYFILL_extensions";
/// File name of the built layer library.
pub const LIBRARY_FILE: &str = "libVkLayer_polyfill_extensions.so";
/// File name of the manifest.
pub const MANIFEST_FILE: &str = "VkLayer_polyfill_extensions.json";
/// Khronos validation layer.
pub const VALIDATION_LAYER_NAME: &str = "VK_LAYER_KHRONOS_validation";
/// Prefix of the layer's settings environment variables.
pub const ENV_PREFIX: &str = "VK_POLYFILL_EXTENSIONS_";

/// `VK_POLYFILL_EXTENSIONS_<KEY>` for a settings key (`log_file` → `VK_POLYFILL_EXTENSIONS_LOG_FILE`).
pub fn env_var_name(key: &str) -> String {
    format!("{ENV_PREFIX}{}", key.to_ascii_uppercase())
}

fn exe_profile_dir() -> Option<PathBuf> {
    // Test binaries live in target/<profile>/deps/, binaries in target/<profile>/,
    // examples in target/<profile>/examples/.
    let exe = std::env::current_exe().ok()?;
    let mut dir = exe.parent()?.to_path_buf();
    if matches!(dir.file_name().and_then(|n| n.to_str()), Some("deps") | Some("examples")) {
        dir = dir.parent()?.to_path_buf();
    }
    Some(dir)
}

fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os("POLYFILL_LAYER_LIB") {
        out.push(PathBuf::from(p));
    }
    let profile_dir = exe_profile_dir();
    let profile = profile_dir
        .as_ref()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("release")
        .to_string();
    let mut profiles = vec![profile.clone()];
    for p in ["release", "debug"] {
        if p != profile {
            profiles.push(p.to_string());
        }
    }
    if let Some(d) = &profile_dir {
        out.push(d.join(LIBRARY_FILE));
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        for p in &profiles {
            out.push(Path::new(&t).join(p).join(LIBRARY_FILE));
        }
    }
    // Walk up from the executable to a directory that has target/.
    if let Ok(exe) = std::env::current_exe() {
        for a in exe.ancestors().skip(1) {
            if a.file_name().and_then(|n| n.to_str()) == Some("target") {
                for p in &profiles {
                    out.push(a.join(p).join(LIBRARY_FILE));
                }
            }
        }
    }
    // Workspace root relative to this crate (compile-time path).
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(|p| p.join("target"));
    if let Some(t) = ws {
        for p in &profiles {
            out.push(t.join(p).join(LIBRARY_FILE));
        }
    }
    out
}

/// Path of the built layer library, or an error saying how to build it.
pub fn try_library_path() -> Result<PathBuf, String> {
    let c = candidates();
    for p in &c {
        if p.is_file() {
            return Ok(p.canonicalize().unwrap_or_else(|_| p.clone()));
        }
    }
    Err(format!(
        "the layer library {LIBRARY_FILE} was not found. Build it first:\n    \
         cargo build --release -p vk-layer-polyfill-extensions\n\
         (or set POLYFILL_LAYER_LIB=/path/to/{LIBRARY_FILE}). Looked in:\n  {}",
        c.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join("\n  ")
    ))
}

/// Path of the built layer library; panics with build instructions if missing.
pub fn library_path() -> PathBuf {
    try_library_path().unwrap_or_else(|e| panic!("{e}"))
}

/// The repository's manifest template (`manifest/VkLayer_polyfill_extensions.json.in`, with
/// `@LIBRARY_PATH@`), if this crate is built in-tree.
pub fn manifest_template() -> Option<String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?.join("manifest").join("VkLayer_polyfill_extensions.json.in");
    std::fs::read_to_string(p).ok().filter(|t| t.contains("@LIBRARY_PATH@"))
}

/// The manifest JSON for a library at `library_path`: the repository's template with the
/// absolute library path, or a built-in minimal manifest if the template is not available.
pub fn manifest_json(library_path: &Path) -> String {
    let lib = library_path.display().to_string().replace('\\', "\\\\").replace('"', "\\\"");
    if let Some(t) = manifest_template() {
        return t.replace("@LIBRARY_PATH@", &lib);
    }
    format!(
        r#"{{
    "file_format_version": "1.2.0",
    "layer": {{
        "name": "{LAYER_NAME}",
        "type": "INSTANCE",
        "library_path": "{lib}",
        "api_version": "1.3.239",
        "implementation_version": "1",
        "description": "vkpolyfill: emulates shader extensions the driver lacks (test manifest)",
        "device_extensions": [
            {{ "name": "VK_NV_raw_access_chains", "spec_version": "1", "entrypoints": [] }}
        ]
    }}
}}
"#
    )
}

/// Writes a manifest for `library_path` into `dir` (created if needed); returns the file path.
pub fn write_manifest(dir: &Path, library_path: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let file = dir.join(MANIFEST_FILE);
    std::fs::write(&file, manifest_json(library_path))?;
    Ok(file)
}

/// A directory holding only our manifest (per process, created once), for `VK_ADD_LAYER_PATH`.
/// Panics with build instructions if the layer is not built.
pub fn manifest_dir() -> PathBuf {
    try_manifest_dir().unwrap_or_else(|e| panic!("{e}"))
}

/// Like [`manifest_dir`] but returns the error. The directory is
/// `$TMPDIR/polyfill-e2e-manifest-<hash of the library path>` (shared by all test processes
/// for the same build; written atomically), so runs do not pile up directories.
pub fn try_manifest_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let lib = try_library_path()?;
        // FNV-1a of the path: stable across processes and Rust versions.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in lib.to_string_lossy().bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        let dir = std::env::temp_dir().join(format!("polyfill-e2e-manifest-{h:016x}"));
        let err = |e: std::io::Error| format!("cannot write manifest into {}: {e}", dir.display());
        std::fs::create_dir_all(&dir).map_err(err)?;
        let file = dir.join(MANIFEST_FILE);
        let json = manifest_json(&lib);
        if std::fs::read_to_string(&file).ok().as_deref() != Some(json.as_str()) {
            let tmp = dir.join(format!(".{MANIFEST_FILE}.{}", std::process::id()));
            std::fs::write(&tmp, &json).map_err(err)?;
            std::fs::rename(&tmp, &file).map_err(err)?;
        }
        Ok(dir)
    })
    .clone()
}

/// Makes the loader see our layer in this process: sets `VK_ADD_LAYER_PATH` to
/// [`manifest_dir`] (prepending to any existing value). Idempotent; call before the first
/// `vkCreateInstance` (the harness's `Context::new` does it when the layer is enabled).
pub fn register_with_loader() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = try_manifest_dir()?;
        let mut v = dir.as_os_str().to_owned();
        if let Some(old) = std::env::var_os("VK_ADD_LAYER_PATH") {
            if !old.is_empty() {
                v.push(":");
                v.push(old);
            }
        }
        std::env::set_var("VK_ADD_LAYER_PATH", v);
        Ok(())
    })
    .clone()
}

/// Environment for a child process (e.g. `vulkaninfo`) so that it loads our layer:
/// `VK_ADD_LAYER_PATH` and `VK_INSTANCE_LAYERS`.
pub fn child_env_enabling_layer() -> Vec<(String, String)> {
    vec![
        ("VK_ADD_LAYER_PATH".into(), manifest_dir().display().to_string()),
        ("VK_INSTANCE_LAYERS".into(), LAYER_NAME.into()),
    ]
}

/// The shared object that contains `addr` (dladdr), canonicalized.
pub fn object_of(addr: usize) -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads `addr` as an address and fills `info`.
    let r = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) };
    if r == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the dynamic linker.
    let p = PathBuf::from(unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned());
    Some(p.canonicalize().unwrap_or(p))
}
