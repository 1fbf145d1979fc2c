#!/usr/bin/env bash
# Thirty-fifth session: math_pair judged in the op instead of by noprep_check's JIT (s35_1, which the device tool
# could not start a machine for): two wheels built here, 56d3a2f (the shipped prep-free row) and d924ea0 (the same
# row with math_pair, a branch commit), carried as .carry/ab/COMMIT.zip. (1) o and the final state of each wheel on
# the same inputs, compared bit for bit (op_outputs.py; the same products, so they should be equal); (2) the op's
# forward alone, one process per wheel in the order base, pair, base again (the drift), at (32, 32) (prep-free by
# default) and at groups of v-heads with FLASHQLA_FWD_NOPREP=1; (3) the pair wheel's forward GPU tests; (4) at the
# single-sequence shapes the plan's 64-wide prep path against 128 forced (the prep-free kernel with context
# parallelism), both wheels. No peers needed. About 420 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_ab_wheel 56d3a2f
install_ab_wheel d924ea0
ln -sfn /tmp/site_d924ea0 /tmp/site
for c in 56d3a2f d924ea0; do
  PYTHONPATH=/tmp/site_$c FLASHQLA_FWD_NOPREP=1 timeout 60 python3 scripts/device_calls/op_outputs.py save \
    "$OUT/out_$c.pt" --heads 32,32 16,32 --mixes 8192x4 4096x8 2048x4 1x8192 1x2048 > "$OUT/out_$c.log" 2>&1
  echo "save $c rc=$?"; tail -1 "$OUT/out_$c.log"
done
python3 scripts/device_calls/op_outputs.py compare "$OUT/out_56d3a2f.pt" "$OUT/out_d924ea0.pt"
AB_TIMEOUT=80 ab_runs fwd "32,32 16,32 8,32" "8192x4 4096x8 2048x4 1024x8 1x8192" \
  base=/tmp/site_56d3a2f:FLASHQLA_FWD_NOPREP=1 pair=/tmp/site_d924ea0:FLASHQLA_FWD_NOPREP=1 \
  base_again=/tmp/site_56d3a2f:FLASHQLA_FWD_NOPREP=1
[ -n "${SKIP_PYTEST:-}" ] || run_pytest "$OUT/pytest_pair.log" 200 "gpu" tests/test_prefill_gpu.py tests/test_gdn_fwd_gpu.py \
  tests/test_cp_gpu.py
# the 64-wide prep path's shapes (single sequences, two long ones), where FlashQLA led in the 34th session: the
# plan's width (64 there) against 128 forced, which takes the prep-free kernel with context parallelism
AB_TIMEOUT=80 ab_runs fwd "32,32 16,16" "1x8192 1x2048 1x32768 16384+16384 4096+4096" d=/tmp/site_56d3a2f \
  w128=/tmp/site_56d3a2f:FLASHQLA_FWD_BLOCK_V=128 w128pair=/tmp/site_d924ea0:FLASHQLA_FWD_BLOCK_V=128
