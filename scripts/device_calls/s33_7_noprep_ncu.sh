#!/usr/bin/env bash
# Thirty-third session, with the device time left: where the shipped prep-free row's period goes (p_split,
# log2_gates, solve_shfl). Nsight Compute of gdn_prefill's kernel at (32, 32) 8192x4 (its second launch), the SASS cut
# into regions (scripts/ncu_regions.py), as s32_3 did for the 32nd session's row. 30c7d47's wheel (the code of HEAD).
# About 120 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
NCU_STEP=prefill PYTHONPATH=/tmp/site timeout 200 bash scripts/ncu_profile.sh "$OUT/ncu" 32,32 8192,8192,8192,8192 \
  gdn_fwd_noprep@1
grep -i -E "stall|One or More Eligible|No Eligible|Warp Cycles Per Issued|Duration" \
  "$OUT/ncu/gdn_fwd_noprep.details.txt" | head -12 | cut -c1-200
python3 scripts/ncu_regions.py "$OUT/ncu/gdn_fwd_noprep.sass.csv" --min 0.7 > "$OUT/regions.txt" 2>&1
echo "regions rc=$?"; head -c 9000 "$OUT/regions.txt"
rm -f "$OUT"/ncu/*.ncu-rep
