#!/usr/bin/env bash
# One device call for benchmarks: install the wheel and the peer bundle carried in .carry/, run
# profile_kernels.py and bench_gdn.py with the arguments given, results under $OUT.
#   bash scripts/gpu_bench.sh [--warm "<args>"] [--profile "<args>"] [--fwd "<args>"] [--bwd "<args>"]
#     [--fwdbwd "<args>"]
# Each step has its own time limit (FQ_BENCH_TIMEOUT, default 300 s) so one slow step leaves the others; with
# FQ_DEADLINE (epoch seconds) a step gets at most what is left until then (a warm-up that ends early leaves its time
# to the steps after it). --warm runs
# benchmarks/warm_peers.py with its args (the peers' first-use compiles in parallel processes, into the caches below,
# within FQ_WARM_TIMEOUT, default 240 s; its workers' logs in $OUT/warm/) before the steps after it.
set -uo pipefail
OUT=${OUT:-/tmp/flashqla_out}
# FQ_TMP: the folder for the installed wheel, the peers and their caches (one per concurrent run, e.g. one per GPU)
tmp=${FQ_TMP:-/tmp}
mkdir -p "$OUT" "$tmp/peers"
rm -rf "$tmp/site"
python3 -m pip install -q --no-deps --no-index --target "$tmp/site" .carry/flashqla-*.whl 2>&1 | grep -v WARNING
[ -f .carry/peers.tar.xz ] && tar xJf .carry/peers.tar.xz -C "$tmp/peers"
export PYTHONPATH="$tmp/site:$tmp/peers" PYTHONUNBUFFERED=1
# the device gets the tree without .git: scripts write the commit into .carry/COMMIT beforehand
[ -f .carry/COMMIT ] && export FLASHQLA_COMMIT="$(cat .carry/COMMIT)"
# The peers' first-use compiles (FlashQLA's TileLang kernels, FLA's Triton kernels and autotuning: 80-100 s
# per head configuration and library) are cached on disk. With FQ_SAVE_PEER_CACHE=1 the caches are written
# to $OUT/peer_cache.tar at the end (if under the 16 MiB a returned file may have); copied to
# .carry/peer_cache.tar they are unpacked before the next call's benchmarks, which then skip the compiles.
peer_cache=$tmp/peer_cache
mkdir -p "$peer_cache/tilelang" "$peer_cache/triton"
export TILELANG_CACHE_DIR="$peer_cache/tilelang" TRITON_CACHE_DIR="$peer_cache/triton" TRITON_CACHE_AUTOTUNING=1
[ -f .carry/peer_cache.tar ] && tar xf .carry/peer_cache.tar -C "$peer_cache"
declare -A steps=()
order=()
while [ $# -gt 0 ]; do
  case "$1" in
    --warm|--profile|--fwd|--bwd|--fwdbwd) steps[${1#--}]="$2"; order+=("${1#--}"); shift 2;;
    *) echo "unknown $1"; exit 2;;
  esac
done
# step_limit: FQ_BENCH_TIMEOUT, or less where FQ_DEADLINE is nearer
step_limit() {
  local limit=${FQ_BENCH_TIMEOUT:-300} left
  if [ -n "${FQ_DEADLINE:-}" ]; then
    left=$(( FQ_DEADLINE - $(date +%s) ))
    [ "$left" -lt "$limit" ] && limit=$(( left > 1 ? left : 1 ))
  fi
  echo "$limit"
}
for step in "${order[@]}"; do
  t0=$(date +%s)
  if [ "$step" = warm ]; then
    limit=${FQ_WARM_TIMEOUT:-240}
    timeout $((limit + 30)) python3 benchmarks/warm_peers.py ${steps[$step]} --timeout "$limit" --log-dir "$OUT/warm" \
      2>&1 | grep -v Warning > "$OUT/warm.log"
    tail -12 "$OUT/warm.log"
  elif [ "$step" = profile ]; then
    timeout "$(step_limit)" python3 benchmarks/profile_kernels.py ${steps[$step]} 2>&1 | grep -v Warning \
      > "$OUT/profile.log"
  else
    limit=$(step_limit)
    echo "== $step: within $limit s"
    timeout "$limit" python3 benchmarks/bench_gdn.py --mode "$step" ${steps[$step]} \
      --json "$OUT/H200_$step.json" --md "$OUT/H200_$step.md" 2>&1 | grep -v Warning > "$OUT/bench_$step.log"
  fi
  echo "== $step: $(( $(date +%s) - t0 )) s"
  grep "^\[bench\] [0-9]* shapes" "$OUT/bench_$step.log" 2>/dev/null
done
if [ -n "${FQ_SAVE_PEER_CACHE:-}" ]; then
  tar cf "$OUT/peer_cache.tar" -C "$peer_cache" .
  size=$(stat -c %s "$OUT/peer_cache.tar")
  echo "peer cache: $((size / 1048576)) MiB"
  [ "$size" -gt 16777216 ] && { echo "peer cache over 16 MiB: not returned"; rm -f "$OUT/peer_cache.tar"; }
fi
