//! The dxil-spirv raw-access corpus (`tests/corpus/dxil-spirv-raw-access/`, MIT, 23 modules):
//! buffers, configurations (whole buffers and cut ranges) and expected results from the
//! [`super::interp`] interpreter over the reference model.
//!
//! The corpus shaders read-modify-write their buffers in place, and in several of them the
//! elements of neighbouring invocations overlap (e.g. a float3 at `gid << 2`), so the result of
//! an overlapped component depends on the order the invocations ran in. Such a component must
//! hold one of `g(x), g(g(x)), …, g^c(x)` (c = number of invocations writing it, `g` = what one
//! invocation does to it, found by running the writers one after the other); every other byte
//! must match the sequential result exactly.

use super::interp::{CpuBuffer, Key, Shader, Slot};
use super::rng::Rng;
use crate::vk::{BufferKind, BufferSpec, ComputeJob};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Number of modules in the corpus.
pub const MODULES: usize = 23;
/// Workgroups per dispatch.
pub const GROUPS: u32 = 2;

/// The in-repo copy of the corpus.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join("dxil-spirv-raw-access")
}

/// `shared/` next to the checkout (`$POLYFILL_SHARED_DIR`, else `<repo>/../shared`), if present.
pub fn shared_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("POLYFILL_SHARED_DIR") {
        let p = PathBuf::from(d);
        return p.is_dir().then_some(p);
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("shared");
    p.is_dir().then_some(p)
}

/// The corpus modules (path, text), sorted by name.
pub fn modules() -> Result<Vec<(PathBuf, String)>, String> {
    let dir = corpus_dir();
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let p = e.map_err(|e| e.to_string())?.path();
        if p.extension().is_some_and(|x| x == "spvasm") {
            let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            out.push((p, text));
        }
    }
    out.sort();
    Ok(out)
}

/// How the buffers are bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config {
    /// Every buffer big enough for all invocations (whole range).
    Whole,
    /// Ranges cut to ~2/5 of what the invocations touch, length ≡ 3 (mod 4), bound at
    /// descriptor offset 256.
    CutOdd,
    /// Ranges cut to ~1/2, length ≡ 2 (mod 4), descriptor offset 0.
    CutHalf,
}
impl Config {
    pub const ALL: [Config; 3] = [Config::Whole, Config::CutOdd, Config::CutHalf];
}

/// One corpus run: buffers and checks.
pub struct CorpusPlan {
    pub shader: Shader,
    pub config: Config,
    pub keys: Vec<Key>,
    pub initial: BTreeMap<Key, CpuBuffer>,
    pub whole_range: bool,
    /// Sequential result (every invocation in gid order).
    pub sequential: BTreeMap<Key, CpuBuffer>,
    /// Components written by more than one invocation → acceptable byte patterns.
    pub overlapped: BTreeMap<Slot, Vec<Vec<u8>>>,
    pub invocations: u32,
    /// Number of in-bounds and dropped component accesses (for the report).
    pub stats: (usize, usize),
}

fn gids(sh: &Shader) -> Vec<[u32; 3]> {
    let [x, y, z] = sh.local_size;
    let mut v = Vec::new();
    for g in 0..GROUPS {
        for k in 0..z {
            for j in 0..y {
                for i in 0..x {
                    v.push([g * x + i, j, k]);
                }
            }
        }
    }
    v
}

