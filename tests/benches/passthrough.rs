//! What `VK_LAYER_POLYFILL_extensions` costs where it has nothing to do, on lavapipe: three
//! contexts in one process, measured in interleaved batches (the order rotates every batch):
//!
//! - `native`: no layer;
//! - `layer`: the layer enabled, no extension requested (`ContextOptions::with_layer()`): no
//!   emulation is active, so the layer hands out the driver's own entry points;
//! - `layer+ext`: the layer with `VK_NV_raw_access_chains` enabled
//!   (`ContextOptions::raw_access_chains()`): the layer's vkCreateShaderModule /
//!   vkCreateComputePipelines hooks are installed and scan every module (which needs nothing and
//!   is passed down untouched).
//!
//! Measured: vkCreateShaderModule on plain compute modules of about 2, 8 and 20 KB (no raw
//! access chains), vkCreateComputePipelines (lavapipe compiles with LLVM, so fewer), and the
//! command-recording rate (10k × vkCmdBindPipeline + vkCmdBindDescriptorSets + vkCmdDispatch
//! between vkBeginCommandBuffer and vkEndCommandBuffer). Ratios are printed beside the targets
//! (create: layer/native time ≤ 1.02; recording: layer/native rate ≥ 0.99), never asserted.
//!
//! Run: `cargo build --release -p vk-layer-polyfill-extensions &&
//!       cargo bench -p polyfill-e2e --bench passthrough`
//! Env: `PASSTHROUGH_BATCHES` (default 30), `PASSTHROUGH_MODULES` (creates per batch, 2000),
//!      `PASSTHROUGH_PIPELINES` (pipelines per batch, 20), `PASSTHROUGH_RECORDS` (recordings per
//!      batch, 10), `PASSTHROUGH_DISPATCHES` (per recording, 10000), `PASSTHROUGH_DUMP_DIR`
//!      (write the modules there as .spv).

mod common;

use common::*;
use polyfill_e2e::ash::vk;
use polyfill_e2e::spvasm::{Module, GID_X_CHAIN};
use polyfill_e2e::{layer, spirv_as, Context, ContextOptions};
use std::path::PathBuf;
use std::time::Instant;

/// A plain compute module (no raw access chains): `out[i] = sum_k in[i + k] * k` over `steps`
/// terms, bindings 0 (in) and 1 (out). About 116 bytes per step plus ~700 bytes.
fn plain_module(steps: usize) -> String {
    let mut consts = String::new();
    let mut body = format!("{GID_X_CHAIN}\n%acc0 = OpCopyObject %u32 %c0\n");
    for k in 1..=steps {
        let p = k - 1;
        consts += &format!("%k{k} = OpConstant %u32 {}\n", k * 7 + 3);
        body += &format!(
            "%i{k} = OpIAdd %u32 %i %k{k}\n%p{k} = OpAccessChain %ps_u32 %in %c0 %i{k}\n%ld{k} = OpLoad %u32 %p{k}\n\
             %m{k} = OpIMul %u32 %ld{k} %k{k}\n%acc{k} = OpIAdd %u32 %acc{p} %m{k}\n"
        );
    }
    body += &format!("%po = OpAccessChain %ps_u32 %out %c0 %i\nOpStore %po %acc{steps}");
    Module::compute(64).gid().word_buffers(&["in", "out"]).globals(&consts).main(&body).text()
}

/// Per-context objects for the pipeline and recording benches.
struct Rig {
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    dpool: vk::DescriptorPool,
    set: vk::DescriptorSet,
    buffer: HostBuffer,
    module: vk::ShaderModule,
    pipeline: vk::Pipeline,
    cmd_pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
}

