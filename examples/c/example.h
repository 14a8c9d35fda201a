/* What the C examples share: the headers, VK_NV_raw_access_chains for older Vulkan headers,
 * CHECK (exit on a Vulkan error), reading a SPIR-V binary, the device-extension query and the
 * compute queue family. */
#ifndef VKPOLYFILL_EXAMPLE_H
#define VKPOLYFILL_EXAMPLE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>

/* Debian 12's headers (1.3.239) predate VK_NV_raw_access_chains (headers 1.3.278). */
#ifndef VK_NV_raw_access_chains
#define VK_NV_RAW_ACCESS_CHAINS_EXTENSION_NAME "VK_NV_raw_access_chains"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV ((VkStructureType)1000555000)
typedef struct VkPhysicalDeviceRawAccessChainsFeaturesNV {
    VkStructureType sType;
    void *pNext;
    VkBool32 shaderRawAccessChains;
} VkPhysicalDeviceRawAccessChainsFeaturesNV;
#endif

#define CHECK(call)                                                                    \
    do {                                                                               \
        VkResult r_ = (call);                                                          \
        if (r_ != VK_SUCCESS) {                                                        \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, r_); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* The words of the SPIR-V binary at `path` (malloc'ed) and its size in bytes; exits when the
 * file is missing or not a whole number of words past a 5-word header. */
static uint32_t *read_spirv(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint32_t *words = malloc(n > 0 ? (size_t)n : 4);
    if (n <= 20 || n % 4 || !words || fread(words, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: not a SPIR-V binary\n", path);
        exit(1);
    }
    fclose(f);
    *size = (size_t)n;
    return words;
}

static int has_device_extension(VkPhysicalDevice pd, const char *name) {
    uint32_t n = 0;
    CHECK(vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL));
    VkExtensionProperties *props = calloc(n ? n : 1, sizeof *props);
    CHECK(vkEnumerateDeviceExtensionProperties(pd, NULL, &n, props));
    int found = 0;
    for (uint32_t i = 0; i < n; i++) found |= strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}

/* The first queue family of `pd` with compute; exits when there is none. */
static uint32_t compute_queue_family(VkPhysicalDevice pd) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties *families = calloc(n ? n : 1, sizeof *families);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families);
    uint32_t family = 0;
    while (family < n && !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) family++;
    free(families);
    if (family == n) {
        fprintf(stderr, "no compute queue\n");
        exit(1);
    }
    return family;
}
#endif
