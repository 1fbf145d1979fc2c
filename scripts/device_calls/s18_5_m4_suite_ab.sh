#!/usr/bin/env bash
# One GPU: the GPU suite on HEAD's wheel (TMA stores on, prep at 4 CTAs per SM), then flashqla alone by wheel, one
# process each, same GPU: 27ea851 (before the eighteenth session's changes), c08f10c (TMA stores), HEAD (and 4 prep
# CTAs per SM): forward and training step at (16, 64), (16, 32), (2, 8) x four mixes. Wheels of the first two in
# .carry/ab/<commit>.zip.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 200 "not edge"
for c in 27ea851 c08f10c; do
  install_ab_wheel $c
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
for mode in fwd fwdbwd; do
  python3 scripts/device_calls/ms_table.py $mode 27ea851="$OUT/ab_${mode}_27ea851.json" \
    c08f10c="$OUT/ab_${mode}_c08f10c.json" head="$OUT/ab_${mode}_head.json"
done
