//! Inputs found by the cargo-fuzz target (fuzz/fuzz_targets/rewrite.rs), kept as regression
//! cases: `rewrite` must return (Ok or Err) without panicking under both option sets, and an
//! `Ok` output must satisfy the target's structural checks.
mod common;
use shader_rewrite::module::{Module, MAX_ID_BOUND, MAGIC};
use shader_rewrite::{rewrite, Options, RewriteError};

fn words(hex: &[&str]) -> Vec<u32> {
    let hex: String = hex.concat();
    let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The fuzzers' option sets without the bindless one (every module here is checked under them).
fn options() -> [Options; 2] {
    let [all, core, ..] = common::fuzz_options::option_sets();
    [all, core]
}

/// The fuzzers' bindless option set.
fn bindless() -> Options {
    let [_, _, bindless, _, _] = common::fuzz_options::option_sets();
    bindless
}

/// The fuzz target's property, as a test.
fn check(words: &[u32]) -> Vec<Result<(), RewriteError>> {
    options()
        .iter()
        .map(|o| {
            let out = rewrite(words, o)?.words;
            assert!(out.len() >= 5 && out[0] == MAGIC, "output lacks the SPIR-V header");
            if out != words {
                Module::parse(&out).unwrap_or_else(|e| panic!("rewritten module does not re-parse: {e}"));
            }
            Ok(())
        })
        .collect()
}

/// fuzz/artifacts/rewrite/crash-4ef1d7158f7ea2774a14ce994e4b7414fd91b0d3, minimized with
/// `cargo fuzz tmin` (628 bytes): a mutated bab-double1 seed whose header declares the id bound
/// 4194303 (0x3fffff, SPIR-V's universal limit). The lowering allocated ids past it and returned
/// Ok with bound 4194354, which spirv-val (and `Module::parse`) reject. Now an error.
#[rustfmt::skip]
const ID_BOUND_AT_LIMIT: &[&str] = &[
    "030223070003010000000700ffff3f0000000000110002007011000011000200261500000a0007005350565f4b48525f",
    "666c6f61745f636f6e74726f6c7300000a0008005350565f4e565f7261775f6163636573735f636861696e7300000000",
    "0e00030002000000010000000f00060005000000010000006d61696e000000000000000005000400030000005353424f",
    "000000004700040004000800060000000400000047000b00030000000200000047000400050000002200000000000000",
    "4700040005000000000000000000000047000400170000000b0000001c00000013000200060000002100030007000000",
    "06000000150004000800000020000000000000001d00030004000000080000001e000300030000000400000020000400",
    "090000000c000000030000003b00040009000000050000000c000000170004000a000000080000000300000020000400",
    "0b000000010000000a0000003b0004000b00000002000000010000002b000400080000000d000000000006002b000400",
    "080000000e00000003000000160003000f0000004000000020000400100000000c0000000f0000002b0005000f000000",
    "1100000000000000000010403600050006000000010000000000000007000000f800020012000000f900020013000000",
    "f800020013000000410005000c00000014000000020000000d0000003d0004000800000015000000010000003d000600",
    "0f00000018000000170000000200000008000000810005000f0000001900000018000000110000001615080010000000",
    "1a000000050000000d0000000d00000016000000010000003e0005001a000000190000000200000008000000fd000100",
    "38000100",
];

#[test]
fn id_bound_at_the_limit_is_an_error_not_an_invalid_module() {
    let input = words(ID_BOUND_AT_LIMIT);
    assert_eq!(input[3], MAX_ID_BOUND);
    let results = check(&input);
    assert!(results.iter().all(|r| r.is_err()), "{results:?}");
}

/// The same bug from a valid module: a corpus shader with its bound raised to the limit passes
/// spirv-val, and its rewrite must not produce a module over the limit.
#[test]
fn valid_module_at_the_id_bound_limit() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/corpus/dxil-spirv-raw-access/bab-double1.raw-access-chains.noglsl.ssbo.comp.spvasm");
    let mut input = common::assemble(&std::fs::read_to_string(path).unwrap(), "vulkan1.1");
    input[3] = MAX_ID_BOUND;
    common::validate(&input, "vulkan1.1").expect("input at the limit should validate");
    for o in options() {
        match rewrite(&input, &o) {
            Ok(out) => common::validate(&out.words, "vulkan1.1").expect("output over the id bound limit"),
            Err(e) => assert!(matches!(e, RewriteError::Unsupported { .. }), "{e}"),
        }
    }
    // One past the limit is malformed input (spirv-val: "id bound is larger than the max").
    input[3] = MAX_ID_BOUND + 1;
    assert!(common::validate(&input, "vulkan1.1").is_err());
    assert!(options().iter().all(|o| matches!(rewrite(&input, o), Err(RewriteError::Malformed { .. }))));
}

