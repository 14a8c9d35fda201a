#!/usr/bin/env bash
# Performance benchmarks. Builds the workspace in release mode (the end-to-end benches load
# target/release/libVkLayer_polyfill_extensions.so through the real Vulkan loader), then runs:
#   1. cargo bench -p shader-rewrite --bench rewrite      (criterion: rewrite time per module)
#   2. cargo bench -p polyfill-e2e   --bench kernels      (emulated vs hand-written kernels on lavapipe)
#   3. cargo bench -p polyfill-e2e   --bench passthrough  (layer cost on modules/commands it does not touch)
#   4. cargo bench -p polyfill-e2e   --bench storage16    (emulated vs native 16-bit storage-buffer kernels)
#   5. cargo bench -p polyfill-e2e   --bench bindless_binds (draw-heavy recording with the bindless table)
#   6. cargo bench -p polyfill-e2e   --bench bda          (emulated vs native buffer device addresses)
#   7. cargo bench -p rewrite-vs-spirv-tools              (rewrite vs SPIRV-Tools' parse+emit round trip)
#   8. cargo bench -p shader-rewrite --bench first_call   (first rewrite in fresh processes)
#   9. cargo bench -p polyfill-e2e   --bench corpus_pipelines (lavapipe compile time of the rewritten corpus)
# Every figure is printed; nothing is asserted (the e2e benches print ratios beside their targets).
# Each e2e bench interleaves the compared cases in one process, so ratios hold under background
# load, but absolute times do not: run on an otherwise idle machine for meaningful numbers.
#
#   BENCH_ONLY="rewrite kernels passthrough storage16 bindless_binds bda vs_spirv_tools first_call corpus_pipelines"
#                                                                          run a subset
#   KERNELS_* / PASSTHROUGH_* / STORAGE16_* variables   see tests/benches/*.rs
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v cargo >/dev/null 2>&1; then . "$HOME/.cargo/env"; fi

# Settings from the caller's environment would change what the layer does.
for v in $(env | sed -n 's/^\(VK_POLYFILL_EXTENSIONS_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset VK_INSTANCE_LAYERS VK_LOADER_LAYERS_ENABLE VK_LAYER_SETTINGS_PATH || true

only="${BENCH_ONLY:-rewrite kernels passthrough storage16 bindless_binds bda vs_spirv_tools first_call corpus_pipelines}"
want() { [[ " $only " == *" $1 "* ]]; }

echo "[bench] $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "[bench] cargo build --release -p vk-layer-polyfill-extensions -p shader-rewrite"
cargo build --release -p vk-layer-polyfill-extensions -p shader-rewrite

status=0
run() {
    echo
    echo "[bench] $*"
    local start=$(date +%s)
    "$@" || { echo "[bench] FAILED ($?): $*"; status=1; }
    echo "[bench] ($(( $(date +%s) - start ))s)"
}
want rewrite && run cargo bench -p shader-rewrite --bench rewrite
want kernels && run cargo bench -p polyfill-e2e --bench kernels
want passthrough && run cargo bench -p polyfill-e2e --bench passthrough
want storage16 && run cargo bench -p polyfill-e2e --bench storage16
want bindless_binds && run cargo bench -p polyfill-e2e --bench bindless_binds
want bda && run cargo bench -p polyfill-e2e --bench bda
want vs_spirv_tools && run cargo bench -p rewrite-vs-spirv-tools --bench vs_spirv_tools
want first_call && run cargo bench -p shader-rewrite --bench first_call
want corpus_pipelines && run cargo bench -p polyfill-e2e --bench corpus_pipelines
echo
echo "[bench] done, exit status $status"
exit $status