impl Rig {
    fn new(ctx: &Context, words: &[u32]) -> Rig {
        let d = ctx.device();
        let (set_layout, layout, dpool, sets) = two_storage_buffers(ctx, 1);
        let set = sets[0];
        // One small buffer behind both bindings, so the bound set is fully written.
        let buffer = HostBuffer::new(ctx, 4096);
        let bi = [vk::DescriptorBufferInfo { buffer: buffer.buffer, offset: 0, range: vk::WHOLE_SIZE }];
        let w = [0u32, 1].map(|b| {
            vk::WriteDescriptorSet::default().dst_set(set).dst_binding(b).descriptor_type(vk::DescriptorType::STORAGE_BUFFER).buffer_info(&bi)
        });
        unsafe { d.update_descriptor_sets(&w, &[]) };
        let module = ctx.create_shader_module(words).unwrap_or_else(|e| fail(&format!("vkCreateShaderModule: {e:?}")));
        let rig = Rig {
            set_layout,
            layout,
            dpool,
            set,
            buffer,
            module,
            pipeline: vk::Pipeline::null(),
            cmd_pool: vk::CommandPool::null(),
            cmd: vk::CommandBuffer::null(),
        };
        let pipeline = rig.create_pipeline(ctx);
        let cmd_pool = ok(
            unsafe { d.create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family()), None) },
            "vkCreateCommandPool",
        );
        let cmd = ok(
            unsafe {
                d.allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default().command_pool(cmd_pool).level(vk::CommandBufferLevel::PRIMARY).command_buffer_count(1),
                )
            },
            "vkAllocateCommandBuffers",
        )[0];
        Rig { pipeline, cmd_pool, cmd, ..rig }
    }

    fn create_pipeline(&self, ctx: &Context) -> vk::Pipeline {
        compute_pipeline(ctx, self.module, self.layout, "vkCreateComputePipelines")
    }

    /// Records `n` × (bind pipeline, bind set, dispatch); returns the seconds from
    /// vkBeginCommandBuffer to vkEndCommandBuffer (the pool reset is not timed).
    fn record(&self, ctx: &Context, n: usize) -> f64 {
        let d = ctx.device();
        ok(unsafe { d.reset_command_pool(self.cmd_pool, vk::CommandPoolResetFlags::empty()) }, "vkResetCommandPool");
        let sets = [self.set];
        let t = Instant::now();
        unsafe {
            ok(
                d.begin_command_buffer(self.cmd, &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)),
                "vkBeginCommandBuffer",
            );
            for k in 0..n {
                d.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
                d.cmd_bind_descriptor_sets(self.cmd, vk::PipelineBindPoint::COMPUTE, self.layout, 0, &sets, &[]);
                d.cmd_dispatch(self.cmd, 1 + (k as u32 & 3), 1, 1);
            }
            ok(d.end_command_buffer(self.cmd), "vkEndCommandBuffer");
        }
        t.elapsed().as_secs_f64()
    }

    fn destroy(&self, ctx: &Context) {
        let d = ctx.device();
        unsafe {
            let _ = d.device_wait_idle();
            d.destroy_command_pool(self.cmd_pool, None);
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_shader_module(self.module, None);
        }
        destroy_two_storage_buffers(ctx, self.set_layout, self.layout, self.dpool);
        self.buffer.destroy(ctx);
    }
}

/// Per-batch figures of one context: the median, the mean and the best (least disturbed) of the
/// batch's per-call values.
#[derive(Clone, Copy)]
struct Batch {
    median: f64,
    mean: f64,
    best: f64,
}

impl Batch {
    /// `rate`: higher is better (the best is the maximum), else the best is the minimum.
    fn of(v: &[f64], rate: bool) -> Batch {
        Batch { median: median(v), mean: v.iter().sum::<f64>() / v.len() as f64, best: if rate { max(v) } else { min(v) } }
    }
}

/// Runs `batches` rounds; in each, `f(ctx_index)` once per context in a rotating order.
fn interleave(batches: usize, n_ctx: usize, mut f: impl FnMut(usize) -> Batch) -> Vec<Vec<Batch>> {
    let mut out = vec![Vec::with_capacity(batches); n_ctx];
    for b in 0..batches {
        for k in 0..n_ctx {
            let c = (k + b) % n_ctx;
            out[c].push(f(c));
        }
    }
    out
}

struct Row {
    what: String,
    unit: &'static str,
    samples: Vec<Vec<Batch>>,
    target: Target,
}

/// A row's target for the layer/native ratio: at most (times) or at least (rates) a bound.
#[derive(Clone, Copy)]
enum Target {
    AtMost(f64),
    AtLeast(f64),
}

