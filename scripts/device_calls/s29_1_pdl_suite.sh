#!/usr/bin/env bash
# Twenty-ninth session, call 1 (never ran: no machine could be started; call 2 took its PDL part): 98c2e12's wheel
# (PDL on for the sm90 family): s28_1_pdl.sh (the forward and PDL GPU
# tests; flashqla alone with FLASHQLA_PDL=0 / on / 0 again), then the rest of the GPU suite with PDL on (streams,
# concurrency, callers, CUDA graphs). About 450 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
bash scripts/device_calls/s28_1_pdl.sh
. scripts/device_calls/common.sh
run_pytest "$OUT/pytest_suite.log" 260 "gpu and not edge" \
  --ignore tests/test_gdn_fwd_gpu.py --ignore tests/test_pdl_gpu.py
