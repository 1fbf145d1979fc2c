#!/usr/bin/env bash
# Forty-fourth session, call 1: the correction's scan on split A (tilelang_src/sm90/cp_scan_split.py; FLASHQLA_CP_SCAN=1
# takes it unless FLASHQLA_WALK_SPLIT_M=0), written and lowered here, never run. Its GPU tests (the plain scan's bits,
# the kernel runs where asked) with the scan, split-walk and CP tests; then flashqla alone at the few-head shapes:
# walk (the default), scan (split), plain scan, walk again; then the kernels of a (2, 4) training step with the walk
# and with the split scan (profile_kernels.py: the scan's time per round). Needs .carry/flashqla-*.whl built from a
# commit with cp_scan_split.py. About 5 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
run_pytest "$OUT/pytest_scan.log" 200 gpu tests/test_cp_scan_split_gpu.py tests/test_cp_scan_gpu.py \
  tests/test_walk_split_gpu.py tests/test_cp_gpu.py tests/test_build_manifest.py
S=/tmp/site
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16" "$MIXES" walk=$S scan=$S:FLASHQLA_CP_SCAN=1 \
  plainscan=$S:FLASHQLA_CP_SCAN=1,FLASHQLA_WALK_SPLIT_M=0 walk2=$S > "$OUT/ab_bwd_table.txt"
AB_TIMEOUT=60 ab_runs fwd "4,8 2,4 2,8" "$MIXES" walk=$S scan=$S:FLASHQLA_CP_SCAN=1 \
  plainscan=$S:FLASHQLA_CP_SCAN=1,FLASHQLA_WALK_SPLIT_M=0 walk2=$S > "$OUT/ab_fwd_table.txt"
for mode in bwd fwd; do
  grep "rc=" "$OUT/ab_${mode}_table.txt"
  python3 scripts/device_calls/ab_ratio.py "$mode" scan="$OUT/ab_${mode}_scan.json" walk="$OUT/ab_${mode}_walk.json" \
    walk2="$OUT/ab_${mode}_walk2.json" | tail -1
  python3 scripts/device_calls/ab_ratio.py "$mode" plainscan="$OUT/ab_${mode}_plainscan.json" \
    walk="$OUT/ab_${mode}_walk.json" walk2="$OUT/ab_${mode}_walk2.json" | tail -1
  python3 scripts/device_calls/ab_ratio.py "$mode" scan="$OUT/ab_${mode}_scan.json" walk="$OUT/ab_${mode}_walk.json" \
    walk2="$OUT/ab_${mode}_walk2.json" | head -n -1 | cut -c1-120
done
for scan in 0 1; do
  FLASHQLA_CP_SCAN=$scan PYTHONPATH=$S timeout 60 python3 benchmarks/profile_kernels.py --heads 2,4 \
    --mixes 1x32768 1x8192 > "$OUT/profile_scan$scan.log" 2>&1
  echo "== profile FLASHQLA_CP_SCAN=$scan rc=$?"
  grep "ms of kernels\|cp_scan\|cp_correct\|cold start" "$OUT/profile_scan$scan.log" | cut -c1-150 | head -30
done
