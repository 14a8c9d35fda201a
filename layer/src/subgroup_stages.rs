//! Where lavapipe's array-length workaround may run.
//!
//! `shader_rewrite::Target::nonuniform_array_length_broken` makes the lowering take descriptor
//! lengths in a subgroup ballot loop, which is only valid in stages the device runs subgroup
//! operations in (`VkPhysicalDeviceSubgroupProperties::supportedStages`, with the BALLOT
//! operation; VUID-RuntimeSpirv-None-06343). lavapipe has them in compute and fragment shaders
//! but not in vertex shaders, so a module with an entry point in a stage without them is
//! rewritten without the workaround (logged): valid code, with lavapipe's per-subgroup length for
//! non-uniform descriptor indices in that stage.
use ash::vk;

/// The stages whose subgroup operations include ballot (empty when they cannot be queried:
/// `VkPhysicalDeviceSubgroupProperties` is Vulkan 1.1, and chaining it where the effective API
/// version is 1.0 is invalid, VUID-VkPhysicalDeviceProperties2-pNext-pNext; subgroup operations
/// need SPIR-V 1.3 and so Vulkan 1.1 anyway).
///
/// # Safety
/// `pd` belongs to `inst`; `phys` is its info.
pub unsafe fn ballot_stages(inst: &crate::dispatch::InstanceData, pd: vk::PhysicalDevice, phys: &crate::dispatch::PhysicalDeviceInfo) -> vk::ShaderStageFlags {
    if crate::device_features::effective_version(inst.api_version, phys.api_version) < vk::API_VERSION_1_1 {
        return vk::ShaderStageFlags::empty();
    }
    let Some(properties2) = inst.properties2_for_query() else { return vk::ShaderStageFlags::empty() };
    let mut sg = vk::PhysicalDeviceSubgroupProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2 { p_next: &mut sg as *mut _ as *mut std::ffi::c_void, ..Default::default() };
    properties2(pd, &mut p2);
    if sg.supported_operations.contains(vk::SubgroupFeatureFlags::BALLOT) {
        sg.supported_stages
    } else {
        vk::ShaderStageFlags::empty()
    }
}

/// `OpEntryPoint` and `OpFunction` opcodes.
const OP_ENTRY_POINT: u32 = 15;
const OP_FUNCTION: u32 = 54;

/// The Vulkan stage of a SPIR-V execution model (None: not a Vulkan shader stage).
fn stage(model: u32) -> Option<vk::ShaderStageFlags> {
    type F = vk::ShaderStageFlags;
    Some(match model {
        0 => F::VERTEX,
        1 => F::TESSELLATION_CONTROL,
        2 => F::TESSELLATION_EVALUATION,
        3 => F::GEOMETRY,
        4 => F::FRAGMENT,
        5 => F::COMPUTE,
        5267 | 5364 => F::TASK_EXT,
        5268 | 5365 => F::MESH_EXT,
        5313 => F::RAYGEN_KHR,
        5314 => F::INTERSECTION_KHR,
        5315 => F::ANY_HIT_KHR,
        5316 => F::CLOSEST_HIT_KHR,
        5317 => F::MISS_KHR,
        5318 => F::CALLABLE_KHR,
        _ => return None,
    })
}

/// The stages of a module's entry points (the instructions before the first function).
pub fn entry_point_stages(words: &[u32]) -> vk::ShaderStageFlags {
    let mut stages = vk::ShaderStageFlags::empty();
    let mut i = 5; // after the header
    while let Some(&w) = words.get(i) {
        let (opcode, len) = (w & 0xffff, (w >> 16) as usize);
        if len == 0 || opcode == OP_FUNCTION {
            break;
        }
        if opcode == OP_ENTRY_POINT {
            if let Some(s) = words.get(i + 1).and_then(|&m| stage(m)) {
                stages |= s;
            }
        }
        i += len;
    }
    stages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_of_entry_points() {
        // Header, OpCapability Shader, two entry points (Vertex "v", Fragment "f"), OpFunction.
        let words = [
            0x0723_0203, 0x0001_0500, 0, 10, 0,
            (2 << 16) | 17, 1,
            (4 << 16) | OP_ENTRY_POINT, 0, 1, 0x76,
            (4 << 16) | OP_ENTRY_POINT, 4, 2, 0x66,
            (5 << 16) | OP_FUNCTION, 3, 1, 0, 4,
            (4 << 16) | OP_ENTRY_POINT, 5, 9, 0x63, // after a function: not looked at
        ];
        assert_eq!(entry_point_stages(&words), vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT);
        assert_eq!(entry_point_stages(&words[..5]), vk::ShaderStageFlags::empty());
        assert_eq!(entry_point_stages(&[0x0723_0203, 0, 0, 0, 0, 0]), vk::ShaderStageFlags::empty(), "a zero-length instruction ends the walk");
    }
}
