//! Self-tests of the harness: tools, samples, compute plumbing without the layer.

use polyfill_e2e::spvasm::Module;
use polyfill_e2e::{bytes, samples, tools, BufferKind, BufferSpec, ComputeJob, Context, ContextOptions};

#[test]
fn spirv_tools_are_recent() {
    let t = tools::spirv_tools().unwrap_or_else(|e| panic!("{e}"));
    assert!(t.version >= tools::MIN_VERSION, "{t:?}");
}

#[test]
fn samples_assemble_and_validate() {
    let mut all = samples::raw_access_chain_samples(None);
    all.push(samples::plain());
    for s in all {
        let words = s.assemble().unwrap_or_else(|e| panic!("{}: {e}", s.name));
        tools::spirv_val(&words, s.target_env).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert_eq!(tools::has_capability(&words, tools::CAP_RAW_ACCESS_CHAINS_NV), s.uses_raw_access_chains, "{}", s.name);
        let dis = tools::spirv_dis(&words);
        assert!(dis.contains("OpEntryPoint"), "{dis}");
    }
}

#[test]
fn spirv_as_reports_errors() {
    let e = tools::spirv_as("OpCapability Bogus\n", "vulkan1.1").unwrap_err();
    assert!(e.contains("spirv-as failed"), "{e}");
}

#[test]
fn plain_compute_native() {
    let ctx = Context::new(&ContextOptions::native()).unwrap_or_else(|e| panic!("{e}"));
    assert!(ctx.device_name().contains("llvmpipe"), "{}", ctx.device_name());
    samples::plain().run_checked(&ctx).unwrap();
}

/// Descriptor offsets, ranges, several sets, descriptor arrays, UBOs, push constants and
/// device addresses all reach the shader as the specs say.
#[test]
fn compute_plumbing_native() {
    let src = Module::compute(1)
        .spirv(5)
        .physical_addressing()
        .cap("Int64")
        .block("blk", "%u32", 4)
        .buffer("in", "blk", 0, 0)
        .decorate("OpDecorate %arr DescriptorSet 2\nOpDecorate %arr Binding 3")
        .globals("%arrt = OpTypeArray %blk %c2\n%parr = OpTypePointer StorageBuffer %arrt\n%arr = OpVariable %parr StorageBuffer")
        .decorate("OpDecorate %ua ArrayStride 16\nOpMemberDecorate %ublk 0 Offset 0\nOpDecorate %ublk Block\nOpDecorate %ubo DescriptorSet 1\nOpDecorate %ubo Binding 0")
        .globals("%ua = OpTypeArray %v4u %c2\n%ublk = OpTypeStruct %ua\n%pubo = OpTypePointer Uniform %ublk\n%ubo = OpVariable %pubo Uniform")
        .buffer("out", "blk", 0, 1)
        .block("pblk", "%u32", 4)
        .globals("%ppsb = OpTypePointer PhysicalStorageBuffer %pblk\n%ppcp = OpTypePointer PushConstant %ppsb")
        .push_constants("pc", &[("%ppsb", 0), ("%u32", 8)])
        .main(
            "%p0 = OpAccessChain %ps_u32 %in %c0 %c0
%v0 = OpLoad %u32 %p0
%p1 = OpAccessChain %ps_u32 %arr %c1 %c0 %c0
%v1 = OpLoad %u32 %p1
%p2 = OpAccessChain %pun_u32 %ubo %c0 %c1 %c2
%v2 = OpLoad %u32 %p2
%pp = OpAccessChain %ppcp %pc %c0
%bda = OpLoad %ppsb %pp
%p3 = OpAccessChain %pg_u32 %bda %c0 %c1
%v3 = OpLoad %u32 %p3 Aligned 4
%pk = OpAccessChain %pp_u32 %pc %c1
%v4v = OpLoad %u32 %pk
%o0 = OpAccessChain %ps_u32 %out %c0 %c0
OpStore %o0 %v0
%o1 = OpAccessChain %ps_u32 %out %c0 %c1
OpStore %o1 %v1
%o2 = OpAccessChain %ps_u32 %out %c0 %c2
OpStore %o2 %v2
%o3 = OpAccessChain %ps_u32 %out %c0 %c3
OpStore %o3 %v3
%o4 = OpAccessChain %ps_u32 %out %c0 %c4
OpStore %o4 %v4v
%p5 = OpAccessChain %pg_u32 %bda %c0 %c0
OpStore %p5 %v0 Aligned 4",
        )
        .text();
    let words = tools::spirv_as(&src, "vulkan1.2").unwrap();
    tools::spirv_val(&words, "vulkan1.2").unwrap();
    let ctx = Context::new(&ContextOptions::native().validation(true)).unwrap_or_else(|e| panic!("{e}"));
    let mut input = vec![0u8; 64];
    input[32..36].copy_from_slice(&111u32.to_le_bytes());
    let mut ubo = vec![0u8; 32];
    ubo[16 + 8..16 + 12].copy_from_slice(&333u32.to_le_bytes());
    let mut bda = vec![0u8; 48];
    bda[16 + 4..16 + 8].copy_from_slice(&444u32.to_le_bytes());
    let job = ComputeJob {
        buffers: vec![
            BufferSpec::storage(0, input).window(32, Some(16)),
            BufferSpec::storage(3, bytes::from_u32s(&[9, 9])).set(2).element(0),
            BufferSpec::storage(3, bytes::from_u32s(&[222, 9])).set(2).element(1),
            BufferSpec::uniform(0, ubo).set(1),
            BufferSpec::device_address(0, bda).window(16, None),
            BufferSpec::storage(1, vec![0u8; 20]),
        ],
        push_constants: [vec![0u8; 8], 555u32.to_le_bytes().to_vec()].concat(),
        ..Default::default()
    };
    assert!(matches!(job.buffers[4].kind, BufferKind::DeviceAddress { .. }));
    let out = ctx.run_compute(&words, &job).unwrap();
    assert_eq!(bytes::to_u32s(&out[5]), vec![111, 222, 333, 444, 555]);
    assert_eq!(bytes::to_u32s(&out[4][16..20]), vec![111], "store through the device address");
    assert_eq!(ctx.validation_errors(), Vec::<String>::new());
}
