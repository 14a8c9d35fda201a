//! First rewrite in a fresh process: what a module costs when the library's code is cold and
//! nothing has been set up yet (the layer's first `vkCreateShaderModule` of a process). Spawns
//! this bench again per measurement (a fresh process each time), which reads one module, times
//! one `rewrite` call, then a second one (warm, for comparison), and prints both.
//!
//! Prints per module (and option profile, see benches/common) the median first-call time over
//! the processes and the warm time, then the median over all modules. Target (issue 24, printed,
//! never asserted): first call ≤ 50 µs median.
//!
//! Run: `cargo bench -p shader-rewrite --bench first_call`. Env: `FIRST_CALL_RUNS` (processes
//! per module and profile, default 21), `FIRST_CALL_FILTER` (substring of `corpus/module`).
#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Instant;

const CHILD: &str = "FIRST_CALL_CHILD_MODULE";

fn child(path: &str) {
    let profile: usize = std::env::var("FIRST_CALL_CHILD_PROFILE").unwrap().parse().unwrap();
    let words = shader_rewrite::words_from_bytes(&std::fs::read(path).unwrap()).unwrap();
    let options = common::profiles()[profile].1;
    let t = Instant::now();
    let first = shader_rewrite::rewrite(std::hint::black_box(&words), &options);
    let cold = t.elapsed();
    let t = Instant::now();
    let second = shader_rewrite::rewrite(std::hint::black_box(&words), &options);
    let warm = t.elapsed();
    assert_eq!(first.is_ok(), second.is_ok());
    println!("{} {}", cold.as_nanos(), warm.as_nanos());
}

fn main() {
    if let Ok(path) = std::env::var(CHILD) {
        return child(&path);
    }
    let runs: usize = std::env::var("FIRST_CALL_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(21).max(1);
    let filter = std::env::var("FIRST_CALL_FILTER").unwrap_or_default();
    let exe = std::env::current_exe().unwrap();
    let dir = std::env::temp_dir().join(format!("first-call-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!("== first rewrite in a fresh process (median of {runs} processes per row), and the second call in the same process ==");
    println!("{:<44} {:<6} {:>10} {:>10}", "module", "target", "first us", "warm us");
    let mut firsts = vec![];
    for m in common::corpus().into_iter().filter(|m| m.name.contains(&filter)) {
        let file = dir.join("module.spv");
        std::fs::write(&file, m.words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        for (p, (profile, options)) in common::profiles().iter().enumerate() {
            if shader_rewrite::rewrite(&m.words, options).is_err() {
                continue; // refused modules (an error path) are not what the target is about
            }
            let (mut cold, mut warm) = (vec![], vec![]);
            for _ in 0..runs {
                let out = Command::new(&exe).env(CHILD, &file).env("FIRST_CALL_CHILD_PROFILE", p.to_string()).output().unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                let text = String::from_utf8_lossy(&out.stdout);
                let mut it = text.split_whitespace().map(|v| v.parse::<f64>().unwrap() / 1e3);
                cold.push(it.next().unwrap());
                warm.push(it.next().unwrap());
            }
            let (c, w) = (common::median(&mut cold), common::median(&mut warm));
            println!("{:<44} {:<6} {:>10.1} {:>10.1}", m.name, profile, c, w);
            firsts.push(c);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if firsts.is_empty() {
        println!("no module matched");
        return;
    }
    let worst = firsts.iter().cloned().fold(0.0, f64::max);
    println!();
    println!("first call: median over modules {:.1} us, worst module {worst:.1} us (target: median <= 50 us)", common::median(&mut firsts));
}
