//! SPV_NV_bindless_texture lowering, checked as SPIR-V in/out: the output passes spirv-val in the
//! Vulkan environment of the module's SPIR-V version, no trace of the extension is left, the
//! alias arrays sit on the table's set and bindings, descriptor accesses are NonUniform and
//! clamped, and the stats count what was lowered. Modules: tests/corpus/bindless.
mod common;
use common::{assemble, disassemble, validate};
use shader_rewrite::{rewrite, BindlessTable, Options, RewriteError, Stats};
use std::collections::BTreeSet;

const TABLE: BindlessTable = BindlessTable {
    set: 5,
    sampled_images_binding: 0,
    sampled_images_count: 1000,
    storage_images_binding: 1,
    storage_images_count: 100,
    samplers_binding: 2,
    samplers_count: 16,
};

fn options() -> Options {
    Options { bindless: Some(TABLE), ..Options::default() }
}

fn corpus(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/bindless").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// How the input itself is checked before the rewrite: spirv-val v2025.5 rejects some valid
/// uses of the extension in a Vulkan environment (stores of opaque types: VUID-...-06924;
/// Slang's sampled image of a storage image: VUID-...-04657) and crashes on one.
#[derive(Clone, Copy)]
enum Input {
    Vulkan,
    Universal(&'static str),
    Unchecked,
}

/// Assembles, rewrites, validates the output for `env`, checks that no trace of the extension
/// is left and that the rewrite is deterministic; returns the disassembly (raw ids) and stats.
fn lower(name: &str, env: &str, input: Input) -> (String, Stats) {
    let text = corpus(name);
    let words = assemble(&text, env);
    match input {
        Input::Vulkan => validate(&words, env).unwrap_or_else(|e| panic!("{name}: input does not validate: {e}")),
        Input::Universal(spv) => validate(&words, spv).unwrap_or_else(|e| panic!("{name}: input does not validate: {e}")),
        Input::Unchecked => {}
    }
    let out = rewrite(&words, &options()).unwrap_or_else(|e| panic!("{name}: rewrite failed: {e}"));
    let dis = disassemble(&out.words);
    if let Err(e) = validate(&out.words, env) {
        panic!("{name}: rewritten module fails spirv-val --target-env {env}: {e}\n{dis}");
    }
    for gone in [
        "BindlessTextureNV",
        "SPV_NV_bindless_texture",
        "SamplerImageAddressingModeNV",
        "OpConvertUTo",
        "ToUNV",
        "BindlessSamplerNV",
        "BindlessImageNV",
        "BoundSamplerNV",
        "BoundImageNV",
    ] {
        assert!(!dis.contains(gone), "{name}: `{gone}` left:\n{dis}");
    }
    assert_eq!(rewrite(&words, &options()).unwrap().words, out.words, "{name}: not deterministic");
    (dis, out.stats)
}

/// The instructions with opcode `opname`, split into words.
fn lines<'a>(dis: &'a str, opname: &'a str) -> impl Iterator<Item = Vec<&'a str>> + 'a {
    dis.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()).filter(move |w| w.first() == Some(&opname) || (w.get(1) == Some(&"=") && w.get(2) == Some(&opname)))
}

/// Bindings of the variables decorated with DescriptorSet `set`.
fn bindings(dis: &str, set: u32) -> BTreeSet<u32> {
    let vars: BTreeSet<String> =
        lines(dis, "OpDecorate").filter(|w| w.get(2) == Some(&"DescriptorSet") && w.get(3) == Some(&set.to_string().as_str())).map(|w| w[1].to_string()).collect();
    lines(dis, "OpDecorate").filter(|w| w.get(2) == Some(&"Binding") && vars.contains(w[1])).map(|w| w[3].parse().unwrap()).collect()
}

fn caps(dis: &str) -> Vec<String> {
    lines(dis, "OpCapability").map(|w| w[1].to_string()).collect()
}

/// Every descriptor load from the table: an access chain and a load decorated NonUniform, with
/// an index clamped by UMin to the array's last element.
fn assert_nonuniform_clamped(name: &str, dis: &str, stats: &Stats) {
    let nonuniform: BTreeSet<&str> = lines(dis, "OpDecorate").filter(|w| w.get(2) == Some(&"NonUniform")).map(|w| w[1]).collect();
    let umins: Vec<Vec<&str>> = lines(dis, "OpExtInst").filter(|w| w.contains(&"UMin")).collect();
    assert_eq!(umins.len() as u32, stats.bindless_descriptor_loads, "{name}: one clamp per descriptor load\n{dis}");
    for u in &umins {
        assert!(nonuniform.contains(u[0]), "{name}: index {} not NonUniform\n{dis}", u[0]);
    }
    let table_loads = lines(dis, "OpLoad").filter(|w| nonuniform.contains(w[0])).count() as u32;
    assert_eq!(table_loads, stats.bindless_descriptor_loads, "{name}: NonUniform loads\n{dis}");
    assert!(caps(dis).contains(&"ShaderNonUniform".to_string()), "{name}\n{dis}");
}

