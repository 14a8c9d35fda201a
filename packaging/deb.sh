#!/usr/bin/env bash
# Builds vkpolyfill's Debian packages (split as Debian splits a library and its tools) into
# target/debian/:
#   vkpolyfill                the layer (/usr/lib/<multiarch>/libVkLayer_polyfill_extensions.so)
#                             and its explicit manifest (/usr/share/vulkan/explicit_layer.d/,
#                             absolute library_path), /usr/bin/spirv-polyfill with its man pages
#                             and bash/zsh/fish completions
#   libspirv-polyfill0        libspirv_polyfill.so.<version> (SONAME libspirv_polyfill.so.0)
#   libspirv-polyfill-dev     the .so link, spirv_polyfill.h, spirv_polyfill.pc, the static library
#   vkpolyfill-dbgsym, libspirv-polyfill0-dbgsym
#                             the debug information of the stripped binaries, as
#                             /usr/lib/debug/.build-id/xx/yyyy.debug (gdb finds it by build ID)
# Version: the crates' version (Cargo.toml) and Debian revision $DEB_REVISION (default 1).
# Maintainer: $DEB_MAINTAINER, else the author of the checked-out commit. Each package's
# /usr/share/doc/<package>/copyright lists every crate its binaries link, with its licence
# (packaging/deb-copyright.py, from `cargo metadata`).
#
# The implicit manifest is left out on purpose: an implicit layer in /usr/share is one the loader
# considers for every Vulkan program of every user; the explicit layer is enabled as easily
# (VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions or VK_LOADER_LAYERS_ENABLE=*polyfill*), and
# packaging/install-layer.sh --implicit installs an implicit one per user for those who want it.
#
#   --no-build   package what target/release holds (built by `cargo build --release --workspace`)
#   --out DIR    write the .deb files there instead of target/debian
# Usage: packaging/deb.sh [--no-build] [--out DIR]
# Needs dpkg-dev, binutils and python3 (packaging/install-deps.sh installs them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
build=1
out=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --no-build) build=0 ;;
        --out) out="${2:?--out needs a directory}"; shift ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
