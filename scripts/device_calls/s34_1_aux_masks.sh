#!/usr/bin/env bash
# For the thirty-fourth session's first call (written in the thirty-third, not run): the auxiliary warpgroup's
# register pressure. Its M and G passes multiplied by 0/1 masks that ptxas hoisted out of the chunk loop (64 floats
# per thread), and it spilled and reloaded a dozen values every chunk (the lowered kernel compiled here: 23 LDL in the
# auxiliary loop for the shipped row, 4 with m_nomask, 1 with m_nomask + g_nomask + l2_shfl). noprep_check.py, JIT
# from the tree: float64, each kernel against the shipped row bit for bit (both should be equal: M's lower triangle is
# never read; the inverse's upper triangle is exactly zero with the scratch block zeroed once), then time. Needs the
# wheel and .carry/peers.tar.xz (TileLang). About 150 s, then the context-parallel GPU tests (about 120 s).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
noprep_check_table 300 fwdnp128k3xpls fwdnp128k3xplsm fwdnp128k3xpls2mg
# 07a013b's shared warm-up helper (cp_start_states) on the GPU: the fused forward's and the prefill's context parallelism.
run_pytest "$OUT/pytest_cp.log" 240 gpu tests/test_prefill_gpu.py tests/test_cp_gpu.py