/// fuzz/artifacts/rewrite/crash-c75978c2229e38e35076c0cc8b4eb2a8c49aa225 (1528 bytes, a mutated
/// 16-bit storage seed), minimized with `cargo fuzz tmin` (180 bytes): a StorageBuffer16BitAccess
/// block holding a vector of 4 194 304 004 halves. Its byte size overflowed u32 ("attempt to
/// multiply with overflow" with overflow checks; a wrapped, wrong view size without). Now an error.
#[rustfmt::skip]
const HUGE_VECTOR_BLOCK: &[&str] = &[
    "030223070003010000000000110002000100000011000200511100000f00060005000000010000006d61696e00000000",
    "02002000160003000e0000001000000017000400110000000e000000040000fa16000400120000000b00000003000000",
    "1e000700040000000e0000000f00001600000000110000000300000020000400150000000c000000040000003b000400",
    "15000000080000000c00000036000500090000000100000000000000fd00010038000100",
];

#[test]
fn block_larger_than_4_gib_is_an_error() {
    // The vector itself is now malformed (Module::parse), before any size is computed.
    let results = check(&words(HUGE_VECTOR_BLOCK));
    assert!(results[0].is_ok(), "nothing to lower with every feature: passed through");
    assert!(results[1..].iter().all(|r| matches!(r, Err(RewriteError::Malformed { .. }))), "{results:?}");
    // The size overflow itself, from a well-formed type: 2³¹ halves at stride 2 in a 16-bit
    // push-constant block span 4 GiB.
    let text = spvasm::Module::compute(1)
        .cap("StoragePushConstant16")
        .ext("SPV_KHR_16bit_storage")
        .decorate("OpDecorate %arr ArrayStride 2\nOpMemberDecorate %PC 0 Offset 0\nOpDecorate %PC Block")
        .globals("%big = OpConstant %u32 2147483648\n%arr = OpTypeArray %f16 %big\n%PC = OpTypeStruct %arr\n%ppc = OpTypePointer PushConstant %PC\n%pc = OpVariable %ppc PushConstant")
        .main("")
        .text();
    let results = check(&common::assemble(&text, "vulkan1.1"));
    assert!(results[1..].iter().all(|r| matches!(r, Err(e @ RewriteError::Unsupported { .. }) if e.to_string().contains("4 GiB"))), "{results:?}");
}

