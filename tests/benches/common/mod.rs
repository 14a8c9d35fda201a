//! Shared by the benches: failure helpers, statistics, and the two-storage-buffer compute
//! layout both benches bind (binding 0 = input, binding 1 = output).
#![allow(dead_code)]
use polyfill_e2e::ash::vk;
use polyfill_e2e::Context;

mod rig;
#[allow(unused_imports)]
pub use rig::*;

/// Every pipeline creation compiles: the drivers' on-disk shader caches off for the whole run
/// (Mesa's `MESA_SHADER_CACHE_DISABLE`, NVIDIA's `__GL_SHADER_DISK_CACHE`), so no round hits
/// what an earlier round or run compiled. Call first thing in `main`, before any thread starts.
pub fn no_disk_shader_caches() {
    // SAFETY: called before any other thread (and before Vulkan) starts.
    unsafe {
        std::env::set_var("MESA_SHADER_CACHE_DISABLE", "true");
        std::env::set_var("__GL_SHADER_DISK_CACHE", "0");
    }
}

pub fn fail(msg: &str) -> ! {
    eprintln!("{} bench: {msg}", env!("CARGO_CRATE_NAME"));
    std::process::exit(1);
}
pub fn ok<T>(r: Result<T, vk::Result>, what: &str) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e:?}")))
}
pub fn check(r: Result<impl Sized, vk::Result>, what: &str) {
    if let Err(e) = r {
        fail(&format!("{what}: {e:?}"));
    }
}

/// A compute pipeline of `module`'s `main` with `layout`, no pipeline cache; the bench fails
/// with `what` and the error where it cannot be created.
pub fn compute_pipeline(ctx: &Context, module: vk::ShaderModule, layout: vk::PipelineLayout, what: &str) -> vk::Pipeline {
    let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(c"main");
    let ci = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
    unsafe { ctx.device().create_compute_pipelines(vk::PipelineCache::null(), &ci, None) }.unwrap_or_else(|(_, e)| fail(&format!("{what}: {e:?}")))[0]
}

/// `rounds` rounds over items `0..n`, each round starting one item later than the one before,
/// so every item runs side by side with every other and none is always first (or last).
pub fn rotating(n: usize, rounds: usize) -> impl Iterator<Item = usize> {
    (0..rounds).flat_map(move |r| (0..n).map(move |k| (k + r) % n))
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}
pub fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}
pub fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}
/// `median [min..max]` of `v`, the median right-aligned in `width`, `decimals` after the point.
pub fn spread(v: &[f64], width: usize, decimals: usize) -> String {
    format!("{:>width$.decimals$} [{:.decimals$}..{:.decimals$}]", median(v), min(v), max(v))
}

pub fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The 1-minute load average (the benches share the machine with whatever else runs).
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| s.split_whitespace().next().map(str::to_string)).unwrap_or_else(|| "?".into())
}

/// Set layout with two compute storage buffers, its pipeline layout, a pool and `sets` sets.
pub fn two_storage_buffers(ctx: &Context, sets: u32) -> (vk::DescriptorSetLayout, vk::PipelineLayout, vk::DescriptorPool, Vec<vk::DescriptorSet>) {
    let d = ctx.device();
    let bindings = [0u32, 1].map(|b| {
        vk::DescriptorSetLayoutBinding::default()
            .binding(b)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
    });
    let set_layout = ok(
        unsafe { d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None) },
        "vkCreateDescriptorSetLayout",
    );
    let sl = [set_layout];
    let layout = ok(unsafe { d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sl), None) }, "vkCreatePipelineLayout");
    let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: 2 * sets }];
    let pool = ok(
        unsafe { d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(sets).pool_sizes(&sizes), None) },
        "vkCreateDescriptorPool",
    );
    let layouts = vec![set_layout; sets as usize];
    let v = ok(
        unsafe { d.allocate_descriptor_sets(&vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts)) },
        "vkAllocateDescriptorSets",
    );
    (set_layout, layout, pool, v)
}

/// Destroys what [`two_storage_buffers`] made (the pool frees its sets).
pub fn destroy_two_storage_buffers(ctx: &Context, set_layout: vk::DescriptorSetLayout, layout: vk::PipelineLayout, pool: vk::DescriptorPool) {
    let d = ctx.device();
    unsafe {
        d.destroy_descriptor_pool(pool, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_set_layout(set_layout, None);
    }
}
