//! Bindless shaders as shader objects (VK_EXT_shader_object): the layer pads the shader's set
//! layouts with the descriptor table and binds the table after vkCmdBindShadersEXT.
use super::gpu::Scope;
use super::{compare_vec4, shaders, texel, textures, vec4s, HandleApi, HandleKind, TEX};
use crate::{Assemble, Context};
use ash::vk;

const SSBO: vk::DescriptorType = vk::DescriptorType::STORAGE_BUFFER;

/// A compute shader object of `words` (entry point `main`) with `set_layouts` and push-constant
/// `ranges`.
pub fn compute_shader(so: &ash::ext::shader_object::Device, words: &[u32], set_layouts: &[vk::DescriptorSetLayout], ranges: &[vk::PushConstantRange]) -> Result<vk::ShaderEXT, vk::Result> {
    // SAFETY: a u32 slice viewed as bytes (4-byte aligned, as pCode must be).
    let code = unsafe { std::slice::from_raw_parts(words.as_ptr() as *const u8, words.len() * 4) };
    let info = vk::ShaderCreateInfoEXT::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .code_type(vk::ShaderCodeTypeEXT::SPIRV)
        .code(code)
        .name(c"main")
        .set_layouts(set_layouts)
        .push_constant_ranges(ranges);
    unsafe { so.create_shaders(&[info], None) }.map(|v| v[0]).map_err(|(_, e)| e)
}

/// `n_tex` textures sampled and fetched with per-invocation u32 handles (the `sample_many`
/// compute shader) from a compute shader object; the application's set 0 bound with its own
/// (padded) pipeline layout. With `rebind`, a second dispatch after the stage was unbound
/// (null shader), rebound, and the application's set bound again (the table must be rebound).
pub fn sample_many(ctx: &Context, n_tex: u32, rebind: bool) -> Result<(), String> {
    let api = HandleApi::new(ctx);
    let so = ash::ext::shader_object::Device::new(ctx.instance(), ctx.device());
    let mut scope = Scope::new(ctx)?;
    let texs = textures(&mut scope, n_tex)?;
    let nearest = scope.sampler(vk::Filter::NEAREST, vk::SamplerAddressMode::CLAMP_TO_EDGE)?;
    let hs: Vec<u32> = texs.iter().map(|t| api.combined(t.view, nearest)).collect::<Result<_, _>>()?;
    let words = shaders::sample_many(HandleKind::U32, false, 3).assemble()?;
    let n = (n_tex * 16) as usize;
    let tex_of = |i: usize| ((i * 7 + i / 16) % n_tex as usize) as u32;
    let per: Vec<u8> = (0..n).flat_map(|i| hs[tex_of(i) as usize].to_le_bytes()).collect();
    let hbuf = scope.buffer_with(&per)?;
    let outs = [scope.buffer(n * 32)?, scope.buffer(n * 32)?];
    outs.iter().for_each(|o| o.fill(0xCD));
    let sl = scope.set_layout(&[(0, SSBO, 1), (1, SSBO, 1)])?;
    let pl = scope.pipeline_layout(&[sl], 0)?;
    let sets = [
        scope.descriptor_set(sl, &[hbuf.whole(0, SSBO), outs[0].whole(1, SSBO)])?,
        scope.descriptor_set(sl, &[hbuf.whole(0, SSBO), outs[1].whole(1, SSBO)])?,
    ];
    let shader = compute_shader(&so, &words, &[sl], &[]).map_err(|e| format!("vkCreateShadersEXT (bindless compute module): {e:?}"))?;
    let r = scope.submit(|d, cmd| unsafe {
        let c = [vk::ShaderStageFlags::COMPUTE];
        so.cmd_bind_shaders(cmd, &c, &[shader]);
        d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, pl, 0, &[sets[0]], &[]);
        d.cmd_dispatch(cmd, (n / 16) as u32, 1, 1);
        if rebind {
            so.cmd_bind_shaders(cmd, &c, &[vk::ShaderEXT::null()]);
            so.cmd_bind_shaders(cmd, &c, &[shader]);
            d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, pl, 0, &[sets[1]], &[]);
            d.cmd_dispatch(cmd, (n / 16) as u32, 1, 1);
        }
    });
    unsafe { so.destroy_shader(shader, None) };
    r?;
    let want: Vec<[f32; 4]> = (0..n)
        .map(|i| texel(tex_of(i), i as u32 % TEX, (i as u32 / TEX) % TEX))
        .flat_map(|t| [t, t])
        .collect();
    for (k, out) in outs.iter().enumerate().take(if rebind { 2 } else { 1 }) {
        let got = vec4s(&out.read());
        compare_vec4(&format!("shader object sample_many({n_tex} textures), dispatch {k}: out[2i] = sample, out[2i+1] = fetch"), &got, &want, 2e-6)?;
    }
    Ok(())
}
