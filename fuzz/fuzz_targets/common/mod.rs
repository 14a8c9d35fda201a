//! What both fuzz targets share.

/// Does `words` pass `tool` (a spirv-val binary, from `FUZZ_SPIRV_VAL`) in `--target-env env`?
pub fn spirv_val(tool: &std::ffi::OsStr, env: &str, words: &[u32]) -> bool {
    use std::io::Write;
    let mut child = std::process::Command::new(tool)
        .args(["--target-env", env, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("FUZZ_SPIRV_VAL does not run");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let _ = child.stdin.take().unwrap().write_all(&bytes);
    child.wait().map(|s| s.success()).unwrap_or(false)
}
