//! lavapipe's own `vkCreateComputePipelines` time for every compute module of the corpora as
//! shader-rewrite rewrites it (the layer's lavapipe options, benches/common of shader-rewrite),
//! against the same modules rewritten by another version of the rewriter, interleaved in one
//! process, without the layer (the driver only): the driver's compile time grows with the
//! words the layer hands it.
//!
//! `CORPUS_PIPELINES_WRITE=dir` writes this version's rewrites there (`corpus__module.spv`) and
//! stops; `CORPUS_PIPELINES_BASELINE=dir` compares with the rewrites found there (made by the
//! other version's bench the same way). Without a baseline, this version's times only.
//! Times: median process CPU time (the driver's threads included) over `CORPUS_PIPELINES_ROUNDS`
//! rounds (default 21), the order of the two alternating; Mesa's disk shader cache is off.
//! `CORPUS_PIPELINES_ONLY=text` keeps the modules whose name (`corpus/module`) contains it.
//!
//! Run: `cargo bench -p polyfill-e2e --bench corpus_pipelines`.
#[path = "../../shader-rewrite/benches/common/mod.rs"]
mod corpus;
mod common;

use common::*;
use polyfill_e2e::ash::vk;
use polyfill_e2e::{Context, ContextOptions};
use shader_rewrite::module::{op, Module};
use std::ffi::CString;
use std::path::PathBuf;

const STORAGE_BUFFER: u32 = 12;
const UNIFORM: u32 = 2;
const UNIFORM_CONSTANT: u32 = 0;
const PUSH_CONSTANT: u32 = 9;
const DECORATION_BUFFER_BLOCK: u32 = 3;
const DECORATION_BINDING: u32 = 33;
const DECORATION_SET: u32 = 34;
/// Descriptors given to a runtime-sized array binding.
const RUNTIME_ARRAY_COUNT: u32 = 16;

/// What a compute module needs to become a pipeline.
struct Interface {
    /// Descriptor set layout bindings, by set.
    sets: Vec<Vec<vk::DescriptorSetLayoutBinding<'static>>>,
    push_constants: bool,
    entry: CString,
}

