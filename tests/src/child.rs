//! Running one test of the current test binary in a child process with its own environment
//! and working directory (the layer reads its settings at instance creation, so tests that need
//! different settings run in children).
//!
//! ```ignore
//! #[test]
//! fn my_test() {
//!     if polyfill_e2e::child::is_child("my_test") {
//!         /* runs in the child, with the env below */
//!         return;
//!     }
//!     let out = polyfill_e2e::child::spawn("my_test", &[("VK_POLYFILL_EXTENSIONS_LOG_LEVEL", "debug")], None);
//!     out.assert_success();
//! }
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Env var naming the test a child process runs.
pub const CHILD_ENV: &str = "POLYFILL_E2E_CHILD";

/// True in the child process spawned for `test_name`.
pub fn is_child(test_name: &str) -> bool {
    std::env::var(CHILD_ENV).map(|v| v == test_name).unwrap_or(false)
}

/// What a child prints once its body ran to the end ([`run_child`],
/// [`ChildOutput::assert_completed`]): a body that exits early without failing (a driver that
/// aborts, a stray `exit(0)`) then still fails the test.
pub const COMPLETED: &str = "CHILD-OK";

/// In the child process spawned for `test_name`: runs `body`, prints [`COMPLETED`] and returns
/// true (the test then returns). False in any other process.
pub fn run_child(test_name: &str, body: impl FnOnce()) -> bool {
    if !is_child(test_name) {
        return false;
    }
    body();
    println!("{COMPLETED}");
    true
}

/// The result of a child run.
#[derive(Debug)]
pub struct ChildOutput {
    pub test_name: String,
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl ChildOutput {
    pub fn success(&self) -> bool {
        self.status.success()
    }
    /// Panics with the child's output unless it exited 0.
    pub fn assert_success(&self) {
        assert!(
            self.status.success(),
            "child `{}` failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.test_name,
            self.status,
            self.stdout,
            self.stderr
        );
    }
    /// [`assert_success`](Self::assert_success), and the child's body ran to its end
    /// ([`run_child`]).
    pub fn assert_completed(&self) {
        self.assert_success();
        assert!(self.stdout.contains(COMPLETED), "child `{}` did not run its body to the end:\n{}", self.test_name, self.stdout);
    }
}

/// Env vars removed from children unless passed explicitly, so the parent's environment does
/// not leak into settings tests.
fn scrubbed(key: &str) -> bool {
    key.starts_with(crate::layer::ENV_PREFIX) || key == "VK_LAYER_SETTINGS_PATH" || key == "VK_INSTANCE_LAYERS" || key == "VK_LOADER_LAYERS_ENABLE"
}

/// Runs test `test_name` of the current test binary in a child process with `env` added (and
/// the layer's settings vars scrubbed), in `cwd` if given. `VK_ADD_LAYER_PATH` points at the
/// harness manifest.
pub fn spawn(test_name: &str, env: &[(&str, &str)], cwd: Option<&Path>) -> ChildOutput {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args([test_name, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, _) in std::env::vars_os().filter_map(|(k, v)| k.into_string().ok().map(|k| (k, v))) {
        if scrubbed(&k) {
            cmd.env_remove(&k);
        }
    }
    cmd.env(CHILD_ENV, test_name);
    if let Ok(dir) = crate::layer::try_manifest_dir() {
        cmd.env("VK_ADD_LAYER_PATH", dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = cmd.output().expect("spawning child test process");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // A filter that matched nothing would "succeed" silently: catch that.
    assert!(
        stdout.contains("1 passed") || stdout.contains("1 failed") || !out.status.success(),
        "child for `{test_name}` ran no test (wrong name?):\n{stdout}\n{stderr}"
    );
    ChildOutput { test_name: test_name.to_string(), status: out.status, stdout, stderr }
}

/// [`spawn`] with `env` and the layer's `log_file` in a fresh [`temp_dir`] `tag`; asserts the
/// child succeeded (its output and the log in the message) and returns its output and the log.
pub fn spawn_logged(test_name: &str, tag: &str, env: &[(&str, &str)]) -> (ChildOutput, String) {
    let dir = temp_dir(tag);
    let log = dir.join("layer.log");
    let log_file = crate::layer::env_var_name("log_file");
    let mut all = vec![(log_file.as_str(), log.to_str().unwrap())];
    all.extend_from_slice(env);
    let out = spawn(test_name, &all, None);
    let text = read_log(&log);
    assert!(out.success(), "child failed:\n{}\n{}\nlog:\n{text}", out.stdout, out.stderr);
    (out, text)
}

/// A fresh empty directory `$TMPDIR/polyfill-e2e/<tag>-<pid>-<n>`, removed when dropped unless
/// the thread is panicking (so a failing test leaves its logs and dumps for inspection; the
/// path is in the panic message of most assertions). Derefs to `Path`.
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}
impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}
impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        } else {
            eprintln!("(test files kept in {})", self.0.display());
        }
    }
}

/// See [`TempDir`].
pub fn temp_dir(tag: &str) -> TempDir {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join("polyfill-e2e").join(format!("{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    TempDir(dir)
}

/// Env var through which a parent passes `VkLayerSettingsCreateInfoEXT` entries to a child
/// (`key=value;key=value`); read them with [`api_settings_from_env`].
pub const API_SETTINGS_ENV: &str = "POLYFILL_E2E_API_SETTINGS";

/// Parses [`API_SETTINGS_ENV`] (empty if unset).
pub fn api_settings_from_env() -> Vec<(String, String)> {
    std::env::var(API_SETTINGS_ENV)
        .unwrap_or_default()
        .split(';')
        .filter(|s| !s.trim().is_empty())
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
        .collect()
}

/// Contents of a log file, or "" if it does not exist.
pub fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
