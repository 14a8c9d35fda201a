/* What VK_LAYER_POLYFILL_extensions says, heard where Vulkan applications listen: a program
 * linked with -lvulkan that registers the application's channels and checks what arrives.
 *
 *   spirv-as --target-env vulkan1.1 examples/c/raw_chain.spvasm -o raw_chain.spv
 *   cc -std=c99 examples/c/messages.c -o messages -lvulkan
 *   VK_ADD_LAYER_PATH=$PWD/target/release VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions \
 *       ./messages --level info --limit 3 raw_chain.spv
 *
 * The layer's settings go in a VkLayerSettingsCreateInfoEXT chained to VkInstanceCreateInfo
 * WITHOUT enabling the VK_EXT_layer_settings extension name (loaders before 1.3.272, such as
 * Debian 12's 1.3.239, refuse the name; the structure reaches the layers all the same):
 *   --level L   log_level (info, debug, ...); default: not set (the layer's default, warn)
 *   --limit N   duplicate_message_limit (0: unlimited); default: not set (10)
 *   --no-settings-struct   chain no VkLayerSettingsCreateInfoEXT: the caller gives --level and
 *               --limit to the layer another way (VK_POLYFILL_EXTENSIONS_LOG_LEVEL, ...), e.g.
 *               for validation layers older than 1.3.272, which report the structure as
 *               unknown (VUID-VkInstanceCreateInfo-pNext-pNext)
 *
 * Channels: a VK_EXT_debug_utils messenger and a VK_EXT_debug_report callback chained in
 * VkInstanceCreateInfo (they hear vkCreateInstance and vkDestroyInstance only); after
 * vkCreateInstance a messenger and a callback for everything, and three whose masks exclude the
 * layer's messages. Only messages whose pMessageIdName starts with "POLYFILL-" (debug report:
 * layer prefix "POLYFILL") are checked; the loader's and a validation layer's are counted apart.
 *
 * Checks (each failure prints "FAIL: ..." on stderr):
 * - vkCreateInstance: the chained channels get POLYFILL-layer-active (INFO, GENERAL, the
 *   instance in pObjects) when the level is info or debug, nothing otherwise; they get nothing
 *   between vkCreateInstance and vkDestroyInstance; during vkDestroyInstance they hear the
 *   layer's debug messages (--level debug --limit 0);
 * - vkGetPhysicalDeviceToolProperties and its EXT alias list the layer once and last
 *   ("vkpolyfill", layer VK_LAYER_POLYFILL_extensions, ADDITIONAL_FEATURES |
 *   MODIFYING_FEATURES), after the tools below it (printed: "tool N: ..."); VK_EXT_tooling_info
 *   is listed;
 * - a good raw-chain module is created and (level info or debug) POLYFILL-shader-rewritten
 *   arrives as INFO with the device (by the debug name set with vkSetDebugUtilsObjectNameEXT)
 *   and the module (handle 0, named "module <FNV-1a 64 of the code>") in pObjects;
 * - a module cut in the middle of its OpRawAccessChainNV is refused with
 *   VK_ERROR_INVALID_SHADER_NV, and POLYFILL-shader-refused arrives as ERROR, VALIDATION,
 *   messageIdNumber = FNV-1a 32 of the name, the device and the module in pObjects; the debug
 *   report callback gets it as ERROR with the same code and the device as its object;
 * - created 12 times: exactly min(12, limit) refusals arrive (all 12 when the limit is 0); the
 *   last one delivered, and only it, says that duplicate_message_limit is reached;
 * - the channels whose masks exclude a message never get it (every message a channel gets is
 *   within its masks).
 *
 * Exit status: 0 and "messages: all checks passed" when every check holds, 1 otherwise. */
#include <inttypes.h>

#include "example.h"

