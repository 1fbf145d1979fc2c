#!/usr/bin/env bash
# The GPU suite (-m "not edge") on the installed wheel (/tmp/site), then the whole forward by V-slice width (flashqla
# only: automatic, 64, 128; bench_gdn.py at (2, 8), (16, 32), (16, 64) x five mixes) and its table. Called by the
# s17_* scripts after their own steps.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 200 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
grep -h "^FAILED" "$OUT/pytest.log" | head; tail -2 "$OUT/pytest.log"
for bv in auto 64 128; do
  if [ $bv = auto ]; then unset FLASHQLA_FWD_BLOCK_V; else export FLASHQLA_FWD_BLOCK_V=$bv; fi
  PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode fwd --libs flashqla \
    --heads 2,8 16,32 16,64 --mixes 1x8192 1x32768 8192x4 4096x8 2048x16 --md "$OUT/fwd_bv_$bv.md" \
    --json "$OUT/fwd_bv_$bv.json" > "$OUT/fwd_bv_$bv.log" 2>&1
  echo "bench bv=$bv rc=$?"
done
unset FLASHQLA_FWD_BLOCK_V
python3 - "$OUT" <<'PY'
import json, sys
out, rows = sys.argv[1], {}
for bv in ("auto", "64", "128"):
    try:
        d = json.load(open(f"{out}/fwd_bv_{bv}.json"))
    except Exception as e:  # noqa: BLE001
        print(bv, "no json", e)
        continue
    for r in d["rows"]:
        rows.setdefault((r["h_qk"], r["h_v"], r["seqlens"]), {})[bv] = r["ms"].get("flashqla")
print("(h_qk, h_v) mix: ms at auto / 64 / 128")
for k, v in rows.items():
    print(k, " ".join(f"{v.get(b, float('nan')):.3f}" for b in ("auto", "64", "128")))
PY
