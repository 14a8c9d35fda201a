//! Command-buffer cost of bindless-texture emulation: a draw-heavy render pass (default 10 000
//! draws of a small quad, the application rebinding its own descriptor set every N draws and
//! pushing a handle + cell index before each draw), recorded
//! - through the layer with a bindless pipeline (SPV_NV_bindless_texture fragment shader, the
//!   texture named by a VK_NVX_image_view_handle handle; the layer must keep its table bound
//!   around the application's binds),
//! - through the layer with a plain pipeline (the texture from the bound set),
//! - without the layer with the plain pipeline.
//!
//! Measured per variant: recording time (vkBeginCommandBuffer .. vkEndCommandBuffer) and
//! submit + wait time, in rounds whose variant order rotates; medians, [min..max] and ratios
//! are printed, never asserted. The rendered cells are checked once against the CPU first.
//!
//! Run: `cargo bench -p polyfill-e2e --bench bindless_binds`
//! Env: `BINDLESS_BENCH_DRAWS` (10000), `BINDLESS_BENCH_REBIND_EVERY` (4),
//! `BINDLESS_BENCH_REPS` (31).
mod common;

use common::*;
use polyfill_e2e::ash::vk;
use polyfill_e2e::bindless::gpu::{ColorTarget, Scope, Write, ALL_STAGES};
use polyfill_e2e::bindless::{rgba8_texel, shaders, textures, HandleApi};
use polyfill_e2e::{spirv_as, Context, ContextOptions};
use std::time::Instant;

const W: u32 = 64;

struct Variant<'a> {
    name: String,
    scope: Scope<'a>,
    cmd: vk::CommandBuffer,
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    sets: Vec<vk::DescriptorSet>,
    /// Push-constant handle per set index (0 for the plain pipeline).
    handles: Vec<u32>,
    /// Texture index per set index.
    tex_of_set: Vec<u32>,
    target: ColorTarget,
    record_ms: Vec<f64>,
    run_ms: Vec<f64>,
}

fn setup<'a>(ctx: &'a Context, name: &str, bindless: bool) -> Result<Variant<'a>, String> {
    let mut scope = Scope::new(ctx)?;
    let texs = textures(&mut scope, 16)?;
    // RGBA8 textures only (t % 3 != 2).
    let rgba: Vec<u32> = (0..16).filter(|t| t % 3 != 2).collect();
    let nearest = scope.sampler(vk::Filter::NEAREST, vk::SamplerAddressMode::CLAMP_TO_EDGE)?;
    let target = scope.color_target(W, W)?;
    let sl = scope.set_layout(&[(0, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, 1)])?;
    let layout = scope.pipeline_layout(&[sl], 8)?;
    let vs = spirv_as(&shaders::cell_vs(), "vulkan1.3")?;
    let fs = spirv_as(&shaders::draw_fs(bindless), "vulkan1.3")?;
    let pipeline = scope.graphics_pipeline(&vs, &fs, layout, target.render_pass, W, W)?;
    let mut sets = Vec::new();
    let mut handles = Vec::new();
    let api = HandleApi::new(ctx);
    for &t in &rgba {
        let view = texs[t as usize].view;
        sets.push(scope.descriptor_set(
            sl,
            &[Write::Image { binding: 0, element: 0, ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER, view, layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL, sampler: nearest }],
        )?);
        handles.push(if bindless { api.sampled(view)? } else { 0 });
    }
    let cmd = scope.command_buffer()?;
    Ok(Variant {
        name: name.into(),
        scope,
        cmd,
        pipeline,
        layout,
        sets,
        handles,
        tex_of_set: rgba,
        target,
        record_ms: vec![],
        run_ms: vec![],
    })
}

/// Which set index draw `i` uses.
fn set_of(i: u32, every: u32, n_sets: usize) -> usize {
    ((i / every) as usize * 7) % n_sets
}

fn record(v: &Variant, draws: u32, every: u32) -> Result<f64, String> {
    let d = v.scope.device();
    let t0 = Instant::now();
    unsafe {
        d.begin_command_buffer(v.cmd, &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)).map_err(|e| format!("vkBeginCommandBuffer: {e:?}"))?;
        v.target.begin(d, v.cmd);
        d.cmd_bind_pipeline(v.cmd, vk::PipelineBindPoint::GRAPHICS, v.pipeline);
        for i in 0..draws {
            let s = set_of(i, every, v.sets.len());
            if i % every == 0 {
                d.cmd_bind_descriptor_sets(v.cmd, vk::PipelineBindPoint::GRAPHICS, v.layout, 0, &[v.sets[s]], &[]);
            }
            let pc = [v.handles[s].to_le_bytes(), (i % 16).to_le_bytes()].concat();
            d.cmd_push_constants(v.cmd, v.layout, ALL_STAGES, 0, &pc);
            d.cmd_draw(v.cmd, 6, 1, 0, 0);
        }
        d.cmd_end_render_pass(v.cmd);
        d.end_command_buffer(v.cmd).map_err(|e| format!("vkEndCommandBuffer: {e:?}"))?;
    }
    Ok(t0.elapsed().as_secs_f64() * 1e3)
}

fn run(v: &Variant) -> Result<f64, String> {
    let t0 = Instant::now();
    v.scope.submit_recorded(v.cmd)?;
    Ok(t0.elapsed().as_secs_f64() * 1e3)
}

