//! Emulated vs native 16-bit storage-buffer kernels on lavapipe (which has
//! storageBuffer16BitAccess natively, so both sides run on the same driver).
//!
//! Kernel (1<<20 invocations, 64 per workgroup): `out[i] = f16(f32(in[i]) * 2 + 1)` on f16
//! storage buffers, without Float16 arithmetic (only StorageBuffer16BitAccess), one f16 or one
//! f16vec4 per invocation.
//! - native: the module as written.
//! - emulated: the same module rewritten by `shader-rewrite` for a target without 16-bit
//!   storage but with 8-bit storage (byte views: no atomics), and for a Vulkan 1.0 core target
//!   (atomic and/or pairs for the half-word stores). The f32 → f16 conversion then rounds with
//!   the driver's own conversion where the target has shaderFloat16 (the 8-bit-view target),
//!   and in integer code without it (the same target with `float16` off, and core).
//!
//! Each pipeline's command buffer is recorded once and submitted repeatedly; all pipelines run
//! once per round in an order that rotates every round. Outputs are checked equal first.
//!
//! Run: `cargo bench -p polyfill-e2e --bench storage16`
//! Env: `STORAGE16_REPS` (rounds, default 101), `STORAGE16_LOG2_INVOCATIONS` (default 20).
mod common;

use common::*;
use polyfill_e2e::spvasm::{Module, GID_X};
use polyfill_e2e::{bytes, spirv_as, Context, ContextOptions};
use shader_rewrite::{rewrite, Options, SmallStorage, Target};

const WORKGROUP: u32 = 64;

fn kernel(vec4: bool) -> String {
    let (ty, fty, stride) = if vec4 { ("%v4h", "%v4f", 8) } else { ("%f16", "%f32", 2) };
    let consts = if vec4 { "%two = OpConstantComposite %v4f %f2 %f2 %f2 %f2\n%one = OpConstantComposite %v4f %f1 %f1 %f1 %f1" } else { "" };
    let (two, one) = if vec4 { ("%two", "%one") } else { ("%f2", "%f1") };
    let pel = format!("%ps_{}", &ty[1..]);
    Module::compute(64)
        .cap("StorageBuffer16BitAccess")
        .ext("SPV_KHR_16bit_storage")
        .gid()
        .buffers("blk", ty, stride, &["in", "out"])
        .globals(consts)
        .main(&format!(
            "{GID_X}
%pi = OpAccessChain {pel} %in %c0 %i
%x = OpLoad {ty} %pi
%xf = OpFConvert {fty} %x
%y = OpFMul {fty} %xf {two}
%z = OpFAdd {fty} %y {one}
%zh = OpFConvert {ty} %z
%po = OpAccessChain {pel} %out %c0 %i
OpStore %po %zh"
        ))
        .text()
}

/// The rewrite for a target without 16-bit storage: `core` (Vulkan 1.0), else every other
/// feature, with shaderFloat16 (the driver's f32 → f16 conversion) or not (integer rounding).
fn emulated(words: &[u32], core: bool, float16: bool) -> Vec<u32> {
    let target = if core { Target::core() } else { Target { storage_buffer_16bit: false, uniform_and_storage_buffer_16bit: false, float16, ..Target::all() } };
    let options = Options { target, emulate_storage: SmallStorage::missing_from(&target), ..Options::default() };
    rewrite(words, &options).unwrap_or_else(|e| fail(&format!("rewrite: {e}"))).words
}

fn main() {
    let reps = env_num("STORAGE16_REPS", 101).max(1) as usize;
    let log2 = env_num("STORAGE16_LOG2_INVOCATIONS", 20).clamp(6, 24);
    let n = 1usize << log2;
    let groups = (n as u32) / WORKGROUP;
    let ctx = Context::new(&ContextOptions::native()).unwrap_or_else(|e| fail(&format!("native context: {e}")));
    println!("== storage16: emulated vs native 16-bit storage-buffer kernels ==");
    println!("device: {} | {n} invocations ({groups} workgroups of {WORKGROUP}) | {reps} rounds", ctx.device_name());

    // Inputs: f16 values whose f32 results (x*2+1) are exact in f16 or round.
    let halves: Vec<u16> = (0..n * 4).map(|k| half::f16::from_f32(((k % 4093) as f32) * 0.37 - 700.0).to_bits()).collect();
    let input = HostBuffer::new(&ctx, n * 8);
    input.write(&bytes::from_u16s(&halves));
    let out_a = HostBuffer::new(&ctx, n * 8);
    let out_b = HostBuffer::new(&ctx, n * 8);
    let rig = Rig::new(&ctx, &input, [&out_a, &out_b], groups);

    let mut jobs: Vec<Job> = Vec::new();
    let mut rows = vec![];
    for vec4 in [false, true] {
        let shape = if vec4 { "f16vec4" } else { "f16" };
        let native = spirv_as(&kernel(vec4), "vulkan1.1").unwrap_or_else(|e| fail(&e));
        let base = jobs.len();
        jobs.push(rig.job(&format!("native {shape}"), &native, 0));
        jobs.push(rig.job(&format!("emulated {shape} (8-bit views)"), &emulated(&native, false, true), 1));
        jobs.push(rig.job(&format!("emulated {shape} (8-bit, int rounding)"), &emulated(&native, false, false), 1));
        jobs.push(rig.job(&format!("emulated {shape} (core)"), &emulated(&native, true, false), 1));
        rows.push((base, base + 1));
        rows.push((base, base + 2));
        rows.push((base, base + 3));
    }
    let outs = [&out_a, &out_b];
    for &(a, b) in &rows {
        let mut results = vec![];
        for j in [a, b] {
            outs[jobs[j].out].fill(0xCD);
            rig.run(&jobs[j]);
            results.push(outs[jobs[j].out].read());
        }
        let used = if jobs[a].name.contains("vec4") { n * 8 } else { n * 2 };
        if let Some(at) = bytes::first_difference(&results[0][..used], &results[1][..used]) {
            fail(&format!("outputs differ: {} vs {} at byte {at}: {:02x?} vs {:02x?} (input {:02x?})", jobs[a].name, jobs[b].name, &results[0][at & !7..(at & !7) + 8], &results[1][at & !7..(at & !7) + 8], &bytes::from_u16s(&halves)[at & !7..(at & !7) + 8]));
        }
    }
    println!("correctness: every emulated kernel writes the native kernel's bytes");

    let elapsed = rig.rounds(&mut jobs, reps);
    let pick = |j: &Job| if rig.timestamps { j.ts_ms.clone() } else { j.wall_ms.clone() };
    println!();
    println!("{} per dispatch, ms (median [min..max]); ratio = emulated / native, paired = median of same-round ratios:", if rig.timestamps { "GPU timestamps" } else { "wall time" });
    for &(a, b) in &rows {
        let (ta, tb) = (pick(&jobs[a]), pick(&jobs[b]));
        let paired: Vec<f64> = tb.iter().zip(&ta).map(|(x, y)| x / y).collect();
        println!(
            "  {:<40} {}  vs {:<12} {:>7.3}   ratio {:.3}  paired {:.3}",
            jobs[b].name,
            spread(&tb, 7, 3),
            jobs[a].name,
            median(&ta),
            median(&tb) / median(&ta),
            median(&paired)
        );
    }
    println!("timed rounds took {:.1}s (load average {}); figures are printed, never asserted", elapsed, loadavg());
    for j in &jobs {
        rig.destroy_job(j);
    }
    rig.destroy();
    for b in [&input, &out_a, &out_b] {
        b.destroy(&ctx);
    }
}