/// Builds the plan of one module in one configuration.
pub fn plan(text: &str, config: Config, seed: u64) -> Result<CorpusPlan, String> {
    let shader = Shader::parse(text)?;
    let keys: Vec<Key> = shader
        .descriptor_counts
        .iter()
        .flat_map(|(&(s, b), &n)| (0..n).map(move |e| (s, b, e)))
        .collect();
    let all = gids(&shader);

    // Probe with huge ranges: what does each invocation touch?
    const PROBE: u64 = 1 << 16;
    let mut probe: BTreeMap<Key, CpuBuffer> = keys
        .iter()
        .map(|&k| {
            (
                k,
                CpuBuffer {
                    data: vec![0; PROBE as usize],
                    descriptor_offset: 0,
                    len: PROBE,
                },
            )
        })
        .collect();
    let mut max_end: BTreeMap<Key, u64> = BTreeMap::new();
    let mut load_slots: BTreeSet<(Slot, bool)> = BTreeSet::new();
    for g in &all {
        let t = shader.run_invocation(*g, &mut probe)?;
        for (s, f) in &t.loads {
            load_slots.insert((*s, *f));
        }
        for s in t.loads.iter().map(|x| x.0).chain(t.stores.iter().copied()) {
            let e = max_end.entry(s.key).or_insert(0);
            *e = (*e).max(s.addr as u64 + s.width as u64);
        }
    }

    // Buffers.
    let mut rng = Rng::new(seed);
    let mut initial = BTreeMap::new();
    for &k in &keys {
        let touched = max_end.get(&k).copied().unwrap_or(0);
        let (off, len) = match config {
            Config::Whole => (0u64, touched.div_ceil(16) * 16 + 48),
            Config::CutOdd => {
                let mut l = (touched * 2 / 5).max(3);
                while l % 4 != 3 {
                    l -= 1;
                }
                (256, l)
            }
            Config::CutHalf => {
                let mut l = (touched / 2).max(2);
                while l % 4 != 2 {
                    l -= 1;
                }
                (0, l)
            }
        };
        let tail = if config == Config::Whole { 0 } else { 48 };
        let data = rng.bytes((off + len + tail) as usize);
        initial.insert(
            k,
            CpuBuffer {
                data,
                descriptor_offset: off,
                len,
            },
        );
    }
    // Exactly representable values in float slots (so +4.0 is exact at any precision).
    for (s, is_float) in &load_slots {
        if !is_float {
            continue;
        }
        let b = initial.get_mut(&s.key).unwrap();
        let at = (b.descriptor_offset + s.addr as u64) as usize;
        if at + s.width as usize > b.data.len() {
            continue;
        }
        let k = rng.range(0, 512) as i64 - 256;
        let bytes: Vec<u8> = match s.width {
            2 => super::interp::f32_to_f16(k as f32 / 4.0)
                .to_le_bytes()
                .to_vec(),
            4 => ((k * 4099) as f32 / 16.0).to_le_bytes().to_vec(),
            8 => ((k * 1_000_003) as f64 / 16.0).to_le_bytes().to_vec(),
            _ => continue,
        };
        b.data[at..at + s.width as usize].copy_from_slice(&bytes);
    }

    // Expected results.
    let mut writers: BTreeMap<Slot, Vec<usize>> = BTreeMap::new();
    let mut stats = (0usize, 0usize);
    for (i, g) in all.iter().enumerate() {
        let mut m = initial.clone();
        let t = shader.run_invocation(*g, &mut m)?;
        for s in &t.stores {
            writers.entry(*s).or_default().push(i);
        }
        stats.0 += t.loads.len() + t.stores.len();
    }
    // Count dropped components with the probe's (unbounded) view for comparison.
    let mut probe_count = 0;
    for g in &all {
        let mut m = probe.clone();
        let t = shader.run_invocation(*g, &mut m)?;
        probe_count += t.loads.len() + t.stores.len();
    }
    stats.1 = probe_count - stats.0;
    // Overlapping components must coincide exactly (same address and width), or be disjoint.
    let mut byte_owner: BTreeMap<(Key, u32), Slot> = BTreeMap::new();
    for s in writers.keys() {
        for b in s.addr..s.addr + s.width {
            if let Some(o) = byte_owner.insert((s.key, b), *s) {
                if o != *s {
                    return Err(format!(
                        "components {o:?} and {s:?} partly overlap: not modelled"
                    ));
                }
            }
        }
    }
    let mut sequential = initial.clone();
    for g in &all {
        shader.run_invocation(*g, &mut sequential)?;
    }
    let mut overlapped = BTreeMap::new();
    for (s, ws) in &writers {
        if ws.len() < 2 {
            continue;
        }
        let mut ok = Vec::new();
        for j in 1..=ws.len() {
            let mut m = initial.clone();
            for &w in &ws[..j] {
                shader.run_invocation(all[w], &mut m)?;
            }
            let b = &m[&s.key];
            let at = (b.descriptor_offset + s.addr as u64) as usize;
            ok.push(b.data[at..at + s.width as usize].to_vec());
        }
        overlapped.insert(*s, ok);
    }
    Ok(CorpusPlan {
        invocations: all.len() as u32,
        shader,
        config,
        keys,
        initial,
        whole_range: config == Config::Whole,
        sequential,
        overlapped,
        stats,
    })
}

