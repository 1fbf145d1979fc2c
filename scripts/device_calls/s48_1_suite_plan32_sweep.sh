#!/usr/bin/env bash
# Forty-eighth session, call 1: every GPU test on HEAD's wheel (last run whole on 8068671, 43rd session; since then the
# 32-wide forward and its plan, tests/test_dispatch_gpu.py's width test), then s47_5's A/B (the plan's 32-wide choice
# against d356654's wheel: the same kernels, the plan without it; forward and training step), then the segment model's
# data for 32-wide slices with context parallelism (speed plan 0b): cp_sweep.py at few-head shapes, forced segment
# lengths, the forward at 32 and 64 wide. Ran on an H100 through s48_by_card.sh; its 240 s stopped the tests after 500
# (benchmarks/results/s48/README.md). Needs .carry/flashqla-*.whl, .carry/ab/d356654.zip, .carry/COMMIT.
set -uo pipefail
. scripts/device_calls/common.sh
begin_call
install_ab_wheel d356654
run_pytest "$OUT/pytest_all.log" "${1:-240}" gpu
echo "elapsed $(( $(date +%s) - T0 )) s"
AB_TIMEOUT=60 ab_ratio_table fwd "32,32 16,32 2,8" "1x8192 1x2048 8192x4" old=/tmp/site_d356654 new=/tmp/site
echo "elapsed $(( $(date +%s) - T0 )) s"
AB_TIMEOUT=90 ab_ratio_table fwdbwd "32,32 16,32 2,8" "1x8192 1x2048" old=/tmp/site_d356654 new=/tmp/site
echo "elapsed $(( $(date +%s) - T0 )) s"
left=$(( ${DEADLINE_S:-560} - ($(date +%s) - T0) ))
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout "$left" python3 benchmarks/cp_sweep.py --widths 32 64 \
  --heads 2,4 2,8 4,8 4,16 8,16 --mixes 1x32768 1x16384 1x8192 --cp -1 0 8 16 32 64 128 > "$OUT/cp_sweep_bv32.log" 2>&1
echo "cp_sweep rc=$?"; grep -v "^$\|Warning" "$OUT/cp_sweep_bv32.log" | cut -c1-100
echo "elapsed $(( $(date +%s) - T0 )) s"
# the tool returns at most 8 files: the A/B runs' JSON in one archive
(cd "$OUT" && tar czf ab_runs.tgz ab_* && rm -f ab_fwd* ab_fwdbwd*)
ls "$OUT"
