#!/usr/bin/env bash
# Installs dependencies, builds the whole workspace in release mode (the end-to-end tests load
# target/release/libVkLayer_polyfill_extensions.so through the real Vulkan loader), then runs
# every test: `cargo test --release --workspace`, then packaging/test-deb.sh (the Debian
# packages). Extra arguments go to `cargo test`.
#
#   POLYFILL_FULL_SWEEP=1   also run the long sweeps (full conformance matrix etc.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash packaging/install-deps.sh
if ! command -v cargo >/dev/null 2>&1; then . "$HOME/.cargo/env"; fi

export POLYFILL_FULL_SWEEP="${POLYFILL_FULL_SWEEP:-0}"
# Settings from the caller's environment would change what the layer does under test.
for v in $(env | sed -n 's/^\(VK_POLYFILL_EXTENSIONS_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset VK_INSTANCE_LAYERS VK_LOADER_LAYERS_ENABLE VK_LAYER_SETTINGS_PATH || true

start=$(date +%s)
echo "[test] cargo build --release --workspace"
cargo build --release --workspace
echo "[test] cargo test --release --workspace (POLYFILL_FULL_SWEEP=$POLYFILL_FULL_SWEEP)"
status=0
cargo test --release --workspace --no-fail-fast "$@" || status=$?
# The Debian packages, after every other test: they are installed (in a private mount namespace
# where the machine allows one, else on the machine) while they are checked.
echo "[test] packaging/test-deb.sh (Debian packages: contents, lintian, install, run, remove)"
deb_status=0
bash packaging/test-deb.sh --no-build || deb_status=$?
[[ $deb_status == 0 ]] || status=1
echo "[test] finished in $(( $(date +%s) - start ))s, exit status $status (cargo test and packages; packages: $deb_status)"
exit $status
