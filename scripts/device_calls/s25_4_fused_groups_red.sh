#!/usr/bin/env bash
# Twenty-fifth session: the wheel of .carry/COMMIT with the fused backward in groups of v-heads (the group's CTAs add
# dq, dk by reductions in L2, in v-head order from the third on, 165370a): its GPU tests and the backward's against
# float64, then flashqla alone by setting in one wheel (FLASHQLA_FUSED_BWD 0 / 1 / 0 again): the backward alone at the
# published backward's head configurations (groups of two) and the training step at groups of two and four; the
# training step's kernels at (16, 32) 1x32768.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
fused_groups_call
profile_step 1 16,32 1x32768
