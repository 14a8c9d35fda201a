//! A loop of rewrites for profilers (`perf record`, `valgrind --tool=callgrind`, whose
//! instruction counts do not move with the machine's load): rewrites the corpus modules whose
//! name contains `$F` (see benches/common) `$N` times (default 1000) with option profile `$P`
//! (`device` or `core`), and prints the mean wall time per rewrite. `DUMP=dir` writes the
//! selected modules there as .spv instead (inputs for the CLI or the layer), and their rewrites
//! under `$P` as .`$P`.out.spv.
//!
//! `THRASH_MB=n` writes an n MiB buffer between rewrites (untimed) and times each rewrite alone:
//! the rewrite as it runs in the layer, between the driver's compiles, its code and data evicted
//! from the caches (lavapipe's compile of one pipeline does that).
//!
//! Run: `cargo bench -p shader-rewrite --bench rewrite_loop` (or the built binary under a profiler:
//! `F=bab-float4 N=2000 valgrind --tool=callgrind target/release/deps/rewrite_loop-*`).
#[path = "common/mod.rs"]
mod common;

fn main() {
    let filter = std::env::var("F").unwrap_or_default();
    let iters: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(1000).max(1);
    let profile = std::env::var("P").unwrap_or_else(|_| "device".into());
    let (_, options) = common::profiles().into_iter().find(|(n, _)| *n == profile).expect("P is device or core");
    let modules: Vec<_> = common::corpus().into_iter().filter(|m| m.name.contains(&filter)).collect();
    if let Ok(dir) = std::env::var("DUMP") {
        for m in &modules {
            let bytes: Vec<u8> = m.words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(format!("{dir}/{}.spv", m.name.replace('/', "__")), bytes).unwrap();
            if let Ok(r) = shader_rewrite::rewrite(&m.words, &options) {
                let bytes: Vec<u8> = r.words.iter().flat_map(|w| w.to_le_bytes()).collect();
                std::fs::write(format!("{dir}/{}.{profile}.out.spv", m.name.replace('/', "__")), bytes).unwrap();
            }
        }
        return;
    }
    if let Some(mb) = std::env::var("THRASH_MB").ok().and_then(|v| v.parse::<usize>().ok()) {
        let mut junk = vec![0u8; mb << 20];
        let (mut total, mut words) = (std::time::Duration::ZERO, 0);
        for i in 0..iters {
            for m in &modules {
                for (k, b) in junk.iter_mut().enumerate().step_by(64) {
                    *b = b.wrapping_add((i + k) as u8);
                }
                let t = std::time::Instant::now();
                words += shader_rewrite::rewrite(std::hint::black_box(&m.words), &options).map(|r| r.words.len()).unwrap_or(0);
                total += t.elapsed();
            }
        }
        std::hint::black_box(&junk);
        let n = (iters * modules.len()).max(1) as u32;
        eprintln!("{} modules x {iters}, {mb} MiB written between rewrites: {:?} per rewrite ({words} words out)", modules.len(), total / n);
        return;
    }
    let t = std::time::Instant::now();
    let mut words = 0;
    for _ in 0..iters {
        for m in &modules {
            words += shader_rewrite::rewrite(&m.words, &options).map(|r| r.words.len()).unwrap_or(0);
        }
    }
    let n = (iters * modules.len()).max(1) as u32;
    eprintln!("{} modules x {iters}: {:?} per rewrite ({words} words out)", modules.len(), t.elapsed() / n);
}
