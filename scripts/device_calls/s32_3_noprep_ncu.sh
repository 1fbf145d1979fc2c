#!/usr/bin/env bash
# Thirty-second session: where gdn_fwd_noprep's period goes. Nsight Compute (full set, per-instruction stall samples)
# of gdn_prefill's kernel at (32, 32), four sequences of 8192 tokens (its second launch), then the SASS cut into
# regions at every barrier and wgmma wait (scripts/ncu_regions.py). About 120 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
NCU_STEP=prefill PYTHONPATH=/tmp/site bash scripts/ncu_profile.sh "$OUT/ncu" 32,32 8192,8192,8192,8192 gdn_fwd_noprep@1
grep -i -E "stall|One or More Eligible|No Eligible|Warp Cycles Per Issued" "$OUT/ncu/gdn_fwd_noprep.details.txt" | head -10 | cut -c1-200
python3 scripts/ncu_regions.py "$OUT/ncu/gdn_fwd_noprep.sass.csv" --min 0.7 > "$OUT/regions.txt" 2>&1
echo "regions rc=$?"; head -c 9000 "$OUT/regions.txt"
rm -f "$OUT"/ncu/*.ncu-rep
