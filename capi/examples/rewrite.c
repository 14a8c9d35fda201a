/* Rewrites a SPIR-V module through libspirv_polyfill for a device without 16-bit
 * Input/Output storage (lavapipe, NVIDIA, ...):
 *   cc rewrite.c -o rewrite $(pkg-config --cflags --libs spirv_polyfill)
 *   ./rewrite in.spv out.spv */
#include <stdio.h>
#include <stdlib.h>

#include <spirv_polyfill.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IN.spv OUT.spv\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 1;
    static uint32_t words[1 << 20];
    size_t count = fread(words, 4, sizeof words / 4, f);
    fclose(f);

    spvpf_options *options = NULL;
    spvpf_result *result = NULL;
    spvpf_options_create(SPVPF_TARGET_ALL, &options);
    spvpf_options_set_bool(options, "storage_input_output_16", 0);
    spvpf_status status = spvpf_rewrite(options, words, count, &result);
    if (status != SPVPF_SUCCESS) {
        fprintf(stderr, "%s: %s: %s\n", argv[1], spvpf_status_string(status), spvpf_result_message(result));
    } else {
        const uint32_t *out = NULL;
        const char *stats = NULL, *feature = NULL;
        size_t out_count = 0, features = 0;
        spvpf_result_words(result, &out, &out_count);
        spvpf_result_stats_text(result, &stats);
        printf("%s\n", stats);
        spvpf_result_required_feature_count(result, &features);
        for (size_t i = 0; i < features; i++) {
            spvpf_result_required_feature(result, i, &feature);
            printf("needs %s\n", feature);
        }
        FILE *o = fopen(argv[2], "wb");
        if (!o || fwrite(out, 4, out_count, o) != out_count) status = SPVPF_ERROR_INVALID_ARGUMENT;
        if (o) fclose(o);
    }
    spvpf_result_free(result);
    spvpf_options_free(options);
    return status != SPVPF_SUCCESS;
}
