#!/usr/bin/env bash
# For the thirty-fifth session's first call (written in the thirty-fourth, not run): both math warpgroups of the
# prep-free forward on one code path (math_pair: 128-row fragments, the V-row products split by rows, P's by columns;
# the kernel's SASS 12,560 -> 10,376 instructions, one copy of the math loop instead of two), after Nsight Compute
# found instruction fetch the stall common to every role (s34_4). noprep_check.py, JIT from the tree with the fence
# rewrite (common/fence_fix.py): float64 check, bitwise comparison with the shipped row (pls2mg; the same products,
# so it should be bitwise equal), then time. Then the op with the prep-free kernel at groups of v-heads too
# (FLASHQLA_FWD_NOPREP=1; by default only one v-head per qk-head takes it: the prep shares K K^T and Q K^T over a
# group, but the kernel's period fell by about a fifth over the 33rd and 34th sessions), at the many-sequence shapes
# where FlashInfer's published times lead. Needs a wheel (56d3a2f's or later) and .carry/peers.tar.xz. About 250 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
noprep_check_table 300 fwdnp128k3xpls2mg fwdnp128k3xpls2mgp
for heads in 16,32 8,32 16,64; do
  ab_runs fwd "$heads" "8192x4 4096x8 2048x4 1024x8" prep=/tmp/site noprep=/tmp/site:FLASHQLA_FWD_NOPREP=1
done