/// Found by the bounded fuzzer (tests/fuzz_bounded.rs, mutation 208 496 of 10⁶, once release
/// builds of shader-rewrite kept overflow checks): a mutated bindless seed whose `OpTypeInt`
/// width is 4 294 967 295. Handle conversion multiplied width × components ("attempt to
/// multiply with overflow"). Only widths 8/16/32/64 are scalars now (`Builder::scalar_vec`), and
/// `Module::parse` rejects vectors of other than 2/3/4/8/16 components.
#[rustfmt::skip]
const HUGE_INT_WIDTH: &[&str] = &[
    "0302230700030100000007002c000000000000001100020001000000110002000b000000110002003200000011000200",
    "38000000110002000e1500000a0007005350565f4e565f62696e646c6573735f74657874757265000e00030000000000",
    "0100000015150200400000000f00060005000000010000006d61696e00000000020000000f0006000500000003000000",
    "000001007200000002000000100006000100000011000000010000000100000001000000100006000300000011000000",
    "010000000100000001000000470003000400000002000000480005000400000000000000230000000000000048000500",
    "040000000100000023000000080000004800050004000000020000002300000010000000480005000400000003000000",
    "230000001800000048000500040000000400000023000000200000004700040002000000220000000000000047000400",
    "02000000210000000000000013000200050000002100030006000000050000001500040007000000ffffffff00000000",
    "1500040008000000200000000100000015000400090000004000000000000000160003000a0000002000000017000400",
    "0b0000000700000002000000170004000c0000000800000002000000170004000d0000000a0000000400000019000900",
    "0e0000000a000000010000000000000000000000000000000200000004000000190009000f0000000a00000001000000",
    "00000000000000000000000001000000000000001b000300100000000f0000001e000700040000000900000009000000",
    "0b0000000c0000000b00000020000400110000000c0000000400000020000400120000000c0000000900000020000400",
    "130000000c0000000b00000020000400140000000c0000000c0000002b0004000800000015000000000000002b000400",
    "0800000016000000010000002b0004000800000017000000020000002b0004000800000018000000030000002b000400",
    "0800000019000000040000002b000500090000001a00000000000000000000002c0005000c0000001b00000016000000",
    "160000003b00040011000000020000000c0000003600050005000000010000000000000006000000f80002001c000000",
    "41000500120000001d00000002000000150000003d000400090000001e0000001d0000000f1504000e0000001f000000",
    "1e000000620005000d000000200000001f0000001b000000630004001f0000001b00000020000000680004000c000000",
    "210000001f00000041000500140000002200000002000000180000003e00030022000000210000001115040009000000",
    "230000001f00000041000500120000002400000002000000160000003e00030024000000230000004100050013000000",
    "2500000002000000170000003d0004000b00000026000000250000001315040010000000270000002600000014150400",
    "0b000000280000002700000041000500130000002900000002000000190000003e0003002900000028000000fd000100",
    "380001003600050005000000030000000000000006000000f80002002a00000041000500120000002b00000002000000",
    "160000003e0003002b0000001a000000fd00010038000100",
];

#[test]
fn absurd_int_width_is_an_error() {
    let input = words(HUGE_INT_WIDTH);
    let r = rewrite(&input, &bindless());
    assert!(matches!(r, Err(RewriteError::Unsupported { .. })), "{:?}", r.map(|o| o.stats));
    check(&input);
}

#[test]
fn vector_of_a_billion_components_is_malformed() {
    // OpTypeVector %v4float %float 4 → 2³⁰ components (what ran the 16-bit legalizer out of
    // memory under libFuzzer: one conversion per component).
    let mut input = words(HUGE_INT_WIDTH);
    let at = (5..input.len()).find(|&i| input[i] == (4 << 16) | 23 && input[i + 3] == 4).expect("a vec4 type");
    input[at + 3] = 1 << 30;
    assert!(matches!(rewrite(&input, &bindless()), Err(RewriteError::Malformed { .. })));
}

/// fuzz/artifacts/rewrite/crash-a9b60b5b456cf9f56cc0896708154fc1c3d79271 (a mutated 16-bit
/// storage seed), reduced by hand: `OpCopyMemory` into an emulated 16-bit block from a value that
/// is not a pointer. The lowering loaded "through" it with result type 0, an OpLoad without its
/// pointer operand that no longer parsed. Now an error.
#[test]
fn copy_memory_from_a_non_pointer_is_an_error() {
    let text = spvasm::Module::compute(1)
        .cap("StorageBuffer16BitAccess")
        .ext("SPV_KHR_16bit_storage")
        .decorate("OpMemberDecorate %S 0 Offset 0\nOpDecorate %S Block\nOpDecorate %buf DescriptorSet 0\nOpDecorate %buf Binding 0")
        .globals("%S = OpTypeStruct %f16\n%pS = OpTypePointer StorageBuffer %S\n%buf = OpVariable %pS StorageBuffer")
        .main("%p = OpAccessChain %ps_f16 %buf %c0\nOpCopyMemory %p %f1")
        .text();
    let results = check(&common::assemble(&text, "vulkan1.1"));
    assert!(matches!(&results[1], Err(e @ RewriteError::Malformed { .. }) if e.to_string().contains("not a pointer")), "{results:?}");
}