impl CorpusPlan {
    pub fn job(&self) -> ComputeJob {
        ComputeJob {
            heap: None,
            buffers: self
                .keys
                .iter()
                .map(|k| {
                    let b = &self.initial[k];
                    BufferSpec {
                        allocation_tail: None,
                        set: k.0,
                        binding: k.1,
                        array_element: k.2,
                        kind: BufferKind::Storage,
                        data: b.data.clone(),
                        descriptor_offset: b.descriptor_offset,
                        range: if self.whole_range { None } else { Some(b.len) },
                    }
                })
                .collect(),
            push_constants: Vec::new(),
            groups: [GROUPS, 1, 1],
            entry: "main",
        }
    }

    /// Compares the dispatch's buffers (in `keys` order) with the expectations.
    pub fn compare(&self, got: &[Vec<u8>]) -> Vec<String> {
        let mut out = Vec::new();
        for (i, k) in self.keys.iter().enumerate() {
            let exp = &self.sequential[k];
            let g = &got[i];
            let off = exp.descriptor_offset as usize;
            let mut skip = vec![false; g.len()];
            for (s, ok) in self.overlapped.range(
                Slot {
                    key: *k,
                    addr: 0,
                    width: 0,
                }..,
            ) {
                if s.key != *k {
                    break;
                }
                let at = off + s.addr as usize;
                let w = s.width as usize;
                for b in &mut skip[at..at + w] {
                    *b = true;
                }
                if !ok.iter().any(|v| v[..] == g[at..at + w]) {
                    out.push(format!(
                        "descriptor {k:?} (offset {off}, range {}): component at range byte {} (written by several \
                         invocations) is {:02x?}, expected one of {:02x?}",
                        exp.len, s.addr, &g[at..at + w], ok
                    ));
                }
            }
            let bad: Vec<usize> = (0..g.len())
                .filter(|&j| !skip[j] && g[j] != exp.data[j])
                .collect();
            if !bad.is_empty() {
                let mut runs: Vec<(usize, usize)> = Vec::new();
                for &j in &bad {
                    match runs.last_mut() {
                        Some((_, e)) if *e == j => *e = j + 1,
                        _ => runs.push((j, j + 1)),
                    }
                }
                let mut s = format!(
                    "descriptor {k:?} (offset {off}, range {}{}): {} bytes differ",
                    exp.len,
                    if self.whole_range {
                        ", bound whole"
                    } else {
                        ""
                    },
                    bad.len()
                );
                for &(a, e) in runs.iter().take(10) {
                    let e2 = e.min(a + 32);
                    s.push_str(&format!(
                        "\n      buffer bytes {a}..{e} (range-relative {}..{}): expected {:02x?} got {:02x?} (initial {:02x?})",
                        a as i64 - off as i64,
                        e as i64 - off as i64,
                        &exp.data[a..e2],
                        &g[a..e2],
                        &self.initial[k].data[a..e2]
                    ));
                }
                if runs.len() > 10 {
                    s.push_str(&format!("\n      ... {} more runs", runs.len() - 10));
                }
                out.push(s);
            }
        }
        out
    }
}
