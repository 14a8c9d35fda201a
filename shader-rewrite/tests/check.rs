//! The structural check that runs after every pass (`shader_rewrite::passes::check`): it accepts
//! every valid module of the corpora, and turns each kind of leftover a pass could produce into
//! an error naming the instruction. The leftovers are written directly as (invalid) SPIR-V, as a
//! pass with a bug would leave them.
mod common;
use common::assemble;
use shader_rewrite::module::Module;
use shader_rewrite::passes::check::{after, Pass};
use shader_rewrite::{RewriteError, SmallStorage};

fn module(text: &str) -> Module {
    Module::parse(&assemble(text, "vulkan1.3")).unwrap()
}

/// A compute shader: `types` after the common ones, `body` inside main's only block.
fn compute(caps: &str, types: &str, body: &str) -> String {
    format!(
        "OpCapability Shader
{caps}
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main \"main\"
OpExecutionMode %main LocalSize 1 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%u64 = OpTypeInt 64 0
%c0 = OpConstant %u32 0
%pf_u32 = OpTypePointer Function %u32
{types}
%main = OpFunction %void None %fn
%entry = OpLabel
%var = OpVariable %pf_u32 Function
{body}
OpReturn
OpFunctionEnd"
    )
    .replace("%u64 = OpTypeInt 64 0\n", if caps.contains("Int64") { "%u64 = OpTypeInt 64 0\n" } else { "" })
}

/// `after(pass)` fails naming `instruction` with a reason containing `why`.
fn refused(m: &Module, pass: Pass, instruction: &str, why: &str) {
    match after(m, pass) {
        Err(RewriteError::Unsupported { instruction: i, reason }) => {
            assert!(i.contains(instruction), "instruction `{i}` (wanted `{instruction}`): {reason}");
            assert!(reason.contains(why), "{i}: {reason} (wanted `{why}`)");
        }
        other => panic!("expected a refusal naming {instruction}, got {other:?}"),
    }
}

#[test]
fn every_corpus_module_passes_the_generic_rules() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut n = 0;
    for dir in ["dxil-spirv-raw-access", "small-storage", "bindless", "physical-storage-buffer"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten().filter(|e| e.path().extension().is_some_and(|x| x == "spvasm")) {
            // Slang's texel pointer on an image value: invalid before the bindless lowering.
            if e.path().ends_with("slang-image-atomics.spvasm") {
                assert!(after(&Module::parse(&assemble(&std::fs::read_to_string(e.path()).unwrap(), "vulkan1.3")).unwrap(), Pass::SmallStorage(SmallStorage::default())).is_err());
                continue;
            }
            let m = Module::parse(&assemble(&std::fs::read_to_string(e.path()).unwrap(), "vulkan1.3")).unwrap();
            // No pass-specific rule applies to an input under an empty 8/16-bit lowering.
            after(&m, Pass::SmallStorage(SmallStorage::default())).unwrap_or_else(|err| panic!("{}: {err}", e.path().display()));
            n += 1;
        }
    }
    assert!(n >= 35, "{n} modules");
}

#[test]
fn an_id_a_pass_removed_but_still_referenced_is_refused() {
    let mut m = module(&compute("", "", "%l = OpIAdd %u32 %c0 %c0"));
    // Drop the constant, as a sweep that missed a use would.
    m.globals.retain(|g| g.op != 43);
    refused(&m, Pass::RawAccessChains, "OpIAdd", "not defined");
    // A decoration of an id nothing defines any more.
    let m = module(&compute("", "", "").replace("OpExecutionMode %main LocalSize 1 1 1", "OpExecutionMode %main LocalSize 1 1 1\nOpDecorate %gone NonWritable"));
    refused(&m, Pass::Bindless, "OpDecorate", "not defined");
}

