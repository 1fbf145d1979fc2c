#!/usr/bin/env bash
# Twenty-sixth session, call 2: the shipped fused backward under Nsight Compute (HEAD's wheel, (32, 32), one sequence of
# 32768 tokens: the op's segment plan, one launch of the second training step). dq_after_da (call 0) lengthened WK's
# chain when WA's work moved beside it, so the SM's shared resources (issue slots, shared memory, tensor pipe) may
# set the period rather than the roles' waits: throughput, pipe utilization and stall reasons, then ncu_regions.py.
set -uo pipefail
. scripts/device_calls/common.sh
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
install_wheel
PYTHONPATH=/tmp/site bash scripts/ncu_profile.sh "$OUT/ncu" 32,32 32768 gdn_bwd_fused
d="$OUT/ncu/gdn_bwd_fused.details.txt"
grep -E "^\s+(Duration|Elapsed Cycles|SM Active Cycles|Compute \(SM\) Throughput|Executed Ipc|Issue Slots Busy|Issued Ipc|L1/TEX Cache Throughput|Shared Memory|Warp Cycles Per Issued|Avg. Active Threads|Local Memory|Branch Instructions|Executed Instructions  )" "$d" | head -30
grep -n -i -E "pipe|tensor|bank" "$d" | head -30
python3 scripts/ncu_regions.py "$OUT/ncu/gdn_bwd_fused.sass.csv" --min 1.0 > "$OUT/ncu_regions.txt" 2>&1
head -150 "$OUT/ncu_regions.txt" | cut -c1-150
rm -f "$OUT"/ncu/*.ncu-rep
