//! Buffer device addresses: the layer's emulated addresses (`buffer_device_address=force`: slots
//! of a storage-buffer array, decoded and bounds-checked in the rewritten shaders) vs lavapipe's
//! native ones, in two instances of the same process, interleaved round by round.
//!
//! Kernels (64 invocations per workgroup, pointers in push constants; `polyfill_e2e::bda`):
//! - stream: `out[i] = in[i] * 2 + 1` over 2^N uints (one load, one store per invocation);
//! - chase: 16 dependent loads per invocation through `next` pointers of 2^16 16-byte nodes
//!   spread over the array (each hop loads the node's value and its next pointer).
//!
//! Outputs are checked equal first (each kernel's first dispatch, timed once: lavapipe compiles
//! a compute shader's machine code there, lazily, not in vkCreateComputePipelines). Wall time
//! per submit (record once, submit + wait).
//!
//! Pipeline creation (`vkCreateShaderModule` + `vkCreateComputePipelines`, no pipeline cache and
//! the drivers' on-disk shader caches off: the layer's rewrite plus lavapipe's compile) of the physical-storage-buffer corpus
//! (`tests/corpus/physical-storage-buffer`) and the kernels, each module created and destroyed
//! on both sides in alternating order, round by round; with the words the rewrite hands lavapipe
//! (the layer's options on lavapipe: the array-length quirk, the table at set 7). Columns: the
//! layer at default settings (its rewrite cache hits from the second round on, as when an
//! application creates a module again or hands many pipelines the same stage code), the layer
//! with `rewrite_cache_mb=0` (every creation rewrites: a module's first creation), and the layer
//! handed that rewrite already done (passed through: lavapipe's own time for the rewritten
//! code); `vkCreateShaderModule`'s share of each is printed too.
//!
//! Run: `cargo bench -p polyfill-e2e --bench bda`
//! Env: `BDA_REPS` (kernel rounds, default 31), `BDA_LOG2_INVOCATIONS` (default 20),
//! `BDA_CREATE_REPS` (creation rounds, default 25), `BDA_PARTS` (`create,kernels` by default),
//! `BDA_KERNELS` (the timed kernels, `stream,chase` by default: one alone for instruction counts,
//! e.g. `valgrind --tool=callgrind --separate-threads=yes` with `LP_NUM_THREADS=0`, where the
//! difference between two `BDA_REPS` is that kernel's work on each side's queue thread).
mod common;

use common::*;
use polyfill_e2e::ash::vk;
use polyfill_e2e::bindless::gpu::{Buf, Scope, ALL_STAGES};
use polyfill_e2e::{bda, bytes, spirv_as, spirv_val, Context, ContextOptions};
use shader_rewrite::{BdaTable, Options, Target};
use std::time::Instant;

const WORKGROUP: u32 = 64;
const NODES: u32 = 1 << 16;

/// One side (native or emulated): its buffers and the two recorded command buffers.
struct Side<'a> {
    name: &'static str,
    scope: Scope<'a>,
    stream_out: Buf,
    chase_out: Buf,
    stream: vk::CommandBuffer,
    chase: vk::CommandBuffer,
}

fn record(scope: &mut Scope, pipeline: vk::Pipeline, layout: vk::PipelineLayout, push: &[u8], groups: u32) -> vk::CommandBuffer {
    let cmd = scope.command_buffer().unwrap_or_else(|e| fail(&e));
    let d = scope.device();
    unsafe {
        check(d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()), "vkBeginCommandBuffer");
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
        d.cmd_push_constants(cmd, layout, ALL_STAGES, 0, push);
        d.cmd_dispatch(cmd, groups, 1, 1);
        check(d.end_command_buffer(cmd), "vkEndCommandBuffer");
    }
    cmd
}