#[test]
fn a_value_retyped_under_a_use_is_refused() {
    // A load through an integer (a handle or address where a pointer was).
    let m = module(&compute("", "", "%h = OpLoad %u32 %var\n%l = OpLoad %u32 %h"));
    refused(&m, Pass::PhysicalStorageBuffer, "OpLoad", "is not a pointer");
    // A store whose value no longer has the pointee type.
    let m = module(&compute("OpCapability Int64", "%c64 = OpConstant %u64 1", "OpStore %var %c64"));
    refused(&m, Pass::Bindless, "OpStore", "points to");
    // An image instruction on a handle integer; a texel pointer on an image value.
    let images = "%f32 = OpTypeFloat 32\n%v4f = OpTypeVector %f32 4\n%i32 = OpTypeInt 32 1\n%v2i = OpTypeVector %i32 2\n%i0 = OpConstant %i32 0\n%xy = OpConstantComposite %v2i %i0 %i0\n%img = OpTypeImage %u32 2D 0 0 0 2 R32ui\n%pi = OpTypePointer Image %u32";
    let m = module(&compute("", images, "%h = OpLoad %u32 %var\n%r = OpImageRead %v4f %h %xy"));
    refused(&m, Pass::Bindless, "OpImageRead", "is not an image");
    let m = module(&compute("", &format!("{images}\n%uc = OpTypePointer UniformConstant %img\n%v = OpVariable %uc UniformConstant"), "%im = OpLoad %img %v\n%tp = OpImageTexelPointer %pi %im %xy %c0"));
    refused(&m, Pass::Bindless, "OpImageTexelPointer", "is not a pointer");
    // An atomic on a retyped pointer.
    let m = module(&compute("OpCapability Int64", "%c1 = OpConstant %u32 1", "%a = OpAtomicIAdd %u64 %var %c1 %c0 %c1"));
    refused(&m, Pass::PhysicalStorageBuffer, "OpAtomicIAdd", "points to");
    // A phi / select / copy whose operands no longer match.
    let m = module(&compute("OpCapability Int64", "%c64 = OpConstant %u64 1", "%s = OpCopyObject %u32 %c64"));
    refused(&m, Pass::Bindless, "OpCopyObject", "has type");
}

#[test]
fn a_call_or_return_out_of_step_with_its_signature_is_refused() {
    let text = compute("OpCapability Int64", "%c = OpConstant %u64 1\n%fu = OpTypeFunction %u32 %u32", "%r = OpFunctionCall %u32 %callee %c")
        + "\n%callee = OpFunction %u32 None %fu\n%p = OpFunctionParameter %u32\n%b = OpLabel\nOpReturnValue %p\nOpFunctionEnd";
    refused(&module(&text), Pass::PhysicalStorageBuffer, "OpFunctionCall", "has type");
    let text = text.replace("%r = OpFunctionCall %u32 %callee %c", "").replace("OpReturnValue %p", "OpReturnValue %c");
    refused(&module(&text), Pass::PhysicalStorageBuffer, "OpReturnValue", "has type");
}

