//! Real programs, run the way users run them (not through the harness's `dlopen`): each in its
//! own process group under a timeout, with a scrubbed environment (no inherited layer
//! variables, its own HOME) plus what a case sets; the C programs of `examples/c` built with the
//! system compiler and linked `-lvulkan`; the validation layer logging to a file.
//! Used by `tests/tests/real_programs.rs` and `tests/tests/messages_c.rs`.

use crate::child::{temp_dir, TempDir};
use crate::{layer, tools};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Far above what any program here needs on lavapipe (≈1 s), far below a stuck CI run.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The repository root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent")
}

/// One finished (or killed) program.
pub struct Run {
    pub what: String,
    pub status: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> bool {
        !self.timed_out && self.status == Some(0)
    }
    pub fn describe(&self) -> String {
        let status = if self.timed_out { format!("HUNG (killed after {TIMEOUT:?})") } else { format!("exit {:?}", self.status) };
        format!("{}: {status}\n--- stdout\n{}--- stderr\n{}", self.what, tail(&self.stdout), tail(&self.stderr))
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].iter().map(|l| format!("{l}\n")).collect()
}

/// The environment a case sets on top of the scrubbed one.
#[derive(Clone, Default)]
pub struct Env(pub Vec<(String, String)>);

impl Env {
    pub fn set(mut self, k: &str, v: impl Into<String>) -> Self {
        self.0.push((k.to_string(), v.into()));
        self
    }
    /// The loader finds the layer's manifest (explicit; enabled by something else).
    pub fn layer_path(self) -> Self {
        self.set("VK_ADD_LAYER_PATH", layer::manifest_dir().display().to_string())
    }
    /// `VK_INSTANCE_LAYERS`, first = closest to the application.
    pub fn instance_layers(self, layers: &[&str]) -> Self {
        self.layer_path().set("VK_INSTANCE_LAYERS", layers.join(":"))
    }
    pub fn no_device_select(self) -> Self {
        self.set("NODEVICE_SELECT", "1")
    }
}

/// Variables that would let the caller's environment decide what loads.
fn is_inherited_layer_variable(k: &str) -> bool {
    k.starts_with("VK_") || k == "NODEVICE_SELECT" || k.starts_with("XDG_") || k == "HOME"
}

/// Runs `argv` in its own process group with a scrubbed environment plus `env`, HOME = `home`;
/// kills the whole group after [`TIMEOUT`].
pub fn run(what: &str, argv: &[&str], env: &Env, home: &Path) -> Run {
    use std::os::unix::process::CommandExt;
    let dir = temp_dir("real-program-out");
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..]).current_dir(&*dir).process_group(0);
    for (k, _) in std::env::vars() {
        if is_inherited_layer_variable(&k) {
            cmd.env_remove(k);
        }
    }
    cmd.env("HOME", home).envs(env.0.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"));
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {argv:?}: {e}"));
    let start = Instant::now();
    let (status, timed_out) = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break (s.code(), false);
        }
        if start.elapsed() > TIMEOUT {
            // The group: xvfb-run's Xvfb and the program under it.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        what: format!("{what} ({})", argv.join(" ")),
        status,
        timed_out,
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    }
}

/// An example of `examples/c` built with `cc ... -lvulkan` into a temporary directory, with
/// `raw_chain.spv` assembled next to it.
pub struct CExample {
    _dir: TempDir,
    pub exe: PathBuf,
    pub spv: PathBuf,
}

impl CExample {
    /// Builds `examples/c/<name>.c`; panics with the compiler's output on failure.
    pub fn build(name: &str) -> CExample {
        let dir = temp_dir(&format!("{name}-c"));
        let exe = build_c_example(name, &dir);
        let spv = assemble_raw_chain(&dir);
        CExample { _dir: dir, exe, spv }
    }
}

/// Builds `examples/c/<name>.c` with `cc -std=c99 -O1 -Wall -Wextra -Werror ... -lvulkan` into
/// `dir/<name>`; panics with the compiler's output on failure.
fn build_c_example(name: &str, dir: &Path) -> PathBuf {
    let src = repo_root().join(format!("examples/c/{name}.c"));
    let exe = dir.join(name);
    let out = Command::new("cc")
        .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-lvulkan")
        .output()
        .expect("cannot run cc (install-deps.sh installs gcc and libvulkan-dev)");
    assert!(out.status.success(), "cc {} failed:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    exe
}

/// `examples/c/raw_chain.spvasm` assembled (vulkan1.1) into `dir/raw_chain.spv`.
fn assemble_raw_chain(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo_root().join("examples/c/raw_chain.spvasm")).expect("raw_chain.spvasm");
    let words = tools::spirv_as(&text, "vulkan1.1").unwrap_or_else(|e| panic!("spirv-as raw_chain.spvasm: {e}"));
    let spv = dir.join("raw_chain.spv");
    std::fs::write(&spv, tools::words_to_bytes(&words)).expect("write spv");
    spv
}

/// A validation-layer settings file that logs everything it reports (errors, warnings, info)
/// to a file in the case's directory, and the path of that log.
pub fn validation_logging(env: Env, dir: &Path) -> (Env, PathBuf) {
    let log = dir.join("validation.txt");
    let settings = format!(
        "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n\
         khronos_validation.log_filename = {}\n\
         khronos_validation.report_flags = error,warn,info\n",
        log.display()
    );
    std::fs::write(dir.join("vk_layer_settings.txt"), settings).expect("write vk_layer_settings.txt");
    (env.set("VK_LAYER_SETTINGS_PATH", dir.display().to_string()), log)
}

/// The "Validation Error" lines of the validation layer's `log` (Err: it did not log there).
pub fn validation_errors(r: &Run, log: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    // Control: the validation layer was loaded and its log is this file.
    if !text.contains("Khronos Validation Layer Active") {
        return Err(format!("validation layer did not log to {}\n{}", log.display(), r.describe()));
    }
    Ok(text.lines().filter(|l| l.contains("Validation Error")).map(str::to_string).collect())
}

/// The validation layer was loaded, logged to `log`, and reported no error.
pub fn check_validation_log(r: &Run, log: &Path) -> Result<(), String> {
    let errors = validation_errors(r, log)?;
    if !errors.is_empty() {
        return Err(format!("validation errors:\n{}\n{}", errors.join("\n"), r.describe()));
    }
    Ok(())
}
