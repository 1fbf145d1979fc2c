#!/usr/bin/env bash
# Twenty-eighth session, call 1: programmatic dependent launch (every sm90 kernel waits for the one before it at its
# top; FLASHQLA_PDL=0 turns the launch attribute off). The GPU tests of the forward, fused backward and PDL
# on HEAD's wheel; flashqla alone, one process per run: HEAD's with FLASHQLA_PDL=0, HEAD's, HEAD's with FLASHQLA_PDL=0
# again (the drift), for the forward (then ac25df6's wheel, before PDL) and the training step. About 200 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
pip_install_wheel /tmp/site_base .carry/base/flashqla-0.1.0-py3-none-linux_x86_64.whl
run_pytest "$OUT/pytest_gpu.log" 90 gpu tests/test_pdl_gpu.py tests/test_gdn_fwd_gpu.py tests/test_fused_bwd_gpu.py
MIXES="1x2048 1x8192 2048x4 1x32768 8192x4"
ab_runs fwd "32,32 16,16" "$MIXES" pdl0=/tmp/site:FLASHQLA_PDL=0 pdl1=/tmp/site pdl0b=/tmp/site:FLASHQLA_PDL=0 \
  base=/tmp/site_base
ab_runs fwdbwd "16,16" "$MIXES" pdl0=/tmp/site:FLASHQLA_PDL=0 pdl1=/tmp/site pdl0b=/tmp/site:FLASHQLA_PDL=0
for mode in fwd fwdbwd; do  # the same runs, HEAD's with PDL over its runs without (first / last)
  python3 scripts/device_calls/ms_table.py "$mode pdl1 / pdl0b" "pdl1=$OUT/ab_${mode}_pdl1.json" \
    "pdl0=$OUT/ab_${mode}_pdl0.json" "pdl0b=$OUT/ab_${mode}_pdl0b.json"
done
