//! SPV_NV_bindless_texture lowering, checked as SPIR-V in/out: the output passes spirv-val in the
//! Vulkan environment of the module's SPIR-V version, no trace of the extension is left, the
//! alias arrays sit on the table's set and bindings, descriptor accesses are NonUniform and
//! clamped, and the stats count what was lowered. Modules: tests/corpus/bindless.
mod common;
use common::{assemble, assert_unique_pointer_types, disassemble, validate};
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
    assert_unique_pointer_types(&dis, name);
    // Issue 24's bound on generated code (passes::tidy runs where the lowering alone exceeds it).
    assert!(out.words.len() <= 2 * words.len(), "{name}: {} words out, over twice the input's {}\n{dis}", out.words.len(), words.len());
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
/// an index kept inside the array: clamped by UMin to its last element, or for the power-of-two
/// sampler array ANDed with `count - 1` (the uses of one handle in a block share the clamp and
/// the chain).
fn assert_nonuniform_clamped(name: &str, dis: &str, stats: &Stats) {
    let nonuniform: BTreeSet<&str> = lines(dis, "OpDecorate").filter(|w| w.get(2) == Some(&"NonUniform")).map(|w| w[1]).collect();
    let sampler_mask: BTreeSet<&str> =
        lines(dis, "OpConstant").filter(|w| w.len() == 5 && w[4] == (TABLE.samplers_count - 1).to_string()).map(|w| w[0]).collect();
    let masks = lines(dis, "OpBitwiseAnd").filter(|w| w.get(5).is_some_and(|c| sampler_mask.contains(c))).map(|w| w[0]);
    let umins: BTreeSet<&str> = lines(dis, "OpExtInst").filter(|w| w.contains(&"UMin")).map(|w| w[0]).chain(masks).collect();
    for u in &umins {
        assert!(nonuniform.contains(u), "{name}: index {u} not NonUniform\n{dis}");
    }
    // Element pointers into the table: NonUniform access chains whose index is a clamp.
    let chains: BTreeSet<&str> = lines(dis, "OpAccessChain").filter(|w| nonuniform.contains(w[0]) && w.last().is_some_and(|i| umins.contains(i))).map(|w| w[0]).collect();
    // Each table access: a descriptor load, or a texel pointer for an image atomic; the same
    // descriptor loaded again where an equal load dominates is that load (passes::tidy), so
    // there are at most as many as the lowering made, each through a clamped element pointer.
    let table = lines(dis, "OpLoad").chain(lines(dis, "OpImageTexelPointer")).filter(|w| nonuniform.contains(w[0]));
    let mut table_loads = 0;
    for w in table {
        table_loads += 1;
        assert!(chains.contains(w[4]), "{name}: {} not through a clamped element pointer\n{dis}", w[0]);
    }
    assert!(!umins.is_empty() && umins.len() <= table_loads as usize, "{name}: {} clamps for {table_loads} descriptor loads\n{dis}", umins.len());
    assert!(table_loads >= 1 && table_loads <= stats.bindless_descriptor_loads, "{name}: NonUniform loads and texel pointers\n{dis}");
    assert!(caps(dis).contains(&"ShaderNonUniform".to_string()), "{name}\n{dis}");
}

/// The constants `count - 1` the clamps use: u32 OpConstant values.
fn u32_constants(dis: &str) -> BTreeSet<u32> {
    lines(dis, "OpConstant").filter(|w| w.len() == 5 && w[2] == "OpConstant").filter_map(|w| w[4].parse().ok()).collect()
}