/// The interface of a compute module with one entry point; None for anything else or a
/// resource this bench does not know.
fn interface(words: &[u32]) -> Option<Interface> {
    let m = Module::parse(words).ok()?;
    let [ep] = m.entry_points.as_slice() else { return None };
    if ep.ops.first() != Some(&5) {
        return None; // GLCompute only
    }
    let entry = CString::new(shader_rewrite::module::decode_string(&ep.ops[2..])).ok()?;
    let def = |id: u32| m.globals.iter().find(|g| g.id == id);
    let deco = |id: u32, d: u32| m.annotations.iter().find(|a| a.op == op::DECORATE && a.ops.len() >= 3 && a.ops[0] == id && a.ops[1] == d).map(|a| a.ops[2]);
    let has_deco = |id: u32, d: u32| m.annotations.iter().any(|a| a.op == op::DECORATE && a.ops.len() >= 2 && a.ops[0] == id && a.ops[1] == d);
    let mut sets: Vec<Vec<vk::DescriptorSetLayoutBinding<'static>>> = vec![];
    let mut push = false;
    for v in m.globals.iter().filter(|g| g.op == op::VARIABLE) {
        let ptr = def(v.ty)?;
        let (storage, mut pointee) = (ptr.ops[0], ptr.ops[1]);
        if storage == PUSH_CONSTANT {
            push = true;
            continue;
        }
        if ![STORAGE_BUFFER, UNIFORM, UNIFORM_CONSTANT].contains(&storage) {
            continue;
        }
        let (Some(set), Some(binding)) = (deco(v.id, DECORATION_SET), deco(v.id, DECORATION_BINDING)) else { continue };
        let mut count = 1;
        let t = def(pointee)?;
        if t.op == op::TYPE_ARRAY {
            count = def(t.ops[1]).and_then(|c| c.ops.first().copied())?;
            pointee = t.ops[0];
        } else if t.op == op::TYPE_RUNTIME_ARRAY {
            count = RUNTIME_ARRAY_COUNT;
            pointee = t.ops[0];
        }
        let t = def(pointee)?;
        let ty = match (storage, t.op) {
            (STORAGE_BUFFER, _) => vk::DescriptorType::STORAGE_BUFFER,
            (UNIFORM, _) if has_deco(pointee, DECORATION_BUFFER_BLOCK) => vk::DescriptorType::STORAGE_BUFFER,
            (UNIFORM, _) => vk::DescriptorType::UNIFORM_BUFFER,
            (_, op::TYPE_SAMPLER) => vk::DescriptorType::SAMPLER,
            (_, op::TYPE_SAMPLED_IMAGE) => vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
            // OpTypeImage: Dim (Buffer = 5), Sampled (2 = storage).
            (_, op::TYPE_IMAGE) => match (t.ops[1], t.ops[5]) {
                (5, 2) => vk::DescriptorType::STORAGE_TEXEL_BUFFER,
                (5, _) => vk::DescriptorType::UNIFORM_TEXEL_BUFFER,
                (_, 2) => vk::DescriptorType::STORAGE_IMAGE,
                _ => vk::DescriptorType::SAMPLED_IMAGE,
            },
            _ => return None,
        };
        if sets.len() <= set as usize {
            sets.resize(set as usize + 1, vec![]);
        }
        if sets[set as usize].iter().any(|b| b.binding == binding) {
            continue; // aliases of one binding
        }
        sets[set as usize].push(
            vk::DescriptorSetLayoutBinding::default().binding(binding).descriptor_type(ty).descriptor_count(count).stage_flags(vk::ShaderStageFlags::COMPUTE),
        );
    }
    Some(Interface { sets, push_constants: push, entry })
}

/// A pipeline layout for `words` and its entry point's name (None: not a compute module this
/// bench can lay out).
fn layout(ctx: &Context, words: &[u32]) -> Option<(vk::PipelineLayout, Vec<vk::DescriptorSetLayout>, CString)> {
    let Interface { sets, push_constants: push, entry } = interface(words)?;
    let d = ctx.device();
    let set_layouts: Vec<vk::DescriptorSetLayout> = sets
        .iter()
        .map(|b| ok(unsafe { d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(b), None) }, "vkCreateDescriptorSetLayout"))
        .collect();
    let range = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::COMPUTE, offset: 0, size: ctx.limits().max_push_constants_size }];
    let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
    let info = if push { info.push_constant_ranges(&range) } else { info };
    Some((ok(unsafe { d.create_pipeline_layout(&info, None) }, "vkCreatePipelineLayout"), set_layouts, entry))
}

/// CPU ms of the process for one vkCreateComputePipelines of `module` (then destroyed), or the
/// driver's error.
fn create(ctx: &Context, layout: vk::PipelineLayout, module: vk::ShaderModule, entry: &CString) -> Result<f64, vk::Result> {
    let d = ctx.device();
    let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(entry);
    let ci = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
    let t = process_cpu_ms();
    let p = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &ci, None) }.map_err(|(_, e)| e);
    let ms = process_cpu_ms() - t;
    unsafe { d.destroy_pipeline(p?[0], None) };
    Ok(ms)
}

