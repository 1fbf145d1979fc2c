#!/usr/bin/env bash
# Twenty-ninth session, call 2: one wheel of 7604a02 with PDL on for the sm90 family (variants.py's PDL_FAMILIES flipped
# in the working tree for this build: manifest "7604a02+dirty") and the register-operand forward (gdn_fwd_rs.py,
# FLASHQLA_FWD_RS=1, either width). First its GPU tests and the PDL tests; then flashqla alone, one process per run:
# the forward with PDL (default), FLASHQLA_PDL=0, the register-operand forward at the op's width, and each width
# forced with and without it; the training step with and without PDL and with the register-operand forward. The RS
# runs are skipped when its tests fail. About 330 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_rs.log" 150 gpu tests/test_fwd_rs_gpu.py
run_pytest "$OUT/pytest_pdl.log" 60 gpu tests/test_pdl_gpu.py
MIXES="1x8192 8192x4 2048x4 1x32768"
S=/tmp/site
if grep -q " passed" "$OUT/pytest_rs.log" && ! grep -qE "[0-9]+ (failed|error)" "$OUT/pytest_rs.log"; then
  ab_runs fwd "32,32 16,16" "$MIXES" pdl=$S pdl0=$S:FLASHQLA_PDL=0 rs=$S:FLASHQLA_FWD_RS=1 \
    d128=$S:FLASHQLA_FWD_BLOCK_V=128 rs128=$S:FLASHQLA_FWD_RS=1,FLASHQLA_FWD_BLOCK_V=128 \
    d64=$S:FLASHQLA_FWD_BLOCK_V=64 rs64=$S:FLASHQLA_FWD_RS=1,FLASHQLA_FWD_BLOCK_V=64
  ab_runs fwdbwd "16,16" "8192x4 1x8192" pdl=$S pdl0=$S:FLASHQLA_PDL=0 rs=$S:FLASHQLA_FWD_RS=1
else
  echo "register-operand forward: tests failed, its runs skipped"
  tail -30 "$OUT/pytest_rs.log" | cut -c1-200
  ab_runs fwd "32,32 16,16" "$MIXES" pdl=$S pdl0=$S:FLASHQLA_PDL=0 pdlb=$S
  ab_runs fwdbwd "16,16" "8192x4 1x8192" pdl=$S pdl0=$S:FLASHQLA_PDL=0
fi
