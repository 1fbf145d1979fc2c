#!/usr/bin/env bash
# Forty-sixth session, call 3: the register walk's step with its products kept (rs_nostore's SASS held 3 of its 24
# HGMMA: it timed the loads): rs_final (only the last state stored) and rs_noload (no loads after the first two
# steps) beside rs, rs_loadsonly, split32, split32_nostore and split32_d3 (M fetched two steps ahead), in
# walk_bench.py (TileLang's JIT); then the peer tables on 6f19fa3's wheel: on an H200 the forward at (16, 64) and
# (32, 32) (issue 4's card, with FlashInfer's published H200 times), on an H100 the training step at (16, 32) (speed
# plan item 2). Needs .carry/flashqla-*.whl and .carry/peers.tar.xz. Under 10 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$GPU"
install_peers
install_wheel
VARIANTS="split32 split32_d3 split32_nostore rs rs_final rs_noload rs_loadsonly"
walk_bench_compile "$VARIANTS"
walk_bench_run "$VARIANTS" 90 walk_bench.log --heads 4 --tokens 32768 --fallback-heads 4
walk_bench_run "$VARIANTS" 60 walk_bench8.log --heads 8 --tokens 8192 --seg-tokens 512
echo "elapsed $(( $(date +%s) - T0 )) s"
case "$GPU" in
  *H200*)
    peer_table fwd 16,64 150 "--libs flashqla,fla,flash_qla"
    echo "elapsed $(( $(date +%s) - T0 )) s"
    peer_table fwd 32,32 170 "--libs flashqla,fla,flash_qla" ;;
  *)
    peer_table fwdbwd 16,32 380 "--libs flashqla,fla,flash_qla" ;;
esac
echo "elapsed $(( $(date +%s) - T0 )) s"
