#!/usr/bin/env bash
# Writes <dir>/VkLayer_polyfill_extensions.json, the layer's manifest. By default library_path is
# "./libVkLayer_polyfill_extensions.so" (relative paths are resolved against the manifest's
# directory by the loader), for a manifest next to the built library. Then:
#   VK_ADD_LAYER_PATH=<dir> VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions <app>
#   --implicit            the implicit layer's manifest (enabled by VK_POLYFILL_EXTENSIONS_ENABLE=1)
#   --library-path PATH   write PATH as library_path (an absolute path for a manifest installed
#                         apart from the library: install-layer.sh --system, packaging/deb.sh)
# Usage: packaging/make-manifest.sh <dir> [--implicit] [--library-path PATH]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
usage() { echo "usage: $0 <dir> [--implicit] [--library-path PATH]" >&2; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
dir="$1"
shift
template="$repo/manifest/VkLayer_polyfill_extensions.json.in"
library_path=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --implicit) template="$repo/manifest/VkLayer_polyfill_extensions_implicit.json.in" ;;
        --library-path) library_path="${2:?--library-path needs a path}"; shift ;;
        *) usage ;;
    esac
    shift
done
mkdir -p "$dir"
out="$dir/VkLayer_polyfill_extensions.json"
sed "s|@LIBRARY_PATH@|${library_path:-./libVkLayer_polyfill_extensions.so}|" "$template" > "$out"
python3 -m json.tool "$out" > /dev/null
if [[ -z $library_path && ! -f "$dir/libVkLayer_polyfill_extensions.so" ]]; then
    echo "note: $dir/libVkLayer_polyfill_extensions.so does not exist (yet)" >&2
fi
echo "$out"
