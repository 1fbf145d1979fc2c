#!/usr/bin/env bash
# Thirty-third session, fourth call: gdn_prefill's prep-free forward on the 128-wide plan whichever width the cost
# model prices lower (2a96c98; 30c7d47 ran it only where the model chose 128, so context parallelism's shapes, planned
# 64-wide, kept the prep path). GPU prefill tests; flashqla alone: the prep path (FLASHQLA_FWD_NOPREP=0), 30c7d47's
# wheel and this one on the mixes where the plan splits sequences; then (32, 32) beside FLA and FlashQLA on them.
# Needs the wheel, .carry/ab/30c7d47.zip and .carry/peers.tar.xz. About 350 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
install_ab_wheel 30c7d47
run_pytest "$OUT/pytest_prefill.log" 150 gpu tests/test_prefill_gpu.py tests/test_callers_gpu.py
MIXES="1x32768 1x8192 1x2048 16384+16384 4096+4096 1024+7168 28672+4096"
AB_TIMEOUT=80 ab_runs fwd "32,32 16,16" "$MIXES" prep=/tmp/site:FLASHQLA_FWD_NOPREP=0 c30c7d47=/tmp/site_30c7d47 \
  wide=/tmp/site
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 170 python3 benchmarks/bench_gdn.py --mode fwd \
  --heads 32,32 --mixes $MIXES --libs flashqla,fla,flash_qla \
  --json "$OUT/peers_cp.json" --md "$OUT/peers_cp.md" > "$OUT/peers.log" 2>&1
echo "peers rc=$?"; grep "^| \|\[bench\]" "$OUT/peers_cp.md" | cut -c1-170 | tail -9
