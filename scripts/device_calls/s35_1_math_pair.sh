#!/usr/bin/env bash
# For the thirty-fifth session's first call (written in the thirty-fourth, not run): both math warpgroups of the
# prep-free forward on one code path (math_pair: 128-row fragments, the V-row products split by rows, P's by columns;
# the kernel's SASS 12,560 -> 10,376 instructions, one copy of the math loop instead of two), after Nsight Compute
# found instruction fetch the stall common to every role (s34_4). noprep_check.py, JIT from the tree with the fence
# rewrite (common/fence_fix.py): float64 check, bitwise comparison with the shipped row (pls2mg; the same products,
# so it should be bitwise equal), then time. Needs a wheel and .carry/peers.tar.xz. About 120 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
noprep_check_table 300 fwdnp128k3xpls2mg fwdnp128k3xpls2mgp