/// The constants `count - 1` the clamps use: u32 OpConstant values.
fn u32_constants(dis: &str) -> BTreeSet<u32> {
    lines(dis, "OpConstant").filter(|w| w.len() == 5 && w[2] == "OpConstant").filter_map(|w| w[4].parse().ok()).collect()
}

#[test]
fn addressing_32_fetch_and_sample_from_u32_push_constants() {
    let (dis, stats) = lower("addr32-u32-fetch.spvasm", "vulkan1.0", Input::Vulkan);
    assert_eq!(stats.bindless_conversions, 2, "{stats}");
    // Fetch: one image; sample: image + sampler.
    assert_eq!(stats.bindless_descriptor_loads, 3, "{stats}");
    assert_eq!(bindings(&dis, 5), BTreeSet::from([0, 2]), "{dis}");
    assert_nonuniform_clamped("addr32", &dis, &stats);
    let c = u32_constants(&dis);
    assert!(c.contains(&999) && c.contains(&15) && c.contains(&0xf_ffff) && c.contains(&20), "{dis}");
    // SPIR-V 1.0: descriptor indexing comes from its extension.
    assert!(dis.contains("OpExtension \"SPV_EXT_descriptor_indexing\""), "{dis}");
    assert!(caps(&dis).contains(&"SampledImageArrayNonUniformIndexing".to_string()), "{dis}");
    // The original output buffer keeps its set/binding.
    assert_eq!(bindings(&dis, 0), BTreeSet::from([0]));
}

#[test]
fn addressing_64_uvec2_samplers_with_bound_and_handle_images() {
    let (dis, stats) = lower("addr64-uvec2-samplers.spvasm", "vulkan1.1", Input::Vulkan);
    assert_eq!(stats.bindless_conversions, 3, "{stats}");
    // s0: 2, mixed (bound image + handle sampler): 1, both: 2, query size + levels: 2, then: 2.
    assert_eq!(stats.bindless_descriptor_loads, 9, "{stats}");
    assert_eq!(bindings(&dis, 5), BTreeSet::from([0, 2]), "{dis}");
    // The ordinary descriptors stay where they were, and the bound image is still loaded.
    assert_eq!(bindings(&dis, 0), BTreeSet::from([0, 1, 2]), "{dis}");
    assert_nonuniform_clamped("addr64-uvec2", &dis, &stats);
    // uvec2 handles: the low word is `.x`; no Int64 appears.
    assert!(lines(&dis, "OpCompositeExtract").count() > 0, "{dis}");
    assert!(!dis.contains("OpTypeInt 64"), "{dis}");
    // Handle image + handle sampler: combined with masks, bits 0..20 of one and 20..32 of the other.
    assert!(lines(&dis, "OpBitwiseOr").count() == 1, "{dis}");
}

#[test]
fn addressing_64_u64_storage_image_and_reverse_conversions() {
    let (dis, stats) = lower("addr64-u64-storage.spvasm", "vulkan1.3", Input::Vulkan);
    assert_eq!(stats.bindless_conversions, 4, "{stats}");
    assert_eq!(stats.bindless_descriptor_loads, 3, "{stats}");
    assert_eq!(bindings(&dis, 5), BTreeSet::from([1]), "{dis}");
    assert_nonuniform_clamped("addr64-u64", &dis, &stats);
    assert!(u32_constants(&dis).contains(&99), "storage clamp to count - 1\n{dis}");
    let c = caps(&dis);
    assert!(c.contains(&"StorageImageArrayNonUniformIndexing".to_string()) && !c.contains(&"SampledImageArrayNonUniformIndexing".to_string()), "{dis}");
    // SPIR-V 1.6 has descriptor indexing in core.
    assert!(!dis.contains("SPV_EXT_descriptor_indexing"), "{dis}");
    // The low word of a u64 handle: OpUConvert; handle → uvec2 result: OpBitcast.
    assert!(lines(&dis, "OpUConvert").count() == 3 && lines(&dis, "OpBitcast").count() == 2, "{dis}");
    // Only "main" uses the table: only its interface gains the alias (SPIR-V 1.4+ rule).
    let eps: Vec<Vec<&str>> = lines(&dis, "OpEntryPoint").collect();
    let alias: Vec<&str> = lines(&dis, "OpDecorate").filter(|w| w[2] == "DescriptorSet" && w[3] == "5").map(|w| w[1]).collect();
    assert_eq!(alias.len(), 1);
    for ep in &eps {
        assert_eq!(ep.contains(&alias[0]), ep[3] == "\"main\"", "{dis}");
    }
}

