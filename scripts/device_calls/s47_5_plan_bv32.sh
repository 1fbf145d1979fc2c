#!/usr/bin/env bash
# Forty-seventh session, call 5: the plan's 32-wide choice (1d6a68a: BV = 32 where the 64-wide plan has one segment per
# sequence and N * HV * 4 <= SMs; not for the backward's state recompute) against d356654's wheel (the same kernels,
# the plan without it). The dispatch and width tests, then flashqla alone by wheel (old, new, old again): the forward
# and the training step at shapes the choice changes ((32, 32) and (16, 32) single sequences, (2, 8) 8192x4 and 1x2048)
# and shapes it leaves (8192x4 at (32, 32) and (16, 32): 128-wide; (2, 8) 1x8192: context parallelism). Needs
# .carry/flashqla-*.whl, .carry/ab/d356654.zip, .carry/COMMIT.
set -uo pipefail
. scripts/device_calls/common.sh
begin_call
install_ab_wheel d356654
run_pytest "$OUT/pytest_plan32.log" 120 gpu tests/test_dispatch_gpu.py tests/test_fwd_block_v_gpu.py
echo "elapsed $(( $(date +%s) - T0 )) s"
AB_TIMEOUT=60 ab_ratio_table fwd "32,32 16,32 2,8" "1x8192 1x2048 8192x4" old=/tmp/site_d356654 new=/tmp/site
echo "elapsed $(( $(date +%s) - T0 )) s"
AB_TIMEOUT=90 ab_ratio_table fwdbwd "32,32 16,32 2,8" "1x8192 1x2048" old=/tmp/site_d356654 new=/tmp/site
echo "elapsed $(( $(date +%s) - T0 )) s"