/// With the layer's array sizes (powers of two: 65536 images, 4096 samplers) a handle's index is
/// its slot bits, kept inside the array by one AND (images: the low word & 65535, no 20-bit
/// field mask first) or by nothing (samplers: the 12 bits above the image slot cannot pass
/// 4096): no UMin clamp.
#[test]
fn power_of_two_arrays_take_the_slot_bits() {
    let words = assemble(&corpus("addr32-u32-fetch.spvasm"), "vulkan1.0");
    let o = Options { bindless: Some(BindlessTable::with_defaults(5)), ..Options::default() };
    let out = rewrite(&words, &o).unwrap();
    let dis = disassemble(&out.words);
    validate(&out.words, "vulkan1.0").unwrap_or_else(|e| panic!("{e}\n{dis}"));
    assert!(lines(&dis, "OpExtInst").all(|w| !w.contains(&"UMin")), "{dis}");
    let consts = u32_constants(&dis);
    assert!(consts.contains(&65535) && !consts.contains(&4095) && !consts.contains(&((1 << 20) - 1)), "{dis}");
    assert!(lines(&dis, "OpBitwiseAnd").count() >= 1 && lines(&dis, "OpShiftRightLogical").count() >= 1, "{dis}");
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
    // The low word of a u64 handle: OpUConvert; handle → uvec2 result: OpBitcast. The
    // handle's three uses in one block share its conversion, slot mask, clamp and element
    // pointer (before, each use made its own: 420 words where 366 do).
    assert!(lines(&dis, "OpUConvert").count() == 1 && lines(&dis, "OpBitcast").count() == 2, "{dis}");
    assert_eq!(lines(&dis, "OpExtInst").filter(|w| w.contains(&"UMin")).count(), 1, "{dis}");
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
    assert!(n >= 9, "{n} modules in {}", dir.display());
}

// ---- image atomics (OpImageTexelPointer) through handles ----------------------------------

/// The OpImageTexelPointer instructions: (result, image operand).
fn texel_pointers(dis: &str) -> Vec<(String, String)> {
    lines(dis, "OpImageTexelPointer").map(|w| (w[0].to_string(), w[4].to_string())).collect()
}

/// `%id = OpTypeImage ...` words of image type `id`.
fn image_type<'a>(dis: &'a str, id: &str) -> Vec<&'a str> {
    lines(dis, "OpTypeImage").find(|w| w[0] == id).unwrap_or_else(|| panic!("no image type {id}\n{dis}"))
}

/// The alias variable and image type behind texel pointer image operand `ptr` (an access chain
/// into a table array): (variable, image type id).
fn alias_of<'a>(dis: &'a str, ptr: &str) -> (&'a str, &'a str) {
    let chain = lines(dis, "OpAccessChain").find(|w| w[0] == ptr).unwrap_or_else(|| panic!("{ptr} is not an access chain\n{dis}"));
    let var = chain[4];
    let var_ty = lines(dis, "OpVariable").find(|w| w[0] == var).unwrap()[3];
    let arr = lines(dis, "OpTypePointer").find(|w| w[0] == var_ty).unwrap()[4];
    let elem = lines(dis, "OpTypeArray").find(|w| w[0] == arr).unwrap()[3];
    (var, elem)
}

fn decorations<'a>(dis: &'a str, id: &'a str) -> Vec<Vec<&'a str>> {
    lines(dis, "OpDecorate").filter(|w| w[1] == id).collect()
}

#[test]
fn slang_image_atomics_on_image_values_point_into_the_storage_image_array() {
    // Input unchecked: spirv-val rejects OpImageTexelPointer on an image value (what Slang emits).
    let (dis, stats) = lower("slang-image-atomics.spvasm", "vulkan1.2", Input::Unchecked);
    assert_eq!(stats.bindless_conversions, 3, "{stats}");
    assert_eq!(stats.bindless_descriptor_loads, 3, "{stats}");
    assert_nonuniform_clamped("slang-image-atomics", &dis, &stats);
    let tps = texel_pointers(&dis);
    assert_eq!(tps.len(), 4, "{dis}");
    let mut formats = vec![];
    for (tp, img) in &tps[..3] {
        let (var, elem) = alias_of(&dis, img);
        let d: Vec<String> = decorations(&dis, var).iter().map(|w| w[2..].join(" ")).collect();
        assert!(d.contains(&"DescriptorSet 5".to_string()) && d.contains(&"Binding 1".to_string()), "{var}: {d:?}\n{dis}");
        assert!(decorations(&dis, tp).iter().any(|w| w[2] == "NonUniform"), "{tp} not NonUniform\n{dis}");
        formats.push(image_type(&dis, elem)[9].to_string());
    }
    // Unknown formats inferred from the sampled types: uint → R32ui, int → R32i.
    assert_eq!(formats, ["R32ui", "R32i", "R32ui"], "{dis}");
    // The ordinary storage image keeps its variable.
    let plain = lines(&dis, "OpDecorate").find(|w| w[2] == "Binding" && w[3] == "1" && decorations(&dis, w[1]).iter().any(|d| d[2..] == ["DescriptorSet", "0"])).unwrap()[1];
    assert_eq!(tps[3].1, plain, "{dis}");
    // The Unknown-format storage images and their sampled-image types are gone.
    assert!(!dis.contains("Unknown") && !dis.contains("OpTypeSampledImage"), "{dis}");
}