#[test]
fn slang_shape_storage_image_through_sampled_image_conversion() {
    // Input unchecked: spirv-val rejects an OpTypeSampledImage of a Sampled=2 image, which Slang
    // declares for OpConvertUToSampledImageNV of a storage image; the output must not have it.
    let (dis, stats) = lower("slang-shape.spvasm", "vulkan1.2", Input::Unchecked);
    assert_eq!(stats.bindless_conversions, 3, "{stats}");
    // read: 1, sample: image + sampler, write: 1.
    assert_eq!(stats.bindless_descriptor_loads, 4, "{stats}");
    assert_eq!(bindings(&dis, 5), BTreeSet::from([0, 1, 2]), "{dis}");
    assert_nonuniform_clamped("slang", &dis, &stats);
    assert_eq!(lines(&dis, "OpTypeSampledImage").count(), 1, "the storage image's sampled image type must go\n{dis}");
    assert!(!dis.contains("SPV_EXT_descriptor_indexing"), "SPIR-V 1.5 has it in core\n{dis}");
    let main: Vec<&str> = lines(&dis, "OpEntryPoint").next().unwrap();
    assert_eq!(main.len(), 4 + 1 + 3, "push constants + three aliases in the interface: {main:?}");
}

#[test]
fn handles_in_buffers_variables_phis_selects_and_calls() {
    // spirv-val rejects stores of opaque types in a Vulkan environment; the universal one
    // accepts them with the extension.
    let (dis, stats) = lower("handle-memory.spvasm", "vulkan1.3", Input::Universal("spv1.6"));
    assert_eq!(stats.bindless_conversions, 0, "{stats}");
    assert_eq!(stats.bindless_descriptor_loads, 7, "{stats}");
    // Members: SSBO 2, UBO 1, push constant 1; variables: Private 1, Function 1; OpSelect 1,
    // OpPhi 1; the function's parameter and return value.
    assert_eq!(stats.bindless_handle_values, 10, "{stats}");
    assert_eq!(bindings(&dis, 5), BTreeSet::from([0, 2]), "{dis}");
    assert_nonuniform_clamped("handle-memory", &dis, &stats);
    // No opaque type left in memory, members, phis, selects or signatures.
    let opaque: BTreeSet<&str> = ["OpTypeImage", "OpTypeSampledImage", "OpTypeSampler"].iter().flat_map(|o| lines(&dis, o).map(|w| w[0])).collect();
    for w in lines(&dis, "OpTypePointer").filter(|w| w[3] != "UniformConstant") {
        assert!(!opaque.contains(w[4]), "{w:?}\n{dis}");
    }
    for w in lines(&dis, "OpTypeStruct").chain(lines(&dis, "OpTypeFunction")) {
        assert!(w[3..].iter().all(|t| !opaque.contains(t)), "{w:?}\n{dis}");
    }
    for w in lines(&dis, "OpPhi").chain(lines(&dis, "OpSelect")).chain(lines(&dis, "OpFunctionParameter")) {
        assert!(!opaque.contains(w[3]), "{w:?}\n{dis}");
    }
    // Members keep their offsets (the handles are 8 bytes, like the opaque members were).
    assert!(dis.contains(" 1 Offset 8"), "{dis}");
}

#[test]
fn physical_buffer_members_arrays_and_composites() {
    // Input unchecked: spirv-val v2025.5 crashes on its PhysicalStorageBuffer load of an opaque type.
    let (dis, stats) = lower("physical-buffer-member.spvasm", "vulkan1.3", Input::Unchecked);
    assert_eq!(stats.bindless_descriptor_loads, 3, "{stats}");
    // The PhysicalStorageBuffer member, the UBO array element, the Pair member.
    assert_eq!(stats.bindless_handle_values, 3, "{stats}");
    assert_eq!(bindings(&dis, 5), BTreeSet::from([0, 2]), "{dis}");
    assert_nonuniform_clamped("physical", &dis, &stats);
    // The array keeps its ArrayStride and the load keeps Aligned 8.
    assert!(dis.contains("ArrayStride 16") && dis.contains("Aligned 8"), "{dis}");
}

#[test]
fn a_phi_of_a_bound_image_and_a_handle_is_refused_by_name() {
    let words = assemble(&corpus("mixed-phi.spvasm"), "vulkan1.3");
    validate(&words, "spv1.6").unwrap();
    match rewrite(&words, &options()) {
        Err(RewriteError::Unsupported { instruction, reason }) => {
            assert!(instruction.contains("OpPhi"), "{instruction}: {reason}");
            assert!(reason.contains("bound") || reason.contains("ordinary descriptor"), "{reason}");
        }
        other => panic!("expected an unsupported error, got {other:?}"),
    }
}

#[test]
fn without_a_table_modules_pass_through_unchanged() {
    let words = assemble(&corpus("addr32-u32-fetch.spvasm"), "vulkan1.0");
    let out = rewrite(&words, &Options::default()).unwrap();
    assert_eq!(out.words, words);
    assert!(out.stats.is_empty());
}

#[test]
fn every_corpus_module_rewrites_deterministically_and_truncations_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/bindless");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "spvasm")) {
        let words = assemble(&std::fs::read_to_string(e.path()).unwrap(), "vulkan1.3");
        for cut in (5..words.len()).step_by(3) {
            let _ = rewrite(&words[..cut], &options());
        }
        n += 1;
    }
    assert!(n >= 7, "{n} modules in {}", dir.display());
}
