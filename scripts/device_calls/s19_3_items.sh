#!/usr/bin/env bash
# (A record: the `items` option and its ablate specs bwdcwsi2 / i4 / i8 were removed after this run; they are at f8c2ddc.)
# One GPU, the wheel with the chunk gradient's `items` = 4 on (each CTA walks max(1, 4 // group) chunk slots): the
# chunk gradient alone in ablate.py (the default against items = 2 / 4 / 8, every output compared, 8192 tokens, one
# sequence), the GPU suite and the edge stage on the wheel (the walk over sequences, partial chunks and tail slots),
# then flashqla alone by wheel (98b49a0: items off; HEAD), the training step at five head configurations.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 230 python3 benchmarks/ablate.py --kernels bwdcws bwdcwsi2 bwdcwsi4 \
  bwdcwsi8 --variants cur --heads 16,16 32,32 16,32 2,8 16,64 > "$OUT/ablate_items.log" 2>&1
echo "ablate rc=$?"; grep -A30 "^kernel " "$OUT/ablate_items.log" | cut -c1-150
run_pytest "$OUT/pytest.log" 200 "not edge"
run_pytest "$OUT/pytest_edge.log" 100 edge
c=98b49a0
install_ab_wheel $c
ln -sfn /tmp/site /tmp/site_head
for c in 98b49a0 head; do
  PYTHONPATH=/tmp/site_$c PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode fwdbwd --libs flashqla \
    --heads 16,16 32,32 16,32 2,8 16,64 --mixes 1x8192 1x32768 8192x4 4096x8 --json "$OUT/ab_fwdbwd_$c.json" \
    > "$OUT/ab_fwdbwd_$c.log" 2>&1
  echo "fwdbwd $c rc=$?"
done
python3 scripts/device_calls/ms_table.py fwdbwd 98b49a0="$OUT/ab_fwdbwd_98b49a0.json" head="$OUT/ab_fwdbwd_head.json"
