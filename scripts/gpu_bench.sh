#!/usr/bin/env bash
# One device call for benchmarks: install the wheel and the peer bundle carried in .carry/, run
# bench_gdn.py with the arguments given (after --fwd / --fwdbwd), results under $OUT.
#   bash scripts/gpu_bench.sh --fwd "<fwd args>" --fwdbwd "<fwdbwd args>"
set -uo pipefail
OUT=${OUT:-/tmp/flashqla_out}
mkdir -p "$OUT" /tmp/peers
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
[ -f .carry/peers.tar.xz ] && tar xJf .carry/peers.tar.xz -C /tmp/peers
export PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1
# the device gets the tree without .git: scripts write the commit into .carry/COMMIT beforehand
[ -f .carry/COMMIT ] && export FLASHQLA_COMMIT="$(cat .carry/COMMIT)"
fwd_args="" fwdbwd_args=""
while [ $# -gt 0 ]; do
  case "$1" in --fwd) fwd_args="$2"; shift 2;; --fwdbwd) fwdbwd_args="$2"; shift 2;; *) echo "unknown $1"; exit 2;; esac
done
if [ -n "$fwd_args" ]; then
  timeout ${FQ_BENCH_TIMEOUT:-300} python3 benchmarks/bench_gdn.py --mode fwd $fwd_args --json "$OUT/H200_fwd.json" \
    --md "$OUT/H200_fwd.md" 2>&1 | grep -v Warning | tee "$OUT/bench_fwd.log"
fi
if [ -n "$fwdbwd_args" ]; then
  timeout ${FQ_BENCH_TIMEOUT:-300} python3 benchmarks/bench_gdn.py --mode fwdbwd $fwdbwd_args --json "$OUT/H200_fwdbwd.json" \
    --md "$OUT/H200_fwdbwd.md" 2>&1 | grep -v Warning | tee "$OUT/bench_fwdbwd.log"
fi
