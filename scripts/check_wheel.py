#!/usr/bin/env python3
"""Checks built flashqla wheels before a release, with the standard library only:

* the tag serves every CPython 3 (py3-none-<platform>; manylinux_* with --manylinux),
* the wheel holds the op library and a build manifest whose archs are the expected ones,
* it is smaller than 100 MB (10^8 bytes, below PyPI's default limit per file).

Prints each wheel's size; exit status 1 on any failure.

    python scripts/check_wheel.py wheelhouse/*.whl [--archs "90a;100a;120a"] [--manylinux] [--max-mb 100]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from pathlib import Path

WHEEL_NAME = re.compile(r"^flashqla-(?P<version>[^-]+)-(?P<python>[^-]+)-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$")


def check(path: Path, archs: list[str] | None, manylinux: bool, max_mb: float) -> list[str]:
    problems = []
    size = path.stat().st_size
    print(f"{path.name}: {size / 1e6:.1f} MB ({size} bytes)")
    if size >= max_mb * 1e6:
        problems.append(f"{size / 1e6:.1f} MB is not below the {max_mb:g} MB limit")
    m = WHEEL_NAME.match(path.name)
    if m is None:
        return problems + ["the file name is not flashqla-<version>-<python>-<abi>-<platform>.whl"]
    if (m["python"], m["abi"]) != ("py3", "none"):
        problems.append(f"tag {m['python']}-{m['abi']}: expected py3-none (one wheel for every CPython 3)")
    if manylinux and not all(p.startswith("manylinux_") for p in m["platform"].split(".")):
        problems.append(f"platform {m['platform']}: expected manylinux_* (run auditwheel repair)")
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        for need in ("flashqla/libflashqla_ops.so", "flashqla/build_manifest.json", "flashqla/__init__.py"):
            if need not in names:
                problems.append(f"{need} is missing")
        if "flashqla/build_manifest.json" in names:
            manifest = json.loads(z.read("flashqla/build_manifest.json"))
            have = manifest.get("archs", [])
            print(f"  archs {', '.join(have)}; {len(manifest.get('kernels', []))} kernel variants")
            if archs is not None and sorted(have) != sorted(archs):
                problems.append(f"archs {have}, expected {archs}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wheels", nargs="+", type=Path)
    ap.add_argument("--archs", help="expected archs, e.g. '90a;100a;120a'")
    ap.add_argument("--manylinux", action="store_true", help="require a manylinux platform tag")
    ap.add_argument("--max-mb", type=float, default=100.0)
    args = ap.parse_args()
    archs = None
    if args.archs:
        archs = ["sm_" + a.strip().lower().replace("sm_", "").replace("sm", "") for a in re.split(r"[;,]", args.archs)
                 if a.strip()]
    failed = False
    for wheel in args.wheels:
        for problem in check(wheel, archs, args.manylinux, args.max_mb):
            print(f"  FAIL: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