/* Debian 12's headers (1.3.239) also predate VK_EXT_layer_settings (headers 1.3.272). */
#ifndef VK_EXT_layer_settings
#define VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT ((VkStructureType)1000496000)
typedef enum VkLayerSettingTypeEXT {
    VK_LAYER_SETTING_TYPE_UINT32_EXT = 3,
    VK_LAYER_SETTING_TYPE_STRING_EXT = 7,
} VkLayerSettingTypeEXT;
typedef struct VkLayerSettingEXT {
    const char *pLayerName;
    const char *pSettingName;
    VkLayerSettingTypeEXT type;
    uint32_t valueCount;
    const void *pValues;
} VkLayerSettingEXT;
typedef struct VkLayerSettingsCreateInfoEXT {
    VkStructureType sType;
    const void *pNext;
    uint32_t settingCount;
    const VkLayerSettingEXT *pSettings;
} VkLayerSettingsCreateInfoEXT;
#endif

#define LAYER_NAME "VK_LAYER_POLYFILL_extensions"
#define DEVICE_NAME "messages-device"
#define OP_RAW_ACCESS_CHAIN_NV 5398u
#define REFUSALS 12u
#define MAX_MESSAGES 1024u
#define MAX_OBJECTS 4u
#define TEXT 1024u

static unsigned failures;

static void expect(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

/* Where the program is, for the chained channels (which must hear create and destroy only). */
enum Phase { CREATE, LIVE, DESTROY };
static enum Phase phase = CREATE;

/* ------------------------------------------------------------------ debug utils */

typedef struct {
    VkObjectType type;
    uint64_t handle;
    char name[96];
} Object;

typedef struct {
    VkDebugUtilsMessageSeverityFlagBitsEXT severity;
    VkDebugUtilsMessageTypeFlagsEXT types;
    enum Phase phase;
    char id[64];
    int32_t number;
    char text[TEXT];
    uint32_t object_count;
    Object objects[MAX_OBJECTS];
} Message;

typedef struct {
    const char *name;
    VkDebugUtilsMessageSeverityFlagsEXT severities;
    VkDebugUtilsMessageTypeFlagsEXT types;
    uint32_t count;  /* the layer's messages (the first MAX_MESSAGES are kept) */
    uint32_t others; /* the loader's, a validation layer's */
    Message messages[MAX_MESSAGES];
} Sink;

static void copy(char *dst, size_t size, const char *src) {
    snprintf(dst, size, "%s", src ? src : "");
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    Sink *s = user;
    if (!data->pMessageIdName || strncmp(data->pMessageIdName, "POLYFILL-", 9) != 0) {
        s->others++;
        return VK_FALSE;
    }
    if (s->count < MAX_MESSAGES) {
        Message *m = &s->messages[s->count];
        m->severity = severity;
        m->types = types;
        m->phase = phase;
        copy(m->id, sizeof m->id, data->pMessageIdName);
        m->number = data->messageIdNumber;
        copy(m->text, sizeof m->text, data->pMessage);
        m->object_count = data->objectCount < MAX_OBJECTS ? data->objectCount : MAX_OBJECTS;
        for (uint32_t i = 0; i < m->object_count; i++) {
            m->objects[i].type = data->pObjects[i].objectType;
            m->objects[i].handle = data->pObjects[i].objectHandle;
            copy(m->objects[i].name, sizeof m->objects[i].name, data->pObjects[i].pObjectName);
        }
    }
    s->count++;
    return VK_FALSE;
}

static VkDebugUtilsMessengerCreateInfoEXT messenger_info(Sink *s, const void *next) {
    VkDebugUtilsMessengerCreateInfoEXT ci = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    ci.pNext = next;
    ci.messageSeverity = s->severities;
    ci.messageType = s->types;
    ci.pfnUserCallback = on_message;
    ci.pUserData = s;
    return ci;
}

/* How many messages with ID `id` `s` got. */
static uint32_t count_id(const Sink *s, const char *id) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->count && i < MAX_MESSAGES; i++) n += strcmp(s->messages[i].id, id) == 0;
    return n;
}

static const Message *find_id(const Sink *s, const char *id, uint32_t nth) {
    for (uint32_t i = 0; i < s->count && i < MAX_MESSAGES; i++)
        if (strcmp(s->messages[i].id, id) == 0 && nth-- == 0) return &s->messages[i];
    return NULL;
}

static const Object *find_object(const Message *m, VkObjectType type) {
    for (uint32_t i = 0; i < m->object_count; i++)
        if (m->objects[i].type == type) return &m->objects[i];
    return NULL;
}

