/* C tests of libspirv_polyfill, built and run by capi/tests/c_api.rs.
 *
 *   test_capi api                 the API's contract: NULLs, zero sizes, bad integers, unknown
 *                                 options, malformed modules, messages, locations, versions
 *   test_capi corpus MANIFEST     rewrite every case MANIFEST lists and compare with the Rust
 *                                 API's output, byte for byte; then all of them again from 4
 *                                 threads at once with shared options objects
 *   test_capi bda MODULE          a module using PhysicalStorageBuffer pointers (and no Int64):
 *                                 declared, left alone without the bda_* options, lowered onto
 *                                 the table they name with them, and the features each output
 *                                 needs
 *
 * MANIFEST lines: TARGET OPTIONS INPUT STATUS EXPECTED TEXT
 *   TARGET    all | core
 *   OPTIONS   - | comma-separated b:NAME=VALUE (spvpf_options_set_bool) / u:NAME=VALUE (_set_uint)
 *   INPUT     the module (.spv)
 *   STATUS    the spvpf_status the Rust API's outcome maps to
 *   EXPECTED  the Rust API's words (.spv), or - for an error
 *   TEXT      a file holding the Rust API's stats line (success) or error message (failure):
 *             the C API's stats text must equal it; its message must start with it
 * Prints one line per failure and a summary; exits 0 only when everything passed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spirv_polyfill.h"

static int failures;
static int checks;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        checks++;                                                          \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

/* ------------------------------------------------------------------ files */

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    /* +4 and zeroed: a text file read this way is NUL-terminated. */
    char *buf = calloc(1, (size_t)n + 4);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* ------------------------------------------------------------------ api */

/* A library module that declares RawAccessChainsNV and does nothing with it (valid input). */
static const uint32_t raw_module[] = {
    0x07230203, 0x00010300, 0, 10, 0,
    0x00020011, 1,          /* OpCapability Shader */
    0x00020011, 5,          /* OpCapability Linkage (a module without entry points) */
    0x00020011, 5414,       /* OpCapability RawAccessChainsNV */
    0x0003000e, 0, 1,       /* OpMemoryModel Logical GLSL450 */
};

