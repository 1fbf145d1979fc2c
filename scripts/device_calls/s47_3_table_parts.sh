#!/usr/bin/env bash
# Forty-seventh session, call 3 (written for the next sessions' H200 calls; no device was lent in the 47th): a whole
# acceptance table in as many calls as it takes. MODE (default fwd): fwd, issue 4's 9 head configurations x 19 mixes
# beside FLA and FlashQLA (FlashInfer's published H200 times stand in for it); bwd, issue 5's 32 published backward
# shapes; fwdbwd, issue 5's training steps (9 head configurations x MIXES, default 1x8192 4096+4096 1x32768 8192x4:
# 8k and 32k tokens). Each call first compiles the peers' kernels for the shapes left in parallel processes
# (benchmarks/warm_peers.py: one per head configuration, within FQ_WARM_TIMEOUT s, default 200), then times the shapes
# left in one process (bench_gdn.py --skip-done) until DEADLINE_S (default 560) from its start. The shapes left: those
# that no JSON in PARTS_DIR (default benchmarks/results/s47) of the installed wheel's commit measured. Commit each
# call's returned JSON there (MODE_all_part_N.json); `python benchmarks/bench_gdn.py --render
# PARTS_DIR/MODE_all_part_*.json --md ...` then makes the one table. Needs .carry/flashqla-*.whl, .carry/COMMIT and .carry/peers.tar.xz.
set -uo pipefail
. scripts/device_calls/common.sh
begin_call
mode=${1:-fwd}
commit=$(site_commit /tmp/site)
parts_dir=${PARTS_DIR:-benchmarks/results/s47}
# earlier parts of this commit only (a table joins rows of one commit: bench_gdn.py merge_runs)
done_json=$(python3 - "$commit" "$parts_dir" "$mode" <<'PY'
import json, sys
from pathlib import Path
commit, folder, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
print(" ".join(str(p) for p in sorted(folder.glob(f"{mode}_all_part_*.json"))
               if json.loads(p.read_text())["info"].get("commit") == commit))
PY
)
echo "earlier $mode parts of $commit: ${done_json:-none}"
shapes=""
[ "$mode" = fwdbwd ] && shapes="--mixes ${MIXES:-1x8192 4096+4096 1x32768 8192x4}"
skip=${done_json:+--skip-done $done_json}
part=$(( $(ls "$parts_dir"/"$mode"_all_part_*.json 2>/dev/null | wc -l) + 1 ))
# the timed step gets what the warm-up leaves of DEADLINE_S (less 30 s for what follows; gpu_bench.sh's FQ_DEADLINE)
deadline=$(( T0 + ${DEADLINE_S:-560} - 30 ))
rm -rf /tmp/o_all
FQ_TMP=/tmp/g0 FQ_WARM_TIMEOUT=${FQ_WARM_TIMEOUT:-200} FQ_DEADLINE=$deadline FQ_BENCH_TIMEOUT=${DEADLINE_S:-560} \
  OUT=/tmp/o_all bash scripts/gpu_bench.sh \
  --warm "--mode $mode --libs flash_qla,fla --jobs 9 $shapes $skip" \
  --"$mode" "--libs flashqla,fla,flash_qla $shapes $skip"
if [ -f "/tmp/o_all/H200_$mode.json" ]; then
  cp "/tmp/o_all/H200_$mode.json" "$OUT/${mode}_all_part_$part.json"
  cp "/tmp/o_all/H200_$mode.md" "$OUT/${mode}_all_part_$part.md"
  awk '/^\| model/ {t = 1} t && /^$/ {exit} t' "/tmp/o_all/H200_$mode.md" | cut -c1-150
fi
grep "^\[bench\]" "/tmp/o_all/bench_$mode.log" | tail -2
grep "took" "/tmp/o_all/bench_$mode.log" | head -20
echo "elapsed $(( $(date +%s) - T0 )) s"
