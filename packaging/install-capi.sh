#!/usr/bin/env bash
# Builds the C API of the rewriter (release) and installs it for C and C++ users:
#   PREFIX/lib/libspirv_polyfill.so.VERSION (SONAME libspirv_polyfill.so.MAJOR) with the links
#   libspirv_polyfill.so.MAJOR and libspirv_polyfill.so, PREFIX/lib/libspirv_polyfill.a,
#   PREFIX/include/spirv_polyfill.h, PREFIX/lib/pkgconfig/spirv_polyfill.pc
# then: cc app.c $(pkg-config --cflags --libs spirv_polyfill)
#   (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for a prefix pkg-config does not search;
#   pkg-config --static --libs for the .a).
#   --prefix DIR  install under DIR (default /usr/local); DESTDIR=... is put in front of it
#   --libdir DIR  libraries and pkgconfig/ there instead of PREFIX/lib
#   --built DIR   install the libspirv_polyfill.{so,a} already built in DIR instead of building
#   --no-strip    keep the debug information (stripped by default)
# Usage: [DESTDIR=...] packaging/install-capi.sh [--prefix DIR] [--libdir DIR] [--built DIR] [--no-strip]
# The Debian package libspirv-polyfill-dev (packaging/deb.sh) installs the same files.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
prefix=/usr/local
libdir=""
built=""
strip=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift ;;
        --libdir) libdir="${2:?--libdir needs a directory}"; shift ;;
        --built) built="${2:?--built needs a directory}"; shift ;;
        --no-strip) strip=0 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
libdir="${libdir:-$prefix/lib}"

if [[ -z $built ]]; then
    (cd "$repo" && cargo build --release -p spirv-polyfill-capi)
    built="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release"
fi
for f in libspirv_polyfill.so libspirv_polyfill.a; do
    [[ -f "$built/$f" ]] || { echo "build output $built/$f not found" >&2; exit 1; }
done
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n1)"
soname="libspirv_polyfill.so.${version%%.*}"
if ! readelf -dW "$built/libspirv_polyfill.so" | grep -F "Library soname: [$soname]" >/dev/null; then
    echo "$built/libspirv_polyfill.so does not have the SONAME $soname (capi/build.rs sets it)" >&2
    exit 1
fi

dest="${DESTDIR:-}"
mkdir -p "$dest$libdir/pkgconfig" "$dest$prefix/include"
install -m 0644 "$built/libspirv_polyfill.so" "$dest$libdir/libspirv_polyfill.so.$version"
ln -sfn "libspirv_polyfill.so.$version" "$dest$libdir/$soname"
ln -sfn "$soname" "$dest$libdir/libspirv_polyfill.so"
install -m 0644 "$built/libspirv_polyfill.a" "$dest$libdir/libspirv_polyfill.a"
if [[ $strip == 1 ]]; then
    strip --strip-unneeded --remove-section=.comment "$dest$libdir/libspirv_polyfill.so.$version"
    strip --strip-debug --enable-deterministic-archives "$dest$libdir/libspirv_polyfill.a"
fi
install -m 0644 "$repo/capi/include/spirv_polyfill.h" "$dest$prefix/include/spirv_polyfill.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$libdir|" -e "s|@VERSION@|$version|" "$repo/capi/spirv_polyfill.pc.in" > "$dest$libdir/pkgconfig/spirv_polyfill.pc"
chmod 0644 "$dest$libdir/pkgconfig/spirv_polyfill.pc"
echo "installed $dest$libdir/libspirv_polyfill.so.$version ($soname, libspirv_polyfill.so), $dest$libdir/libspirv_polyfill.a, $dest$prefix/include/spirv_polyfill.h, $dest$libdir/pkgconfig/spirv_polyfill.pc"