#[test]
fn image_atomics_through_handles_in_memory_get_a_format() {
    let (dis, stats) = lower("image-atomics-memory.spvasm", "vulkan1.3", Input::Universal("spv1.6"));
    assert_eq!(stats.bindless_descriptor_loads, 3, "{stats}");
    assert_nonuniform_clamped("image-atomics-memory", &dis, &stats);
    let formats: Vec<String> = texel_pointers(&dis).iter().map(|(_, img)| image_type(&dis, alias_of(&dis, img).1)[9].to_string()).collect();
    // uint Unknown → R32ui, R32i kept, float Unknown → R32f.
    assert_eq!(formats, ["R32ui", "R32i", "R32f"], "{dis}");
    assert_eq!(bindings(&dis, 5), BTreeSet::from([1]), "{dis}");
}

/// A compute module with one handle (addressing 32, push constant) to a storage image
/// `image` (an OpTypeImage operand list after the sampled type `%s`), an OpImageTexelPointer on
/// the image value from OpConvertUToImageNV and `atomic` on it (`%tp`, `%one`, `%zero`, `%v`).
fn atomic_module(caps: &str, sampled: &str, image: &str, atomic: &str) -> String {
    let text = format!(
        "OpCapability Shader
OpCapability BindlessTextureNV
{caps}
OpExtension \"SPV_NV_bindless_texture\"
OpMemoryModel Logical GLSL450
OpSamplerImageAddressingModeNV 32
OpEntryPoint GLCompute %main \"main\" %pc
OpExecutionMode %main LocalSize 1 1 1
OpDecorate %Pc Block
OpMemberDecorate %Pc 0 Offset 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%u32 = OpTypeInt 32 0
%i32 = OpTypeInt 32 1
%v2i = OpTypeVector %i32 2
%s = {sampled}
%img = OpTypeImage %s {image}
%ptr_img = OpTypePointer Image %s
%Pc = OpTypeStruct %u32
%pc_ptr = OpTypePointer PushConstant %Pc
%pc_u32 = OpTypePointer PushConstant %u32
%i0 = OpConstant %i32 0
%one = OpConstant %u32 1
%zero = OpConstant %u32 0
%coord = OpConstantComposite %v2i %i0 %i0
%pc = OpVariable %pc_ptr PushConstant
%main = OpFunction %void None %fn
%entry = OpLabel
%hp = OpAccessChain %pc_u32 %pc %i0
%h = OpLoad %u32 %hp
%im = OpConvertUToImageNV %img %h
%tp = OpImageTexelPointer %ptr_img %im %coord %zero
{atomic}
OpReturn
OpFunctionEnd"
    );
    // Non-aggregate types are unique: a 32-bit sampled type is %u32 / %i32 itself.
    match sampled {
        "OpTypeInt 32 0" => text.replace("%u32 = OpTypeInt 32 0\n", "").replace("%u32", "%s"),
        "OpTypeInt 32 1" => text.replace("%i32 = OpTypeInt 32 1\n", "").replace("%i32", "%s"),
        _ => text,
    }
}

fn rewrite_text(text: &str) -> Result<Vec<u32>, RewriteError> {
    rewrite(&assemble(text, "vulkan1.3"), &options()).map(|r| r.words)
}