fn side<'a>(name: &'static str, ctx: &'a Context, input: &[u8], n: u32) -> Side<'a> {
    let mut scope = Scope::new(ctx).unwrap_or_else(|e| fail(&e));
    let layout = scope.pipeline_layout(&[], 24).unwrap_or_else(|e| fail(&e));
    let buf = |scope: &mut Scope, size: usize| scope.buffer(size).unwrap_or_else(|e| fail(&e));
    let stream_in = scope.buffer_with(input).unwrap_or_else(|e| fail(&e));
    let stream_out = buf(&mut scope, n as usize * 4);
    let nodes = buf(&mut scope, NODES as usize * 16);
    let chase_out = buf(&mut scope, n as usize * 4);
    if stream_in.address == 0 {
        fail(&format!("{name}: no device addresses (bufferDeviceAddress not enabled)"));
    }
    let pc = |a: u64, b: u64, n: u32| [&a.to_le_bytes()[..], &b.to_le_bytes(), &n.to_le_bytes(), &[0; 4]].concat();
    let stream_p = scope.compute_pipeline(&bda::copy_scale(), layout).unwrap_or_else(|e| fail(&e));
    let init_p = scope.compute_pipeline(&bda::chase_init(), layout).unwrap_or_else(|e| fail(&e));
    let chase_p = scope.compute_pipeline(&bda::chase(), layout).unwrap_or_else(|e| fail(&e));
    let init = record(&mut scope, init_p, layout, &pc(nodes.address, 0, NODES), NODES / WORKGROUP);
    scope.submit_recorded(init).unwrap_or_else(|e| fail(&e));
    let stream = record(&mut scope, stream_p, layout, &pc(stream_in.address, stream_out.address, 0), n / WORKGROUP);
    let chase = record(&mut scope, chase_p, layout, &pc(nodes.address, chase_out.address, NODES), n / WORKGROUP);
    Side { name, scope, stream_out, chase_out, stream, chase }
}

/// The modules of the creation comparison: the corpus (SPIR-V 1.3) and the bench kernels.
fn creation_modules() -> Vec<(String, Vec<u32>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/physical-storage-buffer");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display()))).flatten().map(|e| e.path()).collect();
    paths.retain(|p| p.extension().is_some_and(|x| x == "spvasm"));
    paths.sort();
    let mut modules: Vec<(String, Vec<u32>)> = paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_else(|e| fail(&format!("{}: {e}", p.display())));
            let name = p.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            (name, spirv_as(&text, "vulkan1.1").unwrap_or_else(|e| fail(&e)))
        })
        .collect();
    modules.push(("kernel stream".into(), bda::copy_scale()));
    modules.push(("kernel chase".into(), bda::chase()));
    modules
}

/// The module the layer hands lavapipe for `words` under `force` (its options there: every
/// feature, robustBufferAccess2 included, the array-length and per-lane quirks, vectors checked
/// per component (Mesa 25), the table at set maxBoundDescriptorSets - 1 = 7 with 65536 slots),
/// checked with spirv-val.
fn emulated_words(name: &str, words: &[u32]) -> Vec<u32> {
    let options = Options {
        target: Target { nonuniform_array_length_broken: true, nonuniform_access_per_lane: true, robust_vector_components: true, ..Target::all() },
        bda: Some(BdaTable { set: 7, binding: 3, count: 65536 }),
        ..Options::default()
    };
    let out = shader_rewrite::rewrite(words, &options).unwrap_or_else(|e| fail(&format!("{name}: {e}")));
    spirv_val(&out.words, "vulkan1.2").unwrap_or_else(|e| fail(&format!("{name}: rewrite fails spirv-val: {e}")));
    out.words
}

/// `vkCreateShaderModule` + `vkCreateComputePipelines` of `words` (no pipeline cache): the
/// whole, and `vkCreateShaderModule`'s share (where the layer rewrites, or finds the rewrite in
/// its cache), in ms; both objects are destroyed after.
fn create_ms(ctx: &Context, layout: vk::PipelineLayout, words: &[u32]) -> (f64, f64) {
    let t = Instant::now();
    let module = ok(ctx.create_shader_module(words), "vkCreateShaderModule");
    let module_ms = t.elapsed().as_secs_f64() * 1e3;
    let p = compute_pipeline(ctx, module, layout, "vkCreateComputePipelines");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    unsafe { ctx.device().destroy_pipeline(p, None) };
    ctx.destroy_shader_module(module);
    (ms, module_ms)
}

