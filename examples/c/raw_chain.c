/* Using VK_LAYER_POLYFILL_extensions from C: a program linked with -lvulkan, as most C and C++
 * programs are, that runs a compute shader with OpRawAccessChainNV.
 *
 *   spirv-as --target-env vulkan1.1 examples/c/raw_chain.spvasm -o raw_chain.spv
 *   cc examples/c/raw_chain.c -o raw_chain -lvulkan
 *   VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions ./raw_chain raw_chain.spv
 *
 * It creates an instance and a device, reads shaderRawAccessChains and storageInputOutput16
 * through vkGetPhysicalDeviceFeatures2 and, where the device has VK_NV_raw_access_chains (with
 * the layer: on every driver), dispatches raw_chain.spv and checks every output word.
 * `--enable-layer` names the layer in ppEnabledLayerNames instead of relying on the environment.
 *
 * Exit status: 0 when the dispatch produced the expected bytes, or when the device lacks
 * VK_NV_raw_access_chains and the program said so ("raw access chains: unsupported"); 1 on any
 * failure (a Vulkan error, wrong output), with a message on stderr. */
#include "example.h"

#define INVOCATIONS 256u
#define RECORD_BYTES 16u /* the shader reads word 1 of each 16-byte record */

static uint32_t host_visible_type(VkPhysicalDevice pd, uint32_t type_bits) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((type_bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    fprintf(stderr, "no host-visible coherent memory type\n");
    exit(1);
}

struct buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    uint32_t *data;
};

static struct buffer make_buffer(VkPhysicalDevice pd, VkDevice dev, VkDeviceSize size) {
    struct buffer b;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    CHECK(vkCreateBuffer(dev, &bci, NULL, &b.buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, b.buffer, &req);
    VkMemoryAllocateInfo mai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = host_visible_type(pd, req.memoryTypeBits),
    };
    CHECK(vkAllocateMemory(dev, &mai, NULL, &b.memory));
    CHECK(vkBindBufferMemory(dev, b.buffer, b.memory, 0));
    CHECK(vkMapMemory(dev, b.memory, 0, VK_WHOLE_SIZE, 0, (void **)&b.data));
    return b;
}

static void free_buffer(VkDevice dev, struct buffer *b) {
    vkUnmapMemory(dev, b->memory);
    vkDestroyBuffer(dev, b->buffer, NULL);
    vkFreeMemory(dev, b->memory, NULL);
}

/* Creates the pipeline, dispatches it once and checks out[i] == in[i].y * 3 + 1. */
static int dispatch_and_check(VkPhysicalDevice pd, VkDevice dev, uint32_t queue_family, const uint32_t *code, size_t code_size) {
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = code_size, .pCode = code};
    VkShaderModule module;
    CHECK(vkCreateShaderModule(dev, &smci, NULL, &module));

    VkDescriptorSetLayoutBinding bindings[2] = {
        {.binding = 0, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT},
        {.binding = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT},
    };
    VkDescriptorSetLayoutCreateInfo dslci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = 2, .pBindings = bindings};
    VkDescriptorSetLayout set_layout;
    CHECK(vkCreateDescriptorSetLayout(dev, &dslci, NULL, &set_layout));
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1, .pSetLayouts = &set_layout};
    VkPipelineLayout layout;
    CHECK(vkCreatePipelineLayout(dev, &plci, NULL, &layout));
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = module, .pName = "main"},
        .layout = layout,
    };
    VkPipeline pipeline;
    CHECK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, NULL, &pipeline));

    struct buffer in = make_buffer(pd, dev, INVOCATIONS * RECORD_BYTES);
    struct buffer out = make_buffer(pd, dev, INVOCATIONS * 4);
    for (uint32_t i = 0; i < INVOCATIONS * RECORD_BYTES / 4; i++) in.data[i] = i * 2654435761u;
    memset(out.data, 0xEE, INVOCATIONS * 4);

    VkDescriptorPoolSize pool_size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1, .poolSizeCount = 1, .pPoolSizes = &pool_size};
    VkDescriptorPool pool;
    CHECK(vkCreateDescriptorPool(dev, &dpci, NULL, &pool));
    VkDescriptorSetAllocateInfo dsai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = pool, .descriptorSetCount = 1, .pSetLayouts = &set_layout};
    VkDescriptorSet set;
    CHECK(vkAllocateDescriptorSets(dev, &dsai, &set));
    VkDescriptorBufferInfo infos[2] = {{in.buffer, 0, VK_WHOLE_SIZE}, {out.buffer, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet writes[2];
    for (uint32_t i = 0; i < 2; i++)
        writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set, .dstBinding = i, .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &infos[i]};
    vkUpdateDescriptorSets(dev, 2, writes, 0, NULL);

    VkCommandPoolCreateInfo cpoolci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, .queueFamilyIndex = queue_family};
    VkCommandPool cmd_pool;
    CHECK(vkCreateCommandPool(dev, &cpoolci, NULL, &cmd_pool));
    VkCommandBufferAllocateInfo cbai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VkCommandBuffer cmd;
    CHECK(vkAllocateCommandBuffers(dev, &cbai, &cmd));
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    CHECK(vkBeginCommandBuffer(cmd, &begin));
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
    vkCmdDispatch(cmd, INVOCATIONS / 64, 1, 1);
    VkMemoryBarrier to_host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT, .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0, NULL);
    CHECK(vkEndCommandBuffer(cmd));
    VkQueue queue;
    vkGetDeviceQueue(dev, queue_family, 0, &queue);
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    CHECK(vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE));
    CHECK(vkQueueWaitIdle(queue));

    uint32_t wrong = 0;
    for (uint32_t i = 0; i < INVOCATIONS; i++) {
        uint32_t expected = in.data[i * (RECORD_BYTES / 4) + 1] * 3u + 1u;
        if (out.data[i] != expected && wrong++ < 4)
            fprintf(stderr, "out[%u] = 0x%08x, expected 0x%08x\n", i, out.data[i], expected);
    }
    if (wrong == 0) printf("dispatch: %u words as expected\n", INVOCATIONS);

    vkDestroyCommandPool(dev, cmd_pool, NULL);
    vkDestroyDescriptorPool(dev, pool, NULL);
    free_buffer(dev, &in);
    free_buffer(dev, &out);
    vkDestroyPipeline(dev, pipeline, NULL);
    vkDestroyPipelineLayout(dev, layout, NULL);
    vkDestroyDescriptorSetLayout(dev, set_layout, NULL);
    vkDestroyShaderModule(dev, module, NULL);
    return wrong == 0;
}

