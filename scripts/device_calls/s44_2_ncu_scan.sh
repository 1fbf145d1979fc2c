#!/usr/bin/env bash
# Forty-fourth session, call 2: where a correction round's time goes. s44_1: the split scan's round still takes about
# 12 us of kernel time ((2, 4) 1x32768 forward: 0.049 ms over 4 rounds; the plain scan's 14.7 us in the 39th session)
# against the split walk's 2.2 us per step. Nsight Compute on one round of the split scan (FLASHQLA_CP_SCAN=1; the
# second launch: the forward's round of offset 2), on the split walk beside it, and on the backward's state-gradient
# warm-up pass at (4, 8) 8192 (the fused backward at two v-heads per qk-head: its one gdn_bwd_dh launch per step; docs/speed_plan.md item 0: 55 us for about 32 us of work), each with its regions
# (scripts/ncu_regions.py). Needs .carry/flashqla-*.whl. About 4 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
export PYTHONPATH=/tmp/site
regions() {
  python3 scripts/ncu_regions.py "$1" --min 3 2>&1 | cut -c1-170 | head -"${2:-40}"
}
FLASHQLA_CP_SCAN=1 bash scripts/ncu_profile.sh /tmp/ncu_scan 2,4 32768 cp_scan@1
regions /tmp/ncu_scan/cp_scan.sass.csv 45
bash scripts/ncu_profile.sh /tmp/ncu_walk 2,4 32768 cp_correct@1
regions /tmp/ncu_walk/cp_correct.sass.csv 25
bash scripts/ncu_profile.sh /tmp/ncu_dh 4,8 8192 gdn_bwd_dh@1
regions /tmp/ncu_dh/gdn_bwd_dh.sass.csv 45
cp /tmp/ncu_scan/cp_scan.details.txt "$OUT/scan_details.txt"
cp /tmp/ncu_walk/cp_correct.details.txt "$OUT/walk_details.txt"
cp /tmp/ncu_dh/gdn_bwd_dh.details.txt "$OUT/bwd_dh_details.txt"
for f in scan walk bwd_dh; do
  echo "== $f"; grep -E "^\s+(Grid Size|Block Size|Dynamic Shared Memory Per Block|Waves Per SM|L2 Hit Rate|L1/TEX Hit Rate|Elapsed Cycles|SM Busy|Max Bandwidth)" "$OUT/${f}_details.txt" | head -12
done