/// The columns of the creation comparison: (context, handed the layer's rewrite already made).
const COLUMNS: [(usize, bool); 4] = [(0, false), (1, false), (2, false), (1, true)];

/// Pipeline creation of every module in each column of [`COLUMNS`] (contexts: native, the
/// layer at default settings, the layer with `rewrite_cache_mb=0`), interleaved; prints words
/// and times.
fn creation(ctxs: [&Context; 3], reps: usize) {
    let modules = creation_modules();
    let layouts = ctxs.map(|ctx| {
        let mut scope = Scope::new(ctx).unwrap_or_else(|e| fail(&e));
        // Set 0 binding 0: the storage buffer of the corpus's `mixed`; push constants for all.
        let set = scope.set_layout(&[(0, vk::DescriptorType::STORAGE_BUFFER, 1)]).unwrap_or_else(|e| fail(&e));
        let layout = scope.pipeline_layout(&[set], 32).unwrap_or_else(|e| fail(&e));
        (scope, layout)
    });
    // The last column: the layer's context handed each module already rewritten (passed
    // through: the layer finds nothing to lower), i.e. lavapipe's own time for the rewrite.
    let rewritten: Vec<Vec<u32>> = modules.iter().map(|(name, words)| emulated_words(name, words)).collect();
    let mut ms = vec![[(); 4].map(|_| Vec::new()); modules.len()];
    let mut module_ms = ms.clone();
    for r in 0..reps {
        for (k, (_, words)) in modules.iter().enumerate() {
            for j in 0..COLUMNS.len() {
                let s = (j + r + k) % COLUMNS.len();
                let (ctx, pre) = COLUMNS[s];
                let (all, module) = create_ms(ctxs[ctx], layouts[ctx].1, if pre { &rewritten[k] } else { words });
                ms[k][s].push(all);
                module_ms[k][s].push(module);
            }
        }
    }
    println!("pipeline creation, ms (vkCreateShaderModule + vkCreateComputePipelines, no pipeline cache; median of {reps} interleaved rounds;");
    println!("  ratio: / native, (paired: median of the same round's ratios); emulated: the layer at default settings, its rewrite cache");
    println!("  hit from the second round on; uncached: rewrite_cache_mb=0, every creation rewrites; pre-rewritten: the layer handed its own");
    println!("  rewrite, passed through, i.e. lavapipe's time for the rewritten code; module us: vkCreateShaderModule alone):");
    println!(
        "  {:<16} {:>5} {:>5} {:>7} {:>7} {:>12} {:>12} {:>12}   {:>19}",
        "module", "in", "out", "native", "emul.", "ratio", "uncached", "pre-rewr.", "module us e/u/p"
    );
    for (((name, words), (all, module)), out) in modules.iter().zip(ms.iter().zip(&module_ms)).zip(&rewritten) {
        let ratio = |s: usize| {
            let paired: Vec<f64> = all[s].iter().zip(&all[0]).map(|(e, n)| e / n).collect();
            format!("{:.2} ({:.2})", median(&all[s]) / median(&all[0]), median(&paired))
        };
        println!(
            "  {name:<16} {:>5} {:>5} {:>7.3} {:>7.3} {:>12} {:>12} {:>12}   {:>5.1} {:>6.1} {:>5.1}",
            words.len(),
            out.len(),
            median(&all[0]),
            median(&all[1]),
            ratio(1),
            ratio(2),
            ratio(3),
            median(&module[1]) * 1e3,
            median(&module[2]) * 1e3,
            median(&module[3]) * 1e3,
        );
    }
    println!();
}

