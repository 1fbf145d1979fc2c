#!/usr/bin/env bash
# (Written in the twenty-third session for the next one; not yet run.) One GPU, no wheel needed: the chunk gradient
# with dVd read from dv's rows (dvd_in: WK skips K dS1 and Pg^T dO, WA's dAb waits on a load) against the default and
# the gmax 1 variant (prio_loads), ablate.py JIT, interleaved rounds, 16384 tokens. ablate.py fills dv with dVd
# (dvd_prefill) before the run it compares: dvd_in's outputs differ from the default's by dVd's bf16 rounding (the
# kernel's own dVd is rounded to bf16 the same way, but from another summation order), so expect gaps near 1e-2 on
# dv, dq, dk and small ones on dg, dbeta, not 0. About 120 s. If it wins by more than a few percent, the state-gradient
# pass has to write dVd into dv's rows (gdn_bwd_dh.py forms it in dvd_s per V slice: a TMA store by its storer warp).
# Also dq_early (dq stored from WA's accumulator once final, with and without the join; its outputs should be bitwise
# the default's; nvcc: spills 884 / 948 -> 1256 / 1436 bytes with prio_loads, so it may well lose).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 300 python3 benchmarks/ablate.py --rounds 5 \
  --kernels bwdcwsb bwdcwspl bwdcwsdi bwdcwsdipl bwdcwspldq bwdcwspldqnj --variants cur \
  --tokens 16384 --heads 16,16 32,32 16,32 8,24 16,64 2,8 > "$OUT/ablate_dvd_in.log" 2>&1
echo "ablate dvd_in rc=$?"; grep -A30 "^kernel " "$OUT/ablate_dvd_in.log" | cut -c1-110
