#!/usr/bin/env bash
# One GPU: the GPU suite on HEAD's wheel (TMA stores on, prep at 4 CTAs per SM), then flashqla alone by wheel, one
# process each, same GPU: 27ea851 (before the eighteenth session's changes), c08f10c (TMA stores), HEAD (and 4 prep
# CTAs per SM): forward and training step at (16, 64), (16, 32), (2, 8) x four mixes. Wheels of the first two in
# .carry/ab/<commit>.zip.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
head=$(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')
echo "wheel commit: $head"
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 200 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED" "$OUT/pytest.log" | head -12; tail -1 "$OUT/pytest.log"
grep -h -A11 "worst relative" "$OUT/pytest.log" | head -12
for c in 27ea851 c08f10c; do
  mkdir -p /tmp/w_$c && cp .carry/ab/$c.zip /tmp/w_$c/flashqla-0.1.0-py3-none-linux_x86_64.whl
  python3 -m pip install -q --no-deps --no-index --target /tmp/site_$c /tmp/w_$c/*.whl 2>&1 | grep -v WARNING
done
ln -sfn /tmp/site /tmp/site_head
for mode in fwd fwdbwd; do
  for c in 27ea851 c08f10c head; do
    PYTHONPATH=/tmp/site_$c PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode $mode --libs flashqla \
      --heads 16,64 16,32 2,8 --mixes 1x8192 1x32768 8192x4 4096x8 --json "$OUT/ab_${mode}_$c.json" \
      > "$OUT/ab_${mode}_$c.log" 2>&1
    echo "$mode $c rc=$?"
  done
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for mode in ("fwd", "fwdbwd"):
    rows = {}
    for c in ("27ea851", "c08f10c", "head"):
        try:
            d = json.load(open(f"{out}/ab_{mode}_{c}.json"))
        except Exception as e:  # noqa: BLE001
            print(mode, c, "no json", e)
            continue
        for r in d["rows"]:
            rows.setdefault((r["h_qk"], r["h_v"], r["seqlens"]), {})[c] = r["ms"].get("flashqla")
    print(f"{mode}: ms at 27ea851 / c08f10c / head, and 27ea851 / head")
    for k, v in rows.items():
        a, b, h = (v.get(c, float("nan")) for c in ("27ea851", "c08f10c", "head"))
        print(k, f"{a:.3f} {b:.3f} {h:.3f}  x{a / h:.3f}")
PY
