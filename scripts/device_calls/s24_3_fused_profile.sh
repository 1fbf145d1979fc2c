#!/usr/bin/env bash
# Twenty-fourth session: where the fused backward's ~20 us per chunk go. Its register split with fewer spills
# (168 / 160 / 160 / 24: 724 bytes against 1644) timed against the pair; then Nsight Compute over one launch of the
# default kernel at (32, 32) 1024x8 (source page with per-instruction stall samples; scripts/ncu_regions.py cuts it).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 --params "dict(regs=(168, 160, 160, 24))" > "$OUT/fused_r168.log" 2>&1
echo "fused 168/160/160/24 rc=$?"; grep -v "TileLang\|^$" "$OUT/fused_r168.log" | tail -6
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 240 ncu --clock-control none --kernel-name "regex:gdn_bwd_fused" \
  --launch-skip 0 --launch-count 1 --set full --import-source yes -f -o "$OUT/fused" python3 benchmarks/fused_bwd_check.py \
  --heads 32 --mixes 1024x8 --rounds 0 > "$OUT/fused_ncu.log" 2>&1
echo "ncu rc=$?"; tail -3 "$OUT/fused_ncu.log"
ncu -i "$OUT/fused.ncu-rep" --page details > "$OUT/fused.details.txt" 2>&1
ncu -i "$OUT/fused.ncu-rep" --page source --print-source sass --csv > "$OUT/fused.sass.csv" 2>&1
grep -E "^\s+(Duration|Registers Per Thread|Executed Ipc Active|Issue Slots Busy|Memory Throughput|DRAM Throughput|Local Memory)" \
  "$OUT/fused.details.txt" | head -12
python3 scripts/ncu_regions.py "$OUT/fused.sass.csv" --min 1.5 | head -80
rm -f "$OUT/fused.ncu-rep"
