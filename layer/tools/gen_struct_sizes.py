#!/usr/bin/env python3
"""Regenerates layer/src/struct_sizes.rs (and the ash cross-check list
layer/src/struct_sizes_ash.rs) from the Vulkan registry.

Source: the PyPI package `vulkan-object` (Khronos's registry wrapper: vk.xml, video.xml and the
registry's own C header generator). The sizes are not computed by hand: this script has the
registry's `cgenerator` write C headers for every structure of every version, extension and
platform, compiles a program that prints `sizeof` of every structure with an sType (and
asserts `offsetof(pNext) == 8`, which pnext.rs relies on) with the host C compiler, and runs
it. The host must be LP64 (x86-64, aarch64 Linux): sizes are identical on every LP64 target,
and the Rust side only compiles the table there.

Usage:
    pip install vulkan-object==1.4.366     # the pinned registry (packaging/install-deps.sh)
    python3 layer/tools/gen_struct_sizes.py           # rewrite the two files
    python3 layer/tools/gen_struct_sizes.py --check   # exit 1 if they differ from a fresh run

Inputs besides vulkan-object: a C compiler (`cc`), and `cargo metadata` to find ash's source
(the names of the structures ash 0.38 knows, for the cross-check test).
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
from xml.etree import ElementTree

import vulkan_object
from vulkan_object.cgenerator import CGeneratorOptions, COutputGenerator
from vulkan_object.reg import Registry
from vulkan_object.vkconventions import VulkanConventions

LAYER = pathlib.Path(__file__).resolve().parent.parent
OUT_SIZES = LAYER / 'src' / 'struct_sizes.rs'
OUT_ASH = LAYER / 'src' / 'struct_sizes_ash.rs'

# Window-system / OS types the platform extensions use, with their LP64 definitions (the real
# platform headers are not needed for sizes; pointers to opaque types are declared opaque).
PLATFORM_PRELUDE = r'''
#include <stddef.h>
#include <stdint.h>
#define VKAPI_ATTR
#define VKAPI_CALL
#define VKAPI_PTR
typedef struct Display Display; typedef unsigned long Window; typedef unsigned long VisualID;
typedef unsigned long RROutput;
typedef struct xcb_connection_t xcb_connection_t; typedef uint32_t xcb_window_t;
typedef uint32_t xcb_visualid_t;
struct wl_display; struct wl_surface;
struct ubm_device; struct ubm_surface;
typedef struct IDirectFB IDirectFB; typedef struct IDirectFBSurface IDirectFBSurface;
struct ANativeWindow; struct AHardwareBuffer;
typedef void *HINSTANCE; typedef void *HWND; typedef void *HMONITOR; typedef void *HANDLE;
typedef struct SECURITY_ATTRIBUTES SECURITY_ATTRIBUTES; typedef uint32_t DWORD;
typedef const uint16_t *LPCWSTR;
typedef uint32_t zx_handle_t;
typedef uint32_t GgpStreamDescriptor; typedef uint32_t GgpFrameToken;
typedef void *NvSciSyncAttrList; typedef void *NvSciSyncObj; typedef void *NvSciBufAttrList;
typedef void *NvSciBufObj;
typedef struct { uint64_t payload[6]; } NvSciSyncFence;
struct _screen_context; struct _screen_window; struct _screen_buffer;
typedef struct OHBufferHandle OHBufferHandle;
typedef struct OH_NativeBuffer OH_NativeBuffer;
typedef void *MTLDevice_id; typedef void *MTLCommandQueue_id;
typedef void *MTLBuffer_id; typedef void *MTLTexture_id; typedef void *MTLSharedEvent_id;
'''


def generate_header(registry_dir, xml, out_dir, filename, default_extensions):
    """The registry's own C generator, every version/extension/platform in one header."""
    opts = CGeneratorOptions(
        conventions=VulkanConventions(), filename=filename, directory=out_dir, apiname='vulkan',
        versions='.*', emitversions='.*', defaultExtensions=default_extensions,
        addExtensions='.*', emitExtensions='.*', genFuncPointers=False, protectFile=True,
        protectFeature=False, protectProto='#ifndef', protectProtoStr='VK_NO_PROTOTYPES',
        apientryp='*')
    with open(os.devnull, 'w') as quiet:
        reg = Registry(COutputGenerator(errFile=sys.stderr, warnFile=quiet, diagFile=None), opts)
        reg.loadElementTree(ElementTree.parse(os.path.join(registry_dir, xml)))
        reg.apiGen()