impl Target {
    fn holds(self, ratio: f64) -> bool {
        match self {
            Target::AtMost(b) => ratio <= b,
            Target::AtLeast(b) => ratio >= b,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Target::AtMost(b) => write!(f, "<={b}"),
            Target::AtLeast(b) => write!(f, ">={b}"),
        }
    }
}

fn main() {
    let batches = env_num("PASSTHROUGH_BATCHES", 30).max(1);
    let n_modules = env_num("PASSTHROUGH_MODULES", 2000).max(1);
    let n_pipelines = env_num("PASSTHROUGH_PIPELINES", 20).max(1);
    let n_records = env_num("PASSTHROUGH_RECORDS", 10).max(1);
    let n_dispatches = env_num("PASSTHROUGH_DISPATCHES", 10_000).max(1);

    let names = ["native", "layer", "layer+ext"];
    let ctxs: Vec<Context> = [ContextOptions::native(), ContextOptions::with_layer(), ContextOptions::raw_access_chains()]
        .iter()
        .zip(names)
        .map(|(o, n)| Context::new(o).unwrap_or_else(|e| fail(&format!("{n} context: {e}"))))
        .collect();
    println!("== passthrough: cost of the layer where it has nothing to do ==");
    println!(
        "device: {} | contexts: native (no layer), layer (layer, no extension), layer+ext (layer + VK_NV_raw_access_chains) | {batches} interleaved batches",
        ctxs[0].device_name()
    );
    let lib = layer::try_library_path().ok();
    for (ctx, n) in ctxs.iter().zip(names) {
        let f = ctx.get_device_proc_addr("vkCreateShaderModule").map(|f| f as usize).and_then(layer::object_of);
        let ours = lib.is_some() && f == lib;
        println!("  {n:<10} vkCreateShaderModule -> {}", if ours { "the layer's hook".to_string() } else { format!("{:?}", f.unwrap_or_default()) });
    }

    // Modules of about 2, 8 and 20 KB.
    let mut modules: Vec<(String, Vec<u32>)> = Vec::new();
    for steps in [12usize, 64, 170] {
        let words = spirv_as(&plain_module(steps), "vulkan1.1").unwrap_or_else(|e| fail(&e));
        if let Some(dir) = std::env::var_os("PASSTHROUGH_DUMP_DIR") {
            let file = PathBuf::from(dir).join(format!("plain_{steps}.spv"));
            let _ = std::fs::write(&file, polyfill_e2e::tools::words_to_bytes(&words));
        }
        modules.push((format!("{:.1} KB", words.len() as f64 * 4.0 / 1024.0), words));
    }
    let load_before = loadavg();
    let started = Instant::now();
    let mut rows: Vec<Row> = Vec::new();

    // 1. vkCreateShaderModule: time `n_modules` creates; destroy them untimed.
    for (label, words) in &modules {
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        let mut handles = Vec::with_capacity(n_modules);
        // Warm-up.
        for ctx in &ctxs {
            for _ in 0..100 {
                let m = ok(unsafe { ctx.device().create_shader_module(&info, None) }, "vkCreateShaderModule");
                unsafe { ctx.device().destroy_shader_module(m, None) };
            }
        }
        let mut times = vec![0f64; n_modules];
        let samples = interleave(batches, ctxs.len(), |c| {
            let d = ctxs[c].device();
            for t in times.iter_mut() {
                let start = Instant::now();
                let m = unsafe { d.create_shader_module(&info, None) };
                *t = start.elapsed().as_secs_f64() * 1e6;
                handles.push(ok(m, "vkCreateShaderModule"));
            }
            for m in handles.drain(..) {
                unsafe { d.destroy_shader_module(m, None) };
            }
            Batch::of(&times, false)
        });
        let what = format!("vkCreateShaderModule {label} ({n_modules}/batch)");
        rows.push(Row { what, unit: "us/call", samples, target: Target::AtMost(1.02) });
    }

    // 2. vkCreateComputePipelines on the ~8 KB module.
    let rigs: Vec<Rig> = ctxs.iter().map(|c| Rig::new(c, &modules[1].1)).collect();
    {
        let mut pipes = Vec::with_capacity(n_pipelines);
        let mut times = vec![0f64; n_pipelines];
        let samples = interleave(batches, ctxs.len(), |c| {
            for t in times.iter_mut() {
                let start = Instant::now();
                let p = rigs[c].create_pipeline(&ctxs[c]);
                *t = start.elapsed().as_secs_f64() * 1e3;
                pipes.push(p);
            }
            for p in pipes.drain(..) {
                unsafe { ctxs[c].device().destroy_pipeline(p, None) };
            }
            Batch::of(&times, false)
        });
        let what = format!("vkCreateComputePipelines {} ({n_pipelines}/batch)", modules[1].0);
        rows.push(Row { what, unit: "ms/call", samples, target: Target::AtMost(1.02) });
    }

    // 3. Command recording rate.
    {
        for (r, c) in rigs.iter().zip(&ctxs) {
            r.record(c, n_dispatches); // warm-up (pool growth)
        }
        let samples = interleave(batches, ctxs.len(), |c| {
            // Commands (3 per dispatch) per microsecond, per recording.
            let rates: Vec<f64> = (0..n_records).map(|_| (3 * n_dispatches) as f64 / (rigs[c].record(&ctxs[c], n_dispatches) * 1e6)).collect();
            Batch::of(&rates, true)
        });
        let what = format!("recording {n_dispatches}x(BindPipeline+BindDescriptorSets+Dispatch) ({n_records}/batch)");
        rows.push(Row { what, unit: "Mcmd/s", samples, target: Target::AtLeast(0.99) });
    }
    let elapsed = started.elapsed().as_secs_f64();

    println!();
    println!("per context, over {batches} batches: median [min..max] of the batch's per-call median; median of the batch's mean");
    println!("and of its best call. ratio = layer/native from the per-call medians (times for creates, rates for recording);");
    println!("paired = median of same-batch ratios; best ratio / mean ratio = from the batch bests / means (the mean includes");
    println!("preemption spikes). 'layer' hands out the driver's own entry points (nothing hooked): its ratios are an A/A");
    println!("control, the noise floor of this run.");
    for row in &rows {
        println!();
        println!("{} [{}]", row.what, row.unit);
        println!(
            "  {:<10} {:>10} {:>23}  {:>10} {:>10}   {:>7} {:>7} {:>10} {:>10}  target",
            "context", "median", "[min..max]", "mean", "best", "ratio", "paired", "best ratio", "mean ratio"
        );
        let pick = |k: usize, f: fn(&Batch) -> f64| row.samples[k].iter().map(f).collect::<Vec<f64>>();
        for (k, n) in names.iter().enumerate() {
            let (m, a, b) = (pick(k, |x| x.median), pick(k, |x| x.mean), pick(k, |x| x.best));
            print!("  {n:<10} {:>10.3} [{:>9.3}..{:>10.3}]  {:>10.3} {:>10.3}", median(&m), min(&m), max(&m), median(&a), median(&b));
            if k > 0 {
                let (m0, a0, b0) = (pick(0, |x| x.median), pick(0, |x| x.mean), pick(0, |x| x.best));
                let ratio = median(&m) / median(&m0);
                let paired: Vec<f64> = m.iter().zip(&m0).map(|(x, y)| x / y).collect();
                let paired = median(&paired);
                print!(
                    "   {ratio:>7.3} {paired:>7.3} {:>10.3} {:>10.3}  {}{}",
                    median(&b) / median(&b0),
                    median(&a) / median(&a0),
                    row.target,
                    match (row.target.holds(ratio), row.target.holds(paired)) {
                        (true, true) => "",
                        (false, true) => "  (outside target by the medians only; paired within)",
                        (true, false) => "  (outside target by the paired ratio only)",
                        (false, false) => "  (OUTSIDE TARGET)",
                    }
                );
            }
            println!();
        }
    }
    println!();
    println!(
        "took {elapsed:.1}s (load average before: {load_before}, after: {}); paired = median of same-batch ratios; targets are printed, never asserted",
        loadavg()
    );

    for (r, c) in rigs.iter().zip(&ctxs) {
        r.destroy(c);
    }
    drop(ctxs);
}