/* Every message `s` got is within its masks. */
static void check_masks(const Sink *s) {
    for (uint32_t i = 0; i < s->count && i < MAX_MESSAGES; i++) {
        const Message *m = &s->messages[i];
        if (!(m->severity & s->severities) || (m->types & ~s->types)) {
            fprintf(stderr, "FAIL: messenger '%s' (severities 0x%x, types 0x%x) got %s with severity 0x%x, types 0x%x\n", s->name,
                    s->severities, s->types, m->id, m->severity, m->types);
            failures++;
        }
    }
}

/* ------------------------------------------------------------------ debug report */

typedef struct {
    VkDebugReportFlagsEXT flags;
    VkDebugReportObjectTypeEXT type;
    uint64_t object;
    int32_t code;
    enum Phase phase;
    char text[TEXT];
} Report;

typedef struct {
    const char *name;
    VkDebugReportFlagsEXT flags;
    uint32_t count;
    uint32_t others;
    Report reports[MAX_MESSAGES];
} ReportSink;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_report(VkDebugReportFlagsEXT flags, VkDebugReportObjectTypeEXT type, uint64_t object,
                                                size_t location, int32_t code, const char *prefix, const char *message,
                                                void *user) {
    ReportSink *s = user;
    (void)location;
    if (!prefix || strcmp(prefix, "POLYFILL") != 0) {
        s->others++;
        return VK_FALSE;
    }
    if (s->count < MAX_MESSAGES) {
        Report *r = &s->reports[s->count];
        r->flags = flags;
        r->type = type;
        r->object = object;
        r->code = code;
        r->phase = phase;
        copy(r->text, sizeof r->text, message);
    }
    s->count++;
    return VK_FALSE;
}

static VkDebugReportCallbackCreateInfoEXT report_info(ReportSink *s, const void *next) {
    VkDebugReportCallbackCreateInfoEXT ci = {.sType = VK_STRUCTURE_TYPE_DEBUG_REPORT_CALLBACK_CREATE_INFO_EXT};
    ci.pNext = next;
    ci.flags = s->flags;
    ci.pfnCallback = on_report;
    ci.pUserData = s;
    return ci;
}

static void check_report_masks(const ReportSink *s) {
    for (uint32_t i = 0; i < s->count && i < MAX_MESSAGES; i++) {
        if (s->reports[i].flags & ~s->flags) {
            fprintf(stderr, "FAIL: report callback '%s' (flags 0x%x) got flags 0x%x: %s\n", s->name, s->flags, s->reports[i].flags,
                    s->reports[i].text);
            failures++;
        }
    }
}

/* ------------------------------------------------------------------ helpers */

/* messageIdNumber: FNV-1a 32 of pMessageIdName (as the validation layer hashes VUIDs). */
static int32_t fnv1a32(const char *s) {
    uint32_t h = 0x811c9dc5u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x01000193u;
    return (int32_t)h;
}

/* The layer's name for a module without a handle: FNV-1a 64 of its code bytes. */
static void module_name(char *out, size_t size, const uint32_t *words, size_t bytes) {
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < bytes; i++) h = (h ^ (uint8_t)(words[i / 4] >> (8 * (i % 4)))) * 0x100000001b3u;
    snprintf(out, size, "module %016" PRIx64, h);
}

/* ------------------------------------------------------------------ tooling info */

static uint32_t tools(PFN_vkGetPhysicalDeviceToolProperties get, VkPhysicalDevice pd, VkPhysicalDeviceToolProperties **out) {
    uint32_t n = 0;
    CHECK(get(pd, &n, NULL));
    *out = calloc(n ? n : 1, sizeof **out);
    for (uint32_t i = 0; i < n; i++) (*out)[i].sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TOOL_PROPERTIES;
    CHECK(get(pd, &n, *out));
    return n;
}