int main(int argc, char **argv) {
    const char *spv_path = NULL;
    int enable_layer = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--enable-layer") == 0) enable_layer = 1;
        else spv_path = argv[i];
    }
    if (!spv_path) {
        fprintf(stderr, "usage: %s [--enable-layer] raw_chain.spv\n", argv[0]);
        return 2;
    }
    size_t code_size;
    uint32_t *code = read_spirv(spv_path, &code_size);

    const char *layers[] = {"VK_LAYER_POLYFILL_extensions"};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "raw_chain.c", .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ici = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledLayerCount = enable_layer ? 1u : 0u,
        .ppEnabledLayerNames = layers,
    };
    VkInstance instance;
    CHECK(vkCreateInstance(&ici, NULL, &instance));
    uint32_t n = 1;
    VkPhysicalDevice pd;
    VkResult r = vkEnumeratePhysicalDevices(instance, &n, &pd);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
        fprintf(stderr, "no physical device (%d)\n", r);
        return 1;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    printf("device: %s\n", props.deviceName);

    VkPhysicalDeviceRawAccessChainsFeaturesNV raw = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV};
    VkPhysicalDeviceVulkan11Features v11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &raw};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &v11};
    vkGetPhysicalDeviceFeatures2(pd, &features);
    printf("shaderRawAccessChains: %u\nstorageInputOutput16: %u\n", raw.shaderRawAccessChains, v11.storageInputOutput16);
    int supported = raw.shaderRawAccessChains && has_device_extension(pd, VK_NV_RAW_ACCESS_CHAINS_EXTENSION_NAME);

    uint32_t family = compute_queue_family(pd);

    /* Enable what was queried, as clients do: the whole chain goes to vkCreateDevice. */
    const char *extensions[] = {VK_NV_RAW_ACCESS_CHAINS_EXTENSION_NAME};
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = family, .queueCount = 1, .pQueuePriorities = &priority};
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &features,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = supported ? 1u : 0u,
        .ppEnabledExtensionNames = extensions,
    };
    if (!supported) v11.pNext = NULL; /* the raw-chain struct needs its extension */
    VkDevice dev;
    CHECK(vkCreateDevice(pd, &dci, NULL, &dev));

    int ok = 1;
    if (supported) ok = dispatch_and_check(pd, dev, family, code, code_size);
    else printf("raw access chains: unsupported, no dispatch\n");

    vkDestroyDevice(dev, NULL);
    vkDestroyInstance(instance, NULL);
    free(code);
    return ok ? 0 : 1;
}