/// The last draw into each of the 16 cells decides its color: texel (1, 2) of its texture.
fn check(v: &mut Variant, draws: u32, every: u32) -> Result<(), String> {
    let target = v.target.image;
    let got = v.scope.read_image(&target, 4)?;
    let cell_px = W / 4;
    for cell in 0..16u32.min(draws) {
        let last = (0..draws).rev().find(|i| i % 16 == cell).unwrap();
        let t = v.tex_of_set[set_of(last, every, v.sets.len())];
        let want = rgba8_texel(t, 1, 2);
        let (px, py) = ((cell % 4) * cell_px + cell_px / 2, (cell / 4) * cell_px + cell_px / 2);
        let o = ((py * W + px) * 4) as usize;
        if got[o..o + 4] != want {
            return Err(format!("{}: cell {cell} got {:?}, want texture {t} texel (1,2) {want:?}", v.name, &got[o..o + 4]));
        }
    }
    Ok(())
}

fn main() {
    let draws: u32 = env_num("BINDLESS_BENCH_DRAWS", 10_000u32).max(16);
    let every: u32 = env_num("BINDLESS_BENCH_REBIND_EVERY", 4u32).max(1);
    let reps: usize = env_num("BINDLESS_BENCH_REPS", 31usize).max(1);
    let native = Context::new(&ContextOptions::native()).unwrap_or_else(|e| fail(&format!("native context: {e}")));
    let layer_bl = Context::new(&ContextOptions::bindless());
    let layer_plain_ctx;
    let layer_ctx: &Context = match &layer_bl {
        Ok(c) => c,
        Err(e) => {
            println!("note: no VK_NVX_image_view_handle through the layer ({e}); measuring the plain pipeline only");
            layer_plain_ctx = Context::new(&ContextOptions::with_layer()).unwrap_or_else(|e| fail(&format!("layer context: {e}")));
            &layer_plain_ctx
        }
    };
    println!("== bindless_binds: draw-heavy command buffers, bindless vs plain pipeline, with and without the layer ==");
    println!("device: {} | {draws} draws per command buffer, app set rebound every {every} draws | {reps} rounds", native.device_name());
    let mut variants = Vec::new();
    if layer_bl.is_ok() {
        match setup(layer_ctx, "layer, bindless pipeline", true) {
            Ok(v) => variants.push(v),
            Err(e) => println!("note: bindless pipeline through the layer failed: {e}; measuring the plain pipeline only"),
        }
    }
    variants.push(setup(layer_ctx, "layer, plain pipeline", false).unwrap_or_else(|e| fail(&e)));
    variants.push(setup(&native, "no layer, plain pipeline", false).unwrap_or_else(|e| fail(&e)));
    for v in variants.iter_mut() {
        record(v, draws, every).and_then(|_| run(v)).unwrap_or_else(|e| fail(&format!("{}: {e}", v.name)));
        check(v, draws, every).unwrap_or_else(|e| fail(&e));
    }
    println!("correctness: every variant renders the expected texture in each cell");
    let started = Instant::now();
    for j in rotating(variants.len(), reps) {
        let v = &mut variants[j];
        let rec = record(v, draws, every).unwrap_or_else(|e| fail(&e));
        let ex = run(v).unwrap_or_else(|e| fail(&e));
        v.record_ms.push(rec);
        v.run_ms.push(ex);
    }
    println!();
    println!("ms per command buffer, median [min..max]:");
    println!("  {:<28} {:>22} {:>26}", "variant", "record", "submit+wait");
    for v in &variants {
        println!("  {:<28} {} {}", v.name, spread(&v.record_ms, 8, 3), spread(&v.run_ms, 9, 2));
    }
    let find = |s: &str| variants.iter().find(|v| v.name == s);
    let ratio = |a: &Variant, b: &Variant| {
        let rec: Vec<f64> = a.record_ms.iter().zip(&b.record_ms).map(|(x, y)| x / y).collect();
        let ex: Vec<f64> = a.run_ms.iter().zip(&b.run_ms).map(|(x, y)| x / y).collect();
        println!(
            "  {:<52} record {:.2}× (paired {:.2}×, Δ {:+.0} ns/draw)  submit+wait {:.2}× (paired {:.2}×)",
            format!("{} / {}", a.name, b.name),
            median(&a.record_ms) / median(&b.record_ms),
            median(&rec),
            (median(&a.record_ms) - median(&b.record_ms)) * 1e6 / draws as f64,
            median(&a.run_ms) / median(&b.run_ms),
            median(&ex)
        );
    };
    println!("ratios (medians; paired = median of same-round ratios):");
    if let (Some(a), Some(b)) = (find("layer, bindless pipeline"), find("layer, plain pipeline")) {
        ratio(a, b);
    }
    if let (Some(a), Some(b)) = (find("layer, bindless pipeline"), find("no layer, plain pipeline")) {
        ratio(a, b);
    }
    if let (Some(a), Some(b)) = (find("layer, plain pipeline"), find("no layer, plain pipeline")) {
        ratio(a, b);
    }
    println!("timed rounds took {:.1}s (load average {}); figures are printed, never asserted", started.elapsed().as_secs_f64(), loadavg());
    drop(variants);
}
