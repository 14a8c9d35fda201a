#!/usr/bin/env bash
# Writes <target-dir>/VkLayer_polyfill_extensions.json next to the built library, with
# library_path "./libVkLayer_polyfill_extensions.so" (relative paths are resolved against the
# manifest's directory by the loader). Then:
#   VK_ADD_LAYER_PATH=<target-dir> VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions <app>
# Usage: packaging/make-manifest.sh <target-dir> [--implicit]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
if [[ $# -lt 1 ]]; then
    echo "usage: $0 <target-dir> [--implicit]" >&2
    exit 2
fi
dir="$1"
template="$repo/manifest/VkLayer_polyfill_extensions.json.in"
if [[ "${2:-}" == "--implicit" ]]; then
    template="$repo/manifest/VkLayer_polyfill_extensions_implicit.json.in"
fi
mkdir -p "$dir"
out="$dir/VkLayer_polyfill_extensions.json"
sed 's|@LIBRARY_PATH@|./libVkLayer_polyfill_extensions.so|' "$template" > "$out"
python3 -m json.tool "$out" > /dev/null
if [[ ! -f "$dir/libVkLayer_polyfill_extensions.so" ]]; then
    echo "note: $dir/libVkLayer_polyfill_extensions.so does not exist (yet)" >&2
fi
echo "$out"
