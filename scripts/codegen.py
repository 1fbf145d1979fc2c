#!/usr/bin/env python3
"""Ahead-of-time codegen: TileLang programs -> CUDA translation units with C launchers.

Runs at build time on a machine with no GPU (needs tilelang, any torch, no nvcc).
For every row of tilelang_src/variants.py whose arch is requested it

  1. builds the T.prim_func and names it after the variant (so that several variants and
     arches link into one shared object),
  2. lowers it for an explicit target inside `with PassContext(...), target:`,
  3. runs TileLang's host-wrapper generator (TLCUDASourceWrapper: init() sets the dynamic
     shared memory limit, call() encodes TMA descriptors on the host and launches),
  4. checks that every global-memory offset is computed in 64-bit integers (scripts/index_audit.py;
     a 32-bit one fails the build), that a warp-specialized kernel's setmaxnreg values fit its launch
     registers (scripts/register_pool_audit.py; a split over the pool hangs, so it fails the build), that every
     TMA store follows a fenced barrier or an mbarrier wait (scripts/tma_store_audit.py; fails the build) and
     lists barriers inside unrolled loops (scripts/loop_barrier_audit.py; a warning),
  5. rewrites that wrapper (every rewrite must match exactly once, so a TileLang upgrade
     that changes the text fails here, loudly) and appends one exported C launcher

       int flashqla_<kernel>_<arch>_<key>(void* buffers..., scalars..., int64_t dims...,
                                          void* stream, char* err, int errlen)

It fails when a kernel needs more shared memory than its arch (or, for a check variant, its
family's arch) allows per block.

Outputs (in --out): <arch>/<symbol>.cu, flashqla_kernels.h (launcher typedefs + a
variant table per kernel), sources.cmake (files and per-file nvcc flags), manifest.json.

    python scripts/codegen.py --out build/generated --archs "90a;100a;120a" [--check-families "sm100;sm120"]

With --vendor-headers it also copies the headers the TUs include (TileLang's tl_templates, CUTLASS,
CuTe) into <out>/include, so that the sources compile where TileLang is not installed; CMake takes
such a directory through FLASHQLA_GENERATED_DIR and checks it with --use-generated (no TileLang).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path

from index_audit import audit  # noqa: E402
from loop_barrier_audit import loop_barriers  # noqa: E402
from pdl_audit import pdl_violations  # noqa: E402
from register_pool_audit import register_pool  # noqa: E402
from tma_store_audit import tma_store_violations  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tilelang_src"

# TileLang dtype -> C type of call()'s parameters / of the exported launcher's parameters
C_BUFFER = {"bfloat16": "bfloat16_t", "float16": "half_t", "float32": "float", "int32": "int", "int64": "int64_t"}
C_SCALAR = {"int32": ("int", "int32_t"), "float32": ("float", "float")}


def normalize_arch(a: str) -> str:
    """'90a' | 'sm90a' | 'sm_90a' -> 'sm_90a'."""
    a = a.strip().lower().replace("sm_", "").replace("sm", "")
    return f"sm_{a}"


def _sub_once(pattern: str, repl: str, text: str, what: str) -> str:
    new, n = re.subn(pattern, repl, text)
    if n != 1:
        raise RuntimeError(f"codegen rewrite '{what}' matched {n} times (expected 1): the TileLang wrapper "
                           f"text changed; update scripts/codegen.py for this TileLang version")
    return new


def _variants_module():
    sys.path.insert(0, str(SRC))
    import variants  # noqa: E402

    return variants


def _load_variants():
    return _variants_module().VARIANTS


# bytes per element of the types TileLang declares static __shared__ arrays with
_C_SIZES = {"uint64_t": 8, "int64_t": 8, "double": 8, "float": 4, "int": 4, "uint": 4, "unsigned": 4,
            "half_t": 2, "bfloat16_t": 2, "uchar": 1, "char": 1, "signed char": 1}


def _static_smem_estimate(device_source: str) -> int:
    """Upper estimate of a kernel's static shared memory: its fixed-size __shared__ arrays (barriers)
    rounded up to the 1 KB alignment of the dynamic buffer that follows them, plus 1 KB that every
    kernel built here reports besides (cuobjdump -res-usage: 1024 B with no array, 2048 B with 112 B
    of barriers). tests/test_compiled_archs.py checks the exact figure in the built library."""
    declared = 0
    for align, ctype, count in re.findall(r"__shared__ __align__\((\d+)\) ([\w ]+?) \w+\[(\d+)\];", device_source):
        if ctype not in _C_SIZES:
            raise RuntimeError(f"codegen: unknown static __shared__ type '{ctype}': add it to _C_SIZES")
        size = _C_SIZES[ctype] * int(count)
        declared += -(-size // int(align)) * int(align)
    return 1024 + -(-declared // 1024) * 1024


def _lower_one(index: int) -> dict:
    """Lower variant `index`; returns the TU text and its metadata (runs in a worker)."""
    import importlib

    import tilelang
    from tilelang import tvm
    from tilelang.jit.adapter.wrapper import TLCUDASourceWrapper
    from tvm.target import Target

    variant = _load_variants()[index]
    # TileLang 0.1.15's register fences of two-warpgroup products clamped to their fragments (common/fence_fix.py)
    importlib.import_module("common.fence_fix").register()
    factory = getattr(importlib.import_module(variant.module), variant.factory)
    symbol = variant.symbol
    func = factory(**variant.params).with_attr("global_symbol", symbol)
    target = Target({"kind": "cuda", "arch": variant.arch})
    pass_configs = variant.pass_configs

    t0 = time.time()
    with tvm.transform.PassContext(opt_level=3, config=pass_configs), target:
        art = tilelang.lower(func, target=target)
        wrapper = TLCUDASourceWrapper(
            scheduled_ir_module=tvm.IRModule({symbol: func}), source=art.kernel_source, target=target,
            device_mod=art.device_mod, host_mod=art.host_mod, pass_configs=pass_configs)
        code = wrapper.lib_code
    lower_s = time.time() - t0
    # every global offset must be computed in 64-bit integers (scripts/index_audit.py)
    (device_func,) = art.device_mod.functions.values()  # one kernel per program
    index_audit = audit(device_func)
    # barriers inside unrolled loops (scripts/loop_barrier_audit.py): reported, not fatal
    barriers_in_loops = [f"line {n}: {header}" for n, header in loop_barriers(art.kernel_source)]
    # the warpgroups' setmaxnreg values within the launch registers (scripts/register_pool_audit.py): a split over
    # the pool hangs the kernel, so it fails the build
    pool = register_pool(art.kernel_source)
    if pool["violation"]:
        raise RuntimeError(f"{symbol}: {pool['violation']}")
    # every TMA store after a fenced barrier or an mbarrier wait (scripts/tma_store_audit.py): a store that may read
    # a tile before its writers' fences is a race, so it fails the build
    unfenced = tma_store_violations(art.kernel_source)
    if unfenced:
        raise RuntimeError(f"{symbol}: " + "; ".join(unfenced))

    code = _sub_once(r'extern "C" TL_EXPORT const char\* get_last_error\(\)', "static const char* get_last_error()",
                     code, "get_last_error")
    code = _sub_once(r'extern "C" TL_EXPORT int init\(\)', "static int init()", code, "init")
    code = _sub_once(r'extern "C" TL_EXPORT int call\(', "static int call(", code, "call")
    code = _sub_once(r"cudaStream_t stream=cudaStreamDefault\)", "cudaStream_t stream)", code, "default stream")
    # one cached driver entry point instead of a lookup per descriptor per call
    code = code.replace("CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)", "flashqla::rt::encode_tiled()")
    uses_pdl = bool(wrapper.pdl_sync_map)
    if not uses_pdl:
        # the wrapper always allows programmatic stream serialization: only for the kernels that wait on it
        code = code.replace("programmaticStreamSerializationAllowed = 1;",
                            "programmaticStreamSerializationAllowed = 0;")
    else:
        # those wait before every global access (scripts/pdl_audit.py: fails the build otherwise); FLASHQLA_PDL=0
        # launches them plainly (flashqla_rt.h pdl_setting; another value than 0 or 1 fails the launch, below)
        early = pdl_violations(art.kernel_source)
        if early:
            raise RuntimeError(f"{symbol}: " + "; ".join(early))
        code = _sub_once(r"programmaticStreamSerializationAllowed = 1;",
                         "programmaticStreamSerializationAllowed = flashqla::rt::pdl_setting() == 1;", code,
                         "pdl attribute")

    prim = wrapper.prim_func
    params, call_args, meta_params = [], [], []
    for p in prim.params:
        if p in prim.buffer_map:
            buf = prim.buffer_map[p]
            name, dt = str(buf.data.name), str(buf.dtype)
            params.append(f"void* {name}")
            call_args.append(f"({C_BUFFER[dt]}*){name}")
            meta_params.append({"kind": "buffer", "name": name, "dtype": dt, "shape": [str(s) for s in buf.shape]})
        else:
            name, dt = str(p.name), str(p.dtype)
            call_t, abi_t = C_SCALAR[dt]
            params.append(f"{abi_t} {name}")
            call_args.append(f"({call_t}){name}")
            meta_params.append({"kind": "scalar", "name": name, "dtype": dt})
    scalar_names = {m["name"] for m in meta_params}
    dims = [str(n) for n, _ in wrapper.get_dynamic_symbolic_set(prim) if str(n) not in scalar_names]
    # every symbolic dim must reach call(): a dim used only inside an expression is dropped by the
    # wrapper (TileLang 0.1.15), so the kernels declare each dim as a bare shape entry
    free = {str(v) for b in prim.buffer_map.values() for s in b.shape for v in _free_vars(s)}
    missing = sorted(free - set(dims) - scalar_names)
    if missing:
        raise RuntimeError(f"{symbol}: symbolic dims {missing} appear only inside shape expressions; "
                           f"declare each one as a plain dimension of some buffer")
    for d in dims:
        params.append(f"int64_t {d}")
        call_args.append(f"(int){d}")
    signature = ", ".join(params + ["void* stream", "char* err", "int errlen"])
    # a FLASHQLA_PDL that is neither 0 nor 1 fails the launch of a kernel that uses it, naming the variable
    pdl_check = (f"""
  if (flashqla::rt::pdl_setting() < 0) {{
    flashqla::rt::copy_error(err, errlen, "{symbol}", "FLASHQLA_PDL must be 0 or 1 (unset: 1)");
    return -1;
  }}""" if uses_pdl else "")
    launcher = f"""
