#!/usr/bin/env bash
# Removes what install-layer.sh installed (explicit and implicit manifests of the chosen scope).
# Usage: [DESTDIR=...] packaging/uninstall-layer.sh [--system | --prefix DIR]
# (A Debian package is removed with `apt remove vkpolyfill` / `dpkg -r vkpolyfill` instead.)
set -euo pipefail
prefix=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --system) prefix=/usr/local ;;
        --prefix) prefix="${2:?--prefix needs a directory}"; shift ;;
        --implicit) ;; # accepted for symmetry: both explicit and implicit installs are removed
        -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
lib_name=libVkLayer_polyfill_extensions.so
json_name=VkLayer_polyfill_extensions.json
dest="${DESTDIR:-}"
if [[ -n $prefix ]]; then
    base=$dest$prefix/share/vulkan
    files=("$base/explicit_layer.d/$json_name" "$base/implicit_layer.d/$json_name" "$dest$prefix/lib/$lib_name")
else
    base="$dest${XDG_DATA_HOME:-$HOME/.local/share}/vulkan"
    files=("$base/explicit_layer.d/$json_name" "$base/explicit_layer.d/$lib_name"
           "$base/implicit_layer.d/$json_name" "$base/implicit_layer.d/$lib_name")
fi
removed=0
for f in "${files[@]}"; do
    if [[ -e "$f" ]]; then
        rm -f "$f"
        echo "removed $f"
        removed=1
    fi
done
[[ $removed == 1 ]] || echo "nothing installed"
