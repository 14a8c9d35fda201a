#!/usr/bin/env bash
# Removes what install-layer.sh installed (explicit and implicit manifests of the chosen scope).
# Usage: packaging/uninstall-layer.sh [--system]
set -euo pipefail
system=0
for arg in "$@"; do
    case "$arg" in
        --system) system=1 ;;
        --implicit) ;; # accepted for symmetry: both explicit and implicit installs are removed
        -h|--help) sed -n '2,3p' "$0"; exit 0 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done
lib_name=libVkLayer_polyfill_extensions.so
json_name=VkLayer_polyfill_extensions.json
if [[ $system == 1 ]]; then
    base=/usr/local/share/vulkan
    files=("$base/explicit_layer.d/$json_name" "$base/implicit_layer.d/$json_name" "/usr/local/lib/$lib_name")
else
    base="${XDG_DATA_HOME:-$HOME/.local/share}/vulkan"
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