fn main() {
    no_disk_shader_caches();
    let reps = env_num("BDA_REPS", 31).max(1) as usize;
    let create_reps = env_num("BDA_CREATE_REPS", 25).max(1) as usize;
    let log2 = env_num("BDA_LOG2_INVOCATIONS", 20).clamp(16, 24);
    let parts = std::env::var("BDA_PARTS").unwrap_or_else(|_| "create,kernels".into());
    let kernels = std::env::var("BDA_KERNELS").unwrap_or_else(|_| "stream,chase".into());
    let timed = [kernels.contains("stream"), kernels.contains("chase")];
    let n = 1u32 << log2;
    let native_ctx = Context::new(&ContextOptions::native()).unwrap_or_else(|e| fail(&format!("native context: {e}")));
    // No shader dumps (the test contexts' default): creation times would include file writes.
    let emulated_ctx = Context::new(&ContextOptions::with_layer().setting("buffer_device_address", "force").setting("dump_shaders_dir", ""))
        .unwrap_or_else(|e| fail(&format!("layer context: {e}")));
    println!("== bda: emulated (buffer_device_address=force) vs native buffer device addresses ==");
    println!("device: {} | {n} invocations | {reps} rounds | load {}", native_ctx.device_name(), loadavg());
    if parts.contains("create") {
        let uncached = Context::new(
            &ContextOptions::with_layer().setting("buffer_device_address", "force").setting("dump_shaders_dir", "").setting("rewrite_cache_mb", "0"),
        )
        .unwrap_or_else(|e| fail(&format!("layer context with rewrite_cache_mb=0: {e}")));
        creation([&native_ctx, &emulated_ctx, &uncached], create_reps);
    }
    if !parts.contains("kernels") {
        return;
    }
    let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2654435761)).collect();
    let input = bytes::from_u32s(&input);
    let sides = [side("native", &native_ctx, &input, n), side("emulated", &emulated_ctx, &input, n)];

    // Correctness: the same bytes on both sides. These are each pipeline's first dispatch:
    // lavapipe compiles a compute shader's machine code there, not in vkCreateComputePipelines.
    let mut first = [[0.0; 2]; 2];
    for (k, s) in sides.iter().enumerate() {
        for (kernel, cmd) in [s.stream, s.chase].into_iter().enumerate() {
            let t = Instant::now();
            s.scope.submit_recorded(cmd).unwrap_or_else(|e| fail(&e));
            first[kernel][k] = t.elapsed().as_secs_f64() * 1e3;
        }
    }
    for (what, get) in [("stream", (|s: &Side| s.stream_out.read()) as fn(&Side) -> Vec<u8>), ("chase", |s: &Side| s.chase_out.read())] {
        let (a, b) = (get(&sides[0]), get(&sides[1]));
        if let Some(at) = bytes::first_difference(&a, &b) {
            fail(&format!("{what}: outputs differ at byte {at}"));
        }
    }
    println!("correctness: the emulated kernels write the native kernels' bytes");
    println!("first dispatch, ms (lavapipe's machine-code compile on its queue thread, then the dispatch; one sample):");
    for (kernel, name) in ["stream", "chase"].iter().enumerate() {
        let [nat, emu] = first[kernel];
        println!("  {name:<8} native {nat:.1}  emulated {emu:.1}  ratio {:.2}", emu / nat);
    }

    let mut ms = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]];
    for s in rotating(2, reps) {
        for (kernel, cmd) in [sides[s].stream, sides[s].chase].into_iter().enumerate().filter(|&(k, _)| timed[k]) {
            let t = Instant::now();
            sides[s].scope.submit_recorded(cmd).unwrap_or_else(|e| fail(&e));
            ms[kernel][s].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!();
    println!("wall time per dispatch, ms (median [min..max]); ratio = emulated / native, paired = median of same-round ratios:");
    for (kernel, name) in ["stream (1 load + 1 store)", "chase (16 dependent pointer loads)"].iter().enumerate().filter(|&(k, _)| timed[k]) {
        let [nat, emu] = &ms[kernel];
        let paired: Vec<f64> = emu.iter().zip(nat).map(|(e, n)| e / n).collect();
        println!(
            "  {name:36} {}: {:.3} [{:.3}..{:.3}]  {}: {:.3} [{:.3}..{:.3}]  ratio {:.2} (paired {:.2}, fastest/fastest {:.2})",
            sides[0].name,
            median(nat),
            min(nat),
            max(nat),
            sides[1].name,
            median(emu),
            min(emu),
            max(emu),
            median(emu) / median(nat),
            median(&paired),
            min(emu) / min(nat)
        );
    }
}
