//! Layer settings with Vulkan-Utility-Libraries (VUL `vk_layer_settings.h`) semantics.
//!
//! Sources, highest precedence first:
//! 1. environment `VK_POLYFILL_EXTENSIONS_<KEY>` (key upper-cased),
//! 2. `vk_layer_settings.txt`, lines `polyfill_extensions.<key> = <value>`; the file is
//!    `$VK_LAYER_SETTINGS_PATH` (a file, or a directory holding `vk_layer_settings.txt`), else
//!    `./vk_layer_settings.txt` in the current working directory,
//! 3. `VkLayerSettingsCreateInfoEXT` (VK_EXT_layer_settings) chained into `VkInstanceCreateInfo`
//!    with `pLayerName == "VK_LAYER_POLYFILL_extensions"`. The struct is left in the chain: the
//!    loader and other layers may read their own entries from it.
//!
//! Unknown keys carrying our prefix produce warnings (returned to the caller, which logs them once
//! the log configuration is known).
use crate::log::Level;
use ash::vk;
use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

pub const LAYER_NAME: &str = "VK_LAYER_POLYFILL_extensions";
pub const ENV_PREFIX: &str = "VK_POLYFILL_EXTENSIONS_";
pub const FILE_PREFIX: &str = "polyfill_extensions.";
pub const SETTINGS_FILE_NAME: &str = "vk_layer_settings.txt";
/// The largest `rewrite_cache_mb`.
pub const REWRITE_CACHE_MAX_MB: u32 = 4096;

pub mod spec;

/// Every key we understand (the manifests' `features.settings` and the README list the same
/// ones, generated from [`spec::SPECS`]).
pub fn keys() -> impl Iterator<Item = &'static str> {
    spec::SPECS.iter().map(|s| s.key)
}

/// Environment names with our prefix that are not settings: the implicit manifest's
/// enable/disable switches (read by the loader).
const ENV_NON_SETTINGS: &[&str] = &["ENABLE", "DISABLE"];

/// Which device features the rewriter may use (`debug_target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugTarget {
    /// The features actually enabled on the device.
    Device,
    /// Pretend the device has only what Vulkan 1.0 guarantees (no 8/16-bit storage, no
    /// Int8/16/64), to exercise the word-granular bounds and atomic sub-word store fallbacks.
    Core,
}

impl DebugTarget {
    pub fn parse(value: &str) -> Option<DebugTarget> {
        match value.trim().to_ascii_lowercase().as_str() {
            "device" => Some(DebugTarget::Device),
            "core" => Some(DebugTarget::Core),
            _ => None,
        }
    }
}

/// Per-extension (or per-feature) mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Emulate only where the driver lacks the extension.
    Auto,
    /// Emulate even where the driver has it.
    Force,
    /// Never touch it.
    Off,
}

impl Mode {
    pub fn parse(value: &str) -> Option<Mode> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Mode::Auto),
            "force" => Some(Mode::Force),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Emulate every extension even where the driver has it (a per-extension `off` still wins).
    pub force_enable: bool,
    pub raw_access_chains: Mode,
    /// VK_NVX_image_view_handle (bindless textures over a layer-owned descriptor table).
    pub image_view_handle: Mode,
    /// VK_KHR_buffer_device_address / `bufferDeviceAddress` (addresses over the descriptor table).
    pub buffer_device_address: Mode,
    /// 8/16-bit storage features (VK_KHR_16bit_storage / VK_KHR_8bit_storage), one mode each;
    /// fields named like their keys.
    pub storage_buffer_16bit_access: Mode,
    pub uniform_and_storage_buffer_16bit_access: Mode,
    pub storage_push_constant_16: Mode,
    pub storage_input_output_16: Mode,
    pub storage_buffer_8bit_access: Mode,
    pub uniform_and_storage_buffer_8bit_access: Mode,
    pub storage_push_constant_8: Mode,
    pub log_level: Level,
    /// `None` = stderr.
    pub log_file: Option<PathBuf>,
    /// Messages of one kind each debug messenger gets (0: unlimited).
    pub duplicate_message_limit: u32,
    /// MiB of rewrites kept per device for modules that come again (0: none).
    pub rewrite_cache_mb: u32,
    pub dump_shaders_dir: Option<PathBuf>,
    pub debug_oob_poison: Option<u8>,
    /// Name of a hook (e.g. `vkCreateShaderModule`) that panics on purpose.
    pub debug_inject_panic: Option<String>,
    /// Rewrite for the device's features, or as if it had only the core ones.
    pub debug_target: DebugTarget,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            force_enable: false,
            raw_access_chains: Mode::Auto,
            image_view_handle: Mode::Auto,
            buffer_device_address: Mode::Auto,
            storage_buffer_16bit_access: Mode::Auto,
            uniform_and_storage_buffer_16bit_access: Mode::Auto,
            storage_push_constant_16: Mode::Auto,
            storage_input_output_16: Mode::Auto,
            storage_buffer_8bit_access: Mode::Auto,
            uniform_and_storage_buffer_8bit_access: Mode::Auto,
            storage_push_constant_8: Mode::Auto,
            log_level: Level::Warn,
            log_file: None,
            duplicate_message_limit: 10,
            rewrite_cache_mb: 64,
            dump_shaders_dir: None,
            debug_oob_poison: None,
            debug_inject_panic: None,
            debug_target: DebugTarget::Device,
        }
    }
}