/// A SPIR-V 1.6 compute module with SPV_NV_bindless_texture (32-bit handles): the image types,
/// its own `decorations` and `globals`, and the push constant `%pc` holding a handle, which
/// [`LOAD_HANDLE`] loads.
fn bindless_module(decorations: &str, globals: &str) -> spvasm::Module {
    spvasm::Module::compute(1).spirv(6).bindless_textures(Some(32)).decorate(decorations).image_types().globals(globals).push_constants("pc", &[("%u32", 0)])
}

/// A body's first lines: `%h` = the handle in the push constants of [`bindless_module`].
const LOAD_HANDLE: &str = "%hp = OpAccessChain %pp_u32 %pc %c0\n%h = OpLoad %u32 %hp";

/// Found by the valid-mutation fuzzer (tests/tests/fuzz_valid_shaders.rs, `select` on the e2e
/// `sampler_handles` shader, bindless option set): with SPV_NV_bindless_texture an OpSelect (or
/// OpPhi) may choose between images or samplers, also ones from ordinary descriptors. The
/// lowering left such a choice as it was and removed the capability: the output failed spirv-val
/// ("Using image/sampler with OpSelect requires capability BindlessTextureNV"). A choice between
/// ordinary descriptors has no handle to carry: now refused by name (and the structural check
/// after the pass refuses any OpSelect/OpPhi of an opaque type left).
#[test]
fn select_of_ordinary_samplers_in_a_bindless_module_is_refused() {
    let text = bindless_module(
        "OpDecorate %sa DescriptorSet 0\nOpDecorate %sa Binding 0\nOpDecorate %sb DescriptorSet 0\nOpDecorate %sb Binding 1",
        "%psmp = OpTypePointer UniformConstant %smp\n%uv = OpConstantComposite %v2f %f0 %f0\n%sa = OpVariable %psmp UniformConstant\n%sb = OpVariable %psmp UniformConstant",
    )
    .main(&format!(
        "{LOAD_HANDLE}
%im = OpConvertUToImageNV %img %h
%a = OpLoad %smp %sa
%b = OpLoad %smp %sb
%odd = OpBitwiseAnd %u32 %h %c0
%c = OpIEqual %bool %odd %c0
%s = OpSelect %smp %c %a %b
%si = OpSampledImage %simg %im %s
%r = OpImageSampleExplicitLod %v4f %si %uv Lod %f0"
    ))
    .text();
    let input = common::assemble(&text, "vulkan1.3");
    common::validate(&input, "vulkan1.3").expect("valid with the extension");
    match rewrite(&input, &bindless()) {
        Err(RewriteError::Unsupported { instruction, reason }) => assert!(instruction.contains("OpSelect") && reason.contains("ordinary descriptors"), "{instruction}: {reason}"),
        other => panic!("expected a refusal naming the OpSelect, got {:?}", other.map(|o| o.stats)),
    }
}

