#!/usr/bin/env bash
# Twenty-eighth session, call 1: programmatic dependent launch (every sm90 kernel waits for the one before it at its
# top; FLASHQLA_PDL=0 turns the launch attribute off) on 98c2e12's wheel (PDL on; HEAD has it off until this call
# measures it). The GPU tests of the forward and PDL; flashqla alone, one process per run: FLASHQLA_PDL=0, PDL, and
# FLASHQLA_PDL=0 again (the drift) for the forward; FLASHQLA_PDL=0 and PDL for the training step. About 170 s (the
# session's last device time after failed starts).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_gpu.log" 75 gpu tests/test_pdl_gpu.py tests/test_gdn_fwd_gpu.py
MIXES="1x2048 1x8192 2048x4 1x32768 8192x4"
ab_runs fwd "32,32 16,16" "$MIXES" pdl0=/tmp/site:FLASHQLA_PDL=0 pdl1=/tmp/site pdl0b=/tmp/site:FLASHQLA_PDL=0
ab_runs fwdbwd "16,16" "$MIXES" pdl0=/tmp/site:FLASHQLA_PDL=0 pdl1=/tmp/site
# the same runs, HEAD's with PDL over its runs without (first / last)
python3 scripts/device_calls/ms_table.py "fwd pdl1 / pdl0b" "pdl1=$OUT/ab_fwd_pdl1.json" "pdl0=$OUT/ab_fwd_pdl0.json" \
  "pdl0b=$OUT/ab_fwd_pdl0b.json"
python3 scripts/device_calls/ms_table.py "fwdbwd pdl1 / pdl0" "pdl1=$OUT/ab_fwdbwd_pdl1.json" \
  "pdl0=$OUT/ab_fwdbwd_pdl0.json"
