#!/usr/bin/env bash
# Forty-seventh session, call 3 (written for the next sessions' H200 calls; no device was lent in the 47th): issue 4's
# table, the forward at all 9 head configurations x 19 mixes beside FLA and FlashQLA (FlashInfer's published H200
# times stand in for it), in as many calls as it takes. Each call first compiles the peers' kernels for the shapes left
# in parallel processes (benchmarks/warm_peers.py: one per head configuration, FQ_WARM_TIMEOUT s, default 200), then
# times the shapes left in one process (bench_gdn.py --skip-done) until DEADLINE_S (default 560) from its start. The
# shapes left: those no JSON in PARTS_DIR (default benchmarks/results/s47) of the installed wheel's commit measured;
# commit each call's returned JSON there (fwd_all_part_N.json), then `python benchmarks/bench_gdn.py --render
# PARTS_DIR/fwd_all_part_*.json --md ...` makes the one table. Needs .carry/flashqla-*.whl, .carry/COMMIT and
# .carry/peers.tar.xz.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
install_wheel
commit=$(site_commit /tmp/site)
parts_dir=${PARTS_DIR:-benchmarks/results/s47}
# earlier parts of this commit only (a table joins rows of one commit: bench_gdn.py merge_runs)
done_json=$(python3 - "$commit" "$parts_dir" <<'PY'
import json, sys
from pathlib import Path
commit, folder = sys.argv[1], Path(sys.argv[2])
print(" ".join(str(p) for p in sorted(folder.glob("fwd_all_part_*.json"))
               if json.loads(p.read_text())["info"].get("commit") == commit))
PY
)
echo "earlier parts of $commit: ${done_json:-none}"
skip=${done_json:+--skip-done $done_json}
part=$(( $(ls "$parts_dir"/fwd_all_part_*.json 2>/dev/null | wc -l) + 1 ))
left=$(( ${DEADLINE_S:-560} - ($(date +%s) - T0) - ${FQ_WARM_TIMEOUT:-200} - 40 ))
rm -rf /tmp/o_all
FQ_TMP=/tmp/g0 FQ_WARM_TIMEOUT=${FQ_WARM_TIMEOUT:-200} FQ_BENCH_TIMEOUT=$left OUT=/tmp/o_all bash scripts/gpu_bench.sh \
  --warm "--mode fwd --libs flash_qla,fla --jobs 9 $skip" --fwd "--libs flashqla,fla,flash_qla $skip"
if [ -f /tmp/o_all/H200_fwd.json ]; then
  cp /tmp/o_all/H200_fwd.json "$OUT/fwd_all_part_$part.json"
  cp /tmp/o_all/H200_fwd.md "$OUT/fwd_all_part_$part.md"
  awk '/^\| model/ {t = 1} t && /^$/ {exit} t' /tmp/o_all/H200_fwd.md | cut -c1-150
fi
grep "^\[bench\]" /tmp/o_all/bench_fwd.log | tail -2
grep "took" /tmp/o_all/bench_fwd.log | head -20
echo "elapsed $(( $(date +%s) - T0 )) s"