/// VUL bool parsing: `true`/`false`/`1`/`0` (case-insensitive).
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// A byte: `0xAB`, `0XAB` or decimal `171`.
pub fn parse_byte(value: &str) -> Option<u8> {
    let v = value.trim();
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u8::from_str_radix(hex, 16).ok()
    } else {
        v.parse::<u8>().ok()
    }
}

fn optional_path(value: &str) -> Option<PathBuf> {
    let v = value.trim();
    if v.is_empty() {
        None
    } else {
        Some(PathBuf::from(v))
    }
}

impl Settings {
    /// The mode setting named `key` (the extensions and the 8/16-bit storage features).
    pub fn mode(&self, key: &str) -> Option<Mode> {
        self.clone().mode_mut(key).copied()
    }

    /// The mode setting named `key` (the extensions and the 8/16-bit storage features).
    pub fn mode_mut(&mut self, key: &str) -> Option<&mut Mode> {
        Some(match key {
            "raw_access_chains" => &mut self.raw_access_chains,
            "image_view_handle" => &mut self.image_view_handle,
            "buffer_device_address" => &mut self.buffer_device_address,
            "storage_buffer_16bit_access" => &mut self.storage_buffer_16bit_access,
            "uniform_and_storage_buffer_16bit_access" => &mut self.uniform_and_storage_buffer_16bit_access,
            "storage_push_constant_16" => &mut self.storage_push_constant_16,
            "storage_input_output_16" => &mut self.storage_input_output_16,
            "storage_buffer_8bit_access" => &mut self.storage_buffer_8bit_access,
            "uniform_and_storage_buffer_8bit_access" => &mut self.uniform_and_storage_buffer_8bit_access,
            "storage_push_constant_8" => &mut self.storage_push_constant_8,
            _ => return None,
        })
    }

    /// Sets one key. `Err` carries a warning (unknown key or bad value; the setting keeps its
    /// previous value).
    pub fn set(&mut self, key: &str, value: &str, source: &str) -> Result<(), String> {
        let bad = |what: &str| Err(format!("{source}: bad value `{value}` for `{key}` (expected {what}); ignored"));
        if let Some(mode) = self.mode_mut(key) {
            match Mode::parse(value) {
                Some(m) => *mode = m,
                None => return bad("auto/force/off"),
            }
            return Ok(());
        }
        match key {
            "force_enable" => match parse_bool(value) {
                Some(b) => self.force_enable = b,
                None => return bad("true/false/1/0"),
            },
            "log_level" => match Level::parse(value) {
                Some(l) => self.log_level = l,
                None => return bad("error/warn/info/debug"),
            },
            "log_file" => self.log_file = optional_path(value),
            "duplicate_message_limit" => match value.trim().parse::<u32>() {
                Ok(n) => self.duplicate_message_limit = n,
                Err(_) => return bad("a count, 0 for unlimited"),
            },
            "rewrite_cache_mb" => match value.trim().parse::<u32>() {
                Ok(n) if n <= REWRITE_CACHE_MAX_MB => self.rewrite_cache_mb = n,
                _ => return bad("MiB from 0 (off) to 4096"),
            },
            "dump_shaders_dir" => self.dump_shaders_dir = optional_path(value),
            "debug_oob_poison" => {
                if value.trim().is_empty() {
                    self.debug_oob_poison = None
                } else {
                    match parse_byte(value) {
                        Some(b) => self.debug_oob_poison = Some(b),
                        None => return bad("a byte such as 0xAB"),
                    }
                }
            }
            "debug_inject_panic" => {
                let v = value.trim();
                self.debug_inject_panic = if v.is_empty() { None } else { Some(v.to_string()) };
            }
            "debug_target" => match DebugTarget::parse(value) {
                Some(t) => self.debug_target = t,
                None => return bad("device/core"),
            },
            _ => return Err(format!("{source}: unknown setting `{key}`; ignored")),
        }
        Ok(())
    }