/// Found by the valid-mutation fuzzer (tests/fuzz_valid.rs, `call` on the corpus'
/// addr64-uvec2-samplers, seed 778): a sampler handle passed through a function defined after
/// its caller, then combined with an image from an ordinary descriptor by OpSampledImage. The
/// kinds were a fixed point of OR-ed values: the OpSampledImage, seen while only its image was
/// known (bound), stayed "bound" when its sampler turned out a handle and became "bound and
/// local", refused as mixing both. Kinds are now recomputed from the operands.
#[test]
fn sampler_handle_through_a_later_function_with_a_bound_image() {
    let text = bindless_module(
        "OpDecorate %tex DescriptorSet 0\nOpDecorate %tex Binding 0",
        "%fsmp = OpTypeFunction %smp %smp\n%pimg = OpTypePointer UniformConstant %img\n%uv = OpConstantComposite %v2f %f0 %f0\n%tex = OpVariable %pimg UniformConstant",
    )
    .decorate("OpDecorate %Out Block\nOpMemberDecorate %Out 0 Offset 0\nOpDecorate %out DescriptorSet 0\nOpDecorate %out Binding 1")
    .globals("%Out = OpTypeStruct %v4f\n%pout = OpTypePointer StorageBuffer %Out\n%out = OpVariable %pout StorageBuffer")
    .main(&format!(
        "{LOAD_HANDLE}
%s = OpConvertUToSamplerNV %smp %h
%s2 = OpFunctionCall %smp %same %s
%i = OpLoad %img %tex
%si = OpSampledImage %simg %i %s2
%r = OpImageSampleExplicitLod %v4f %si %uv Lod %f0
%op = OpAccessChain %ps_v4f %out %c0
OpStore %op %r"
    ))
    .function("%same = OpFunction %smp None %fsmp\n%p = OpFunctionParameter %smp\n%b = OpLabel\nOpReturnValue %p\nOpFunctionEnd")
    .text();
    let input = common::assemble(&text, "vulkan1.3");
    common::validate(&input, "vulkan1.3").expect("valid with the extension");
    let out = rewrite(&input, &bindless()).unwrap_or_else(|e| panic!("{e}"));
    common::validate(&out.words, "vulkan1.3").unwrap_or_else(|e| panic!("{e}\n{}", common::disassemble(&out.words)));
    // The sampler is loaded from the table (one descriptor load), the image stays bound.
    assert_eq!(out.stats.bindless_descriptor_loads, 1, "{}", out.stats);
}

/// fuzz/artifacts/rewrite/crash-9342054a827d4661594adf77c2dd827fb3da5748 (1168 bytes, found by
/// libFuzzer on the `rewrite` target with the bindless + buffer-address option set after 2.1·10⁶
/// executions), minimized with `-minimize_crash=1` (292 bytes): a load of a PhysicalStorageBuffer
/// struct whose row-major matrix member has MatrixStride 4 143 972 368. Splitting the load into
/// leaves multiplied component × stride in u32 ("attempt to multiply with overflow", a panic).
/// A layout putting a part past 4 GiB is now refused by name.
#[rustfmt::skip]
const MATRIX_STRIDE_OVERFLOW: &[&str] = &[
    "030223070003010000000000110002000100000011000200e31400000f00050005000000010000002300000008000000",
    "480005000600000000000000230000000000000048000400060000000000000004000000480005000600000000000000",
    "07000000100000f74800050006000000010000002300000030000000150004000a000000200000000100000016000300",
    "0c00000020000000170004000e0000000c00000003000000180004000f0000000e000000020000001e00040006000000",
    "0f0000000a0000002000040016000000e5140000060000003600050007000000010000000000000008000000f8000200",
    "100000003d000400160000001d0000001c0000003e0005001d0000002c000000f80002002c000000fe0002002e000000",
    "38000100",
];

#[test]
fn matrix_stride_past_4_gib_is_an_error_not_a_panic() {
    let input = words(MATRIX_STRIDE_OVERFLOW);
    for (k, o) in common::fuzz_options::option_sets().iter().enumerate() {
        let r = std::panic::catch_unwind(|| rewrite(&input, o)).unwrap_or_else(|_| panic!("option set {k}: rewrite panicked"));
        if k == 3 {
            match r {
                Err(RewriteError::Unsupported { reason, .. }) => assert!(reason.contains("4 GiB"), "{reason}"),
                other => panic!("option set {k}: {:?}", other.map(|o| o.stats)),
            }
        }
    }
}

