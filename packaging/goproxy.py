#!/usr/bin/env python3
"""Writes a Go module as a module proxy serves it (`make dist`'s goproxy/), so that
`GOPROXY=file://DIR go get MODULE@vVERSION` fetches what a release tag would give `go get`:

    DIR/<escaped module path>/@v/list, vVERSION.info, vVERSION.mod, vVERSION.zip

The zip holds the files git tracks under MODULE_DIR plus the EXTRA files (paths inside
MODULE_DIR: the static archive and header `make dist` puts there, which git ignores), each
named <module path>@vVERSION/<path>, by golang.org/x/mod/zip's rules: no file of a nested
module (a directory with a go.mod of its own), of a vendored package, nor a symlink; no two
paths equal but for case. Its entries are sorted and dated EPOCH (the go command reads
neither), so the same tree gives the same zip.

    packaging/goproxy.py MODULE_DIR VERSION EPOCH OUTDIR [EXTRA...]
"""
import datetime
import json
import os
import re
import subprocess
import sys
import zipfile


def escape(path):
    # The proxy protocol's case encoding: an upper-case letter is "!" and the letter in lower case.
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def vendored(path):
    # x/mod/zip's isVendoredPackage, whose offset bug for a nested vendor/ the go command keeps.
    if path.startswith("vendor/"):
        rest = path[len("vendor/"):]
    elif "/vendor/" in path:
        rest = path[len("/vendor/"):]
    else:
        return False
    return "/" in rest


def module_files(module_dir, extra):
    tracked = subprocess.run(["git", "ls-files", "-z", "--", "."], cwd=module_dir, check=True,
                             capture_output=True).stdout.decode().split("\0")
    files = sorted({p for p in tracked if p} | set(extra))
    nested = {os.path.dirname(p) for p in files if os.path.basename(p) == "go.mod" and p != "go.mod"}
    kept, folded = [], {}
    for path in files:
        if vendored(path) or any(path.startswith(d + "/") for d in nested):
            continue
        full = os.path.join(module_dir, path)
        if os.path.islink(full) or not os.path.isfile(full):
            if path in extra:
                sys.exit(f"goproxy.py: {full} is not a regular file")
            continue
        if path.lower() in folded:
            sys.exit(f"goproxy.py: {folded[path.lower()]} and {path} differ only in case")
        folded[path.lower()] = path
        kept.append(path)
    return kept


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    module_dir, version, epoch, out, *extra = sys.argv[1:]
    with open(os.path.join(module_dir, "go.mod")) as f:
        go_mod = f.read()
    module = re.search(r"^module\s+(\S+)", go_mod, re.M).group(1)
    version = "v" + version
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
    at = os.path.join(out, escape(module), "@v")
    os.makedirs(at, exist_ok=True)
    with open(os.path.join(at, "list"), "w") as f:
        f.write(version + "\n")
    with open(os.path.join(at, version + ".info"), "w") as f:
        json.dump({"Version": version, "Time": when.strftime("%Y-%m-%dT%H:%M:%SZ")}, f)
        f.write("\n")
    with open(os.path.join(at, version + ".mod"), "w") as f:
        f.write(go_mod)
    with zipfile.ZipFile(os.path.join(at, version + ".zip"), "w", zipfile.ZIP_DEFLATED) as z:
        for path in module_files(module_dir, extra):
            entry = zipfile.ZipInfo(f"{module}@{version}/{path}", when.timetuple()[:6])
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            with open(os.path.join(module_dir, path), "rb") as src:
                z.writestr(entry, src.read())


main()