    /// The value of `key` as a settings file would write it (None: unknown key).
    pub fn value_of(&self, key: &str) -> Option<String> {
        let path = |p: &Option<PathBuf>| p.as_ref().map_or(String::new(), |p| p.display().to_string());
        if let Some(m) = self.clone().mode_mut(key) {
            return Some(format!("{m:?}").to_ascii_lowercase());
        }
        Some(match key {
            "force_enable" => self.force_enable.to_string(),
            "log_level" => format!("{:?}", self.log_level).to_ascii_lowercase(),
            "log_file" => path(&self.log_file),
            "duplicate_message_limit" => self.duplicate_message_limit.to_string(),
            "rewrite_cache_mb" => self.rewrite_cache_mb.to_string(),
            "dump_shaders_dir" => path(&self.dump_shaders_dir),
            "debug_oob_poison" => self.debug_oob_poison.map_or(String::new(), |b| format!("{b:#04x}")),
            "debug_inject_panic" => self.debug_inject_panic.clone().unwrap_or_default(),
            "debug_target" => format!("{:?}", self.debug_target).to_ascii_lowercase(),
            _ => return None,
        })
    }

    /// The settings that differ from their defaults, `key=value` (or "all defaults").
    pub fn describe(&self) -> String {
        let changed: Vec<String> = spec::SPECS
            .iter()
            .filter_map(|s| self.value_of(s.key).filter(|v| v != s.default).map(|v| format!("{}={v}", s.key)))
            .collect();
        if changed.is_empty() {
            "all defaults".into()
        } else {
            changed.join(", ")
        }
    }

