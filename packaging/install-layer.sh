#!/usr/bin/env bash
# Builds the layer (release) and installs library + manifest (the library stripped of its debug
# information unless --no-strip).
#   (default)     ~/.local/share/vulkan/explicit_layer.d/{libVkLayer_polyfill_extensions.so,
#                 VkLayer_polyfill_extensions.json}  (library_path "./libVkLayer_polyfill_extensions.so")
#   --system      /usr/local/lib/libVkLayer_polyfill_extensions.so +
#                 /usr/local/share/vulkan/explicit_layer.d/VkLayer_polyfill_extensions.json
#                 (absolute library_path); the same as --prefix /usr/local
#   --prefix DIR  PREFIX/lib and PREFIX/share/vulkan/... (the loader searches /usr/local/share and
#                 /usr/share, and $XDG_DATA_DIRS); DESTDIR=... is put in front of every path
#                 written, not of library_path (staged installs)
#   --implicit    implicit_layer.d instead of explicit_layer.d; the layer is then off unless
#                 VK_POLYFILL_EXTENSIONS_ENABLE=1 (and VK_POLYFILL_EXTENSIONS_DISABLE=1 turns it off).
#   --lib FILE    install this already-built library instead of building one (packagers, tests)
#   --no-strip    keep the debug information
# Usage: [DESTDIR=...] packaging/install-layer.sh [--system | --prefix DIR] [--implicit] [--lib FILE] [--no-strip]
# Undo with packaging/uninstall-layer.sh (same options). Debian: packaging/deb.sh builds a package.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
prefix=""
implicit=()
built=""
strip=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --system) prefix=/usr/local ;;
        --prefix) prefix="${2:?--prefix needs a directory}"; shift ;;
        --implicit) implicit=(--implicit) ;;
        --lib) built="${2:?--lib needs a file}"; shift ;;
        --no-strip) strip=0 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

lib_name=libVkLayer_polyfill_extensions.so
kind=explicit_layer.d
[[ ${#implicit[@]} == 0 ]] || kind=implicit_layer.d

if [[ -z $built ]]; then
    (cd "$repo" && cargo build --release -p vk-layer-polyfill-extensions)
    target_dir="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
    built="$target_dir/release/$lib_name"
fi
[[ -f "$built" ]] || { echo "build output $built not found" >&2; exit 1; }

dest="${DESTDIR:-}"
if [[ -n $prefix ]]; then
    manifest_dir=$prefix/share/vulkan/$kind
    lib_dir=$prefix/lib
    library_path="$lib_dir/$lib_name"
else
    manifest_dir="${XDG_DATA_HOME:-$HOME/.local/share}/vulkan/$kind"
    lib_dir="$manifest_dir"
    library_path="./$lib_name"
fi
mkdir -p "$dest$manifest_dir" "$dest$lib_dir"
install -m 0644 "$built" "$dest$lib_dir/$lib_name"
if [[ $strip == 1 ]]; then
    strip --strip-unneeded --remove-section=.comment "$dest$lib_dir/$lib_name"
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
bash "$here/make-manifest.sh" "$tmp" "${implicit[@]}" --library-path "$library_path" > /dev/null
install -m 0644 "$tmp/VkLayer_polyfill_extensions.json" "$dest$manifest_dir/VkLayer_polyfill_extensions.json"
echo "installed $dest$lib_dir/$lib_name"
echo "installed $dest$manifest_dir/VkLayer_polyfill_extensions.json"
if [[ $kind == implicit_layer.d ]]; then
    echo "enable with VK_POLYFILL_EXTENSIONS_ENABLE=1"
else
    echo "enable with VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions (or VK_LOADER_LAYERS_ENABLE='*polyfill*')"
fi
