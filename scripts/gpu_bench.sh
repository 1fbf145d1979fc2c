#!/usr/bin/env bash
# One device call for benchmarks: install the wheel and the peer bundle carried in .carry/, run
# profile_kernels.py and bench_gdn.py with the arguments given, results under $OUT.
#   bash scripts/gpu_bench.sh [--profile "<args>"] [--fwd "<args>"] [--bwd "<args>"] [--fwdbwd "<args>"]
# Each step has its own time limit (FQ_BENCH_TIMEOUT, default 300 s) so one slow step leaves the others.
set -uo pipefail
OUT=${OUT:-/tmp/flashqla_out}
mkdir -p "$OUT" /tmp/peers
rm -rf /tmp/site
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
[ -f .carry/peers.tar.xz ] && tar xJf .carry/peers.tar.xz -C /tmp/peers
export PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1
# the device gets the tree without .git: scripts write the commit into .carry/COMMIT beforehand
[ -f .carry/COMMIT ] && export FLASHQLA_COMMIT="$(cat .carry/COMMIT)"
declare -A steps=()
order=()
while [ $# -gt 0 ]; do
  case "$1" in
    --profile|--fwd|--bwd|--fwdbwd) steps[${1#--}]="$2"; order+=("${1#--}"); shift 2;;
    *) echo "unknown $1"; exit 2;;
  esac
done
for step in "${order[@]}"; do
  t0=$(date +%s)
  if [ "$step" = profile ]; then
    timeout ${FQ_BENCH_TIMEOUT:-300} python3 benchmarks/profile_kernels.py ${steps[$step]} 2>&1 | grep -v Warning \
      > "$OUT/profile.log"
  else
    timeout ${FQ_BENCH_TIMEOUT:-300} python3 benchmarks/bench_gdn.py --mode "$step" ${steps[$step]} \
      --json "$OUT/H200_$step.json" --md "$OUT/H200_$step.md" 2>&1 | grep -v Warning > "$OUT/bench_$step.log"
  fi
  echo "== $step: $(( $(date +%s) - t0 )) s"
  grep "^\[bench\] [0-9]* shapes" "$OUT/bench_$step.log" 2>/dev/null
done