    /// Applies settings in precedence order (lowest first) and returns the warnings.
    pub fn from_sources(
        api: &[(String, String)],
        file_text: Option<(&Path, &str)>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> (Settings, Vec<String>) {
        let mut s = Settings::default();
        let mut warnings = Vec::new();
        for (k, v) in api {
            if let Err(w) = s.set(k, v, "VkLayerSettingsCreateInfoEXT") {
                warnings.push(w);
            }
        }
        if let Some((path, text)) = file_text {
            let source = path.display().to_string();
            for (k, v) in parse_settings_file(text) {
                if let Err(w) = s.set(&k, &v, &source) {
                    warnings.push(w);
                }
            }
        }
        let mut env: Vec<(String, String)> = env.into_iter().collect();
        env.sort();
        for (name, v) in env {
            let Some(suffix) = name.strip_prefix(ENV_PREFIX) else { continue };
            if ENV_NON_SETTINGS.contains(&suffix) {
                continue;
            }
            let key = suffix.to_ascii_lowercase();
            if let Err(w) = s.set(&key, &v, &format!("environment {name}")) {
                warnings.push(w);
            }
        }
        (s, warnings)
    }

    /// Reads all three sources for a `vkCreateInstance` whose pNext chain starts at `p_next`.
    ///
    /// # Safety
    /// `p_next` must be a valid Vulkan pNext chain (or null).
    pub unsafe fn load(p_next: *const c_void) -> (Settings, Vec<String>) {
        let (api, mut api_warnings) = api_settings(p_next);
        let file = settings_file_path();
        let text = file.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
        let (s, mut warnings) =
            Settings::from_sources(&api, file.as_deref().zip(text.as_deref()), std::env::vars());
        api_warnings.append(&mut warnings);
        (s, api_warnings)
    }
}

/// `key = value` lines with our prefix; `#` starts a comment line. Keys with other layers'
/// prefixes are skipped.
pub fn parse_settings_file(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else { continue };
        if let Some(key) = k.trim().strip_prefix(FILE_PREFIX) {
            out.push((key.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

/// VUL's lookup: `VK_LAYER_SETTINGS_PATH` names the file or its directory; else the working
/// directory.
pub fn settings_file_path() -> Option<PathBuf> {
    resolve_settings_file(std::env::var_os("VK_LAYER_SETTINGS_PATH").as_deref(), std::env::current_dir().ok())
}

/// [`settings_file_path`] without the process environment.
pub fn resolve_settings_file(env_value: Option<&std::ffi::OsStr>, cwd: Option<PathBuf>) -> Option<PathBuf> {
    match env_value {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            Some(if p.is_dir() { p.join(SETTINGS_FILE_NAME) } else { p })
        }
        _ => cwd.map(|d| d.join(SETTINGS_FILE_NAME)),
    }
}

/// Does the chain hold `VkLayerSettingsCreateInfoEXT` structures, all of whose settings name
/// this layer?
///
/// # Safety
/// `p_next` must be a valid pNext chain.
pub unsafe fn only_ours(p_next: *const c_void) -> bool {
    let mut found = false;
    for n in crate::pnext::walk(p_next) {
        if (*n).s_type != vk::StructureType::LAYER_SETTINGS_CREATE_INFO_EXT {
            continue;
        }
        found = true;
        let info = &*(n as *const vk::LayerSettingsCreateInfoEXT);
        let settings = if info.p_settings.is_null() { &[][..] } else { std::slice::from_raw_parts(info.p_settings, info.setting_count as usize) };
        let ours = |s: &vk::LayerSettingEXT| !s.p_layer_name.is_null() && CStr::from_ptr(s.p_layer_name).to_bytes() == LAYER_NAME.as_bytes();
        if !settings.iter().all(ours) {
            return false;
        }
    }
    found
}

/// Our entries of every `VkLayerSettingsCreateInfoEXT` in the chain, as strings, plus warnings
/// for value types we cannot use.
///
/// # Safety
/// `p_next` must be a valid pNext chain.
pub unsafe fn api_settings(mut p_next: *const c_void) -> (Vec<(String, String)>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    while !p_next.is_null() {
        let base = &*(p_next as *const vk::BaseInStructure);
        if base.s_type == vk::StructureType::LAYER_SETTINGS_CREATE_INFO_EXT {
            let info = &*(p_next as *const vk::LayerSettingsCreateInfoEXT);
            if !info.p_settings.is_null() {
                for setting in std::slice::from_raw_parts(info.p_settings, info.setting_count as usize) {
                    if setting.p_layer_name.is_null() || setting.p_setting_name.is_null() {
                        continue;
                    }
                    if CStr::from_ptr(setting.p_layer_name).to_bytes() != LAYER_NAME.as_bytes() {
                        continue;
                    }
                    let name = CStr::from_ptr(setting.p_setting_name).to_string_lossy().into_owned();
                    match setting_value(setting) {
                        Some(v) => out.push((name, v)),
                        None => warnings.push(format!(
                            "VkLayerSettingsCreateInfoEXT: setting `{name}` has no usable value (type {:?}, count {}); ignored",
                            setting.ty, setting.value_count
                        )),
                    }
                }
            }
        }
        p_next = base.p_next as *const c_void;
    }
    (out, warnings)
}

/// First value of a `VkLayerSettingEXT`, as text.
unsafe fn setting_value(s: &vk::LayerSettingEXT) -> Option<String> {
    if s.value_count == 0 || s.p_values.is_null() {
        return None;
    }
    let p = s.p_values;
    Some(match s.ty {
        vk::LayerSettingTypeEXT::BOOL32 => (*(p as *const vk::Bool32) != 0).to_string(),
        vk::LayerSettingTypeEXT::INT32 => (*(p as *const i32)).to_string(),
        vk::LayerSettingTypeEXT::INT64 => (*(p as *const i64)).to_string(),
        vk::LayerSettingTypeEXT::UINT32 => (*(p as *const u32)).to_string(),
        vk::LayerSettingTypeEXT::UINT64 => (*(p as *const u64)).to_string(),
        vk::LayerSettingTypeEXT::FLOAT32 => (*(p as *const f32)).to_string(),
        vk::LayerSettingTypeEXT::FLOAT64 => (*(p as *const f64)).to_string(),
        vk::LayerSettingTypeEXT::STRING => {
            let sp = *(p as *const *const std::ffi::c_char);
            if sp.is_null() {
                return None;
            }
            CStr::from_ptr(sp).to_string_lossy().into_owned()
        }
        _ => return None,
    })
}

/// The settings of the most recently created instance (before any: environment + file only).
/// Used by hooks that have no instance at hand (panic injection, global log config).
static CURRENT: RwLock<Option<Arc<Settings>>> = RwLock::new(None);
/// Whether the installed settings name a hook for `debug_inject_panic`, and whether any are
/// installed yet: the hot-path check in every hook is two relaxed loads, no lock.
static PANIC_INJECTION: AtomicBool = AtomicBool::new(false);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// True when `debug_inject_panic` may name a hook: settings with it were installed, or none
/// were yet (then the caller must look, since the environment may name one).
pub fn panic_injection_armed() -> bool {
    PANIC_INJECTION.load(Ordering::Relaxed) || !INSTALLED.load(Ordering::Relaxed)
}

pub fn current() -> Arc<Settings> {
    if let Some(s) = CURRENT.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return s.clone();
    }
    // SAFETY: a null chain. Warnings are not logged here: vkCreateInstance reads the same
    // sources again and logs them once per instance.
    let (s, _warnings) = unsafe { Settings::load(std::ptr::null()) };
    let s = Arc::new(s);
    install(s.clone(), &[]);
    s
}

/// Makes `s` current, applies its log configuration and logs `warnings`.
pub fn install(s: Arc<Settings>, warnings: &[String]) {
    crate::log::configure(s.log_level, s.log_file.as_deref());
    for w in warnings {
        crate::log_warn!(SETTING_INVALID, "{w}");
    }
    PANIC_INJECTION.store(s.debug_inject_panic.is_some(), Ordering::Relaxed);
    *CURRENT.write().unwrap_or_else(|e| e.into_inner()) = Some(s);
    INSTALLED.store(true, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    /// The description table and the parser agree: every key parses its default, the defaults
    /// give `Settings::default()`, every enum value parses, and `value_of` writes them back.
    #[test]
    fn specs_match_the_parser() {
        let mut s = Settings::default();
        for spec in spec::SPECS {
            assert_eq!(s.set(spec.key, spec.default, "spec"), Ok(()), "{}", spec.key);
            assert_eq!(s.value_of(spec.key).as_deref(), Some(spec.default), "{}", spec.key);
            if let spec::Value::Enum(flags) = &spec.value {
                for f in *flags {
                    let mut t = Settings::default();
                    assert_eq!(t.set(spec.key, f.key, "spec"), Ok(()), "{}={}", spec.key, f.key);
                    assert_eq!(t.value_of(spec.key).as_deref(), Some(f.key));
                }
            }
        }
        assert_eq!(s, Settings::default());
        assert_eq!(Settings::default().describe(), "all defaults");
        let mut t = Settings::default();
        t.set("raw_access_chains", "force", "x").unwrap();
        assert!(t.set("rewrite_cache_mb", "4097", "x").is_err(), "above the maximum");
        assert!(t.set("rewrite_cache_mb", "-1", "x").is_err());
        t.set("duplicate_message_limit", "3", "x").unwrap();
        assert_eq!(t.describe(), "raw_access_chains=force, duplicate_message_limit=3");
        assert!(t.set("duplicate_message_limit", "-1", "x").is_err());
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn defaults() {
        let (s, w) = Settings::from_sources(&[], None, Vec::new());
        assert_eq!(s, Settings::default());
        assert!(w.is_empty());
        assert_eq!(s.log_level, Level::Warn);
        assert_eq!(s.raw_access_chains, Mode::Auto);
    }

    #[test]
    fn bools_like_vul() {
        assert_eq!(parse_bool("true"), Some(true));
        assert_eq!(parse_bool("TRUE"), Some(true));
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("false"), Some(false));
        assert_eq!(parse_bool("yes"), None);
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_byte("0xAB"), Some(0xab));
        assert_eq!(parse_byte("0Xab"), Some(0xab));
        assert_eq!(parse_byte("171"), Some(171));
        assert_eq!(parse_byte("0x1FF"), None);
        assert_eq!(parse_byte("zz"), None);
    }

    #[test]
    fn file_format() {
        let text = "# comment\npolyfill_extensions.log_level = debug\nkhronos_validation.foo = 1\n\
                    polyfill_extensions.raw_access_chains=force\nnonsense line\n";
        assert_eq!(
            parse_settings_file(text),
            vec![("log_level".into(), "debug".into()), ("raw_access_chains".into(), "force".into())]
        );
    }

    #[test]
    fn settings_file_lookup() {
        let dir = std::env::temp_dir();
        let cwd = Some(PathBuf::from("/some/cwd"));
        assert_eq!(resolve_settings_file(Some(dir.as_os_str()), cwd.clone()), Some(dir.join(SETTINGS_FILE_NAME)));
        let file = std::ffi::OsStr::new("/etc/custom_settings.txt");
        assert_eq!(resolve_settings_file(Some(file), cwd.clone()), Some(PathBuf::from("/etc/custom_settings.txt")));
        assert_eq!(resolve_settings_file(None, cwd.clone()), Some(PathBuf::from("/some/cwd/vk_layer_settings.txt")));
        assert_eq!(resolve_settings_file(Some(std::ffi::OsStr::new("")), cwd), Some(PathBuf::from("/some/cwd/vk_layer_settings.txt")));
    }

    #[test]
    fn precedence_env_over_file_over_api() {
        let api = env(&[("log_level", "warn"), ("raw_access_chains", "off"), ("force_enable", "true")]);
        let file = "polyfill_extensions.log_level = info\npolyfill_extensions.raw_access_chains = force\n";
        let e = env(&[("VK_POLYFILL_EXTENSIONS_LOG_LEVEL", "debug"), ("PATH", "/bin")]);
        let (s, w) = Settings::from_sources(&api, Some((Path::new("f.txt"), file)), e);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.log_level, Level::Debug); // env
        assert_eq!(s.raw_access_chains, Mode::Force); // file
        assert!(s.force_enable); // api
    }

    #[test]
    fn all_keys_parse() {
        let e = env(&[
            ("VK_POLYFILL_EXTENSIONS_FORCE_ENABLE", "1"),
            ("VK_POLYFILL_EXTENSIONS_RAW_ACCESS_CHAINS", "off"),
            ("VK_POLYFILL_EXTENSIONS_LOG_LEVEL", "info"),
            ("VK_POLYFILL_EXTENSIONS_LOG_FILE", "/tmp/x.log"),
            ("VK_POLYFILL_EXTENSIONS_DUMP_SHADERS_DIR", "/tmp/d"),
            ("VK_POLYFILL_EXTENSIONS_DEBUG_OOB_POISON", "0xAB"),
            ("VK_POLYFILL_EXTENSIONS_DEBUG_INJECT_PANIC", "vkCreateShaderModule"),
            ("VK_POLYFILL_EXTENSIONS_DEBUG_TARGET", "core"),
            ("VK_POLYFILL_EXTENSIONS_BUFFER_DEVICE_ADDRESS", "force"),
            ("VK_POLYFILL_EXTENSIONS_REWRITE_CACHE_MB", "0"),
            ("VK_POLYFILL_EXTENSIONS_ENABLE", "1"),
        ]);
        let (s, w) = Settings::from_sources(&[], None, e);
        assert!(w.is_empty(), "{w:?}");
        assert!(s.force_enable);
        assert_eq!(s.raw_access_chains, Mode::Off);
        assert_eq!(s.log_level, Level::Info);
        assert_eq!(s.log_file.as_deref(), Some(Path::new("/tmp/x.log")));
        assert_eq!(s.dump_shaders_dir.as_deref(), Some(Path::new("/tmp/d")));
        assert_eq!(s.debug_oob_poison, Some(0xab));
        assert_eq!(s.debug_inject_panic.as_deref(), Some("vkCreateShaderModule"));
        assert_eq!(s.debug_target, DebugTarget::Core);
        assert_eq!(s.buffer_device_address, Mode::Force);
        assert_eq!(s.rewrite_cache_mb, 0);
        assert_eq!(keys().count(), 19);
    }

    /// The seven 8/16-bit storage feature modes: every source, precedence env > file > API,
    /// bad values warn and keep the previous value.
    #[test]
    fn storage_feature_modes() {
        const STORAGE_KEYS: [&str; 7] = [
            "storage_buffer_16bit_access",
            "uniform_and_storage_buffer_16bit_access",
            "storage_push_constant_16",
            "storage_input_output_16",
            "storage_buffer_8bit_access",
            "uniform_and_storage_buffer_8bit_access",
            "storage_push_constant_8",
        ];
        let d = Settings::default();
        for k in STORAGE_KEYS {
            assert!(keys().any(|x| x == k), "{k} missing from the settings");
            assert_eq!(d.clone().mode_mut(k).copied(), Some(Mode::Auto), "{k} default");
            for (v, m) in [("auto", Mode::Auto), ("FORCE", Mode::Force), (" off ", Mode::Off)] {
                let mut s = Settings::default();
                assert_eq!(s.set(k, v, "test"), Ok(()));
                assert_eq!(*s.mode_mut(k).unwrap(), m, "{k}={v}");
                // Only that key changed.
                for other in STORAGE_KEYS.iter().filter(|o| **o != k) {
                    assert_eq!(*s.mode_mut(other).unwrap(), Mode::Auto, "{other} changed by {k}");
                }
            }
            let mut s = Settings::default();
            s.set(k, "force", "test").unwrap();
            let w = s.set(k, "sometimes", "test").unwrap_err();
            assert!(w.contains(k) && w.contains("auto/force/off"), "{w}");
            assert_eq!(*s.mode_mut(k).unwrap(), Mode::Force);
        }
        assert!(Settings::default().mode_mut("log_level").is_none());

        // API sets all three, the file overrides two, the environment one.
        let api = env(&[
            ("storage_input_output_16", "off"),
            ("storage_push_constant_8", "off"),
            ("storage_buffer_16bit_access", "off"),
        ]);
        let file = "polyfill_extensions.storage_input_output_16 = force
                    polyfill_extensions.storage_push_constant_8 = force
";
        let e = env(&[("VK_POLYFILL_EXTENSIONS_STORAGE_INPUT_OUTPUT_16", "auto")]);
        let (s, w) = Settings::from_sources(&api, Some((Path::new("f"), file)), e);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.storage_input_output_16, Mode::Auto); // env
        assert_eq!(s.storage_push_constant_8, Mode::Force); // file
        assert_eq!(s.storage_buffer_16bit_access, Mode::Off); // api
        assert_eq!(s.uniform_and_storage_buffer_8bit_access, Mode::Auto); // default

        // Every key of every source reaches its field (env names are the upper-cased keys).
        let e: Vec<(String, String)> =
            STORAGE_KEYS.iter().map(|k| (format!("{ENV_PREFIX}{}", k.to_ascii_uppercase()), "off".to_string())).collect();
        let (mut s, w) = Settings::from_sources(&[], None, e);
        assert!(w.is_empty(), "{w:?}");
        for k in STORAGE_KEYS {
            assert_eq!(*s.mode_mut(k).unwrap(), Mode::Off, "{k} from the environment");
        }
        let file: String = STORAGE_KEYS.iter().map(|k| format!("{FILE_PREFIX}{k} = force\n")).collect();
        let (mut s2, w) = Settings::from_sources(&[], Some((Path::new("f"), &file)), Vec::new());
        assert!(w.is_empty(), "{w:?}");
        for k in STORAGE_KEYS {
            assert_eq!(*s2.mode_mut(k).unwrap(), Mode::Force, "{k} from the file");
        }
    }

    #[test]
    fn debug_target_values() {
        assert_eq!(Settings::default().debug_target, DebugTarget::Device);
        assert_eq!(DebugTarget::parse("device"), Some(DebugTarget::Device));
        assert_eq!(DebugTarget::parse(" CORE "), Some(DebugTarget::Core));
        assert_eq!(DebugTarget::parse("all"), None);
        // File sets core, the environment puts it back to device (env wins).
        let file = "polyfill_extensions.debug_target = core\n";
        let (s, w) = Settings::from_sources(&[], Some((Path::new("f"), file)), Vec::new());
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.debug_target, DebugTarget::Core);
        let e = env(&[("VK_POLYFILL_EXTENSIONS_DEBUG_TARGET", "device")]);
        let (s, w) = Settings::from_sources(&[], Some((Path::new("f"), file)), e);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.debug_target, DebugTarget::Device);
        // A bad value warns and keeps the previous value.
        let api = env(&[("debug_target", "core")]);
        let e = env(&[("VK_POLYFILL_EXTENSIONS_DEBUG_TARGET", "minimal")]);
        let (s, w) = Settings::from_sources(&api, None, e);
        assert_eq!(s.debug_target, DebugTarget::Core);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("minimal") && w[0].contains("debug_target") && w[0].contains("device/core"), "{w:?}");
    }

    #[test]
    fn unknown_keys_and_bad_values_warn() {
        let api = env(&[("bogus_api", "1")]);
        let file = "polyfill_extensions.bogus_file = 1\n";
        let e = env(&[("VK_POLYFILL_EXTENSIONS_BOGUS_ENV", "1"), ("VK_POLYFILL_EXTENSIONS_FORCE_ENABLE", "maybe")]);
        let (s, w) = Settings::from_sources(&api, Some((Path::new("f"), file)), e);
        assert!(!s.force_enable);
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w.iter().any(|m| m.contains("bogus_api")));
        assert!(w.iter().any(|m| m.contains("bogus_file")));
        assert!(w.iter().any(|m| m.contains("bogus_env")));
        assert!(w.iter().any(|m| m.contains("maybe")));
    }

    #[test]
    fn reads_layer_settings_create_info() {
        let layer = CString::new(LAYER_NAME).unwrap();
        let other = CString::new("VK_LAYER_KHRONOS_validation").unwrap();
        let n_force = CString::new("force_enable").unwrap();
        let n_mode = CString::new("raw_access_chains").unwrap();
        let n_poison = CString::new("debug_oob_poison").unwrap();
        let v_true: vk::Bool32 = vk::TRUE;
        let v_mode = CString::new("force").unwrap();
        let v_mode_ptr = v_mode.as_ptr();
        let v_poison: u32 = 0xcd;
        let setting = |layer: &CString, name: &CString, ty, value: *const c_void| vk::LayerSettingEXT {
            p_layer_name: layer.as_ptr(),
            p_setting_name: name.as_ptr(),
            ty,
            value_count: 1,
            p_values: value,
            ..Default::default()
        };
        type T = vk::LayerSettingTypeEXT;
        let settings = [
            setting(&layer, &n_force, T::BOOL32, &v_true as *const _ as *const c_void),
            setting(&other, &n_force, T::BOOL32, &v_true as *const _ as *const c_void),
            setting(&layer, &n_mode, T::STRING, &v_mode_ptr as *const _ as *const c_void),
            setting(&layer, &n_poison, T::UINT32, &v_poison as *const _ as *const c_void),
        ];
        let info = vk::LayerSettingsCreateInfoEXT {
            setting_count: settings.len() as u32,
            p_settings: settings.as_ptr(),
            ..Default::default()
        };
        let (pairs, w) = unsafe { api_settings(&info as *const _ as *const c_void) };
        assert!(w.is_empty());
        assert_eq!(pairs.len(), 3);
        let (s, w) = Settings::from_sources(&pairs, None, Vec::new());
        assert!(w.is_empty(), "{w:?}");
        assert!(s.force_enable);
        assert_eq!(s.raw_access_chains, Mode::Force);
        assert_eq!(s.debug_oob_poison, Some(0xcd));
    }
}