// exported launcher: 0 on success, otherwise -1 with a message in err
extern "C" int {symbol}({signature}) {{
  static flashqla::rt::PerDeviceOnce once;{pdl_check}
  int rc = once.run([] {{ return init(); }});
  if (rc == 0) rc = call({", ".join(call_args + ["(cudaStream_t)stream"])});
  if (rc != 0) flashqla::rt::copy_error(err, errlen, "{symbol}", get_last_error());
  return rc;
}}
"""
    src_rel = f"tilelang_src/{variant.module.replace('.', '/')}.py"
    src_hash = hashlib.sha256((SRC / f"{variant.module.replace('.', '/')}.py").read_bytes()).hexdigest()[:12]
    header = (f"// Auto-generated by scripts/codegen.py from {src_rel} (tilelang {tilelang.__version__}, "
              f"src sha {src_hash}). Do not edit.\n"
              f"// variant: {variant.kernel} arch={variant.arch} family={variant.family} "
              f"params={json.dumps(variant.params)} pass_configs={json.dumps(pass_configs)}\n"
              '#include "flashqla_rt.h"\n'
              "// tl_templates/cuda/debug.h defines non-inline functions; give them a per-TU name so that\n"
              "// several generated TUs link into one library\n"
              f"#define debug_print_msg debug_print_msg__{symbol}\n"
              f"#define debug_print_buffer_value debug_print_buffer_value__{symbol}\n")
    code = header + code + launcher
    static_smem = _static_smem_estimate(art.kernel_source)
    dev = {str(gv.name_hint): {"grid": [str(x) for x in wrapper.grid_info[gv.name_hint]],
                               "block": [str(x) for x in wrapper.block_info[gv.name_hint]],
                               "dynamic_smem_bytes": int(wrapper.dynamic_smem_buf[gv.name_hint] or 0),
                               "static_smem_estimate": static_smem}
           for gv in wrapper.device_mod.functions}
    for name, d in dev.items():
        if d["dynamic_smem_bytes"] + d["static_smem_estimate"] > variant.smem_limit:
            raise RuntimeError(f"{symbol}: {name} needs {d['dynamic_smem_bytes']} + {d['static_smem_estimate']} bytes "
                               f"of shared memory per block; the limit for {variant.family} on {variant.arch} is "
                               f"{variant.smem_limit}")
    # json round trip: plain Python values only (TVM strings must not cross the process boundary)
    return json.loads(json.dumps({"index": index, "code": code, "symbol": symbol, "signature": signature,
            "meta": {"kernel": variant.kernel, "arch": variant.arch, "family": variant.family,
                     "check_variant": variant.is_check, "symbol": symbol, "key": dict(variant.key),
                     "pass_configs": pass_configs, "smem_limit": variant.smem_limit,
                     # the program's options as variants.py gives them (an A/B wheel's differ from main's)
                     "options": variant.params,
                     "params": meta_params, "dims": dims, "device": dev, "fast_math": variant.fast_math,
                     "uses_pdl": uses_pdl, "lower_seconds": round(lower_s, 2), "index_audit": index_audit,
                     "barriers_in_unrolled_loops": barriers_in_loops,
                     "register_pool": pool,
                     "source": src_rel,
                     "source_sha": src_hash, "tilelang": tilelang.__version__}}))


def _free_vars(expr):
    from tilelang import tvm

    out = []
    tvm.tirx.stmt_functor.post_order_visit(expr, lambda n: out.append(n) if isinstance(n, tvm.tirx.Var) else None)
    return out


def _vendor_headers(out: Path) -> None:
    """Copies the headers the generated TUs include into out/include (tl_templates, cutlass, cute)."""
    import shutil

    import tilelang

    root = Path(tilelang.__file__).resolve().parent
    dst = out / "include"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(root / "src" / "tl_templates", dst / "tl_templates")
    for lib in ("cutlass", "cute"):
        shutil.copytree(root / "3rdparty" / "cutlass" / "include" / lib, dst / lib)
    print(f"[codegen] copied the tl_templates, cutlass and cute headers of tilelang {tilelang.__version__} to {dst}",
          flush=True)


def _check_generated(gen: Path, archs: list[str], checks: list[str]) -> int:
    """For FLASHQLA_GENERATED_DIR: the directory holds codegen output with headers, for the requested archs."""
    manifest_path = gen / "manifest.json"
    if not manifest_path.is_file() or not (gen / "sources.cmake").is_file():
        print(f"[codegen] error: {gen} holds no codegen output (manifest.json, sources.cmake)", file=sys.stderr)
        return 2
    if not (gen / "include" / "tl_templates").is_dir():
        print(f"[codegen] error: {gen}/include is missing: generate with --vendor-headers", file=sys.stderr)
        return 2
    manifest = json.loads(manifest_path.read_text())
    if archs and sorted(archs) != sorted(manifest["archs"]):
        print(f"[codegen] error: FLASHQLA_ARCHS names {archs} but {gen} has kernels for {manifest['archs']}",
              file=sys.stderr)
        return 2
    have_checks = {c.split("@")[0] for c in manifest.get("check_families", [])}
    if set(checks) - have_checks:
        print(f"[codegen] error: check families {sorted(set(checks) - have_checks)} are not in {gen}", file=sys.stderr)
        return 2
    print(f"[codegen] using {len(manifest['kernels'])} pre-generated variants for {manifest['archs']} from {gen}",
          flush=True)
    return 0


def _source_commit() -> str | None:
    """The git commit the kernel programs were lowered from ("+dirty" when tilelang_src/ has changes not in
    it); None outside a git checkout (an sdist). Benchmarks record it next to their numbers."""
    import subprocess

    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=30)
        if sha.returncode != 0 or not sha.stdout.strip():
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "tilelang_src"], cwd=ROOT,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha.stdout.strip() + ("+dirty" if dirty else "")


def _registry_header(results: list[dict]) -> str:
    lines = ["// Auto-generated by scripts/codegen.py. Do not edit.",
             "// One launcher type and one variant table per kernel; csrc/ops/dispatch.h searches them.",
             "#pragma once", "#include <cstdint>", ""]
    by_kernel: dict[str, list[dict]] = {}
    for r in results:
        by_kernel.setdefault(r["meta"]["kernel"], []).append(r)
    for kernel, rows in sorted(by_kernel.items()):
        sigs = {r["signature"] for r in rows}
        if len(sigs) != 1:
            raise RuntimeError(f"variants of {kernel} disagree on the launcher signature: {sigs}")
        sig = sigs.pop()
        for r in rows:
            lines.append(f'extern "C" int {r["symbol"]}({sig});')
        lines.append(f"using {kernel}_launcher = int (*)({sig});")
        # a kernel only some families have (e.g. gdn_bwd_fused, sm90 only) is absent from builds without them
        lines.append(f"#define FLASHQLA_HAS_{kernel.upper()} 1")
        # cc: the compute capability the cubin runs on (major * 10 + minor; 'a' targets run on exactly one); bv: the
        # V-slice width (0: the kernel has none); gmax: the largest group of v-heads per qk-head the variant is for
        # (0: any group, the kernel's default variant); split_m: 1 for the correction walk that loads the transition
        # matrices split (sm90/cp_correct.py split_m), 0 elsewhere
        lines.append(f"struct {kernel}_variant {{ int cc; const char* arch; const char* family; const char* dtype; "
                     f"int bv; int gmax; int split_m; {kernel}_launcher fn; const char* symbol; }};")
        lines.append(f"inline constexpr {kernel}_variant {kernel}_variants[] = {{")
        for r in rows:
            meta, key = r["meta"], r["meta"]["key"]
            cc = int(re.match(r"sm_(\d+)", meta["arch"]).group(1))
            lines.append(f'    {{{cc}, "{meta["arch"]}", "{meta["family"]}", "{key.get("dtype", "")}", '
                         f'{key.get("bv", 0)}, {key.get("gmax", 0)}, {key.get("split_m", 0)}, &{r["symbol"]}, '
                         f'"{r["symbol"]}"}},')
        lines.append("};")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--use-generated", metavar="DIR", help="check DIR (codegen output) instead of generating")
    ap.add_argument("--vendor-headers", action="store_true", help="copy the included headers to <out>/include")
    ap.add_argument("--archs", default=os.environ.get("FLASHQLA_ARCHS", "90a"),
                    help="';' or ',' separated list, e.g. '90a;100a;120a'")
    ap.add_argument("--check-families", default=os.environ.get("FLASHQLA_CHECK_FAMILIES", ""),
                    help="kernel families to lower for sm_90a too (wgmma off), e.g. 'sm100;sm120': "
                         "lets an H100/H200 run the SM100/SM120 programs (tilelang_src/variants.py)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("FLASHQLA_CODEGEN_JOBS", os.cpu_count() or 1)))
    args = ap.parse_args()

    t0 = time.time()
    vmod = _variants_module()
    archs = [normalize_arch(a) for a in re.split(r"[;,]", args.archs) if a.strip()]
    unknown = [a for a in archs if a not in vmod.FAMILY_ARCH.values()]
    if unknown:
        known = "; ".join(a.replace("sm_", "") for a in vmod.FAMILY_ARCH.values())
        print(f"[codegen] error: no kernel programs for {unknown}; FLASHQLA_ARCHS takes any of '{known}'",
              file=sys.stderr)
        return 2
    checks = [f.strip() for f in re.split(r"[;,]", args.check_families) if f.strip()]
    bad = [f for f in checks if f not in ("sm100", "sm120")]
    if bad:
        print(f"[codegen] error: FLASHQLA_CHECK_FAMILIES takes 'sm100' and/or 'sm120', got {bad}", file=sys.stderr)
        return 2
    if args.use_generated:
        return _check_generated(Path(args.use_generated), archs, checks)
    if not args.out:
        ap.error("--out is required")
    variants = vmod.VARIANTS
    chosen = vmod.select(archs, checks)
    todo = [i for i, v in enumerate(variants) if any(v is c for c in chosen)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    jobs = max(1, min(args.jobs, len(todo)))
    if jobs > 1:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_lower_one, todo)
    else:
        results = [_lower_one(i) for i in todo]

    bad = [f"{r['symbol']}: {v}" for r in results for v in r["meta"]["index_audit"]["violations"]]
    if bad:
        raise RuntimeError("global offsets computed in 32-bit integers (they overflow once tokens x heads x "
                           "dim passes 2^31):\n  " + "\n  ".join(bad))
    cmake = ["# Auto-generated by scripts/codegen.py. Do not edit.", "set(FLASHQLA_GENERATED_SOURCES)"]
    for r in results:
        meta = r["meta"]
        tag = meta["arch"].replace("_", "")
        path = out / tag / f"{meta['symbol']}.cu"
        path.parent.mkdir(exist_ok=True)
        if not path.exists() or path.read_text() != r["code"]:  # keep mtimes for incremental builds
            path.write_text(r["code"])
        meta["file"] = str(path.relative_to(out))
        flags = "--use_fast_math" if meta["fast_math"] else ""
        cmake.append(f'list(APPEND FLASHQLA_GENERATED_SOURCES "{meta["arch"]}|${{CMAKE_CURRENT_LIST_DIR}}/'
                     f'{meta["file"]}|{flags}")')
        dev = list(meta["device"].values())[0]
        print(f"[codegen] {meta['symbol']:62s} lowered in {meta['lower_seconds']:5.1f} s, smem "
              f"{dev['dynamic_smem_bytes']} + ~{dev['static_smem_estimate']} B (limit {meta['smem_limit']})", flush=True)
        for where in meta["barriers_in_unrolled_loops"]:
            print(f"[codegen] WARNING {meta['symbol']}: a barrier inside an unrolled loop ({where}), one per "
                  "iteration: if the loop is element-wise work, compute in registers, then copy (docs/fwd_profile.md)",
                  flush=True)
    (out / "flashqla_kernels.h").write_text(_registry_header(results))
    (out / "sources.cmake").write_text("\n".join(cmake) + "\n")
    families = sorted({f"{r['meta']['family']}@{r['meta']['arch']}" for r in results if r["meta"]["check_variant"]})
    manifest = {"archs": archs, "check_families": families, "source_commit": _source_commit(),
                "kernels": [r["meta"] for r in results]}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    if args.vendor_headers:
        _vendor_headers(out)
    print(f"[codegen] {len(results)} variants for {archs} in {time.time() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