/// Found by tests/fuzz_bounded.rs (mutation 754 of a physical-storage-buffer seed): a load
/// through a physical pointer with `Aligned 255` (not a power of two: invalid). The access was
/// lowered for alignment 1, but the choice of views trusted the 255 as "at least 4" and left the
/// byte view undeclared: a panic. Every decision now reads the same alignment
/// (`memory::access_alignment`), and a 32-bit component below 4-byte alignment (invalid too:
/// VUID-StandaloneSpirv-PhysicalStorageBuffer64-06314; also mutation 33473, an odd
/// MatrixStride) is a precise error instead of a panic in the byte-address backend.
#[test]
fn physical_access_with_an_alignment_that_is_not_a_power_of_two() {
    let text = "OpCapability Shader\nOpCapability PhysicalStorageBufferAddresses\nOpCapability Int64\n\
        OpExtension \"SPV_KHR_physical_storage_buffer\"\nOpMemoryModel PhysicalStorageBuffer64 GLSL450\n\
        OpEntryPoint GLCompute %main \"main\" %pc\nOpExecutionMode %main LocalSize 1 1 1\n\
        OpDecorate %PC Block\nOpMemberDecorate %PC 0 Offset 0\n\
        %void = OpTypeVoid\n%fn = OpTypeFunction %void\n%int = OpTypeInt 32 1\n%ulong = OpTypeInt 64 0\n\
        %float = OpTypeFloat 32\n%v4 = OpTypeVector %float 4\n%i0 = OpConstant %int 0\n\
        %PC = OpTypeStruct %ulong\n%ppc = OpTypePointer PushConstant %PC\n%pcu = OpTypePointer PushConstant %ulong\n\
        %pv4 = OpTypePointer PhysicalStorageBuffer %v4\n%pc = OpVariable %ppc PushConstant\n\
        %main = OpFunction %void None %fn\n%l = OpLabel\n%a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n\
        %p = OpConvertUToPtr %pv4 %x\n%v = OpLoad %v4 %p Aligned 255\nOpStore %p %v Aligned 16\nOpReturn\nOpFunctionEnd\n";
    // The same load after a valid one of the same place (which a later load may reuse: not
    // lowered, it must not hide the error), and the invalid one first.
    let after_valid = text.replace("%v = OpLoad %v4 %p Aligned 255", "%w = OpLoad %v4 %p Aligned 16\n%v = OpLoad %v4 %p Aligned 255");
    let before_valid = text.replace("%v = OpLoad %v4 %p Aligned 255", "%w = OpLoad %v4 %p Aligned 255\n%v = OpLoad %v4 %p Aligned 16");
    for text in [text, after_valid.as_str(), before_valid.as_str()] {
        let input = common::assemble(text, "vulkan1.2");
        for (k, o) in common::fuzz_options::option_sets().iter().enumerate().filter(|(_, o)| o.bda.is_some()) {
            let out = std::panic::catch_unwind(|| rewrite(&input, o)).unwrap_or_else(|_| panic!("option set {k}: rewrite panicked"));
            match out {
                Err(RewriteError::Unsupported { reason, .. }) => assert!(reason.contains("32-bit component at an alignment of 1"), "option set {k}: {reason}"),
                other => panic!("option set {k}: {:?}\n{text}", other.map(|o| o.stats)),
            }
        }
    }
    // Two neighbouring floats, the second `Aligned 255`, where the driver checks vectors per
    // component (lavapipe's target: neighbouring loads are read as one 8-byte unit, the
    // first's Aligned 8 serving it): the second is left alone and reported, not hidden.
    let neighbours = text
        .replace("OpMemberDecorate %PC 0 Offset 0\n", "OpMemberDecorate %PC 0 Offset 0\nOpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 4\n")
        .replace("%pv4 = OpTypePointer PhysicalStorageBuffer %v4\n", "%S = OpTypeStruct %float %float\n%pS = OpTypePointer PhysicalStorageBuffer %S\n%pf = OpTypePointer PhysicalStorageBuffer %float\n%i1 = OpConstant %int 1\n")
        .replace("%p = OpConvertUToPtr %pv4 %x\n%v = OpLoad %v4 %p Aligned 255\nOpStore %p %v Aligned 16\n", "%p = OpConvertUToPtr %pS %x\n%pa = OpAccessChain %pf %p %i0\n%pb = OpAccessChain %pf %p %i1\n%fa = OpLoad %float %pa Aligned 8\n%fb = OpLoad %float %pb Aligned 255\n%fc = OpFAdd %float %fa %fb\nOpStore %pa %fc Aligned 8\n");
    let input = common::assemble(&neighbours, "vulkan1.2");
    let lavapipe = Options { target: shader_rewrite::Target::lavapipe(), bda: Some(shader_rewrite::BdaTable { set: 6, binding: 3, count: 256 }), ..Options::default() };
    for (k, o) in common::fuzz_options::option_sets().iter().chain([&lavapipe]).enumerate().filter(|(_, o)| o.bda.is_some()) {
        match rewrite(&input, o) {
            Err(RewriteError::Unsupported { reason, .. }) => assert!(reason.contains("32-bit component at an alignment of 1"), "option set {k}: {reason}"),
            other => panic!("option set {k}: {:?}", other.map(|o| o.stats)),
        }
    }
    // A mutated seed with `MatrixStride 275` on a row-major matrix member: the same error.
    let odd_stride = text.replace("OpMemberDecorate %PC 0 Offset 0\n", "OpMemberDecorate %PC 0 Offset 0\nOpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 0 RowMajor\nOpMemberDecorate %S 0 MatrixStride 275\n")
        .replace("%pv4 = OpTypePointer PhysicalStorageBuffer %v4\n", "%v3 = OpTypeVector %float 3\n%m = OpTypeMatrix %v3 2\n%S = OpTypeStruct %m\n%pv4 = OpTypePointer PhysicalStorageBuffer %S\n")
        .replace("%v = OpLoad %v4 %p Aligned 255", "%v = OpLoad %S %p Aligned 16");
    let input = common::assemble(&odd_stride, "vulkan1.2");
    for (k, o) in common::fuzz_options::option_sets().iter().enumerate().filter(|(_, o)| o.bda.is_some()) {
        let out = std::panic::catch_unwind(|| rewrite(&input, o)).unwrap_or_else(|_| panic!("option set {k}: rewrite panicked"));
        match out {
            Err(RewriteError::Unsupported { reason, .. }) => assert!(reason.contains("breaks Vulkan's offset rules"), "option set {k}: {reason}"),
            other => panic!("option set {k}: {:?}", other.map(|o| o.stats)),
        }
    }
}

