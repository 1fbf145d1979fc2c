#!/usr/bin/env bash
# Thirty-third session, third call: context parallelism in gdn_prefill's forward without the chunk prep (the kernel's
# warm-up pass, the chunk decays from the raw gates by gdn_chunk_decay, cp_correct's walk). GPU tests (prefill with
# forced CP, the CP suite, edge/fwd/callers/memory); flashqla alone, the prep path (FLASHQLA_FWD_NOPREP=0) against
# the default, on the mixes where the plan splits sequences; then those mixes beside FLA and FlashQLA at (32, 32) and
# (16, 16). Needs the wheel and .carry/peers.tar.xz. About 500 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
run_pytest "$OUT/pytest_prefill.log" 150 gpu tests/test_prefill_gpu.py
run_pytest "$OUT/pytest_cp.log" 150 gpu tests/test_cp_gpu.py tests/test_edge_gpu.py tests/test_gdn_fwd_gpu.py \
  tests/test_callers_gpu.py tests/test_memory_gpu.py
MIXES="1x32768 1x8192 1x2048 16384+16384 4096+4096 1024+7168 28672+4096"
AB_TIMEOUT=80 ab_runs fwd "32,32 16,16" "$MIXES" prep=/tmp/site:FLASHQLA_FWD_NOPREP=0 noprep=/tmp/site
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout 230 python3 benchmarks/bench_gdn.py --mode fwd \
  --heads 32,32 16,16 --mixes $MIXES --libs flashqla,fla,flash_qla \
  --json "$OUT/peers_cp.json" --md "$OUT/peers_cp.md" > "$OUT/peers.log" 2>&1
echo "peers rc=$?"; grep "^| \|\[bench\]" "$OUT/peers_cp.md" | cut -c1-170 | tail -16
