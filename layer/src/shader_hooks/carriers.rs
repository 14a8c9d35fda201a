//! Every structure and command of the Vulkan registry that can hand shader code (SPIR-V, or a
//! `VkPipelineShaderStageCreateInfo` that may chain it) to the driver, and what the layer does
//! with it. layer/tests/shader_carriers.rs derives the list from the registry (vk.xml of the
//! pinned `vulkan-object` package, layer/tools/shader_carriers.py) and fails when an entry is
//! missing here or here names something the registry does not.

/// What the layer does with one carrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// The code it carries is rewritten (by the named part of the layer).
    Rewritten(&'static str),
    /// Code that needs an emulation is refused with VK_ERROR_INVALID_SHADER_NV and a logged
    /// reason (the layer cannot rewrite this kind of code).
    Refused(&'static str),
}

/// `(registry name, handling)`: structures and commands.
pub static CARRIERS: &[(&str, Handling)] = &[
    ("VkShaderModuleCreateInfo", Handling::Rewritten("vkCreateShaderModule; chained into stages: stages.rs")),
    ("VkPipelineShaderStageCreateInfo", Handling::Rewritten("stages.rs rewrite_stage (its chained VkShaderModuleCreateInfo)")),
    ("VkComputePipelineCreateInfo", Handling::Rewritten("stages.rs PipelineInfo (stage)")),
    ("VkGraphicsPipelineCreateInfo", Handling::Rewritten("stages.rs PipelineInfo (pStages, chained shader groups)")),
    ("VkGraphicsPipelineShaderGroupsCreateInfoNV", Handling::Rewritten("stages.rs rewrite_chain (pGroups)")),
    ("VkGraphicsShaderGroupCreateInfoNV", Handling::Rewritten("stages.rs rewrite_chain (each group's pStages)")),
    ("VkRayTracingPipelineCreateInfoKHR", Handling::Rewritten("stages.rs PipelineInfo (pStages)")),
    ("VkRayTracingPipelineCreateInfoNV", Handling::Rewritten("stages.rs PipelineInfo (pStages)")),
    ("VkExecutionGraphPipelineCreateInfoAMDX", Handling::Rewritten("stages.rs PipelineInfo (pStages)")),
    ("VkPipelineCreateInfoKHR", Handling::Rewritten("stages.rs rewrite_chain (the chained pipeline create info)")),
    ("VkPipelineBinaryCreateInfoKHR", Handling::Rewritten("queries.rs (pPipelineCreateInfo)")),
    ("VkShaderCreateInfoEXT", Handling::Rewritten("vkCreateShadersEXT (pCode)")),
    ("VkDataGraphPipelineCreateInfoARM", Handling::Refused("SPIR-V graphs (SPV_ARM_graph) are not rewritten")),
    ("vkCreateShaderModule", Handling::Rewritten("modules.rs")),
    ("vkGetShaderModuleCreateInfoIdentifierEXT", Handling::Rewritten("modules.rs (identifier of the rewritten code)")),
    ("vkCreateShadersEXT", Handling::Rewritten("modules.rs")),
    ("vkCreateComputePipelines", Handling::Rewritten("pipelines.rs")),
    ("vkCreateGraphicsPipelines", Handling::Rewritten("pipelines.rs")),
    ("vkCreateRayTracingPipelinesKHR", Handling::Rewritten("pipelines.rs, deferred.rs")),
    ("vkCreateRayTracingPipelinesNV", Handling::Rewritten("pipelines.rs")),
    ("vkCreateExecutionGraphPipelinesAMDX", Handling::Rewritten("pipelines.rs")),
    ("vkGetPipelineKeyKHR", Handling::Rewritten("queries.rs")),
    ("vkCreatePipelineBinariesKHR", Handling::Rewritten("queries.rs")),
    ("vkGetPipelineIndirectMemoryRequirementsNV", Handling::Rewritten("queries.rs")),
    ("vkCreateDataGraphPipelinesARM", Handling::Refused("queries.rs: SPIR-V graphs are not rewritten")),
];