log() { printf '[deb] %s\n' "$*"; }
die() { printf '[deb] error: %s\n' "$*" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture objcopy strip readelf nm python3 gzip; do
    command -v "$tool" >/dev/null || die "$tool not found (bash packaging/install-deps.sh installs it)"
done
if ! command -v cargo >/dev/null 2>&1; then . "$HOME/.cargo/env"; fi
cd "$repo"
umask 022

# ---------------------------------------------------------------- what and where
if [[ $build == 1 ]]; then
    log "cargo build --release --workspace"
    cargo build --release --workspace
fi
metadata="$(cargo metadata --format-version 1 --no-deps)"
meta() { python3 -c "import json,sys; m=json.load(sys.stdin); print($1)" <<<"$metadata"; }
target_dir="$(meta 'm["target_directory"]')"
release="$target_dir/release"
out="${out:-$target_dir/debian}"
version="$(meta '[p["version"] for p in m["packages"] if p["name"] == "vk-layer-polyfill-extensions"][0]')"
debversion="$version-${DEB_REVISION:-1}"
major="${version%%.*}"
arch="$(dpkg --print-architecture)"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
libdir="/usr/lib/$multiarch"
maintainer="${DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>' 2>/dev/null || true)}"
[[ -n $maintainer ]] || die "set DEB_MAINTAINER='Name <email>' (no git commit to take it from)"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
for f in libVkLayer_polyfill_extensions.so libspirv_polyfill.so libspirv_polyfill.a spirv-polyfill; do
    [[ -f "$release/$f" ]] || die "$release/$f not built (cargo build --release --workspace)"
done
readelf -dW "$release/libspirv_polyfill.so" | grep -F "Library soname: [libspirv_polyfill.so.$major]" >/dev/null ||
    die "$release/libspirv_polyfill.so lacks the SONAME libspirv_polyfill.so.$major (capi/build.rs)"

work="$out/build"
rm -rf "$work"
mkdir -p "$work" "$out"
rm -f "$out"/*.deb
stage() { echo "$work/stage/$1"; }

# ---------------------------------------------------------------- helpers
# Moves the debug information of FILE (staged in package PKG) into PKG-dbgsym as
# /usr/lib/debug/.build-id/xx/yyyy.debug and strips FILE as dh_strip does (--strip-unneeded for
# shared objects), leaving a .gnu_debuglink to it.
declare -A build_ids
split_debug() {
    local pkg=$1 file=$2 kind=$3 id debug
    id="$(readelf -n "$file" | sed -n 's/^ *Build ID: \([0-9a-f]*\)$/\1/p')"
    [[ ${#id} -gt 2 ]] || die "$file has no build ID"
    debug="$(stage "$pkg-dbgsym")/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
    mkdir -p "$(dirname "$debug")"
    objcopy --only-keep-debug --compress-debug-sections "$file" "$debug"
    chmod 0644 "$debug"
    if [[ $kind == shared ]]; then
        strip --remove-section=.comment --remove-section=.note --strip-unneeded "$file"
    else
        strip --remove-section=.comment --remove-section=.note "$file"
    fi
    objcopy --add-gnu-debuglink="$debug" "$file"
    build_ids[$pkg]="${build_ids[$pkg]:-}${build_ids[$pkg]:+ }$id"
}

# Debian's changelog and the copyright file of package PKG, built from the workspace crates
# named after it.
docs() {
    local pkg=$1 doc
    shift
    doc="$(stage "$pkg")/usr/share/doc/$pkg"
    mkdir -p "$doc"
    python3 "$here/deb-copyright.py" --contact "$maintainer" "${@/#/--crate=}" > "$doc/copyright"
    printf '%s\n' \
        "vkpolyfill ($debversion) unstable; urgency=medium" "" \
        "  * Built from the vkpolyfill sources (version $version) by packaging/deb.sh." "" \
        " -- $maintainer  $(date -R -u -d "@$SOURCE_DATE_EPOCH")" | gzip -9n > "$doc/changelog.Debian.gz"
}

# Writes the lintian overrides of package PKG: those read from standard input, and the one every
# package needs (its changelog is a build record, not an upload to Debian closing an ITP bug).
overrides() {
    local pkg=$1 file
    file="$(stage "$pkg")/usr/share/lintian/overrides/$pkg"
    mkdir -p "$(dirname "$file")"
    {
        cat
        echo "# Built from vkpolyfill's sources by packaging/deb.sh, not uploaded to Debian: no ITP bug to close."
        echo "$pkg: initial-upload-closes-no-bugs"
    } > "$file"
}

# The shlibs:Depends of the ELF files given (dpkg-shlibdeps wants a debian/control to read).
shlibs_depends() {
    local dir="$work/shlibdeps"
    mkdir -p "$dir/debian"
    printf 'Source: vkpolyfill\n\nPackage: vkpolyfill\nArchitecture: any\n' > "$dir/debian/control"
    (cd "$dir" && dpkg-shlibdeps -O "${@/#/-e}" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}

# Writes DEBIAN/control (from the fields given, one per argument, plus the common ones) and
# DEBIAN/md5sums of package PKG, and builds it.
build_deb() {
    local pkg=$1 dir size
    shift
    dir="$(stage "$pkg")"
    mkdir -p "$dir/DEBIAN"
    find "$dir" -type d -exec chmod 0755 {} +
    size="$(du -sk --apparent-size --exclude=DEBIAN "$dir" | cut -f1)"
    {
        echo "Package: $pkg"
        echo "Source: vkpolyfill"
        echo "Version: $debversion"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $size"
        printf '%s\n' "$@"
    } > "$dir/DEBIAN/control"
    (cd "$dir" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | LC_ALL=C sort -z | xargs -0r md5sum) > "$dir/DEBIAN/md5sums"
    chmod 0644 "$dir"/DEBIAN/*
    dpkg-deb --root-owner-group -Zxz --build "$dir" "$out/${pkg}_${debversion}_$arch.deb" >/dev/null
    log "built $out/${pkg}_${debversion}_$arch.deb"
}

# The -dbgsym package of PKG (Debian's layout: its doc directory is a link to PKG's).
build_dbgsym() {
    local pkg=$1
    mkdir -p "$(stage "$pkg-dbgsym")/usr/share/doc"
    ln -s "$pkg" "$(stage "$pkg-dbgsym")/usr/share/doc/$pkg-dbgsym"
    build_deb "$pkg-dbgsym" \
        "Depends: $pkg (= $debversion)" \
        "Section: debug" \
        "Priority: optional" \
        "Multi-Arch: same" \
        "Auto-Built-Package: debug-symbols" \
        "Build-Ids: ${build_ids[$pkg]}" \
        "Description: debug symbols for $pkg"
}

# ---------------------------------------------------------------- vkpolyfill
pkg=vkpolyfill
root="$(stage $pkg)"
install -D -m 0644 "$release/libVkLayer_polyfill_extensions.so" "$root$libdir/libVkLayer_polyfill_extensions.so"
split_debug $pkg "$root$libdir/libVkLayer_polyfill_extensions.so" shared
bash "$here/make-manifest.sh" "$root/usr/share/vulkan/explicit_layer.d" --library-path "$libdir/libVkLayer_polyfill_extensions.so" >/dev/null
install -D -m 0755 "$release/spirv-polyfill" "$root/usr/bin/spirv-polyfill"
"$release/spirv-polyfill" manual --out-dir "$root/usr/share/man/man1"
gzip -9n "$root"/usr/share/man/man1/*.1
mkdir -p "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
"$release/spirv-polyfill" completions bash > "$root/usr/share/bash-completion/completions/spirv-polyfill"
"$release/spirv-polyfill" completions zsh > "$root/usr/share/zsh/vendor-completions/_spirv-polyfill"
"$release/spirv-polyfill" completions fish > "$root/usr/share/fish/vendor_completions.d/spirv-polyfill.fish"
split_debug $pkg "$root/usr/bin/spirv-polyfill" executable
docs $pkg vk-layer-polyfill-extensions shader-rewrite
gzip -9n < README.md > "$root/usr/share/doc/$pkg/README.md.gz"
# The layer is dlopen()ed by the Vulkan loader through its manifest and never linked against:
# like Mesa's layers (mesa-vulkan-drivers) it has an unversioned SONAME and sits in a package
# that is not named after it.
overrides $pkg <<EOF
# A Vulkan layer, loaded by the loader with dlopen() from its manifest, never linked against.
$pkg: shared-library-lacks-version ${libdir#/}/libVkLayer_polyfill_extensions.so libVkLayer_polyfill_extensions.so
$pkg: package-name-doesnt-match-sonames libVkLayer-polyfill-extensions
EOF
mkdir -p "$root/DEBIAN"
echo "activate-noawait ldconfig" > "$root/DEBIAN/triggers"
build_deb $pkg \
    "Depends: $(shlibs_depends "$root$libdir/libVkLayer_polyfill_extensions.so" "$root/usr/bin/spirv-polyfill")" \
    "Recommends: libvulkan1" \
    "Section: libs" \
    "Priority: optional" \
    "Description: Vulkan layer emulating shader extensions the driver lacks" \
    " VK_LAYER_POLYFILL_extensions makes VK_NV_raw_access_chains, the 8/16-bit" \
    " storage features, bindless textures (VK_NVX_image_view_handle with" \
    " SPV_NV_bindless_texture) and buffer device addresses work on Vulkan drivers" \
    " that lack them, such as Mesa's lavapipe, by rewriting the application's" \
    " SPIR-V into core SPIR-V." \
    " ." \
    " The layer is explicit: enable it with" \
    " VK_INSTANCE_LAYERS=VK_LAYER_POLYFILL_extensions. The package also contains" \
    " spirv-polyfill, which rewrites SPIR-V modules offline the way the layer does."
build_dbgsym $pkg

# ---------------------------------------------------------------- libspirv-polyfill0, -dev
DESTDIR="$work/capi" bash "$here/install-capi.sh" --prefix /usr --libdir "$libdir" --built "$release" --no-strip >/dev/null
lib=libspirv-polyfill0
dev=libspirv-polyfill-dev
root="$(stage $lib)"
mkdir -p "$root$libdir"
mv "$work/capi$libdir/libspirv_polyfill.so.$version" "$work/capi$libdir/libspirv_polyfill.so.$major" "$root$libdir/"
split_debug $lib "$root$libdir/libspirv_polyfill.so.$version" shared
docs $lib spirv-polyfill-capi
overrides $lib </dev/null
# The exported functions, for dpkg-shlibdeps of programs linked against the library.
{
    echo "libspirv_polyfill.so.$major $lib #MINVER#"
    echo "* Build-Depends-Package: $dev"
    nm -D --defined-only "$root$libdir/libspirv_polyfill.so.$version" | awk '$2 == "T" { print " " $3 "@Base '"$version"'" }' | LC_ALL=C sort
} > "$work/symbols"
grep -q ' spvpf_rewrite@Base' "$work/symbols" || die "no spvpf_* functions exported by libspirv_polyfill.so.$version"
mkdir -p "$root/DEBIAN"
install -m 0644 "$work/symbols" "$root/DEBIAN/symbols"
echo "libspirv_polyfill $major $lib (>= $version)" > "$root/DEBIAN/shlibs"
echo "activate-noawait ldconfig" > "$root/DEBIAN/triggers"
build_deb $lib \
    "Depends: $(shlibs_depends "$root$libdir/libspirv_polyfill.so.$version")" \
    "Section: libs" \
    "Priority: optional" \
    "Multi-Arch: same" \
    "Description: SPIR-V rewriter of vkpolyfill - shared library" \
    " libspirv_polyfill rewrites SPIR-V modules that use VK_NV_raw_access_chains," \
    " 8/16-bit storage, SPV_NV_bindless_texture or PhysicalStorageBuffer pointers" \
    " into core SPIR-V for a device without them, as the vkpolyfill Vulkan layer" \
    " does, through a C API."
build_dbgsym $lib

root="$(stage $dev)"
mkdir -p "$root/usr"
mv "$work/capi/usr/include" "$root/usr/"
mkdir -p "$root$libdir"
mv "$work/capi$libdir/libspirv_polyfill.so" "$work/capi$libdir/libspirv_polyfill.a" "$work/capi$libdir/pkgconfig" "$root$libdir/"
strip --strip-debug --remove-section=.comment --remove-section=.note --enable-deterministic-archives "$root$libdir/libspirv_polyfill.a"
[[ -z "$(find "$work/capi" -type f -o -type l)" ]] || die "install-capi.sh installed files no package holds: $(find "$work/capi" -type f -o -type l)"
docs $dev spirv-polyfill-capi
overrides $dev </dev/null
install -D -m 0644 capi/examples/rewrite.c "$root/usr/share/doc/$dev/examples/rewrite.c"
build_deb $dev \
    "Depends: $lib (= $debversion)" \
    "Section: libdevel" \
    "Priority: optional" \
    "Multi-Arch: same" \
    "Description: SPIR-V rewriter of vkpolyfill - development files" \
    " libspirv_polyfill rewrites SPIR-V modules that use VK_NV_raw_access_chains," \
    " 8/16-bit storage, SPV_NV_bindless_texture or PhysicalStorageBuffer pointers" \
    " into core SPIR-V for a device without them, as the vkpolyfill Vulkan layer" \
    " does, through a C API." \
    " ." \
    " This package contains the header spirv_polyfill.h, the pkg-config file" \
    " spirv_polyfill.pc, the libspirv_polyfill.so link and the static library."

rm -rf "$work"
log "done: $(cd "$out" && ls ./*.deb | tr '\n' ' ')"