/* `list` (from `command`) lists the layer once, last, as what it is. */
static void check_tool_list(const char *command, const VkPhysicalDeviceToolProperties *list, uint32_t n) {
    uint32_t ours = 0;
    for (uint32_t i = 0; i < n; i++) {
        printf("%s %u: %s %s (layer '%s', purposes 0x%x)\n", command, i, list[i].name, list[i].version, list[i].layer, list[i].purposes);
        ours += strcmp(list[i].layer, LAYER_NAME) == 0;
    }
    expect(ours == 1, "tooling info lists the layer once");
    if (n == 0) return;
    const VkPhysicalDeviceToolProperties *last = &list[n - 1];
    const VkToolPurposeFlags want = VK_TOOL_PURPOSE_ADDITIONAL_FEATURES_BIT | VK_TOOL_PURPOSE_MODIFYING_FEATURES_BIT;
    expect(strcmp(last->layer, LAYER_NAME) == 0 && strcmp(last->name, "vkpolyfill") == 0, "the layer's entry comes last, after the tools below it");
    expect((last->purposes & want) == want, "the layer's purposes are ADDITIONAL_FEATURES | MODIFYING_FEATURES");
    expect(last->description[0] != '\0' && last->version[0] != '\0', "the layer's entry has a version and a description");
}

static void check_tools(VkInstance instance, VkPhysicalDevice pd) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    expect(props.apiVersion >= VK_API_VERSION_1_3, "the device is Vulkan 1.3 or newer (vkGetPhysicalDeviceToolProperties is core)");
    expect(has_device_extension(pd, VK_EXT_TOOLING_INFO_EXTENSION_NAME), "VK_EXT_tooling_info is listed");
    PFN_vkGetPhysicalDeviceToolProperties core =
        (PFN_vkGetPhysicalDeviceToolProperties)vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceToolProperties");
    PFN_vkGetPhysicalDeviceToolPropertiesEXT alias =
        (PFN_vkGetPhysicalDeviceToolPropertiesEXT)vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceToolPropertiesEXT");
    if (!core || !alias) {
        expect(0, "vkGetInstanceProcAddr gives vkGetPhysicalDeviceToolProperties and its EXT alias");
        return;
    }
    /* The lists may differ in what lies below: VK_LAYER_KHRONOS_validation 1.3.239 answers the
     * EXT alias only (the core command passes it by). */
    VkPhysicalDeviceToolProperties *list;
    uint32_t n = tools(core, pd, &list);
    check_tool_list("tool", list, n);
    free(list);
    n = tools(alias, pd, &list);
    check_tool_list("tool (EXT alias)", list, n);
    free(list);
}

/* ------------------------------------------------------------------ checks on messages */

/* `m` names the device (handle and debug name) and the module by its hash, handle 0. */
static void check_objects(const Message *m, VkDevice device, const char *module) {
    const Object *d = find_object(m, VK_OBJECT_TYPE_DEVICE), *s = find_object(m, VK_OBJECT_TYPE_SHADER_MODULE);
    expect(d && d->handle == (uint64_t)(uintptr_t)device, "pObjects holds the device");
    expect(d && strcmp(d->name, DEVICE_NAME) == 0, "the device in pObjects has the name given by vkSetDebugUtilsObjectNameEXT");
    expect(s && s->handle == 0 && strcmp(s->name, module) == 0, "pObjects holds the module (handle 0, 'module <hash>')");
    if (d) printf("  device: 0x%" PRIx64 " '%s'\n", d->handle, d->name);
    if (s) printf("  module: 0x%" PRIx64 " '%s'\n", s->handle, s->name);
}

static unsigned chained_in(const Sink *s, const ReportSink *r, enum Phase p) {
    unsigned n = 0;
    for (uint32_t i = 0; i < s->count && i < MAX_MESSAGES; i++) n += s->messages[i].phase == p;
    for (uint32_t i = 0; i < r->count && i < MAX_MESSAGES; i++) n += r->reports[i].phase == p;
    return n;
}

