#!/usr/bin/env bash
# Builds the layer (release) and installs library + manifest.
#   (default)  ~/.local/share/vulkan/explicit_layer.d/{libVkLayer_polyfill_extensions.so,
#              VkLayer_polyfill_extensions.json}  (library_path "./libVkLayer_polyfill_extensions.so")
#   --system   /usr/local/lib/libVkLayer_polyfill_extensions.so +
#              /usr/local/share/vulkan/explicit_layer.d/VkLayer_polyfill_extensions.json
#              (absolute library_path)
#   --implicit implicit_layer.d instead of explicit_layer.d; the layer is then off unless
#              VK_POLYFILL_EXTENSIONS_ENABLE=1 (and VK_POLYFILL_EXTENSIONS_DISABLE=1 turns it off).
#   --lib FILE install this already-built library instead of building one (packagers, tests)
# Usage: packaging/install-layer.sh [--system] [--implicit] [--lib FILE]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
system=0
implicit=0
built=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --system) system=1 ;;
        --implicit) implicit=1 ;;
        --lib) built="${2:?--lib needs a file}"; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

lib_name=libVkLayer_polyfill_extensions.so
json_name=VkLayer_polyfill_extensions.json
kind=explicit_layer.d
template="$repo/manifest/VkLayer_polyfill_extensions.json.in"
if [[ $implicit == 1 ]]; then
    kind=implicit_layer.d
    template="$repo/manifest/VkLayer_polyfill_extensions_implicit.json.in"
fi

if [[ -z $built ]]; then
    (cd "$repo" && cargo build --release -p vk-layer-polyfill-extensions)
    target_dir="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
    built="$target_dir/release/$lib_name"
fi
[[ -f "$built" ]] || { echo "build output $built not found" >&2; exit 1; }

if [[ $system == 1 ]]; then
    manifest_dir=/usr/local/share/vulkan/$kind
    lib_dir=/usr/local/lib
    library_path="$lib_dir/$lib_name"
else
    manifest_dir="${XDG_DATA_HOME:-$HOME/.local/share}/vulkan/$kind"
    lib_dir="$manifest_dir"
    library_path="./$lib_name"
fi
mkdir -p "$manifest_dir" "$lib_dir"
install -m 0755 "$built" "$lib_dir/$lib_name"
tmp="$(mktemp)"
sed "s|@LIBRARY_PATH@|$library_path|" "$template" > "$tmp"
python3 -m json.tool "$tmp" > /dev/null
install -m 0644 "$tmp" "$manifest_dir/$json_name"
rm -f "$tmp"
echo "installed $lib_dir/$lib_name"
echo "installed $manifest_dir/$json_name"
if [[ $implicit == 1 ]]; then
    echo "enable with VK_POLYFILL_EXTENSIONS_ENABLE=1"
else
    echo "enable with VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions (or VK_LOADER_LAYERS_ENABLE='*polyfill*')"
fi
