#!/usr/bin/env bash
# Forty-third session, call 3: the backward warm-up's lean transition rows (gdn_bwd_dh lean_m, branch lean-m) against
# main's wheel with the split walk on by default (8068671). Every GPU test on the lean wheel (it carries main's
# changes: the split walk's default, 7d013cf's environment parser), then flashqla alone: main, lean, main again,
# backward at (4, 8), (2, 4), (8, 16), (16, 32) x 4 mixes. Needs .carry/flashqla-*.whl (lean) and .carry/ab/main.zip.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel main
echo "main wheel commit: $(PYTHONPATH=/tmp/site_main python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
run_pytest "$OUT/pytest_all.log" 330 gpu
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16 16,32" "$MIXES" main=/tmp/site_main lean=/tmp/site main2=/tmp/site_main
