"""The installed library's GPU code, read from the binary with cuobjdump (a CPU test):

* one cubin per compiled arch, and every arch that FLASHQLA_ARCHS names (when set) compiled in,
* the sm90 family (Hopper) uses wgmma (SASS HGMMA); the sm_100a and sm_120a kernels use none (TileLang
  0.1.15 emits mma.sync there, SASS HMMA) and no tcgen05 either, nor do check variants, which are
  those families built for sm_90a with wgmma disabled; the sm120 family uses no TMA,
* every kernel's shared memory (static, from the binary, plus dynamic, from the manifest) fits the
  per-block limit of the GPUs it is for (tilelang_src/variants.py),
* ptxas kept the sm90 family's wgmma asynchronous (no kernel whose every HGMMA is waited for alone).

cuobjdump and nvdisasm come with the test extras (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm) or a
CUDA toolkit; without them the tests are skipped, with the reason.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import flashqla
from flashqla._ops import LIBRARY_PATH

MANIFEST = flashqla.build_manifest()
KERNELS = MANIFEST.get("kernels", [])


def _tool(name: str) -> Path | None:
    """`name` on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin, or from NVIDIA's pip package."""
    found = shutil.which(name)
    if found:
        return Path(found)
    dirs = [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin", Path("/usr/local/cuda/bin")]
    dirs += [Path(p) / "nvidia" / "cu13" / "bin" for p in sys.path if p]
    return next((d / name for d in dirs if (d / name).is_file()), None)


CUOBJDUMP, NVDISASM = _tool("cuobjdump"), _tool("nvdisasm")
pytestmark = pytest.mark.skipif(CUOBJDUMP is None or NVDISASM is None,
                                reason="cuobjdump/nvdisasm not found (pip install nvidia-cuda-cuobjdump "
                                       "nvidia-cuda-nvdisasm, or a CUDA toolkit)")


def _cuobjdump(*args: str) -> str:
    env = dict(os.environ, PATH=f"{NVDISASM.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    run = subprocess.run([str(CUOBJDUMP), *args, str(LIBRARY_PATH)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, f"cuobjdump {' '.join(args)} failed: {run.stderr}"
    return run.stdout


@functools.cache
def _sass(arch: str) -> dict[str, str]:
    """Function name -> its SASS, for the cubins of one arch."""
    parts = re.split(r"\n\s*Function : (\S+)\n", _cuobjdump("-sass", "-arch", arch))
    return dict(zip(parts[1::2], parts[2::2]))


def _kernels(arch: str) -> list[dict]:
    kernels = [k for k in KERNELS if k["arch"] == arch]
    if not kernels:
        pytest.skip(f"the installed library has no {arch} kernels (FLASHQLA_ARCHS at build time)")
    return kernels


def _normalized(arch: str) -> str:
    return "sm_" + arch.strip().lower().replace("sm_", "").replace("sm", "")


def test_one_cubin_per_compiled_arch():
    cubins = re.findall(r"ELF file\s+\d+: (\S+)\.(sm_\w+)\.cubin", _cuobjdump("--list-elf"))
    assert sorted(cubins) == sorted((k["symbol"], k["arch"]) for k in KERNELS)


def test_requested_archs_are_compiled():
    requested = os.environ.get("FLASHQLA_ARCHS")
    if not requested:
        pytest.skip("FLASHQLA_ARCHS is not set (CI and the release build set it)")
    want = {_normalized(a) for a in re.split(r"[;,]", requested) if a.strip()}
    assert want == set(MANIFEST["archs"])
    assert want <= {k["arch"] for k in KERNELS}


# kernels whose programs have no T.gemm (tilelang_src/sm90/seg_plan.py, chunk_decay.py: scalar code per thread)
GEMM_FREE = {"gdn_seg_plan", "gdn_chunk_decay"}


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_120a"])
def test_gemm_instructions(arch):
    sass = _sass(arch)
    for k in _kernels(arch):
        code = sass[k["symbol"] + "_kernel"]
        if k["kernel"] in GEMM_FREE:
            assert "HGMMA" not in code and "HMMA" not in code, f"{k['symbol']}: a GEMM in a kernel without T.gemm"
        elif k["family"] == "sm90":
            assert "HGMMA" in code, f"{k['symbol']}: no wgmma in an sm90 kernel"
        else:
            assert "HGMMA" not in code, f"{k['symbol']}: wgmma outside the sm90 family"
            assert "HMMA" in code, f"{k['symbol']}: no mma.sync"
        assert not re.search(r"\bUTC\w*MMA\b", code), f"{k['symbol']}: tcgen05 MMA (TileLang 0.1.15 emits none here)"
        if k["family"] == "sm120":
            assert "UTMALDG" not in code, f"{k['symbol']}: TMA in an sm120 kernel (its programs use none)"


def test_sm90_wgmma_stays_asynchronous():
    """ptxas serializes every wgmma of a kernel (each HGMMA then carries the group-barrier bit gsb0 and is waited for
    alone, C7511 / C7512 / C7514 in ptxas -v) when the registers run short or an accumulator is read while its group
    may be in flight: the products still run, slower, with no error. Every product here is at least two HGMMAs (K of
    32 or more), so in an asynchronous kernel at most half carry gsb0 (docs/fwd_rs.md)."""
    sass = _sass("sm_90a")
    for k in _kernels("sm_90a"):
        if k["family"] != "sm90" or k["kernel"] in GEMM_FREE:
            continue
        hgmma = re.findall(r"HGMMA[^;]*;", sass[k["symbol"] + "_kernel"])
        waited = sum("gsb0" in h for h in hgmma)
        assert 2 * waited <= len(hgmma), f"{k['symbol']}: {waited} of {len(hgmma)} HGMMAs each waited for (serialized)"


def test_shared_memory_fits_the_per_block_limit():
    usage = dict(re.findall(r"Function (\S+):\s*\n\s*REG:\d+ STACK:\d+ SHARED:(\d+)", _cuobjdump("-res-usage")))
    for k in KERNELS:
        (name, dev), = k["device"].items()
        total = int(usage[name]) + dev["dynamic_smem_bytes"]
        assert total <= k["smem_limit"], f"{name}: {total} bytes of shared memory, limit {k['smem_limit']}"