/// A mutated module (fuzz_bounded, mutation 715 568, option set 4: bindless and buffer-address
/// tables) with `%37 = OpCopyObject %T %37`, a copy of itself: the clean-up pass's substitution of
/// copies looped for ever on it (a hang, not a panic). Now the module is refused with a precise
/// error, in a bounded time.
#[test]
fn copy_of_itself_is_refused_not_a_hang() {
    let input = words(&[
        "0302230700030100000007002d000000000000001100020001000000110002000b00000011000200370000001100020038000000110002000e1500000a000700",
        "5350565f4e565f62696e646c6573735f74657874757265000b00060001000000474c534c2e7374642e343530000000000e000300000000000100000015150200",
        "400000000f0007000500000002000000636f6d707574654d61696e00030000001000060002000000110000000800000008000000010000000500050004000000",
        "506172616d735f300000000006000500040000000000000072775f30000000000600050004000000010000007465785f30000000060005000400000002000000",
        "73616d705f3000000500050003000000706172616d735f3000000000470003000400000002000000480005000400000000000000230000000000000048000500",
        "04000000010000002300000008000000480005000400000002000000230000001000000013000200050000002100030006000000050000001500040007000000",
        "20000000010000001500040008000000200000000000000015000400090000004000000000000000160003000a00000020000000170004000b0000000a000000",
        "02000000170004000c0000000a00000004000000170004000d0000000700000002000000190009000e0000000a00000001000000020000000000000000000000",
        "02000000000000001b0003000f0000000e00000019000900100000000a0000000100000002000000000000000000000001000000000000001b00030011000000",
        "100000001a000200120000001e000500040000000900000009000000090000002000040013000000090000000400000020000400140000000900000009000000",
        "2b0004000700000015000000000000002b0004000700000016000000010000002b0004000700000017000000020000002b0004000a0000001800000000000000",
        "2b0004000a000000190000000000003f2c0005000b0000001a00000019000000190000002c0005000d0000001b00000015000000160000003b00040013000000",
        "03000000090000003600050005000000020000000000000006000000f80002001c00000041000500140000001d00000003000000150000003d00040009000000",
        "1e0000001d000000131504000f0000001f0000001e000000640004000e000000200000001f000000620005000c00000021000000200000001b00000041000500",
        "140000002200000003000000160000003d0004000900000023000000220000001315040011000000240000002300000064000400100000002500000025000000",
        "41000500140000002600000003000000170000003d00040009000000270000002600000010150400120000002800000027000000560005001100000029000000",
        "2500000028000000580007000c0000002a000000290000001a0000000200000018000000810005000c0000002b000000210000002a000000640004000e000000",
        "2c0000001f000000630004002c0000001b0000002b000000fd00010038000100",
    ]);
    for (k, o) in common::fuzz_options::option_sets().into_iter().enumerate() {
        let input = input.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        // A hang must fail the test, not stall the run: the rewrite runs on its own thread.
        std::thread::spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(|| rewrite(&input, &o).map(|_| ())).map_err(|_| "panicked"));
        });
        let out = rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap_or_else(|_| panic!("option set {k}: no answer in 20 s"));
        let out = out.unwrap_or_else(|e| panic!("option set {k}: rewrite {e}"));
        if k == 3 {
            let e = out.expect_err("the self-copy is refused");
            assert!(e.to_string().contains("%37"), "option set {k}: {e}");
        }
    }
}