#[test]
fn sixty_four_bit_image_atomics_get_r64_formats_with_int64_image() {
    for (signed, format) in [(0, "R64ui"), (1, "R64i")] {
        let text = atomic_module(
            "OpCapability Int64\nOpCapability Int64ImageEXT\nOpCapability Int64Atomics\nOpExtension \"SPV_EXT_shader_image_int64\"",
            &format!("OpTypeInt 64 {signed}"),
            "2D 0 0 0 2 Unknown",
            "%r = OpAtomicIAdd %s %tp %one %zero %v",
        )
        .replace("%coord = ", "%v = OpConstant %s 5\n%coord = ");
        let out = rewrite_text(&text).unwrap_or_else(|e| panic!("{format}: {e}"));
        let dis = disassemble(&out);
        validate(&out, "vulkan1.3").unwrap_or_else(|e| panic!("{format}: {e}\n{dis}"));
        let (_, img) = &texel_pointers(&dis)[0];
        assert_eq!(image_type(&dis, alias_of(&dis, img).1)[9], format, "{dis}");
    }
}

/// Shapes that cannot be made valid are refused, naming the texel pointer.
#[test]
fn image_atomics_that_cannot_be_valid_are_refused_by_name() {
    let atomic = "%r = OpAtomicIAdd %s %tp %one %zero %one";
    let cases = [
        // A sampled (not storage) image.
        ("", "OpTypeInt 32 0", "2D 0 0 0 1 Unknown", atomic, "Sampled 1"),
        // A format atomics do not allow.
        ("", "OpTypeInt 32 0", "2D 0 0 0 2 Rgba8ui", atomic, "R32ui"),
        // A sampled type no atomic format has (64-bit float).
        ("OpCapability Float64", "OpTypeFloat 64", "2D 0 0 0 2 Unknown", "%r = OpAtomicLoad %s %tp %one %zero", "no format"),
        // 64-bit without Int64ImageEXT.
        ("OpCapability Int64\nOpCapability Int64Atomics", "OpTypeInt 64 0", "2D 0 0 0 2 Unknown", "%r = OpAtomicLoad %s %tp %one %zero", "Int64ImageEXT"),
        // A texel buffer.
        ("OpCapability ImageBuffer", "OpTypeInt 32 0", "Buffer 0 0 0 2 R32ui", atomic, "texel buffer"),
    ];
    for (caps, sampled, image, atomic, why) in cases {
        match rewrite_text(&atomic_module(caps, sampled, image, atomic)) {
            Err(RewriteError::Unsupported { instruction, reason }) => {
                assert!(instruction.contains("OpImageTexelPointer"), "{image}: {instruction}: {reason}");
                assert!(reason.contains(why), "{image}: {reason}");
            }
            other => panic!("{image}: expected an unsupported error, got {other:?}"),
        }
    }
}

/// An image value loaded from an ordinary descriptor in a bindless module: the texel pointer
/// takes the variable instead (core SPIR-V wants the pointer).
#[test]
fn image_atomic_on_a_loaded_descriptor_value_takes_its_pointer() {
    let text = atomic_module("", "OpTypeInt 32 0", "2D 0 0 0 2 R32ui", "%r = OpAtomicIAdd %s %tp %one %zero %one")
        .replace("%pc = OpVariable %pc_ptr PushConstant", "%pc = OpVariable %pc_ptr PushConstant\n%uc_img = OpTypePointer UniformConstant %img\n%var = OpVariable %uc_img UniformConstant")
        .replace("%tp = OpImageTexelPointer %ptr_img %im", "%lv = OpLoad %img %var\n%tp = OpImageTexelPointer %ptr_img %lv")
        .replace("OpDecorate %Pc Block", "OpDecorate %Pc Block\nOpDecorate %var DescriptorSet 0\nOpDecorate %var Binding 0")
        .replace("\"main\" %pc", "\"main\" %pc %var");
    let out = rewrite_text(&text).unwrap();
    let dis = disassemble(&out);
    validate(&out, "vulkan1.3").unwrap_or_else(|e| panic!("{e}\n{dis}"));
    let var = lines(&dis, "OpVariable").find(|w| w[4] == "UniformConstant").unwrap()[0];
    assert_eq!(texel_pointers(&dis)[0].1, var, "{dis}");
}
