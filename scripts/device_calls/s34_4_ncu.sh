#!/usr/bin/env bash
# Thirty-fourth session: where the period of the shipped prep-free row goes now (m_nomask, g_nomask, l2_shfl added):
# Nsight Compute of gdn_prefill's kernel at (32, 32) 8192x4, the SASS cut into regions (as s33_7). 56d3a2f's wheel.
# About 150 s (the (16, 16) table first planned here was dropped: the session's device time ran short).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
NCU_STEP=prefill PYTHONPATH=/tmp/site timeout 150 bash scripts/ncu_profile.sh "$OUT/ncu" 32,32 8192,8192,8192,8192 \
  gdn_fwd_noprep@1 > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"
grep -i -E "Duration|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" "$OUT/ncu/gdn_fwd_noprep.details.txt" | head -6
python3 scripts/ncu_regions.py "$OUT/ncu/gdn_fwd_noprep.sass.csv" --min 0.7 > "$OUT/regions.txt" 2>&1
echo "regions rc=$?"
rm -f "$OUT"/ncu/*.ncu-rep "$OUT"/ncu/*.sass.csv
head -c 7000 "$OUT/regions.txt"