/// A robust raw chain whose Base is a whole descriptor array (valid SPIR-V; fuzz_bounded,
/// mutation 9 177 250): the per-element check counted the array variable's elements with
/// OpArrayLength, which needs a struct (the output failed spirv-val). Such a Base selects no
/// buffer to count: the chain is refused with a precise error, as on the byte-length path.
#[test]
fn robust_raw_chain_on_a_whole_descriptor_array_is_refused() {
    let text = "OpCapability Shader\nOpCapability RawAccessChainsNV\nOpExtension \"SPV_NV_raw_access_chains\"\n\
        OpMemoryModel Logical GLSL450\nOpEntryPoint GLCompute %main \"main\"\nOpExecutionMode %main LocalSize 1 1 1\n\
        OpDecorate %rta ArrayStride 4\nOpMemberDecorate %B 0 Offset 0\nOpDecorate %B Block\n\
        OpDecorate %bufs DescriptorSet 0\nOpDecorate %bufs Binding 0\n\
        %void = OpTypeVoid\n%fn = OpTypeFunction %void\n%u32 = OpTypeInt 32 0\n%rta = OpTypeRuntimeArray %u32\n\
        %B = OpTypeStruct %rta\n%c0 = OpConstant %u32 0\n%c2 = OpConstant %u32 2\n%c4 = OpConstant %u32 4\n\
        %arr = OpTypeArray %B %c2\n%parr = OpTypePointer StorageBuffer %arr\n%bufs = OpVariable %parr StorageBuffer\n\
        %pu = OpTypePointer StorageBuffer %u32\n\
        %main = OpFunction %void None %fn\n%l = OpLabel\n\
        %p = OpRawAccessChainNV %pu %bufs %c4 %c0 %c0 RobustnessPerElementNV\n%v = OpLoad %u32 %p Aligned 4\n\
        OpStore %p %v Aligned 4\nOpReturn\nOpFunctionEnd\n";
    let input = common::assemble(text, "vulkan1.1");
    common::validate(&input, "vulkan1.1").unwrap_or_else(|e| panic!("the input is valid: {e}"));
    for (k, o) in options().iter().enumerate() {
        match std::panic::catch_unwind(|| rewrite(&input, o)).unwrap_or_else(|_| panic!("option set {k}: rewrite panicked")) {
            Err(RewriteError::Unsupported { reason, .. }) => assert!(reason.contains("whole descriptor array"), "option set {k}: {reason}"),
            other => panic!("option set {k}: {:?}", other.map(|o| common::validate(&o.words, "vulkan1.1"))),
        }
    }
}
