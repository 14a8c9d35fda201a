//! Emulated `OpRawAccessChainNV` kernels vs the same kernels hand-written in core SPIR-V, on
//! lavapipe, through `VK_LAYER_POLYFILL_extensions` (one context with the layer and
//! `VK_NV_raw_access_chains` enabled, so the layer rewrites the A kernels and passes the B
//! kernels through untouched).
//!
//! Kernel (1<<20 invocations, 64 per workgroup): `out[i] = in[i] * 2 + 1` on a float4 per
//! invocation.
//! - A (emulated): `in`/`out` are `uint[]` blocks; the float4 is reached by
//!   `OpRawAccessChainNV` (`Aligned 16`): structured stride 16 with no robustness or
//!   `RobustnessPerElementNV`, or byte address (stride 0, offset 16*i) with
//!   `RobustnessPerComponentNV`.
//! - B (hand-written): `vec4[]` blocks (ArrayStride 16) and `OpAccessChain`; "check" adds the
//!   explicit bounds checks by hand: `v = i < in.length() ? in[i] : vec4(0)` and
//!   `if (i < out.length()) out[i] = ...` (OpArrayLength). For A's per-component variant the
//!   hand-written reference is this same per-element check (a per-component check by hand
//!   would be 4 separate checks, which nobody writes for a 16-byte aligned vec4).
//!
//! Only the dispatch is timed: each pipeline's command buffer is recorded once (timestamp,
//! bind, dispatch, barrier, timestamp) and then submitted + waited on repeatedly. All five
//! pipelines run once per round, in an order that rotates every round, so A and B are measured
//! side by side. Figures: GPU timestamps (lavapipe writes them around the dispatch) and the
//! wall time of vkQueueSubmit + vkWaitForFences. Targets are printed, never asserted.
//!
//! Pipeline creation: `KERNELS_CREATE_ROUNDS` rounds (default 51) each create and destroy every
//! kernel's shader module and compute pipeline (no pipeline cache), in an order that rotates
//! every round; the medians of vkCreateShaderModule (with the layer's rewrite for A: from its
//! rewrite cache from the second creation on, and with the cache off in a second context, "A
//! cold") and of
//! vkCreateComputePipelines (the driver compiling what it was handed), and A/B ratios of their
//! sum (target ≤ 1.2, issue 24), in CPU time of the process (the driver's threads included; wall
//! times of calls this short are stretched to whole scheduler slices on a loaded machine). The
//! drivers' on-disk shader caches are turned off for the whole run (`no_disk_shader_caches`), so
//! every creation compiles.
//!
//! Run: `cargo build --release -p vk-layer-polyfill-extensions &&
//!       cargo bench -p polyfill-e2e --bench kernels`
//! Env: `KERNELS_REPS` (rounds, default 201), `KERNELS_LOG2_INVOCATIONS` (default 20),
//!      `KERNELS_CREATE_ROUNDS` (default 51; 0 skips the creation rounds),
//!      `KERNELS_DUMP_DIR` (write the A/B modules as .spv there).

mod common;

use common::*;
use polyfill_e2e::spvasm::{Module, GID_X_CHAIN};
use polyfill_e2e::{bytes, spirv_as, Context, ContextOptions};

const WORKGROUP: u32 = 64;

// ---------------------------------------------------------------------------------------------
// Shaders

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Emulated {
    None,
    PerElement,
    PerComponent,
}

/// What both kernels share: `in` and `out` blocks of `elem` (ArrayStride `stride`) at bindings 0
/// and 1, the splats `%kN` = `vec4(N)` for N in `splats`, `%i` = the invocation index, then `body`.
fn kernel(m: Module, elem: &str, stride: u32, splats: &[u32], body: &str) -> String {
    let splats: Vec<String> = splats.iter().map(|k| format!("%k{k} = OpConstantComposite %v4f %f{k} %f{k} %f{k} %f{k}")).collect();
    m.gid().buffers("blk", elem, stride, &["in", "out"]).globals(&splats.join("\n")).main(&format!("{GID_X_CHAIN}\n{body}")).text()
}

fn kernel_a(v: Emulated) -> String {
    // (lines before the chains, stride index offset, robustness)
    let (pre, operands, robust) = match v {
        Emulated::None => ("", "%c16 %i %c0", ""),
        Emulated::PerElement => ("", "%c16 %i %c0", " RobustnessPerElementNV"),
        Emulated::PerComponent => ("%off = OpShiftLeftLogical %u32 %i %c4\n", "%c0 %c0 %off", " RobustnessPerComponentNV"),
    };
    let body = format!(
        "{pre}%p = OpRawAccessChainNV %ps_v4f %in {operands}{robust}
%q = OpRawAccessChainNV %ps_v4f %out {operands}{robust}
%v = OpLoad %v4f %p Aligned 16
%m = OpFMul %v4f %v %k2
%w = OpFAdd %v4f %m %k1
OpStore %q %w Aligned 16"
    );
    kernel(Module::compute(WORKGROUP).raw_access_chains(), "%u32", 4, &[1, 2], &body)
}