def stub_includes(out_dir):
    """The headers name their video-std siblings (and vk_platform.h); everything is already in
    the two generated headers, so the includes become empty files."""
    for h in pathlib.Path(out_dir).glob('*.h'):
        for inc in re.findall(r'#include "([^"]+)"', h.read_text()):
            path = pathlib.Path(out_dir) / inc
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_text('')


def measure(vo, structs):
    """(name, sType value, size) for each structure, from the compiled program."""
    with tempfile.TemporaryDirectory() as tmp:
        registry_dir = os.path.dirname(vulkan_object.__file__)
        generate_header(registry_dir, 'video.xml', tmp, 'vk_video_all.h', None)
        generate_header(registry_dir, 'vk.xml', tmp, 'vulkan_all.h', 'vulkan')
        stub_includes(tmp)
        lines = [PLATFORM_PRELUDE, '#include "vk_video_all.h"', '#include "vulkan_all.h"',
                 '#include <stdio.h>']
        lines += [f'_Static_assert(offsetof({s.name}, pNext) == 8, "{s.name}");' for s in structs]
        lines.append('int main(void) {')
        lines += [f'    printf("{s.name} %d %zu\\n", (int){s.sType}, sizeof({s.name}));' for s in structs]
        lines += ['    return 0;', '}']
        src = pathlib.Path(tmp) / 'sizes.c'
        src.write_text('\n'.join(lines) + '\n')
        exe = pathlib.Path(tmp) / 'sizes'
        # Every platform's and the provisional extensions' enum values are behind these macros.
        defines = ['-D' + macro for macro in sorted(set(vo.platforms.values()))]
        subprocess.run(['cc', '-std=c11', *defines, '-I', tmp, '-o', str(exe), str(src)], check=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        name, s_type, size = line.split()
        rows.append((name, int(s_type), int(size)))
    return rows


def owners(s):
    """The extensions and core versions that define a structure."""
    out = list(s.extensions)
    if s.version is not None:
        out.append(s.version.name)
    return out


def ash_names():
    """Names of the structures ash knows (its `TaggedStructure` impls), via cargo metadata."""
    meta = json.loads(subprocess.run(
        ['cargo', 'metadata', '--format-version', '1', '--manifest-path', str(LAYER / 'Cargo.toml')],
        check=True, capture_output=True, text=True).stdout)
    ash = next(p for p in meta['packages'] if p['name'] == 'ash')
    defs = pathlib.Path(ash['manifest_path']).parent / 'src' / 'vk' / 'definitions.rs'
    return ash['version'], re.findall(r"unsafe impl<'a> TaggedStructure for (\w+)<'a>", defs.read_text())


def render_sizes(version, rows, by_owner, features, extensions):
    out = [
        f'//! Size of every Vulkan structure with an sType in the Vulkan registry {version} (all',
        '//! versions, extensions and platforms), by sType, for LP64 targets, so that pNext chains',
        '//! can be deep-copied node by node; plus, for the tests, which structures each extension',
        '//! and core version defines.',
        '//!',
        '//! GENERATED by `layer/tools/gen_struct_sizes.py` from the PyPI package `vulkan-object`',
        "//! (vk.xml and the registry's C header generator; sizes measured with `sizeof` by the C",
        '//! compiler). Do not edit by hand; re-run the script (`--check` compares).',
        '//! Plain data without dependencies: the end-to-end tests include this file too.',
        '',
        '#[cfg(not(all(target_pointer_width = "64", not(windows))))]',
        'compile_error!("struct_sizes.rs holds LP64 sizes; generate a table for this target");',
        '',
        '/// Version of the registry the table was generated from.',
        f'pub const REGISTRY_VERSION: &str = "{version}";',
        '',
        '/// (sType, size in bytes), sorted by sType.',
        'pub const STRUCT_SIZES: &[(i32, usize)] = &[',
    ]
    out += [f'    ({t}, {size}), // {name}' for name, t, size in sorted(rows, key=lambda r: r[1])]
    out += ['];', '', '/// Size of the structure with this sType, if the registry has it.',
            'pub fn struct_size(s_type: i32) -> Option<usize> {',
            '    STRUCT_SIZES.binary_search_by_key(&s_type, |(t, _)| *t).ok().map(|i| STRUCT_SIZES[i].1)',
            '}', '',
            '/// sTypes of the structures that extend `VkPhysicalDeviceFeatures2` (feature structures).',
            'pub const FEATURE_STRUCTS: &[i32] = &[']
    out += [f'    {t},' for t in sorted(features)]
    out += ['];', '',
            '/// The sTypes of the structures each extension (`VK_*`) or core version (`VK_VERSION_1_x`)',
            '/// defines, sorted by name.',
            'pub const DEFINED_BY: &[(&str, &[i32])] = &[']
    out += [f'    ("{o}", &[{", ".join(map(str, sorted(ts)))}]),' for o, ts in sorted(by_owner.items())]
    out += ['];', '', '/// Every extension of the registry, sorted.', 'pub const EXTENSIONS: &[&str] = &[']
    out += [f'    "{e}",' for e in sorted(extensions)]
    out += ['];', '']
    return '\n'.join(out)


def render_ash(ash_version, names, structs):
    # Provisional (beta) structures may change layout between registry revisions (AMDX shader
    # enqueue did after ash's headers), so they are not compared.
    known = {name for s in structs if s.protect != 'VK_ENABLE_BETA_EXTENSIONS' for name in [s.name, *s.aliases]}
    checked = [n for n in names if 'Vk' + n in known]
    out = [f'// Structures ash {ash_version} knows (provisional ones left out), for the test that its',
           '// sizes agree with struct_sizes.rs. GENERATED by `layer/tools/gen_struct_sizes.py`; included by pnext.rs.',
           'ash_agrees![']
    out += [f'    {n},' for n in checked]
    out += [']', '']
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--check', action='store_true', help='compare with the committed files instead of writing them')
    args = ap.parse_args()
    vo = vulkan_object.get_vulkan_object()
    structs = sorted((s for s in vo.structs.values() if s.sType), key=lambda s: s.name)
    rows = measure(vo, structs)
    s_type = {name: t for name, t, _ in rows}
    by_owner = {}
    for s in structs:
        for o in owners(s):
            by_owner.setdefault(o, set()).add(s_type[s.name])
    features = {s_type[s.name] for s in structs if 'VkPhysicalDeviceFeatures2' in s.extends}
    ash_version, names = ash_names()
    files = {OUT_SIZES: render_sizes(vo.headerVersionComplete, rows, by_owner, features, vo.extensions),
             OUT_ASH: render_ash(ash_version, names, structs)}
    if args.check:
        stale = [str(p) for p, text in files.items() if not p.exists() or p.read_text() != text]
        if stale:
            print('stale (re-run layer/tools/gen_struct_sizes.py): ' + ', '.join(stale), file=sys.stderr)
            return 1
        print(f'up to date with vulkan-object {vo.headerVersionComplete}')
        return 0
    for p, text in files.items():
        p.write_text(text)
    print(f'wrote {len(rows)} structures (registry {vo.headerVersionComplete}) to {OUT_SIZES}; ash check list to {OUT_ASH}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
