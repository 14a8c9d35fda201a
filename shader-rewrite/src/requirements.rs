//! Which device features a module needs: its capabilities mapped through the Vulkan
//! specification's "SPIR-V Environment" table (the rows of the capabilities the lowering adds
//! or keeps, and of the common optional ones). Used by the C API
//! (`spvpf_result_required_feature`) and `spirv-polyfill scan`.
use crate::module::{op, HEADER_WORDS};
use crate::{Options, Rewritten};

/// (capability, Vulkan name of what the device must have).
const FEATURES: &[(u32, &str)] = &[
    (2, "geometryShader"),
    (3, "tessellationShader"),
    (9, "shaderFloat16"),
    (10, "shaderFloat64"),
    (11, "shaderInt64"),
    (12, "shaderBufferInt64Atomics"),
    (22, "shaderInt16"),
    (39, "shaderInt8"),
    (55, "shaderStorageImageReadWithoutFormat"),
    (56, "shaderStorageImageWriteWithoutFormat"),
    (64, "VK_SUBGROUP_FEATURE_BALLOT_BIT"),
    (4423, "VK_EXT_shader_subgroup_ballot"),
    (4433, "storageBuffer16BitAccess"),
    (4434, "uniformAndStorageBuffer16BitAccess"),
    (4435, "storagePushConstant16"),
    (4436, "storageInputOutput16"),
    (4448, "storageBuffer8BitAccess"),
    (4449, "uniformAndStorageBuffer8BitAccess"),
    (4450, "storagePushConstant8"),
    (5302, "runtimeDescriptorArray"),
    (5306, "shaderUniformBufferArrayNonUniformIndexing"),
    (5307, "shaderSampledImageArrayNonUniformIndexing"),
    (5308, "shaderStorageBufferArrayNonUniformIndexing"),
    (5309, "shaderStorageImageArrayNonUniformIndexing"),
    (5347, "bufferDeviceAddress"),
    (5414, "shaderRawAccessChains"),
];

/// The capabilities a module declares: the leading OpCapability instructions (the logical
/// layout puts them first), up to the first other instruction or a damaged one.
fn capabilities(words: &[u32]) -> impl Iterator<Item = u32> + '_ {
    let mut at = HEADER_WORDS;
    std::iter::from_fn(move || {
        let count = (*words.get(at)? >> 16) as usize;
        let is_capability = words[at] & 0xffff == op::CAPABILITY && count >= 2 && at + count <= words.len();
        let cap = is_capability.then(|| words[at + 1])?;
        at += count;
        Some(cap)
    })
}

/// The features `words` needs, in the order of its OpCapability instructions.
pub fn of(words: &[u32]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for cap in capabilities(words) {
        if let Some(&(_, name)) = FEATURES.iter().find(|&&(c, _)| c == cap) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// [`of`] the module `options` rewrote into `r`, and what it needs of the device beyond its
/// capabilities: `robustBufferAccess2` where the buffer-device-address lowering left the bounds
/// of its accesses to the driver ([`Options::bda_bounds_by_driver`]), or the raw-chain lowering
/// those of per-component accesses ([`Options::component_bounds_by_driver`], which also assumes
/// the property `robustStorageBufferAccessSizeAlignment` 1: not a feature, so not listed).
pub fn of_rewrite(r: &Rewritten, options: &Options) -> Vec<&'static str> {
    let mut out = of(&r.words);
    let s = &r.stats;
    let bda = options.bda.is_some() && options.bda_bounds_by_driver() && s.physical_loads + s.physical_stores + s.physical_atomics > 0;
    if bda || s.raw_chain_bounds_by_driver > 0 {
        out.push("robustBufferAccess2");
    }
    out
}