fn kernel_b(check: bool) -> String {
    let body = if check {
        r#"%lin = OpArrayLength %u32 %in 0
%okin = OpULessThan %bool %i %lin
OpSelectionMerge %m1 None
OpBranchConditional %okin %t1 %m1
%t1 = OpLabel
%p = OpAccessChain %ps_v4f %in %c0 %i
%v = OpLoad %v4f %p
OpBranch %m1
%m1 = OpLabel
%vv = OpPhi %v4f %v %t1 %k0 %entry
%m = OpFMul %v4f %vv %k2
%w = OpFAdd %v4f %m %k1
%lout = OpArrayLength %u32 %out 0
%okout = OpULessThan %bool %i %lout
OpSelectionMerge %m2 None
OpBranchConditional %okout %t2 %m2
%t2 = OpLabel
%q = OpAccessChain %ps_v4f %out %c0 %i
OpStore %q %w
OpBranch %m2
%m2 = OpLabel"#
    } else {
        r#"%p = OpAccessChain %ps_v4f %in %c0 %i
%v = OpLoad %v4f %p
%m = OpFMul %v4f %v %k2
%w = OpFAdd %v4f %m %k1
%q = OpAccessChain %ps_v4f %out %c0 %i
OpStore %q %w"#
    };
    kernel(Module::compute(WORKGROUP), "%v4f", 16, &[0, 1, 2], body)
}

// ---------------------------------------------------------------------------------------------
// Pipeline creation

