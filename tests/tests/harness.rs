//! Self-tests of the harness: tools, samples, compute plumbing without the layer.

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
    let s = samples::plain();
    let out = ctx.run_compute(&s.assemble().unwrap(), &s.job).unwrap();
    s.check(&out).unwrap();
}

/// Descriptor offsets, ranges, several sets, descriptor arrays, UBOs, push constants and
/// device addresses all reach the shader as the specs say.
#[test]
fn compute_plumbing_native() {
    let src = r#"
OpCapability Shader
OpCapability PhysicalStorageBufferAddresses
OpCapability Int64
OpMemoryModel PhysicalStorageBuffer64 GLSL450
OpEntryPoint GLCompute %main "main" %in %arr %ubo %out %pc
OpExecutionMode %main LocalSize 1 1 1
OpDecorate %rta ArrayStride 4
OpMemberDecorate %blk 0 Offset 0
OpDecorate %blk Block
OpDecorate %ua ArrayStride 16
OpMemberDecorate %ublk 0 Offset 0
OpDecorate %ublk Block
OpMemberDecorate %pcs 0 Offset 0
OpMemberDecorate %pcs 1 Offset 8
OpDecorate %pcs Block
OpDecorate %in DescriptorSet 0
OpDecorate %in Binding 0
OpDecorate %arr DescriptorSet 2
OpDecorate %arr Binding 3
OpDecorate %ubo DescriptorSet 1
OpDecorate %ubo Binding 0
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 1
OpDecorate %rtp ArrayStride 4
OpMemberDecorate %pblk 0 Offset 0
OpDecorate %pblk Block
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%u64 = OpTypeInt 64 0
%v4 = OpTypeVector %u32 4
%c0 = OpConstant %u32 0
%c1 = OpConstant %u32 1
%c2 = OpConstant %u32 2
%c3 = OpConstant %u32 3
%c4 = OpConstant %u32 4
%rta = OpTypeRuntimeArray %u32
%blk = OpTypeStruct %rta
%pblkp = OpTypePointer StorageBuffer %blk
%in = OpVariable %pblkp StorageBuffer
%out = OpVariable %pblkp StorageBuffer
%arrt = OpTypeArray %blk %c2
%parr = OpTypePointer StorageBuffer %arrt
%arr = OpVariable %parr StorageBuffer
%ua = OpTypeArray %v4 %c2
%ublk = OpTypeStruct %ua
%pubo = OpTypePointer Uniform %ublk
%ubo = OpVariable %pubo Uniform
%rtp = OpTypeRuntimeArray %u32
%pblk = OpTypeStruct %rtp
%ppsb = OpTypePointer PhysicalStorageBuffer %pblk
%pcs = OpTypeStruct %ppsb %u32
%ppc = OpTypePointer PushConstant %pcs
%pc = OpVariable %ppc PushConstant
%pu = OpTypePointer StorageBuffer %u32
%puu = OpTypePointer Uniform %u32
%ppcp = OpTypePointer PushConstant %ppsb
%ppcu = OpTypePointer PushConstant %u32
%ppsu = OpTypePointer PhysicalStorageBuffer %u32
%main = OpFunction %void None %fn
%l = OpLabel
%p0 = OpAccessChain %pu %in %c0 %c0
%v0 = OpLoad %u32 %p0
%p1 = OpAccessChain %pu %arr %c1 %c0 %c0
%v1 = OpLoad %u32 %p1
%p2 = OpAccessChain %puu %ubo %c0 %c1 %c2
%v2 = OpLoad %u32 %p2
%pp = OpAccessChain %ppcp %pc %c0
%bda = OpLoad %ppsb %pp
%p3 = OpAccessChain %ppsu %bda %c0 %c1
%v3 = OpLoad %u32 %p3 Aligned 4
%pk = OpAccessChain %ppcu %pc %c1
%v4v = OpLoad %u32 %pk
%o0 = OpAccessChain %pu %out %c0 %c0
OpStore %o0 %v0
%o1 = OpAccessChain %pu %out %c0 %c1
OpStore %o1 %v1
%o2 = OpAccessChain %pu %out %c0 %c2
OpStore %o2 %v2
%o3 = OpAccessChain %pu %out %c0 %c3
OpStore %o3 %v3
%o4 = OpAccessChain %pu %out %c0 %c4
OpStore %o4 %v4v
%p5 = OpAccessChain %ppsu %bda %c0 %c0
OpStore %p5 %v0 Aligned 4
OpReturn
OpFunctionEnd
"#;
    let words = tools::spirv_as(src, "vulkan1.2").unwrap();
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
