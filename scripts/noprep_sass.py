#!/usr/bin/env python3
"""The SASS of benchmarks/noprep_check.py's prep-free forward variants, compiled here without a GPU: each spec lowered
by TileLang for sm_90a (as scripts/codegen.py lowers the wheel's kernels), compiled by nvcc with the build's flags
(`-O3 --use_fast_math`, CMakeLists.txt) and read with cuobjdump. Prints, per variant, the auxiliary warpgroup's chunk
loop (the loop after its `setmaxnreg` to the spec's auxiliary registers): instructions, warpgroup syncs, local loads
and stores (spills), MUFU, shared loads, the HGMMA / HMMA it issues; and the whole kernel's HGMMA against its
WARPGROUP.DEPBAR (ptxas serializing the wgmma, C7512, which the build's `-w` hides, shows as one DEPBAR per HGMMA).
With --segments, the loop cut at its syncs and waits, each piece's size and commonest opcodes.

    python scripts/noprep_sass.py fwdnp128k3xpls2mgp fwdnp128k3xpls2mgpa [--segments] [--workdir DIR]

(the forty-ninth session's table: benchmarks/results/s49/README.md)
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import ablate  # noqa: E402
import noprep_check  # noqa: E402,F401  (registers the fwdnp* specs)

SYNC = re.compile(r"BAR\.SYNC|TRYWAIT|DEPBAR|SYNCS\.ARRIVE")


def tool(name: str) -> str:
    """`name` on PATH, in /usr/local/cuda/bin, or from NVIDIA's pip package (as tests/test_compiled_archs.py)."""
    dirs = [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin"]
    dirs += [Path(p) / "nvidia" / "cu13" / "bin" for p in sys.path if p]
    found = shutil.which(name) or next((str(d / name) for d in dirs if (d / name).is_file()), None)
    if found is None:
        sys.exit(f"{name} not found")
    return found


def compile_sass(name: str, workdir: Path) -> list[str]:
    """The variant's SASS instructions, `ADDRESS OPCODE OPERANDS` each."""
    import tilelang
    from tilelang import tvm
    from tvm.target import Target

    (workdir / f"{name}_cur.py").write_text(ablate.variant_source(name, "cur"))
    if not (workdir / "common").exists():
        (workdir / "common").symlink_to(ablate.SRC / "common")
    sys.path.insert(0, str(workdir))
    importlib.import_module("common.fence_fix").register()
    spec = ablate.SPECS[name]
    func = getattr(importlib.import_module(f"{name}_cur"), spec["factory"])(**spec["params"])
    target = Target({"kind": "cuda", "arch": "sm_90a"})
    with tvm.transform.PassContext(opt_level=3, config={"tl.enable_fast_math": True}), target:
        source = tilelang.lower(func, target=target).kernel_source
    cu, cubin = workdir / f"{name}.cu", workdir / f"{name}.cubin"
    cu.write_text(source)
    tl = Path(tilelang.__file__).parent
    subprocess.run([tool("nvcc"), "-std=c++20", "-w", "-O3", "--use_fast_math", "-gencode",
                    "arch=compute_90a,code=sm_90a", "-cubin", f"-I{tl / 'src'}", f"-I{tl / '3rdparty/cutlass/include'}",
                    f"-I{ROOT / 'csrc/runtime'}", "-o", str(cubin), str(cu)], check=True)
    sass = subprocess.run([tool("cuobjdump"), "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    return [re.sub(r"^\s*/\*([0-9a-f]+)\*/\s*", r"\1 ", line).split(";")[0]
            for line in sass.split("\n") if re.match(r"\s*/\*[0-9a-f]{4,}\*/", line)]


def opcode(ins: str) -> str:
    words = ins.split()[1:]
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def aux_loop(ins: list[str], aux_regs: int) -> list[str]:
    """The auxiliary warpgroup's chunk loop: the last backward branch between its setmaxnreg and its EXIT."""
    start = next(i for i, x in enumerate(ins) if f"USETMAXREG.DEALLOC.CTAPOOL {aux_regs:#x}" in x)
    end = next(i for i in range(start, len(ins)) if re.search(r"\bEXIT\b", ins[i]) and "@" not in ins[i])
    addr = {int(x.split()[0], 16): i for i, x in enumerate(ins)}
    back = [i for i in range(start, end)
            if "BRA" in ins[i] and int(ins[i].split()[-1], 16) < int(ins[i].split()[0], 16)]
    return ins[addr[int(ins[back[-1]].split()[-1], 16)]:back[-1] + 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernels", nargs="+", choices=[n for n in ablate.SPECS if n.startswith("fwdnp")])
    ap.add_argument("--segments", action="store_true")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "flashqla_sass"))
    args = ap.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"{'kernel':<24} {'aux loop':>8} {'syncs':>5} {'LDL':>4} {'STL':>4} {'MUFU':>4} {'LDS':>4} {'HGMMA':>5} "
          f"{'HMMA':>4} | kernel HGMMA / DEPBAR")
    for name in args.kernels:
        ins = compile_sass(name, workdir)
        aux_regs = ablate.SPECS[name]["params"].get("regs", (192, 104, 24))[1]
        loop = aux_loop(ins, aux_regs)
        ops = Counter(opcode(x) for x in loop)
        every = Counter(opcode(x) for x in ins)
        print(f"{name:<24} {len(loop):>8} {sum('BAR.SYNC' in x for x in loop):>5} {ops['LDL']:>4} {ops['STL']:>4} "
              f"{ops['MUFU']:>4} {ops['LDS']:>4} {ops['HGMMA']:>5} {ops['HMMA']:>4} | {every['HGMMA']} / "
              f"{sum('WARPGROUP.DEPBAR' in x for x in ins)}", flush=True)
        if args.segments:
            piece = []
            for x in loop:
                piece.append(x)
                if SYNC.search(x):
                    common = Counter(opcode(y) for y in piece).most_common(6)
                    print(f"    {len(piece):4d} " + " ".join(f"{k}{v}" for k, v in common) + " | "
                          + " ".join(x.split()[1:3]))
                    piece = []
    return 0


if __name__ == "__main__":
    sys.exit(main())
