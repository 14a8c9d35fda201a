//! Blocks the raw-chain lowering splits for its bounds checks, run on lavapipe through the layer
//! and checked against CPU references (issue 14): (a) a single-block loop that is its own
//! continue target, (b) one OpSampledImage sampled before and after a bounds-checked store.
//! The validation layer sits below ours, so the modules the driver gets must pass spirv-val.

use polyfill_e2e::ash::vk;
use polyfill_e2e::bindless::cases::dispatch;
use polyfill_e2e::bindless::gpu::{Buf, Scope, Write};
use polyfill_e2e::spvasm::{Module, GID_X};
use polyfill_e2e::{bytes, spirv_as, BufferSpec, ComputeJob, Context, ContextOptions};

const SSBO: vk::DescriptorType = vk::DescriptorType::STORAGE_BUFFER;
const SENTINEL: u32 = 0xDEAD_BEEF;

/// The layer with VK_LAYER_KHRONOS_validation below it (one per test: messages are per context).
fn validated_context() -> Context {
    Context::new(&ContextOptions::raw_access_chains().validation(true)).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_no_validation_errors(ctx: &Context) {
    assert_eq!(ctx.validation_errors(), Vec::<String>::new(), "the module the layer handed to the driver is invalid");
}

/// 4 invocations × 8 iterations of `OpLoopMerge %exit %loop`: element e = 8i + k of `out`
/// (window 100 bytes: 25 elements, per-element checks) gets `in[e] * 3 + 1`, where `in`
/// (window 72 bytes: 18 elements, per-element checks) reads 0 past its range; `sums[i]` gets
/// the sum of what invocation i read (an OpPhi in the loop's merge block).
fn self_loop() -> String {
    Module::compute(4)
        .raw_access_chains()
        .gid()
        .word_buffers(&["in", "out", "sums"])
        .main(&format!(
            "{GID_X}
%base = OpIMul %u32 %i %c8
OpBranch %loop
%loop = OpLabel
%k = OpPhi %u32 %c0 %entry %k2 %loop
%acc = OpPhi %u32 %c0 %entry %acc2 %loop
%e = OpIAdd %u32 %base %k
%p = OpRawAccessChainNV %ps_u32 %in %c4 %e %c0 RobustnessPerElementNV
%v = OpLoad %u32 %p Aligned 4
%v3x = OpIMul %u32 %v %c3
%w = OpIAdd %u32 %v3x %c1
%q = OpRawAccessChainNV %ps_u32 %out %c4 %e %c0 RobustnessPerElementNV
OpStore %q %w Aligned 4
%acc2 = OpIAdd %u32 %acc %v
%k2 = OpIAdd %u32 %k %c1
%more = OpULessThan %bool %k2 %c8
OpLoopMerge %exit %loop None
OpBranchConditional %more %loop %exit
%exit = OpLabel
%sum = OpPhi %u32 %acc2 %loop
%s = OpRawAccessChainNV %ps_u32 %sums %c4 %i %c0
OpStore %s %sum Aligned 4"
        ))
        .text()
}

#[test]
fn self_continue_loop_with_bounds_checked_accesses() {
    let ctx = validated_context();
    let input: Vec<u32> = (0..32).map(|e| 1000 + 7 * e).collect();
    let job = ComputeJob {
        buffers: vec![
            BufferSpec::storage(0, bytes::from_u32s(&input)).window(0, Some(72)),
            BufferSpec::storage(1, bytes::from_u32s(&[SENTINEL; 32])).window(0, Some(100)),
            BufferSpec::storage(2, bytes::from_u32s(&[SENTINEL; 4])),
        ],
        ..Default::default()
    };
    let words = spirv_as(&self_loop(), "vulkan1.1").unwrap();
    let got = ctx.run_compute(&words, &job).unwrap_or_else(|e| panic!("self-continue loop: {e}"));
    let read = |e: usize| if e < 18 { input[e] } else { 0 };
    let out: Vec<u32> = (0..32).map(|e| if e < 25 { read(e).wrapping_mul(3).wrapping_add(1) } else { SENTINEL }).collect();
    let sums: Vec<u32> = (0..4).map(|i| (0..8).map(|k| read(8 * i + k)).fold(0, u32::wrapping_add)).collect();
    assert_eq!(bytes::to_u32s(&got[0]), input, "in is read-only");
    assert_eq!(bytes::to_u32s(&got[1]), out, "out (window of 25 elements)");
    assert_eq!(bytes::to_u32s(&got[2]), sums, "sums");
    assert_no_validation_errors(&ctx);
}

/// `%texel{n}` = texel `x` of the 4×1 texture through `%si` (sampled at its centre), as u32.
fn texel(n: u32, x: &str) -> String {
    format!(
        "%x{n} = OpConvertUToF %f32 {x}
%xc{n} = OpFAdd %f32 %x{n} %fhalf
%uc{n} = OpFMul %f32 %xc{n} %fquarter
%uv{n} = OpCompositeConstruct %v2f %uc{n} %fhalf
%s{n} = OpImageSampleExplicitLod %v4f %si %uv{n} Lod %f0
%s{n}x = OpCompositeExtract %f32 %s{n} 0
%texel{n} = OpConvertFToU %u32 %s{n}x"
    )
}

/// 4 invocations sample a 4×1 R32_SFLOAT texture (texel t holds 10(t+1)) through one
/// OpSampledImage of a separate image and sampler: texel i into `out[i]` (window 12 bytes: 3
/// elements, per-element checks), then, after that store split the block, texel 3-i plus
/// `in[i]` (window 10 bytes, per-component checks: elements 0 and 1 in range) into `res[i]`.
fn sample_around_store() -> String {
    Module::compute(4)
        .raw_access_chains()
        .gid()
        .word_buffers(&["in", "out", "res"])
        .texture_and_sampler(3, 4)
        .globals("%fhalf = OpConstant %f32 0.5\n%fquarter = OpConstant %f32 0.25")
        .main(&format!(
            "{GID_X}
%im = OpLoad %img %tex
%sm = OpLoad %smp %sampler
%si = OpSampledImage %simg %im %sm
{}
%q = OpRawAccessChainNV %ps_u32 %out %c4 %i %c0 RobustnessPerElementNV
OpStore %q %texel1 Aligned 4
%off = OpIMul %u32 %i %c4
%p = OpRawAccessChainNV %ps_u32 %in %c0 %c0 %off RobustnessPerComponentNV
%v = OpLoad %u32 %p Aligned 4
%j = OpISub %u32 %c3 %i
{}
%r = OpIAdd %u32 %texel2 %v
%t = OpRawAccessChainNV %ps_u32 %res %c4 %i %c0
OpStore %t %r Aligned 4",
            texel(1, "%i"),
            texel(2, "%j")
        ))
        .text()
}

#[test]
fn sampled_image_used_before_and_after_bounds_checked_store() {
    let ctx = validated_context();
    let mut scope = Scope::new(&ctx).unwrap();
    let texels: Vec<f32> = (1..=4).map(|t| 10.0 * t as f32).collect();
    let tex = scope
        .image(vk::Format::R32_SFLOAT, 4, 1, vk::ImageUsageFlags::SAMPLED, Some(&bytes::from_f32s(&texels)), vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)
        .unwrap();
    let nearest = scope.sampler(vk::Filter::NEAREST, vk::SamplerAddressMode::CLAMP_TO_EDGE).unwrap();
    let input = [1000u32, 2000, 3000, 4000];
    let (inb, out, res) = (scope.buffer_with(&bytes::from_u32s(&input)).unwrap(), scope.buffer_with(&bytes::from_u32s(&[SENTINEL; 4])).unwrap(), scope.buffer_with(&bytes::from_u32s(&[SENTINEL; 4])).unwrap());
    let window = |binding, buffer: &Buf, range| Write::Buffer { binding, ty: SSBO, buffer: buffer.buffer, offset: 0, range };
    let image = |binding, ty, sampler| Write::Image { binding, element: 0, ty, view: tex.view, layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL, sampler };
    let writes = [
        window(0, &inb, 10),
        window(1, &out, 12),
        res.whole(2, SSBO),
        image(3, vk::DescriptorType::SAMPLED_IMAGE, vk::Sampler::null()),
        image(4, vk::DescriptorType::SAMPLER, nearest),
    ];
    let words = spirv_as(&sample_around_store(), "vulkan1.1").unwrap();
    dispatch(&mut scope, &words, &writes, &[], [1, 1, 1]).unwrap_or_else(|e| panic!("sampled image around a store: {e}"));
    assert_eq!(bytes::to_u32s(&out.read()), [10, 20, 30, SENTINEL], "out: texel i, window of 3 elements");
    assert_eq!(bytes::to_u32s(&res.read()), [40 + 1000, 30 + 2000, 20, 10], "res: texel 3-i + in[i] (0 past 10 bytes)");
    drop(scope);
    assert_no_validation_errors(&ctx);
}
