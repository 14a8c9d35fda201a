//! SPV_KHR_physical_storage_buffer lowered onto the layer's buffer table (Options::bda), checked
//! as SPIR-V in/out: each rewritten module passes spirv-val (vulkan1.2), declares no
//! PhysicalStorageBuffer anything, indexes the table NonUniform on its set and binding, and the
//! stats count what was lowered. Both address types: u64 (target with Int64) and uvec2.
mod common;
use common::{assemble, disassemble, validate};
use shader_rewrite::bda::BdaTable;
use shader_rewrite::{rewrite, Options, RewriteError, Stats, Target};

const ENV: &str = "vulkan1.2";
const TABLE: BdaTable = BdaTable { set: 3, binding: 7, count: 4096 };

/// Options with the table, for a target with or without Int64.
fn options(int64: bool) -> Options {
    Options { target: Target { int64, ..Target::all() }, bda: Some(TABLE), ..Options::default() }
}

/// A compute module: capabilities (beyond Shader and PhysicalStorageBufferAddresses), then
/// `body` (decorations, types, functions: everything after OpExecutionMode), with a push
/// constant block `%pc` holding an address in member 0 (`%ulong`) declared by the header.
fn module(caps: &[&str], decorations: &str, body: &str) -> String {
    let caps: String = caps.iter().map(|c| format!("OpCapability {c}\n")).collect();
    format!(
        "OpCapability Shader\nOpCapability PhysicalStorageBufferAddresses\nOpCapability Int64\n{caps}\
         OpExtension \"SPV_KHR_physical_storage_buffer\"\n\
         OpMemoryModel PhysicalStorageBuffer64 GLSL450\n\
         OpEntryPoint GLCompute %main \"main\" %pc\n\
         OpExecutionMode %main LocalSize 1 1 1\n\
         OpDecorate %PC Block\nOpMemberDecorate %PC 0 Offset 0\n{decorations}\n\
         %void = OpTypeVoid\n%fn = OpTypeFunction %void\n\
         %uint = OpTypeInt 32 0\n%int = OpTypeInt 32 1\n%ulong = OpTypeInt 64 0\n%float = OpTypeFloat 32\n%bool = OpTypeBool\n\
         %i0 = OpConstant %int 0\n%i1 = OpConstant %int 1\n%i2 = OpConstant %int 2\n%i3 = OpConstant %int 3\n\
         %u0 = OpConstant %uint 0\n%u1 = OpConstant %uint 1\n%u4 = OpConstant %uint 4\n\
         %PC = OpTypeStruct %ulong\n%ppc = OpTypePointer PushConstant %PC\n%pcu = OpTypePointer PushConstant %ulong\n\
         %pc = OpVariable %ppc PushConstant\n{body}"
    )
}

/// Assembles, rewrites under both address types, validates, checks no trace of physical
/// pointers is left and the table is used as declared; returns the u64 disassembly and stats.
fn lower(text: &str) -> (String, Stats) {
    let words = assemble(text, ENV);
    validate(&words, ENV).unwrap_or_else(|e| panic!("input does not validate: {e}\n{text}"));
    let mut first = None;
    for int64 in [true, false] {
        let out = rewrite(&words, &options(int64)).unwrap_or_else(|e| panic!("rewrite failed (int64 {int64}): {e}"));
        let dis = disassemble(&out.words);
        if let Err(e) = validate(&out.words, ENV) {
            panic!("rewritten module (int64 {int64}) fails spirv-val: {e}\n{dis}");
        }
        for gone in ["PhysicalStorageBuffer", "SPV_KHR_physical_storage_buffer", "OpConvertUToPtr", "OpConvertPtrToU", "RestrictPointer", "AliasedPointer"] {
            assert!(!dis.contains(gone), "{gone} left (int64 {int64}):\n{dis}");
        }
        assert!(dis.contains("OpMemoryModel Logical"), "{dis}");
        if dis.contains("OpArrayLength") {
            assert!(dis.contains("DescriptorSet 3") && dis.contains("Binding 7"), "table not on its set/binding:\n{dis}");
            assert!(dis.contains("NonUniform"), "table indexed without NonUniform:\n{dis}");
        }
        if !int64 {
            assert!(!dis.contains("OpCapability Int64\n") || text.contains("OpCapability Int64"), "{dis}");
        }
        if let Ok(dir) = std::env::var("PSB_TEST_DUMP_DIR") {
            // Debug aid: the outputs' disassembly, one file per test and address type.
            std::fs::write(format!("{dir}/{}-{int64}.spvasm", std::thread::current().name().unwrap_or("test")), &dis).unwrap();
        }
        let again = rewrite(&words, &options(int64)).unwrap();
        assert_eq!(again.words, out.words, "rewriting is not deterministic");
        first.get_or_insert((dis, out.stats));
    }
    first.unwrap()
}