#[test]
fn what_each_pass_removes_must_be_gone() {
    // Raw access chains.
    let m = module(&compute("OpCapability RawAccessChainsNV\nOpExtension \"SPV_NV_raw_access_chains\"", "", ""));
    refused(&m, Pass::RawAccessChains, "OpCapability", "5414");
    // Bindless: the addressing mode, and images in Function memory.
    let m = module(&compute("", "", "").replace("OpMemoryModel Logical GLSL450", "OpMemoryModel Logical GLSL450\nOpSamplerImageAddressingModeNV 64"));
    refused(&m, Pass::Bindless, "OpSamplerImageAddressingModeNV", "still there");
    let m = module(&compute("", "%f32 = OpTypeFloat 32\n%img = OpTypeImage %f32 2D 0 0 0 1 Unknown\n%si = OpTypeSampledImage %img\n%arr = OpTypeArray %si %c1\n%c1 = OpConstant %u32 1\n%pf = OpTypePointer Private %arr", "").replace("%arr = OpTypeArray %si %c1\n%c1 = OpConstant %u32 1", "%c1 = OpConstant %u32 1\n%arr = OpTypeArray %si %c1"));
    refused(&m, Pass::Bindless, "OpTypePointer", "image, sampler or sampled image");
    // Physical storage buffers: the storage class, the addressing model.
    let m = module(&compute("OpCapability Int64", "%pp = OpTypePointer PhysicalStorageBuffer %u32", ""));
    refused(&m, Pass::PhysicalStorageBuffer, "OpTypePointer", "PhysicalStorageBuffer");
    let m = module(&compute("", "", "").replace("OpMemoryModel Logical", "OpMemoryModel PhysicalStorageBuffer64"));
    refused(&m, Pass::PhysicalStorageBuffer, "OpMemoryModel", "PhysicalStorageBuffer64");
    // Int64 used without the capability (a lowering's u64 handles or addresses).
    let m = module(&compute("", "%u64b = OpTypeInt 64 0", ""));
    refused(&m, Pass::Bindless, "OpTypeInt", "64-bit integer");
}

#[test]
fn small_types_left_in_an_emulated_storage_class_are_refused() {
    let lowered = |caps: &[u32]| {
        let mut s = SmallStorage::default();
        for &c in caps {
            s.set(c, true);
        }
        Pass::SmallStorage(s)
    };
    let block = "OpDecorate %B Block\nOpMemberDecorate %B 0 Offset 0\n";
    let text = compute("OpCapability Int16", "%u16 = OpTypeInt 16 0\n%B = OpTypeStruct %u16\n%pu = OpTypePointer Uniform %B", "").replace("%void = OpTypeVoid", &format!("{block}%void = OpTypeVoid"));
    // UniformAndStorageBuffer16BitAccess lowered: 16-bit data left in a uniform block.
    refused(&module(&text), lowered(&[4434]), "OpTypePointer", "16-bit");
    // Only push constants lowered: the uniform block is not this pass's business.
    after(&module(&text), lowered(&[4435])).unwrap();
    // The capability itself left.
    let text = text.replace("OpCapability Int16", "OpCapability Int16\nOpCapability UniformAndStorageBuffer16BitAccess");
    refused(&module(&text), lowered(&[4434]), "OpCapability", "4434");
    // A 16-bit float no capability allows any more.
    let m = module(&compute("", "%f16 = OpTypeFloat 16", ""));
    refused(&m, lowered(&[4433]), "OpTypeFloat", "16-bit float");
}

/// The workload for measuring the check's cost (ignored; run under callgrind): every corpus
/// module rewritten under every fuzz option set, 20 times.
///
///     valgrind --tool=callgrind --callgrind-out-file=cg.out \
///         target/release/deps/check-<hash> --ignored --exact callgrind_workload --test-threads=1
///     callgrind_annotate --inclusive=yes cg.out | grep -E 'shader_rewrite::(rewrite|passes::check::after)'
#[test]
#[ignore]
fn callgrind_workload() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut inputs = vec![];
    for dir in ["dxil-spirv-raw-access", "small-storage", "bindless", "physical-storage-buffer"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir)).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "spvasm")).collect();
        files.sort();
        inputs.extend(files.iter().map(|p| assemble(&std::fs::read_to_string(p).unwrap(), "vulkan1.3")));
    }
    let (mut ok, mut bytes, mut out_bytes, mut bound) = (0, 0, 0, 0);
    for _ in 0..20 {
        for w in &inputs {
            for o in common::fuzz_options::option_sets() {
                if let Ok(out) = shader_rewrite::rewrite(w, &o) {
                    if out.words != *w {
                        ok += 1;
                        bytes += w.len() * 4;
                        out_bytes += out.words.len() * 4;
                        bound += out.words[3] as usize;
                    }
                }
            }
        }
    }
    println!("{ok} rewrites of {bytes} input bytes into {out_bytes} output bytes (id bounds {bound} in all)");
}
