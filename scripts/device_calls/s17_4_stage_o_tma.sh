#!/usr/bin/env bash
# One GPU: o of a full chunk stored by TMA from W's stage at BV = 128 (stage_o; s17_1 / s17_2's staged stores were
# slower): the fused forward's kernels side by side (ablate.py, JIT: BV = 64 staged, BV = 128 from registers, BV = 128
# by TMA; with o, and without o storing h), the GPU suite on the wheel (BV = 128 by TMA), and the whole forward by
# width (flashqla only: automatic, 64, 128).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --kernels fwd_so fwd128 fwd128t \
  --variants cur --heads 2,8 16,64 32,128 > "$OUT/ablate_fwd.log" 2>&1
echo "ablate rc=$?" >> "$OUT/ablate_fwd.log"
grep -h "^fwd\|rc=" "$OUT/ablate_fwd.log" | cut -c1-120
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/ablate.py --kernels fwd128 fwd128t \
  --variants cur --heads 2,8 16,64 32,128 --no-o --store-h > "$OUT/ablate_fwd_h.log" 2>&1
echo "ablate rc=$?" >> "$OUT/ablate_fwd_h.log"
grep -h "^fwd\|rc=" "$OUT/ablate_fwd_h.log" | cut -c1-120
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