/// `rounds` rounds of creating and destroying every kernel's module and pipeline (rotating
/// order), then the medians and the A/B ratios of `pairs` (indices into `kernels`: name, rig,
/// code).
fn create_table(rigs: &[&Rig], kernels: &[(&str, usize, &[u32])], pairs: &[(usize, usize)], rounds: usize) {
    let create = |j: usize| rigs[kernels[j].1].create_ms(kernels[j].2);
    for j in 0..kernels.len() {
        create(j); // warm-up: code paths and allocations of the first creation
    }
    let mut times: Vec<Vec<(f64, f64)>> = vec![vec![]; kernels.len()];
    for j in rotating(kernels.len(), rounds) {
        times[j].push(create(j));
    }
    let total = |j: usize| times[j].iter().map(|(m, p)| m + p).collect::<Vec<f64>>();
    println!();
    println!("pipeline creation ({rounds} rounds, interleaved; ms of process CPU time; module = vkCreateShaderModule incl. the layer's rewrite, pipeline = vkCreateComputePipelines):");
    println!("  (A: the layer at default settings, so from the second creation on the rewrite comes from its rewrite cache; A cold: rewrite_cache_mb=0, every creation rewrites)");
    println!("  {:<20} {:>9} {:>9} {:>9} {:>9}", "kernel", "module", "pipeline", "sum", "sum min");
    for (j, (name, _, _)) in kernels.iter().enumerate() {
        let m: Vec<f64> = times[j].iter().map(|t| t.0).collect();
        let p: Vec<f64> = times[j].iter().map(|t| t.1).collect();
        println!("  {:<20} {:>9.3} {:>9.3} {:>9.3} {:>9.3}", name, median(&m), median(&p), median(&total(j)), min(&total(j)));
    }
    println!("  {:<38} {:>7} {:>7} {:>9} {:>7}", "emulated A / hand-written B", "sum", "paired", "pipeline", "target");
    for &(a, b) in pairs {
        let (ta, tb) = (total(a), total(b));
        let paired: Vec<f64> = ta.iter().zip(&tb).map(|(x, y)| x / y).collect();
        let pa: Vec<f64> = times[a].iter().map(|t| t.1).collect();
        let pb: Vec<f64> = times[b].iter().map(|t| t.1).collect();
        let ratio = median(&ta) / median(&tb);
        println!(
            "  {:<38} {:>7.3} {:>7.3} {:>9.3} {:>7}{}",
            format!("{} / {}", kernels[a].0, kernels[b].0),
            ratio,
            median(&paired),
            median(&pa) / median(&pb),
            "<=1.20",
            if ratio > 1.2 && median(&paired) > 1.2 { "  (ABOVE TARGET)" } else { "" }
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    no_disk_shader_caches();
    let reps = env_num("KERNELS_REPS", 201).max(1) as usize;
    let log2 = env_num("KERNELS_LOG2_INVOCATIONS", 20).clamp(6, 24);
    let n = 1usize << log2; // invocations = float4 elements
    let groups = (n as u32) / WORKGROUP;

    // No shader dumps: the test harness otherwise has the layer write every rewritten module to
    // a directory (to validate it), which costs more than the rewrite and would be counted in
    // the creation times.
    let options = ContextOptions::raw_access_chains().setting("dump_shaders_dir", "");
    let ctx = Context::new(&options).unwrap_or_else(|e| fail(&format!("context with the layer: {e}")));
    println!("== kernels: emulated OpRawAccessChainNV vs hand-written core SPIR-V ==");
    println!(
        "device: {} | context: layer + VK_NV_raw_access_chains | {} invocations ({} workgroups of {WORKGROUP}), {} MiB in + {} MiB out | {reps} rounds",
        ctx.device_name(),
        n,
        groups,
        (n * 16) >> 20,
        (n * 16) >> 20
    );
    if ctx.query_raw_access_chains_feature() && !polyfill_e2e::vk::driver_has_extension("VK_NV_raw_access_chains").unwrap_or(false) {
        println!("driver lacks VK_NV_raw_access_chains: the layer emulates it (A kernels are rewritten)");
    } else if polyfill_e2e::vk::driver_has_extension("VK_NV_raw_access_chains").unwrap_or(false) {
        println!("WARNING: the driver itself exposes VK_NV_raw_access_chains; the layer may not rewrite the A kernels");
    }

    // Inputs: finite floats, no denormals, exact in a*2+1.
    let vals: Vec<f32> = (0..n * 4).map(|k| ((k % 65_521) as f32) * 0.25 - 4096.0).collect();
    let input_bytes = bytes::from_f32s(&vals);
    let expected: Vec<u8> = bytes::from_f32s(&vals.iter().map(|a| a * 2.0 + 1.0).collect::<Vec<_>>());
    let input = HostBuffer::new(&ctx, n * 16);
    input.write(&input_bytes);
    let out_a = HostBuffer::new(&ctx, n * 16);
    let out_b = HostBuffer::new(&ctx, n * 16);
    let rig = Rig::new(&ctx, &input, [&out_a, &out_b], groups);
    if !rig.timestamps {
        println!("timestamps unsupported on this queue: only wall times");
    }

    // Modules.
    let sources: Vec<(&str, String, usize)> = vec![
        ("A none", kernel_a(Emulated::None), 0),
        ("A per-element", kernel_a(Emulated::PerElement), 0),
        ("A per-component", kernel_a(Emulated::PerComponent), 0),
        ("B no check", kernel_b(false), 1),
        ("B check", kernel_b(true), 1),
    ];
    let dump_dir = std::env::var_os("KERNELS_DUMP_DIR").map(std::path::PathBuf::from);
    let words: Vec<Vec<u32>> = sources.iter().map(|(name, src, _)| spirv_as(src, "vulkan1.1").unwrap_or_else(|e| fail(&format!("{name}: {e}")))).collect();
    let mut jobs: Vec<Job> = Vec::new();
    for ((name, _, out), words) in sources.iter().zip(&words) {
        if let Some(dir) = &dump_dir {
            let _ = std::fs::create_dir_all(dir);
            let file = dir.join(format!("{}.spv", name.replace(' ', "_")));
            if let Err(e) = std::fs::write(&file, polyfill_e2e::tools::words_to_bytes(words)) {
                eprintln!("cannot write {}: {e}", file.display());
            }
        }
        jobs.push(rig.job(name, words, *out));
    }

    let create_rounds = env_num("KERNELS_CREATE_ROUNDS", 51usize);
    if create_rounds > 0 {
        // The same layer with its rewrite cache off, in a second context: the A kernels'
        // creation when the code is new to the device.
        let cold = Context::new(&options.clone().setting("rewrite_cache_mb", "0")).unwrap_or_else(|e| fail(&format!("context with rewrite_cache_mb=0: {e}")));
        let small = [HostBuffer::new(&cold, 16), HostBuffer::new(&cold, 16), HostBuffer::new(&cold, 16)];
        let cold_rig = Rig::new(&cold, &small[0], [&small[1], &small[2]], groups);
        let mut kernels: Vec<(&str, usize, &[u32])> = sources.iter().zip(&words).map(|((n, _, _), w)| (*n, 0, &w[..])).collect();
        kernels.extend([("A none cold", 1, &words[0][..]), ("A per-element cold", 1, &words[1][..]), ("A per-component cold", 1, &words[2][..])]);
        create_table(&[&rig, &cold_rig], &kernels, &[(0, 3), (1, 4), (2, 4), (5, 3), (6, 4), (7, 4)], create_rounds);
    }

    // Correctness: every A variant and its B counterpart write identical bytes (and the CPU's).
    let outs = [&out_a, &out_b];
    let pairs = [(0usize, 3usize), (1, 4), (2, 4)];
    for &(a, b) in &pairs {
        let mut results = Vec::new();
        for &j in &[a, b] {
            outs[jobs[j].out].fill(0xCD);
            rig.run(&jobs[j]);
            results.push(outs[jobs[j].out].read());
        }
        if let Some(at) = bytes::first_difference(&results[0], &results[1]) {
            fail(&format!(
                "outputs differ: {} vs {} at byte {at} ({} bytes differ)",
                jobs[a].name,
                jobs[b].name,
                results[0].iter().zip(&results[1]).filter(|(x, y)| x != y).count()
            ));
        }
        if let Some(at) = bytes::first_difference(&results[0], &expected) {
            fail(&format!("{}: output differs from the CPU reference at byte {at}", jobs[a].name));
        }
    }
    println!("correctness: A and B outputs are byte-identical for all 3 pairs (and match the CPU)");

    // Warm-up, then interleaved rounds (order rotates every round).
    let load_before = loadavg();
    let elapsed = rig.rounds(&mut jobs, reps);

    println!();
    println!("per pipeline ({reps} runs each; ms; create = vkCreateShaderModule + vkCreateComputePipelines, once, includes the layer's rewrite):");
    println!("  {:<16} {:>9} {:>9} {:>9}   {:>9} {:>9} {:>9}   {:>9}", "pipeline", "ts med", "ts min", "ts max", "wall med", "wall min", "wall max", "create");
    for j in &jobs {
        println!(
            "  {:<16} {:>9.3} {:>9.3} {:>9.3}   {:>9.3} {:>9.3} {:>9.3}   {:>9.2}",
            j.name,
            median(&j.ts_ms),
            min(&j.ts_ms),
            max(&j.ts_ms),
            median(&j.wall_ms),
            min(&j.wall_ms),
            max(&j.wall_ms),
            j.create_ms
        );
    }

    let rows = [
        ("none", 0usize, 3usize, 1.05, "B no check"),
        ("per-element", 1, 4, 1.15, "B check (OpArrayLength, per element)"),
        ("per-component", 2, 4, 1.15, "B check (per-element check stands in for per-component)"),
    ];
    let ratio_table = |label: &str, pick: &dyn Fn(&Job) -> &Vec<f64>| {
        println!();
        println!("{label}: emulated (A) vs hand-written (B), medians in ms [min..max]");
        println!(
            "  {:<14} {:>26} {:>26} {:>7} {:>7} {:>7} {:>7} {:>8}  reference",
            "variant", "emulated A", "hand-written B", "ratio", "paired", "min/min", "target", "A/Bnochk"
        );
        for &(v, a, b, target, what) in &rows {
            let (ja, jb, jn) = (&jobs[a], &jobs[b], &jobs[3]);
            let (ma, mb, mn) = (median(pick(ja)), median(pick(jb)), median(pick(jn)));
            let ratio = ma / mb;
            // Same-round ratios (A and B ran back to back in each round).
            let paired: Vec<f64> = pick(ja).iter().zip(pick(jb)).map(|(x, y)| x / y).collect();
            println!(
                "  {:<14} {:>8.3} [{:>6.3}..{:>7.3}] {:>8.3} [{:>6.3}..{:>7.3}] {:>7.3} {:>7.3} {:>7.3} {:>7} {:>8.3}  {}{}",
                v,
                ma,
                min(pick(ja)),
                max(pick(ja)),
                mb,
                min(pick(jb)),
                max(pick(jb)),
                ratio,
                median(&paired),
                min(pick(ja)) / min(pick(jb)),
                format!("<={target:.2}"),
                ma / mn,
                what,
                match (ratio > target, median(&paired) > target) {
                    (false, false) => "",
                    (true, false) => "  (above target by the medians only; paired within)",
                    (false, true) => "  (above target by the paired ratio only)",
                    (true, true) => "  (ABOVE TARGET)",
                }
            );
        }
    };
    if rig.timestamps {
        ratio_table("dispatch time from GPU timestamps", &|j: &Job| &j.ts_ms);
    }
    ratio_table("wall time of vkQueueSubmit + vkWaitForFences", &|j: &Job| &j.wall_ms);
    println!();
    println!("ratio = median(A)/median(B); paired = median over rounds of A/B in the same round; min/min = fastest A / fastest B;");
    println!("A/Bnochk = median(A)/median(B no check): what the robustness costs against an unchecked hand-written kernel.");
    println!("Under background load the medians drift between rounds; the paired and min/min ratios are the robust ones.");
    println!("timed rounds took {elapsed:.1}s (load average before: {load_before}, after: {}); targets are printed, never asserted", loadavg());

    for j in &jobs {
        rig.destroy_job(j);
    }
    rig.destroy();
    input.destroy(&ctx);
    out_a.destroy(&ctx);
    out_b.destroy(&ctx);
}
