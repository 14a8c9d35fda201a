//! Settings precedence: environment > vk_layer_settings.txt > VkLayerSettingsCreateInfoEXT,
//! observed through where `log_file` sends the log. Each case runs in a child process (the
//! layer reads settings at vkCreateInstance).
//!
//! The child creates a module using RawAccessChainsNV with `log_level = debug`: the layer logs
//! about it whether the rewrite succeeds or fails.

use polyfill_e2e::child::{self, api_settings_from_env, read_log, API_SETTINGS_ENV};
use polyfill_e2e::layer::env_var_name;
use polyfill_e2e::{samples, Context, ContextOptions};
use std::path::{Path, PathBuf};

/// Child body: instance with API settings from the parent, one raw-chain module, one plain one.
fn child_body() {
    let mut opts = ContextOptions::raw_access_chains();
    opts.layer_settings = api_settings_from_env();
    let ctx = Context::new(&opts).unwrap_or_else(|e| panic!("{e}"));
    for s in [samples::byte_address(None), samples::plain()] {
        if let Ok(m) = ctx.create_shader_module(&s.assemble().unwrap()) {
            ctx.destroy_shader_module(m);
        }
    }
}

/// One precedence test: its child process runs [`child_body`]; the test writes settings into
/// a temporary directory, where the three log files are.
struct Case {
    name: &'static str,
    dir: child::TempDir,
    env_log: PathBuf,
    file_log: PathBuf,
    api_log: PathBuf,
}

impl Case {
    /// The case of test `name` (temporary directory `tag`); `None` in the child process, after
    /// [`child_body`] ran there.
    fn new(name: &'static str, tag: &str) -> Option<Case> {
        if child::is_child(name) {
            child_body();
            return None;
        }
        let dir = child::temp_dir(tag);
        Some(Case { name, env_log: dir.join("env.log"), file_log: dir.join("file.log"), api_log: dir.join("api.log"), dir })
    }
    fn settings_file(&self, dir: &Path, extra: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let f = dir.join("vk_layer_settings.txt");
        std::fs::write(
            &f,
            format!(
                "# written by polyfill-e2e\nkhronos_validation.enables = \npolyfill_extensions.log_level = debug\n\
                 polyfill_extensions.log_file = {}\n{extra}",
                self.file_log.display()
            ),
        )
        .unwrap();
        f
    }
    /// Runs the child with `env` in `cwd` (a new empty directory where `None`); asserts it
    /// succeeded.
    fn spawn(&self, env: &[(&str, &str)], cwd: Option<&Path>) {
        let empty = self.dir.join("empty-cwd");
        let cwd = cwd.unwrap_or_else(|| {
            std::fs::create_dir_all(&empty).unwrap();
            &empty
        });
        child::spawn(self.name, env, Some(cwd)).assert_success();
    }
    /// [`spawn`](Self::spawn) with API settings that log to `api.log` as well, then asserts
    /// that only `which` got log lines.
    fn only_logs_to(&self, env: &[(&str, &str)], cwd: Option<&Path>, which: &Path) {
        let api = format!("log_level=debug;log_file={}", self.api_log.display());
        let mut all = vec![(API_SETTINGS_ENV, api.as_str())];
        all.extend_from_slice(env);
        self.spawn(&all, cwd);
        for p in [&self.env_log, &self.file_log, &self.api_log] {
            let text = read_log(p);
            if p == which {
                assert!(text.contains("[polyfill]"), "{} should hold the log but has:\n{text}", p.display());
            } else {
                assert!(text.is_empty(), "{} should be empty but has:\n{text}", p.display());
            }
        }
    }
}

#[test]
fn env_beats_file_and_api() {
    let Some(c) = Case::new("env_beats_file_and_api", "prec-env") else { return };
    let cwd = c.dir.join("cwd");
    c.settings_file(&cwd, "");
    let env_log = c.env_log.display().to_string();
    c.only_logs_to(&[(&env_var_name("log_file"), &env_log), (&env_var_name("log_level"), "debug")], Some(&cwd), &c.env_log);
}

#[test]
fn file_in_cwd_beats_api() {
    let Some(c) = Case::new("file_in_cwd_beats_api", "prec-file") else { return };
    let cwd = c.dir.join("cwd");
    c.settings_file(&cwd, "");
    c.only_logs_to(&[], Some(&cwd), &c.file_log);
}

#[test]
fn settings_path_names_file() {
    let Some(c) = Case::new("settings_path_names_file", "prec-path-file") else { return };
    let f = c.settings_file(&c.dir.join("elsewhere"), "");
    c.only_logs_to(&[("VK_LAYER_SETTINGS_PATH", f.to_str().unwrap())], None, &c.file_log);
}

#[test]
fn settings_path_names_directory() {
    let Some(c) = Case::new("settings_path_names_directory", "prec-path-dir") else { return };
    let d = c.dir.join("elsewhere");
    c.settings_file(&d, "");
    c.only_logs_to(&[("VK_LAYER_SETTINGS_PATH", d.to_str().unwrap())], None, &c.file_log);
}

#[test]
fn api_settings_alone() {
    let Some(c) = Case::new("api_settings_alone", "prec-api") else { return };
    c.only_logs_to(&[], None, &c.api_log);
}

/// Env `log_level=error` beats the file's `debug`: no DEBUG/INFO lines.
#[test]
fn log_level_from_env_filters() {
    let Some(c) = Case::new("log_level_from_env_filters", "level") else { return };
    let cwd = c.dir.join("cwd");
    c.settings_file(&cwd, "");
    c.spawn(&[(&env_var_name("log_level"), "error")], Some(&cwd));
    let text = read_log(&c.file_log);
    for l in text.lines() {
        assert!(l.starts_with("[polyfill] ERROR"), "line above log_level=error: {l}");
    }
}

/// `log_level=debug` produces DEBUG or INFO lines with the `[polyfill]` prefix.
#[test]
fn log_level_debug_is_verbose() {
    let Some(c) = Case::new("log_level_debug_is_verbose", "verbose") else { return };
    let log = c.env_log.display().to_string();
    c.spawn(&[(&env_var_name("log_level"), "debug"), (&env_var_name("log_file"), &log)], Some(&c.dir));
    let text = read_log(&c.env_log);
    assert!(text.lines().all(|l| l.starts_with("[polyfill] ")), "unprefixed line in:\n{text}");
    assert!(text.contains("[polyfill] DEBUG") || text.contains("[polyfill] INFO"), "no DEBUG/INFO lines:\n{text}");
}

/// `raw_access_chains=off` from env: the layer leaves raw-chain modules alone, so the extension
/// is not advertised (or, if advertised, the module goes down unmodified and lavapipe rejects it).
#[test]
fn raw_access_chains_off_disables_emulation() {
    const NAME: &str = "raw_access_chains_off_disables_emulation";
    if child::is_child(NAME) {
        let ctx = Context::new(&ContextOptions::with_layer()).unwrap();
        assert!(
            !ctx.has_device_extension(polyfill_e2e::vk::RAW_ACCESS_CHAINS_EXT),
            "raw_access_chains=off but VK_NV_raw_access_chains is still advertised"
        );
        return;
    }
    child::spawn(NAME, &[(&env_var_name("raw_access_chains"), "off")], None).assert_success();
}