fn main() {
    no_disk_shader_caches();
    let (_, options) = corpus::profiles()[0];
    let only = std::env::var("CORPUS_PIPELINES_ONLY").unwrap_or_default();
    let modules: Vec<(String, Vec<u32>)> = corpus::corpus()
        .into_iter()
        .filter(|m| m.name.contains(&only))
        .filter_map(|m| shader_rewrite::rewrite(&m.words, &options).ok().map(|r| (m.name.replace('/', "__"), r.words)))
        .collect();
    if let Some(dir) = std::env::var_os("CORPUS_PIPELINES_WRITE").map(PathBuf::from) {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, words) in &modules {
            std::fs::write(dir.join(format!("{name}.spv")), words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        }
        println!("wrote {} rewritten modules to {}", modules.len(), dir.display());
        return;
    }
    let baseline = std::env::var_os("CORPUS_PIPELINES_BASELINE").map(PathBuf::from);
    let rounds = env_num("CORPUS_PIPELINES_ROUNDS", 21usize).max(1);
    let ctx = Context::new(&ContextOptions::native()).unwrap_or_else(|e| fail(&format!("context: {e}")));
    println!("== lavapipe vkCreateComputePipelines per corpus module (no layer; median process CPU ms over {rounds} rounds) ==");
    println!("device: {}; baseline: {}", ctx.device_name(), baseline.as_ref().map_or("none".into(), |d| d.display().to_string()));
    println!("{:<44} {:>7} {:>7} {:>9} {:>9} {:>7}", "module", "w base", "w now", "ms base", "ms now", "ratio");
    let (mut ratios, mut all_now, mut all_base) = (vec![], 0.0, 0.0);
    for (name, words) in &modules {
        let base: Option<Vec<u32>> = baseline.as_ref().and_then(|d| std::fs::read(d.join(format!("{name}.spv"))).ok()).map(|b| b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect());
        let Some((layout, set_layouts, entry)) = layout(&ctx, words) else { continue };
        let now_module = ok(ctx.create_shader_module(words), "vkCreateShaderModule");
        let base_module = base.as_ref().map(|w| ok(ctx.create_shader_module(w), "vkCreateShaderModule"));
        let (mut t_now, mut t_base) = (vec![], vec![]);
        // The first creation warms up; a module lavapipe refuses is reported and skipped.
        let refused = create(&ctx, layout, now_module, &entry).err().or_else(|| base_module.and_then(|bm| create(&ctx, layout, bm, &entry).err()));
        for r in (0..rounds).filter(|_| refused.is_none()) {
            let first_now = r % 2 == 0;
            if first_now {
                t_now.push(create(&ctx, layout, now_module, &entry).unwrap_or(f64::NAN));
            }
            if let Some(bm) = base_module {
                t_base.push(create(&ctx, layout, bm, &entry).unwrap_or(f64::NAN));
            }
            if !first_now {
                t_now.push(create(&ctx, layout, now_module, &entry).unwrap_or(f64::NAN));
            }
        }
        if let Some(e) = refused {
            println!("{:<44} lavapipe refuses the pipeline ({e:?}) with this bench's layout", name.replace("__", "/"));
        }
        let now = median(&t_now);
        let (wb, mb, ratio) = match &base {
            _ if refused.is_some() => ("-".into(), "-".into(), "-".into()),
            Some(w) => {
                let mb = median(&t_base);
                ratios.push(now / mb);
                all_base += mb;
                (w.len().to_string(), format!("{mb:.3}"), format!("{:.3}", now / mb))
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        if refused.is_none() {
            all_now += now;
            println!("{:<44} {:>7} {:>7} {:>9} {:>9.3} {:>7}", name.replace("__", "/"), wb, words.len(), mb, now, ratio);
        }
        let d = ctx.device();
        ctx.destroy_shader_module(now_module);
        if let Some(bm) = base_module {
            ctx.destroy_shader_module(bm);
        }
        unsafe {
            d.destroy_pipeline_layout(layout, None);
            for s in set_layouts {
                d.destroy_descriptor_set_layout(s, None);
            }
        }
    }
    if !ratios.is_empty() {
        let worst = ratios.iter().cloned().fold(0.0, f64::max);
        println!();
        println!("now / base: median {:.3}, worst {worst:.3}, sum of medians {:.3} / {:.3} ms = {:.3}", median(&ratios), all_now, all_base, all_now / all_base);
    }
}