static void test_version_and_status(void) {
    uint32_t major = 99, minor = 99, patch = 99;
    CHECK(spvpf_get_version(&major, &minor, &patch) == SPVPF_SUCCESS, "get_version");
    CHECK(major == SPVPF_VERSION_MAJOR && minor == SPVPF_VERSION_MINOR && patch == SPVPF_VERSION_PATCH,
          "run-time version %u.%u.%u differs from the header's", major, minor, patch);
    CHECK(spvpf_get_version(NULL, &minor, &patch) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL major");
    CHECK(strcmp(spvpf_status_string(SPVPF_SUCCESS), "success") == 0, "status string");
    CHECK(strcmp(spvpf_status_string(12345), "unknown status") == 0, "unknown status string");
    CHECK(strcmp(spvpf_status_string(-1), "unknown status") == 0, "negative status string");
}

static void test_options(void) {
    spvpf_options *o = NULL;
    CHECK(spvpf_options_create(2, &o) == SPVPF_ERROR_INVALID_ARGUMENT && o == NULL, "target 2 is out of range");
    CHECK(spvpf_options_create(0xffffffffu, &o) == SPVPF_ERROR_INVALID_ARGUMENT, "target ~0 is out of range");
    CHECK(spvpf_options_create(SPVPF_TARGET_ALL, NULL) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL out_options");
    CHECK(spvpf_options_create(SPVPF_TARGET_CORE, &o) == SPVPF_SUCCESS && o, "create core");

    CHECK(spvpf_option_is_known("storage_buffer_16bit") == SPVPF_SUCCESS, "known option");
    CHECK(spvpf_option_is_known("oob_poison") == SPVPF_SUCCESS, "known uint option");
    CHECK(spvpf_option_is_known("no_such_option") == SPVPF_ERROR_UNKNOWN_OPTION, "unknown option");
    CHECK(spvpf_option_is_known(NULL) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL name");

    CHECK(strcmp(spvpf_options_last_error(o), "") == 0, "no error yet");
    CHECK(spvpf_options_set_bool(o, "storage_buffer_16bit", 1) == SPVPF_SUCCESS, "set bool");
    CHECK(spvpf_options_set_bool(o, "no_such_option", 1) == SPVPF_ERROR_UNKNOWN_OPTION, "set unknown");
    CHECK(strstr(spvpf_options_last_error(o), "no_such_option") != NULL, "message names the option: %s",
          spvpf_options_last_error(o));
    CHECK(spvpf_options_set_bool(o, "int64", 2) == SPVPF_ERROR_INVALID_ARGUMENT, "bool takes 0/1");
    CHECK(spvpf_options_set_uint(o, "int64", 1) == SPVPF_ERROR_INVALID_ARGUMENT, "int64 is a bool");
    CHECK(spvpf_options_set_bool(o, "oob_poison", 1) == SPVPF_ERROR_INVALID_ARGUMENT, "oob_poison is a uint");
    CHECK(strstr(spvpf_options_last_error(o), "spvpf_options_set_uint") != NULL, "says which setter: %s",
          spvpf_options_last_error(o));
    CHECK(spvpf_options_set_uint(o, "oob_poison", 256) == SPVPF_ERROR_INVALID_ARGUMENT, "poison is a byte");
    CHECK(spvpf_options_set_uint(o, "oob_poison", 0xAB) == SPVPF_SUCCESS, "poison 0xAB");
    CHECK(spvpf_options_set_uint(o, "oob_poison", SPVPF_OOB_POISON_OFF) == SPVPF_SUCCESS, "poison off");
    CHECK(spvpf_options_set_uint(o, "bindless_samplers_count", 0) == SPVPF_ERROR_INVALID_ARGUMENT, "count 0");
    CHECK(spvpf_options_set_uint(o, "bindless_set", 3) == SPVPF_SUCCESS, "bindless set");
    CHECK(spvpf_option_is_known("bda_set") == SPVPF_SUCCESS && spvpf_option_is_known("bda_binding") == SPVPF_SUCCESS &&
              spvpf_option_is_known("bda_count") == SPVPF_SUCCESS, "buffer-device-address options");
    CHECK(spvpf_options_set_bool(o, "bda_set", 1) == SPVPF_ERROR_INVALID_ARGUMENT, "bda_set is a uint");
    CHECK(spvpf_options_set_uint(o, "bda_count", 0) == SPVPF_ERROR_INVALID_ARGUMENT, "bda_count 0");
    CHECK(spvpf_options_set_uint(o, "bda_count", (1u << 24) + 1) == SPVPF_ERROR_INVALID_ARGUMENT,
          "more slots than the address holds");
    CHECK(strstr(spvpf_options_last_error(o), "bda_count") != NULL, "message: %s", spvpf_options_last_error(o));
    CHECK(spvpf_options_set_uint(o, "bda_count", 1u << 24) == SPVPF_SUCCESS, "2^24 slots");
    CHECK(spvpf_options_set_uint(o, "bda_set", 3) == SPVPF_SUCCESS, "bda set");
    CHECK(spvpf_options_set_bool(NULL, "int8", 1) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL options");
    CHECK(spvpf_options_set_bool(o, NULL, 1) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL name");
    CHECK(spvpf_options_set_uint(o, "\xff\xfe", 1) == SPVPF_ERROR_INVALID_ARGUMENT, "not UTF-8");
    CHECK(strcmp(spvpf_options_last_error(NULL), "") == 0, "last error of NULL");
    spvpf_options_free(o);
    spvpf_options_free(NULL);
}

static void test_scan_and_arguments(void) {
    spvpf_options *o = NULL;
    spvpf_result *r = NULL;
    uint32_t mask = 0, needed = 7;
    spvpf_options_create(SPVPF_TARGET_ALL, &o);
    size_t n = sizeof raw_module / 4;

    CHECK(spvpf_scan(raw_module, n, &r) == SPVPF_SUCCESS, "scan: %s", spvpf_result_message(r));
    CHECK(spvpf_result_declared(r, &mask) == SPVPF_SUCCESS && mask == SPVPF_DECLARES_RAW_ACCESS_CHAINS,
          "declared %#x", mask);
    const uint32_t *words = NULL;
    size_t count = 0;
    CHECK(spvpf_result_words(r, &words, &count) == SPVPF_ERROR_NOT_AVAILABLE, "a scan has no words");
    CHECK(spvpf_result_declared(r, NULL) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL out_mask");
    CHECK(spvpf_result_declared(NULL, &mask) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL result");
    spvpf_result_free(r);

    CHECK(spvpf_needs_rewrite(o, raw_module, n, &needed) == SPVPF_SUCCESS && needed == 1, "needs rewrite");
    CHECK(spvpf_options_set_bool(o, "emulate_raw_access_chains", 0) == SPVPF_SUCCESS, "off");
    CHECK(spvpf_needs_rewrite(o, raw_module, n, &needed) == SPVPF_SUCCESS && needed == 0, "no longer");
    CHECK(spvpf_needs_rewrite(o, raw_module, n, NULL) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL out_needed");
    CHECK(spvpf_needs_rewrite(NULL, raw_module, n, &needed) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL options");

    /* Bad arguments: an error status, and a result holding the reason. */
    r = NULL;
    CHECK(spvpf_scan(NULL, n, &r) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL words");
    CHECK(r && strstr(spvpf_result_message(r), "NULL"), "message: %s", spvpf_result_message(r));
    spvpf_result_free(r);
    r = NULL;
    CHECK(spvpf_rewrite(o, raw_module, 0, &r) == SPVPF_ERROR_INVALID_ARGUMENT, "zero words");
    CHECK(r && strstr(spvpf_result_message(r), "0"), "message: %s", spvpf_result_message(r));
    spvpf_result_free(r);
    r = NULL;
    CHECK(spvpf_rewrite(NULL, raw_module, n, &r) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL options");
    spvpf_result_free(r);
    CHECK(spvpf_rewrite(o, raw_module, n, NULL) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL out_result");
    r = NULL;
    CHECK(spvpf_rewrite(o, (const uint32_t *)((const char *)raw_module + 1), n - 1, &r) ==
              SPVPF_ERROR_INVALID_ARGUMENT, "misaligned words");
    spvpf_result_free(r);
    CHECK(spvpf_needs_rewrite(o, raw_module, 0, &needed) == SPVPF_ERROR_INVALID_ARGUMENT, "zero words");
    spvpf_options_free(o);
}

static void test_malformed(void) {
    spvpf_options *o = NULL;
    spvpf_result *r = NULL;
    spvpf_options_create(SPVPF_TARGET_CORE, &o);
    uint32_t bad_magic[] = {0x12345678, 0x00010000, 0, 10, 0};
    CHECK(spvpf_rewrite(o, bad_magic, 5, &r) == SPVPF_ERROR_MALFORMED, "bad magic");
    CHECK(strstr(spvpf_result_message(r), "magic") != NULL, "message: %s", spvpf_result_message(r));
    uint32_t at = 0, word = 0, opcode = 0;
    CHECK(spvpf_result_error_location(r, &at, &word, &opcode) == SPVPF_ERROR_NOT_AVAILABLE, "no location in a header");
    spvpf_result_free(r);

    /* Truncated: the third capability says 6 words where 5 are left. */
    uint32_t truncated[sizeof raw_module / 4];
    memcpy(truncated, raw_module, sizeof raw_module);
    truncated[9] = 0x00060011;
    r = NULL;
    spvpf_status s = spvpf_rewrite(o, truncated, sizeof truncated / 4, &r);
    CHECK(s == SPVPF_ERROR_MALFORMED, "truncated: %s", spvpf_status_string(s));
    CHECK(strlen(spvpf_result_message(r)) > 0, "has a message");
    CHECK(spvpf_result_error_location(r, &at, &word, &opcode) == SPVPF_SUCCESS, "location: %s",
          spvpf_result_message(r));
    CHECK(at == 2 && word == 9 && opcode == 17, "instruction %u at word %u, opcode %u", at, word, opcode);
    CHECK(strstr(spvpf_result_message(r), "instruction 2 at word 9, OpCapability") != NULL, "message: %s",
          spvpf_result_message(r));
    CHECK(spvpf_result_error_location(r, NULL, &word, &opcode) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL index");
    const char *text = NULL;
    CHECK(spvpf_result_stats_text(r, &text) == SPVPF_ERROR_NOT_AVAILABLE, "a failure has no stats");
    size_t features = 0;
    CHECK(spvpf_result_required_feature_count(r, &features) == SPVPF_ERROR_NOT_AVAILABLE, "nor features");
    spvpf_result_free(r);

    /* Every truncation of a module with a raw chain: unchanged (nothing left to lower) or a
     * malformed-module error with a message; never a crash. */
    for (size_t len = 1; len < sizeof raw_module / 4; len++) {
        r = NULL;
        s = spvpf_rewrite(o, raw_module, len, &r);
        CHECK(s == SPVPF_SUCCESS || (s == SPVPF_ERROR_MALFORMED && strlen(spvpf_result_message(r)) > 0),
              "%zu words: %s", len, spvpf_status_string(s));
        spvpf_result_free(r);
    }
    spvpf_options_free(o);
}

static void test_rewrite_report(void) {
    spvpf_options *o = NULL;
    spvpf_result *r = NULL;
    spvpf_options_create(SPVPF_TARGET_ALL, &o);
    CHECK(spvpf_rewrite(o, raw_module, sizeof raw_module / 4, &r) == SPVPF_SUCCESS, "%s", spvpf_result_message(r));
    const uint32_t *words = NULL;
    size_t count = 0;
    CHECK(spvpf_result_words(r, &words, &count) == SPVPF_SUCCESS && count > 5 && words[0] == 0x07230203, "words");
    for (size_t i = 5; i + 1 < count; i += words[i] >> 16)
        CHECK(!((words[i] & 0xffff) == 17 && words[i + 1] == 5414), "RawAccessChainsNV left in the output");
    CHECK(strcmp(spvpf_result_message(r), "") == 0, "no message on success");
    uint32_t v = 99;
    CHECK(spvpf_result_stat(r, "raw_chains", &v) == SPVPF_SUCCESS && v == 0, "raw_chains %u", v);
    CHECK(spvpf_result_stat(r, "no_such_stat", &v) == SPVPF_ERROR_UNKNOWN_OPTION, "unknown stat");
    CHECK(spvpf_result_stat(r, NULL, &v) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL stat name");
    const char *name = NULL;
    uint32_t listed = 0;
    while (spvpf_stat_name(listed, &name) == SPVPF_SUCCESS) {
        CHECK(spvpf_result_stat(r, name, &v) == SPVPF_SUCCESS, "listed stat %s reads", name);
        listed++;
    }
    CHECK(listed >= 22, "%u statistics listed", listed);
    CHECK(spvpf_stat_name(0, NULL) == SPVPF_ERROR_INVALID_ARGUMENT, "NULL out_name");
    size_t n = 0;
    CHECK(spvpf_result_required_feature_count(r, &n) == SPVPF_SUCCESS, "feature count");
    CHECK(spvpf_result_required_feature(r, n, &name) == SPVPF_ERROR_INVALID_ARGUMENT, "index past the end");
    for (size_t i = 0; i < n; i++)
        CHECK(spvpf_result_required_feature(r, i, &name) == SPVPF_SUCCESS && strcmp(name, "shaderRawAccessChains") != 0,
              "the output needs no raw access chains");
    spvpf_result_free(r);
    spvpf_options_free(o);
}

/* ------------------------------------------------------------------ buffer device addresses */

/* Does the module declare OpCapability `cap`? Does it decorate anything with DescriptorSet
 * `set` and with Binding `binding`? */
static int declares(const uint32_t *w, size_t n, uint32_t cap) {
    for (size_t i = 5; i + 1 < n && (w[i] >> 16); i += w[i] >> 16)
        if ((w[i] & 0xffff) == 17 && w[i + 1] == cap) return 1;
    return 0;
}

static int decorated(const uint32_t *w, size_t n, uint32_t decoration, uint32_t value) {
    for (size_t i = 5; i + 3 < n && (w[i] >> 16); i += w[i] >> 16)
        if ((w[i] & 0xffff) == 71 && (w[i] >> 16) == 4 && w[i + 2] == decoration && w[i + 3] == value) return 1;
    return 0;
}

/* Is `feature` among the result's required features? */
static int requires(const spvpf_result *r, const char *feature) {
    size_t n = 0;
    const char *name = NULL;
    if (spvpf_result_required_feature_count(r, &n) != SPVPF_SUCCESS) return -1;
    for (size_t i = 0; i < n; i++)
        if (spvpf_result_required_feature(r, i, &name) == SPVPF_SUCCESS && strcmp(name, feature) == 0) return 1;
    return 0;
}

static void test_bda(const char *path) {
    size_t size = 0;
    uint32_t *module = read_file(path, &size);
    CHECK(module != NULL && size > 20, "cannot read %s", path);
    if (!module) return;
    size_t n = size / 4;
    spvpf_result *r = NULL;
    uint32_t mask = 0, needed = 9, v = 0;
    CHECK(spvpf_scan(module, n, &r) == SPVPF_SUCCESS, "scan: %s", spvpf_result_message(r));
    CHECK(spvpf_result_declared(r, &mask) == SPVPF_SUCCESS && mask == SPVPF_DECLARES_PHYSICAL_STORAGE_BUFFER,
          "declared %#x", mask);
    spvpf_result_free(r);

    /* No table: the module needs nothing and comes back unchanged, needing bufferDeviceAddress. */
    spvpf_options *o = NULL;
    spvpf_options_create(SPVPF_TARGET_ALL, &o);
    CHECK(spvpf_needs_rewrite(o, module, n, &needed) == SPVPF_SUCCESS && needed == 0, "needed %u without a table", needed);
    r = NULL;
    CHECK(spvpf_rewrite(o, module, n, &r) == SPVPF_SUCCESS, "%s", spvpf_result_message(r));
    const uint32_t *out = NULL;
    size_t count = 0;
    CHECK(spvpf_result_words(r, &out, &count) == SPVPF_SUCCESS && count == n && memcmp(out, module, size) == 0,
          "unchanged without a table");
    CHECK(requires(r, "bufferDeviceAddress") == 1, "the input needs bufferDeviceAddress");
    CHECK(spvpf_result_declared(r, &mask) == SPVPF_SUCCESS && mask == SPVPF_DECLARES_PHYSICAL_STORAGE_BUFFER,
          "declared %#x", mask);
    spvpf_result_free(r);

    /* With the table, on targets with and without int64 (addresses are uvec2 on both). */
    for (uint32_t int64 = 0; int64 < 2; int64++) {
        CHECK(spvpf_options_set_bool(o, "int64", int64) == SPVPF_SUCCESS, "int64");
        CHECK(spvpf_options_set_uint(o, "bda_set", 5) == SPVPF_SUCCESS, "bda_set");
        CHECK(spvpf_options_set_uint(o, "bda_binding", 2) == SPVPF_SUCCESS, "bda_binding");
        CHECK(spvpf_options_set_uint(o, "bda_count", 1024) == SPVPF_SUCCESS, "bda_count");
        CHECK(spvpf_needs_rewrite(o, module, n, &needed) == SPVPF_SUCCESS && needed == 1, "needed %u with a table", needed);
        r = NULL;
        CHECK(spvpf_rewrite(o, module, n, &r) == SPVPF_SUCCESS, "int64=%u: %s", int64, spvpf_result_message(r));
        CHECK(spvpf_result_words(r, &out, &count) == SPVPF_SUCCESS, "words");
        CHECK(!declares(out, count, 5347), "PhysicalStorageBufferAddresses left in the output");
        CHECK(decorated(out, count, 34, 5) && decorated(out, count, 33, 2), "the table is not at set 5, binding 2");
        CHECK(!declares(out, count, 11), "Int64 declared for the addresses (int64=%u)", int64);
        CHECK(spvpf_result_stat(r, "physical_loads", &v) == SPVPF_SUCCESS && v > 0, "physical_loads %u", v);
        CHECK(spvpf_result_stat(r, "physical_stores", &v) == SPVPF_SUCCESS && v > 0, "physical_stores %u", v);
        CHECK(requires(r, "bufferDeviceAddress") == 0, "the output needs no bufferDeviceAddress");
        CHECK(requires(r, "shaderStorageBufferArrayNonUniformIndexing") == 1, "the output indexes the table non-uniformly");
        CHECK(requires(r, "shaderInt64") == 0, "shaderInt64 required (int64=%u)", int64);
        spvpf_result_free(r);
    }
    spvpf_options_free(o);
    free(module);
}

/* ------------------------------------------------------------------ corpus */

typedef struct {
    char target[8], options[512], input[1024], expected[1024], text[1024];
    int status;
    int announce; /* print the message of an expected error (the first run only) */
    uint32_t *words;
    size_t word_count;
    spvpf_options *opts;
} test_case;

static int apply_options(spvpf_options *o, char *list) {
    if (strcmp(list, "-") == 0) return 1;
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || item[1] != ':') return 0;
        *eq = 0;
        uint32_t value = (uint32_t)strtoul(eq + 1, NULL, 0);
        spvpf_status s = item[0] == 'b' ? spvpf_options_set_bool(o, item + 2, value)
                                        : spvpf_options_set_uint(o, item + 2, value);
        CHECK(s == SPVPF_SUCCESS, "option %s: %s", item + 2, spvpf_options_last_error(o));
    }
    return 1;
}

/* Rewrites one case and compares with the Rust API; returns 1 when it matched. */
static int run_case(const test_case *c) {
    spvpf_result *r = NULL;
    spvpf_status s = spvpf_rewrite(c->opts, c->words, c->word_count, &r);
    size_t text_size = 0;
    char *text = read_file(c->text, &text_size);
    int ok = (int)s == c->status && text != NULL;
    if (ok && s == SPVPF_SUCCESS) {
        size_t expected_size = 0;
        uint32_t *expected = read_file(c->expected, &expected_size);
        const uint32_t *words = NULL;
        size_t count = 0;
        const char *stats = NULL;
        ok = expected && spvpf_result_words(r, &words, &count) == SPVPF_SUCCESS && count * 4 == expected_size &&
             memcmp(words, expected, expected_size) == 0 && spvpf_result_stats_text(r, &stats) == SPVPF_SUCCESS &&
             strcmp(stats, text) == 0;
        free(expected);
    } else if (ok) {
        ok = strncmp(spvpf_result_message(r), text, strlen(text)) == 0;
        if (ok && c->announce) printf("error case %s: %s\n", c->input, spvpf_result_message(r));
    }
    if (!ok)
        fprintf(stderr, "FAIL %s (%s %s): status %d (want %d): %s\n", c->input, c->target, c->options, (int)s,
                c->status, spvpf_result_message(r));
    free(text);
    spvpf_result_free(r);
    return ok;
}

#define THREADS 4
static test_case *cases;
static size_t case_count;

static void *thread_main(void *arg) {
    size_t t = (size_t)arg;
    size_t *bad = calloc(1, sizeof *bad);
    for (size_t round = 0; round < 3; round++)
        for (size_t i = t; i < case_count; i += 1 + t % 2) /* overlapping subsets */
            *bad += !run_case(&cases[i]);
    return bad;
}

static void test_corpus(const char *manifest) {
    FILE *f = fopen(manifest, "r");
    CHECK(f != NULL, "cannot open %s", manifest);
    if (!f) return;
    char line[4096];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        if (case_count == cap) cases = realloc(cases, (cap = cap * 2 + 16) * sizeof *cases);
        test_case *c = &cases[case_count];
        memset(c, 0, sizeof *c);
        if (sscanf(line, "%7s %511s %1023s %d %1023s %1023s", c->target, c->options, c->input, &c->status,
                   c->expected, c->text) != 6) {
            CHECK(0, "bad manifest line: %s", line);
            continue;
        }
        size_t size = 0;
        c->words = read_file(c->input, &size);
        c->word_count = size / 4;
        CHECK(c->words != NULL, "cannot read %s", c->input);
        char list[512];
        strcpy(list, c->options);
        CHECK(spvpf_options_create(strcmp(c->target, "core") == 0 ? SPVPF_TARGET_CORE : SPVPF_TARGET_ALL,
                                   &c->opts) == SPVPF_SUCCESS, "options");
        CHECK(apply_options(c->opts, list), "bad options %s", c->options);
        if (c->words) case_count++;
        else spvpf_options_free(c->opts);
    }
    fclose(f);
    CHECK(case_count > 0, "no cases in %s", manifest);
    size_t matched = 0;
    for (size_t i = 0; i < case_count; i++) {
        cases[i].announce = 1;
        int ok = run_case(&cases[i]);
        cases[i].announce = 0;
        CHECK(ok, "case %zu", i);
        matched += (size_t)ok;
    }
    printf("corpus: %zu/%zu cases identical to the Rust API\n", matched, case_count);

    pthread_t threads[THREADS];
    for (size_t t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, thread_main, (void *)t);
    size_t concurrent_bad = 0;
    for (size_t t = 0; t < THREADS; t++) {
        void *bad = NULL;
        pthread_join(threads[t], &bad);
        concurrent_bad += *(size_t *)bad;
        free(bad);
    }
    CHECK(concurrent_bad == 0, "%zu mismatches from %d threads", concurrent_bad, THREADS);
    printf("corpus: again from %d threads sharing the options objects: %zu mismatches\n", THREADS, concurrent_bad);
    for (size_t i = 0; i < case_count; i++) {
        free(cases[i].words);
        spvpf_options_free(cases[i].opts);
    }
    free(cases);
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "api") == 0) {
        test_version_and_status();
        test_options();
        test_scan_and_arguments();
        test_malformed();
        test_rewrite_report();
    } else if (argc >= 3 && strcmp(argv[1], "corpus") == 0) {
        test_corpus(argv[2]);
    } else if (argc >= 3 && strcmp(argv[1], "bda") == 0) {
        test_bda(argv[2]);
    } else {
        fprintf(stderr, "usage: test_capi api | test_capi corpus MANIFEST | test_capi bda MODULE\n");
        return 2;
    }
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}
