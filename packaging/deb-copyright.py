#!/usr/bin/env python3
"""Writes a Debian machine-readable copyright file (DEP-5) for binaries built from the given
workspace crates: vkpolyfill itself, then every crate they depend on at run time (cargo's
resolved dependency graph for this host, normal dependencies only: build scripts' and tests'
crates are not shipped), each with its licence expression, authors and version.

    packaging/deb-copyright.py --crate vk-layer-polyfill-extensions --crate shader-rewrite > copyright

Licence texts: Apache-2.0 from /usr/share/common-licenses (as Debian policy wants), the others
from packaging/licenses/. A dependency whose licence has no text there is an error, so a new
licence cannot slip into a package unnoticed.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
COMMON = {"Apache-2.0": "/usr/share/common-licenses/Apache-2.0"}
# DEP-5 names an exception with "with <keyword> exception"; the text of LLVM's is in
# packaging/licenses/LLVM-exception.
EXCEPTIONS = {"LLVM-exception": "LLVM"}


def cargo_metadata():
    host = re.search(r"^host: (\S+)$", subprocess.check_output(["rustc", "-vV"], text=True), re.M).group(1)
    out = subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", host], cwd=REPO, text=True)
    return json.loads(out)


def runtime_closure(meta, roots):
    """Package ids reachable from the workspace crates named `roots` through normal dependencies."""
    by_name = {p["name"]: p["id"] for p in meta["packages"] if p["id"] in meta["workspace_members"]}
    missing = [r for r in roots if r not in by_name]
    if missing:
        sys.exit(f"deb-copyright.py: no workspace crate {', '.join(missing)}")
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    seen, todo = set(), [by_name[r] for r in roots]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]):
                todo.append(dep["pkg"])
    return seen


def dep5_license(spdx, crate):
    """An SPDX expression as DEP-5 writes it ("MIT or Apache-2.0", "A, and B"), and the licence
    names (with exceptions) it uses."""
    expr = spdx.replace("/", " OR ")  # the old crates.io form "MIT/Apache-2.0"
    grouped = re.fullmatch(r"\((.+)\) AND (.+)", expr)
    if grouped:  # DEP-5 has no parentheses: "A or B, and C" binds the comma last
        expr = f"{grouped.group(1)}, AND {grouped.group(2)}"
    if "(" in expr or ")" in expr:
        sys.exit(f"deb-copyright.py: {crate}: cannot write the licence expression `{spdx}` in DEP-5 syntax")
    names = set()
    for term in re.split(r",? (?:OR|AND) ", expr):
        base, _, exception = term.partition(" WITH ")
        names.add(base)
        if exception:
            if exception not in EXCEPTIONS:
                sys.exit(f"deb-copyright.py: {crate}: unknown licence exception {exception}")
            names.add(exception)
    for spdx_exc, keyword in EXCEPTIONS.items():
        expr = expr.replace(f" WITH {spdx_exc}", f" with {keyword} exception")
    return expr.replace(" OR ", " or ").replace(" AND ", " and "), names


def copyright_holders(package):
    """Authors from Cargo.toml, else the copyright lines of the crate's licence files."""
    if package["authors"]:
        return package["authors"]
    crate_dir = os.path.dirname(package["manifest_path"])
    lines = []
    for name in sorted(os.listdir(crate_dir)):
        if re.match(r"(LICEN[CS]E|COPYING|COPYRIGHT)", name, re.I) and os.path.isfile(os.path.join(crate_dir, name)):
            with open(os.path.join(crate_dir, name), encoding="utf-8", errors="replace") as f:
                for line in f:
                    line = line.strip()
                    if re.match(r"copyright (\(c\)|©|\d)", line, re.I) and line not in lines:
                        lines.append(re.sub(r"^copyright\s*(\(c\)|©)?\s*", "", line, flags=re.I))
    return lines or [f"the {package['name']} developers"]


def licence_text(name):
    if name in COMMON:
        return f'On Debian systems, the complete text of the licence is in "{COMMON[name]}".'
    path = os.path.join(HERE, "licenses", name)
    if not os.path.isfile(path):
        sys.exit(f"deb-copyright.py: no text for the licence {name}: add packaging/licenses/{name}")
    with open(path, encoding="utf-8") as f:
        return f.read().strip("\n")


def field(text):
    """A multi-line DEP-5 field value: continuation lines indented, empty lines as ' .'."""
    return "\n".join(" " + line if line.strip() else " ." for line in text.splitlines())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crate", action="append", required=True, help="a workspace crate the package's binaries are built from")
    ap.add_argument("--contact", default="", help="Upstream-Contact")
    args = ap.parse_args()
    meta = cargo_metadata()
    packages = {p["id"]: p for p in meta["packages"]}
    closure = runtime_closure(meta, args.crate)
    ours = [packages[i] for i in closure if i in meta["workspace_members"]]
    theirs = sorted((packages[i] for i in closure if i not in meta["workspace_members"]), key=lambda p: (p["name"], p["version"]))
    used = set()
    out = [
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/",
        "Upstream-Name: vkpolyfill",
    ]
    if args.contact:
        out.append(f"Upstream-Contact: {args.contact}")
    out += [
        "Comment: The binaries are built from vkpolyfill's crates ("
        + ", ".join(sorted(p["name"] for p in ours))
        + ") and the crates.io crates below, which cargo links into them (its dependency graph"
        + " for this host; a crate only one of the binaries uses is listed for all). Files:"
        + " vendor/NAME-VERSION/* stands for crate NAME at VERSION, where `cargo vendor"
        + " --versioned-dirs` puts its source.",
        "",
    ]
    own_expr, names = dep5_license(ours[0]["license"], ours[0]["name"])
    if any(p["license"] != ours[0]["license"] for p in ours):
        sys.exit("deb-copyright.py: the workspace crates have different licences")
    used |= names
    out += ["Files: *", "Copyright: 2026 The vkpolyfill developers", f"License: {own_expr}", ""]
    for p in theirs:
        if not p["license"]:
            sys.exit(f"deb-copyright.py: {p['name']} {p['version']} declares no licence expression")
        expr, names = dep5_license(p["license"], p["name"])
        used |= names
        holders = copyright_holders(p)
        out += [
            f"Files: vendor/{p['name']}-{p['version']}/*",
            "Copyright: " + holders[0] + ("\n" + field("\n".join(holders[1:])) if len(holders) > 1 else ""),
            f"License: {expr}",
            f"Comment: crate {p['name']} {p['version']} from crates.io",
            "",
        ]
    for name in sorted(used):
        out += [f"License: {name}", field(licence_text(name)), ""]
    sys.stdout.write("\n".join(out).rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