/// The rewrite error for `text` (u64 addresses).
fn error(text: &str) -> RewriteError {
    let words = assemble(text, ENV);
    rewrite(&words, &options(true)).expect_err("rewrite should fail")
}

#[test]
fn without_options_bda_nothing_changes() {
    let text = module(&[], "", "%main = OpFunction %void None %fn\n%l = OpLabel\nOpReturn\nOpFunctionEnd\n");
    let words = assemble(&text, ENV);
    let out = rewrite(&words, &Options::default()).unwrap();
    assert_eq!(out.words, words);
    assert!(out.stats.is_empty());
    assert!(shader_rewrite::scan(&words).unwrap().physical_storage_buffer);
    assert!(!shader_rewrite::needs_rewrite(&words, &Options::default()));
    assert!(shader_rewrite::needs_rewrite(&words, &options(true)));
}

/// Scalar and vector members of a struct through OpConvertUToPtr + OpAccessChain.
#[test]
fn scalar_and_vector_members() {
    let text = module(
        &[],
        "OpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 16\nOpMemberDecorate %S 2 Offset 32",
        "%v4f = OpTypeVector %float 4\n%v2u = OpTypeVector %uint 2\n%S = OpTypeStruct %uint %v4f %v2u\n\
         %pS = OpTypePointer PhysicalStorageBuffer %S\n%pu = OpTypePointer PhysicalStorageBuffer %uint\n\
         %pv4 = OpTypePointer PhysicalStorageBuffer %v4f\n%pv2 = OpTypePointer PhysicalStorageBuffer %v2u\n\
         %main = OpFunction %void None %fn\n%l = OpLabel\n\
         %a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n%p = OpConvertUToPtr %pS %x\n\
         %m0 = OpAccessChain %pu %p %i0\n%v = OpLoad %uint %m0 Aligned 16\n\
         %m1 = OpAccessChain %pv4 %p %i1\n%f = OpLoad %v4f %m1 Aligned 16\n\
         %m2 = OpAccessChain %pv2 %p %i2\n%w = OpLoad %v2u %m2 Aligned 8\n\
         OpStore %m0 %v Aligned 4\nOpStore %m1 %f Aligned 16\nOpStore %m2 %w Aligned 8\n\
         OpReturn\nOpFunctionEnd\n",
    );
    let (dis, stats) = lower(&text);
    assert_eq!((stats.physical_loads, stats.physical_stores, stats.physical_chains), (3, 3, 3), "{stats:?}");
    assert!(dis.contains("OpArrayLength"), "{dis}");
}

/// What the lowering cannot do is an error naming the instruction, never a wrong module.
#[test]
fn ptr_access_chain_without_array_stride_is_an_error() {
    let text = module(
        &[],
        "",
        "%pu = OpTypePointer PhysicalStorageBuffer %uint\n\
         %main = OpFunction %void None %fn\n%l = OpLabel\n\
         %a = OpAccessChain %pcu %pc %i0\n%x = OpLoad %ulong %a\n%p = OpConvertUToPtr %pu %x\n\
         %q = OpPtrAccessChain %pu %p %i1\n%v = OpLoad %uint %q Aligned 4\n\
         OpReturn\nOpFunctionEnd\n",
    );
    let e = error(&text);
    assert!(matches!(&e, RewriteError::Unsupported { reason, .. } if reason.contains("ArrayStride")), "{e}");
}