#define ALL_SEVERITIES                                                                                                                          \
    (VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | \
     VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
#define ALL_TYPES \
    (VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)
#define ALL_REPORT_FLAGS                                                                                                    \
    (VK_DEBUG_REPORT_INFORMATION_BIT_EXT | VK_DEBUG_REPORT_WARNING_BIT_EXT | VK_DEBUG_REPORT_PERFORMANCE_WARNING_BIT_EXT | \
     VK_DEBUG_REPORT_ERROR_BIT_EXT | VK_DEBUG_REPORT_DEBUG_BIT_EXT)

static Sink chained = {.name = "chained in VkInstanceCreateInfo", .severities = ALL_SEVERITIES, .types = ALL_TYPES};
static Sink all = {.name = "everything", .severities = ALL_SEVERITIES, .types = ALL_TYPES};
/* Performance only: the refusal (VALIDATION) and the rewrite (GENERAL) are excluded by type. */
static Sink performance = {.name = "performance only", .severities = ALL_SEVERITIES, .types = VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT};
/* Warnings and verbose: the refusal (ERROR) and the rewrite (INFO) are excluded by severity. */
static Sink quiet = {.name = "warning and verbose only",
                     .severities = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT,
                     .types = ALL_TYPES};
/* The example: verbose performance messages (the layer has none). */
static Sink verbose_performance = {.name = "verbose performance only",
                                   .severities = VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT,
                                   .types = VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT};
static ReportSink chained_report = {.name = "chained in VkInstanceCreateInfo", .flags = ALL_REPORT_FLAGS};
static ReportSink report_all = {.name = "everything", .flags = ALL_REPORT_FLAGS};
static ReportSink report_warnings = {.name = "warnings only", .flags = VK_DEBUG_REPORT_WARNING_BIT_EXT | VK_DEBUG_REPORT_PERFORMANCE_WARNING_BIT_EXT};

int main(int argc, char **argv) {
    const char *level = NULL, *spv = NULL;
    uint32_t limit = 10;
    int limit_set = 0, settings_struct = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--level") == 0 && i + 1 < argc) {
            level = argv[++i];
        } else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
            limit = (uint32_t)strtoul(argv[++i], NULL, 10);
            limit_set = 1;
        } else if (strcmp(argv[i], "--no-settings-struct") == 0) {
            settings_struct = 0;
        } else {
            spv = argv[i];
        }
    }
    if (!spv) {
        fprintf(stderr, "usage: %s [--level LEVEL] [--limit N] [--no-settings-struct] raw_chain.spv\n", argv[0]);
        return 1;
    }
    const int info = level && (strcmp(level, "info") == 0 || strcmp(level, "debug") == 0);
    const int debug = level && strcmp(level, "debug") == 0;
    size_t size;
    uint32_t *code = read_spirv(spv, &size);

    /* The layer's settings, without VK_EXT_layer_settings in ppEnabledExtensionNames. */
    VkLayerSettingEXT settings[2];
    uint32_t setting_count = 0;
    if (level) settings[setting_count++] = (VkLayerSettingEXT){.pLayerName = LAYER_NAME, .pSettingName = "log_level", .type = VK_LAYER_SETTING_TYPE_STRING_EXT, .valueCount = 1, .pValues = &level};
    if (limit_set) settings[setting_count++] = (VkLayerSettingEXT){.pLayerName = LAYER_NAME, .pSettingName = "duplicate_message_limit", .type = VK_LAYER_SETTING_TYPE_UINT32_EXT, .valueCount = 1, .pValues = &limit};
    VkLayerSettingsCreateInfoEXT layer_settings = {VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT, NULL, setting_count, settings};
    VkDebugReportCallbackCreateInfoEXT chained_report_ci = report_info(&chained_report, setting_count && settings_struct ? &layer_settings : NULL);
    VkDebugUtilsMessengerCreateInfoEXT chained_ci = messenger_info(&chained, &chained_report_ci);

    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_DEBUG_REPORT_EXTENSION_NAME};
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "messages";
    app.apiVersion = VK_API_VERSION_1_3;
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pNext = &chained_ci;
    ici.pApplicationInfo = &app;
    ici.enabledExtensionCount = 2;
    ici.ppEnabledExtensionNames = extensions;
    VkInstance instance;
    CHECK(vkCreateInstance(&ici, NULL, &instance));
    phase = LIVE;

    /* vkCreateInstance, heard by the chained channels. */
    const Message *active = find_id(&chained, "POLYFILL-layer-active", 0);
    printf("layer-active at vkCreateInstance: %u (debug utils), %u (debug report)\n", count_id(&chained, "POLYFILL-layer-active"),
           chained_report.count);
    if (info) {
        expect(count_id(&chained, "POLYFILL-layer-active") == 1, "the chained messenger gets POLYFILL-layer-active once");
        expect(active && active->phase == CREATE, "... during vkCreateInstance");
        expect(active && active->severity == VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT && active->types == VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
               "POLYFILL-layer-active is INFO, GENERAL");
        expect(active && active->number == fnv1a32("POLYFILL-layer-active"), "POLYFILL-layer-active's number is FNV-1a 32 of its name");
        const Object *o = active ? find_object(active, VK_OBJECT_TYPE_INSTANCE) : NULL;
        expect(o && o->handle == (uint64_t)(uintptr_t)instance, "POLYFILL-layer-active names the instance");
        expect(chained_report.count >= 1 && (chained_report.reports[0].flags & VK_DEBUG_REPORT_INFORMATION_BIT_EXT),
               "the chained debug report callback gets POLYFILL-layer-active as INFORMATION");
        if (active) printf("  %s\n", active->text);
    } else {
        expect(chained.count == 0 && chained_report.count == 0, "nothing from the layer at the default log level (warn)");
    }

    PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT");
    PFN_vkCreateDebugReportCallbackEXT create_report =
        (PFN_vkCreateDebugReportCallbackEXT)vkGetInstanceProcAddr(instance, "vkCreateDebugReportCallbackEXT");
    PFN_vkDestroyDebugReportCallbackEXT destroy_report =
        (PFN_vkDestroyDebugReportCallbackEXT)vkGetInstanceProcAddr(instance, "vkDestroyDebugReportCallbackEXT");
    if (!create_messenger || !destroy_messenger || !create_report || !destroy_report) {
        fprintf(stderr, "no debug utils / debug report commands\n");
        return 1;
    }
    Sink *sinks[] = {&all, &performance, &quiet, &verbose_performance};
    VkDebugUtilsMessengerEXT messengers[4];
    for (int i = 0; i < 4; i++) {
        VkDebugUtilsMessengerCreateInfoEXT ci = messenger_info(sinks[i], NULL);
        CHECK(create_messenger(instance, &ci, NULL, &messengers[i]));
    }
    ReportSink *report_sinks[] = {&report_all, &report_warnings};
    VkDebugReportCallbackEXT callbacks[2];
    for (int i = 0; i < 2; i++) {
        VkDebugReportCallbackCreateInfoEXT ci = report_info(report_sinks[i], NULL);
        CHECK(create_report(instance, &ci, NULL, &callbacks[i]));
    }

    /* The device: the first with VK_NV_raw_access_chains (through the layer: every device). */
    uint32_t n = 0;
    CHECK(vkEnumeratePhysicalDevices(instance, &n, NULL));
    VkPhysicalDevice *pds = calloc(n ? n : 1, sizeof *pds);
    CHECK(vkEnumeratePhysicalDevices(instance, &n, pds));
    VkPhysicalDevice pd = VK_NULL_HANDLE;
    for (uint32_t i = 0; i < n && !pd; i++)
        if (has_device_extension(pds[i], VK_NV_RAW_ACCESS_CHAINS_EXTENSION_NAME)) pd = pds[i];
    free(pds);
    if (!pd) {
        fprintf(stderr, "no device lists %s: is the layer enabled?\n", VK_NV_RAW_ACCESS_CHAINS_EXTENSION_NAME);
        return 1;
    }
    check_tools(instance, pd);

    uint32_t family = compute_queue_family(pd);
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkPhysicalDeviceRawAccessChainsFeaturesNV raw = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_RAW_ACCESS_CHAINS_FEATURES_NV, NULL, VK_TRUE};
    const char *device_extensions[] = {VK_NV_RAW_ACCESS_CHAINS_EXTENSION_NAME};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &raw;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = 1;
    dci.ppEnabledExtensionNames = device_extensions;
    VkDevice device;
    CHECK(vkCreateDevice(pd, &dci, NULL, &device));
    PFN_vkSetDebugUtilsObjectNameEXT set_name = (PFN_vkSetDebugUtilsObjectNameEXT)vkGetDeviceProcAddr(device, "vkSetDebugUtilsObjectNameEXT");
    if (!set_name) {
        fprintf(stderr, "no vkSetDebugUtilsObjectNameEXT\n");
        return 1;
    }
    VkDebugUtilsObjectNameInfoEXT name = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT};
    name.objectType = VK_OBJECT_TYPE_DEVICE;
    name.objectHandle = (uint64_t)(uintptr_t)device;
    name.pObjectName = DEVICE_NAME;
    CHECK(set_name(device, &name));

    /* The good module: rewritten. */
    char good_name[64];
    module_name(good_name, sizeof good_name, code, size);
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smci.codeSize = size;
    smci.pCode = code;
    VkShaderModule module;
    CHECK(vkCreateShaderModule(device, &smci, NULL, &module));
    vkDestroyShaderModule(device, module, NULL);
    printf("shader-rewritten: %u\n", count_id(&all, "POLYFILL-shader-rewritten"));
    const Message *rewritten = find_id(&all, "POLYFILL-shader-rewritten", 0);
    if (info) {
        expect(count_id(&all, "POLYFILL-shader-rewritten") == 1, "POLYFILL-shader-rewritten arrives once for the good module");
        expect(rewritten && rewritten->severity == VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT &&
                   rewritten->types == VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
               "POLYFILL-shader-rewritten is INFO, GENERAL");
        expect(rewritten && rewritten->number == fnv1a32("POLYFILL-shader-rewritten"), "POLYFILL-shader-rewritten's number");
        if (rewritten) {
            printf("  %s\n", rewritten->text);
            check_objects(rewritten, device, good_name);
        }
    } else {
        expect(!rewritten, "no POLYFILL-shader-rewritten at the default log level (warn)");
    }

    /* The bad module: cut in the middle of its first OpRawAccessChainNV. */
    size_t words = size / 4, at = 5;
    while (at < words && (code[at] & 0xffffu) != OP_RAW_ACCESS_CHAIN_NV) at += code[at] >> 16 ? code[at] >> 16 : 1;
    if (at + 3 > words) {
        fprintf(stderr, "%s has no OpRawAccessChainNV\n", spv);
        return 1;
    }
    smci.codeSize = (at + 3) * 4;
    char bad_name[64];
    module_name(bad_name, sizeof bad_name, code, smci.codeSize);
    for (uint32_t i = 0; i < REFUSALS; i++) {
        module = VK_NULL_HANDLE;
        VkResult r = vkCreateShaderModule(device, &smci, NULL, &module);
        if (r != VK_ERROR_INVALID_SHADER_NV) {
            fprintf(stderr, "FAIL: the truncated module: vkCreateShaderModule returned %d, not VK_ERROR_INVALID_SHADER_NV\n", r);
            failures++;
            if (r == VK_SUCCESS) vkDestroyShaderModule(device, module, NULL);
        }
        if (i == 0) {
            const Message *refused = find_id(&all, "POLYFILL-shader-refused", 0);
            expect(refused != NULL, "POLYFILL-shader-refused arrives for the truncated module");
            if (refused) {
                printf("shader-refused: %s\n", refused->text);
                expect(refused->severity == VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT, "POLYFILL-shader-refused is ERROR");
                expect(refused->types == VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, "POLYFILL-shader-refused is VALIDATION");
                expect(refused->number == fnv1a32("POLYFILL-shader-refused"), "POLYFILL-shader-refused's number is FNV-1a 32 of its name");
                printf("  messageIdNumber %d\n", refused->number);
                check_objects(refused, device, bad_name);
            }
            const Report *rep = NULL;
            for (uint32_t j = 0; j < report_all.count && j < MAX_MESSAGES && !rep; j++)
                if (report_all.reports[j].code == fnv1a32("POLYFILL-shader-refused")) rep = &report_all.reports[j];
            expect(rep && rep->flags == VK_DEBUG_REPORT_ERROR_BIT_EXT && rep->code == fnv1a32("POLYFILL-shader-refused"),
                   "the debug report callback gets the refusal as ERROR with its number");
            expect(rep && rep->type == VK_DEBUG_REPORT_OBJECT_TYPE_DEVICE_EXT && rep->object == (uint64_t)(uintptr_t)device,
                   "the debug report callback gets the device as the refusal's object");
        }
    }
    /* The duplicate limit: min(REFUSALS, limit) delivered, the last says so. */
    const uint32_t want = limit == 0 || limit > REFUSALS ? REFUSALS : limit;
    const uint32_t got = count_id(&all, "POLYFILL-shader-refused");
    printf("shader-refused delivered: %u of %u (duplicate_message_limit %u)\n", got, REFUSALS, limit);
    expect(got == want, "the messenger gets min(12, duplicate_message_limit) refusals");
    for (uint32_t i = 0; i < got; i++) {
        const Message *m = find_id(&all, "POLYFILL-shader-refused", i);
        const int says = strstr(m->text, "duplicate_message_limit") != NULL;
        const int last = limit != 0 && i + 1 == limit;
        expect(says == last, "only the last refusal delivered says that duplicate_message_limit is reached");
        if (says) printf("  last: %s\n", m->text);
    }
    uint32_t reported = 0;
    for (uint32_t i = 0; i < report_all.count && i < MAX_MESSAGES; i++) reported += report_all.reports[i].code == fnv1a32("POLYFILL-shader-refused");
    expect(reported == want, "the debug report callback gets as many refusals");

    /* The masks. */
    for (int i = 0; i < 4; i++) check_masks(sinks[i]);
    check_report_masks(&report_all);
    check_report_masks(&report_warnings);
    check_masks(&chained);
    check_report_masks(&chained_report);
    for (int i = 1; i < 4; i++) {
        expect(count_id(sinks[i], "POLYFILL-shader-refused") == 0 && count_id(sinks[i], "POLYFILL-shader-rewritten") == 0,
               "messengers whose masks exclude them get no refusal and no rewrite");
        printf("messenger '%s': %u from the layer, %u others\n", sinks[i]->name, sinks[i]->count, sinks[i]->others);
    }
    printf("messenger '%s': %u from the layer, %u others\n", all.name, all.count, all.others);
    printf("report callback '%s': %u from the layer, %u others\n", report_warnings.name, report_warnings.count, report_warnings.others);
    expect(verbose_performance.count == 0, "the verbose-performance messenger gets nothing from the layer");
    expect(debug || quiet.count == 0, "the warning-and-verbose messenger gets nothing from the layer below log_level debug");
    expect(report_warnings.count == 0, "the warnings-only debug report callback gets nothing from the layer");
    for (int i = 0; i < 4; i++) expect(sinks[i]->count <= MAX_MESSAGES, "every message was kept for the checks");
    expect(report_all.count <= MAX_MESSAGES && chained.count <= MAX_MESSAGES, "every report was kept for the checks");

    vkDestroyDevice(device, NULL);
    for (int i = 0; i < 4; i++) destroy_messenger(instance, messengers[i], NULL);
    for (int i = 0; i < 2; i++) destroy_report(instance, callbacks[i], NULL);

    /* The chained channels heard nothing since vkCreateInstance; then vkDestroyInstance. */
    expect(chained_in(&chained, &chained_report, LIVE) == 0, "the chained channels get nothing between vkCreateInstance and vkDestroyInstance");
    phase = DESTROY;
    vkDestroyInstance(instance, NULL);
    const unsigned at_destroy = chained_in(&chained, &chained_report, DESTROY);
    printf("chained channels during vkDestroyInstance: %u\n", at_destroy);
    if (debug && limit == 0) expect(at_destroy > 0, "the chained channels hear vkDestroyInstance (log_level debug)");
    if (!debug) expect(at_destroy == 0, "nothing at vkDestroyInstance below log_level debug");
    free(code);

    if (failures) {
        fprintf(stderr, "messages: %u checks failed\n", failures);
        return 1;
    }
    printf("messages: all checks passed\n");
    return 0;
}
