#!/usr/bin/env bash
# Installs dependencies, builds the layer and the demo (release), runs the demo.
# Extra arguments go to the demo (e.g. --validation, --verbose).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash packaging/install-deps.sh
if ! command -v cargo >/dev/null 2>&1; then . "$HOME/.cargo/env"; fi

cargo build --release -p vk-layer-polyfill-extensions -p polyfill-demo
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
exec "$TARGET_DIR/release/polyfill-demo" "$@"
