#!/usr/bin/env bash
# One GPU, HEAD's wheel (the segment model fitted on 119 shapes) and a1bdf84's: the GPU suite; the automatic plan at the
# 119 shapes of s21_2 and s21_4 against those sweeps' fastest forced plans; the training step with peers at (8, 24)
# (against the first call's a1bdf84 table, H200_fwdbwd_a1bdf84_8_24.md).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 280 "not edge"
HEADS=(32,32 16,16 8,24 2,8 4,16 16,64 16,32 8,32)
PYTHONPATH=/tmp/site timeout 100 python3 benchmarks/cp_sweep.py --heads "${HEADS[@]}" --cp -1 --no-wide \
  --mixes 1x2048 1x4096 1x8192 1x16384 1x32768 2048x4 4096x4 > "$OUT/auto_single.log" 2>&1
echo "single rc=$?"
PYTHONPATH=/tmp/site timeout 100 python3 benchmarks/cp_sweep.py --heads "${HEADS[@]}" 16,48 --cp -1 --no-wide \
  --mixes 8192x4 4096x8 1024x8 16384+16384 28672+4096 8192+24576 12288+4096 > "$OUT/auto_multi.log" 2>&1
echo "multi rc=$?"
python3 scripts/device_calls/cp_auto_compare.py benchmarks/results/H200_cp_sweep_a1bdf84.log "$OUT/auto_single.log" \
  | tail -1
python3 scripts/device_calls/cp_auto_compare.py benchmarks/results/H200_cp_sweep_multi_a611c11.log \
  "$OUT/auto_multi.log" | tail -1
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=330 OUT=/tmp/o_fb bash scripts/gpu_bench.sh --fwdbwd "--heads 8,24"
cp /tmp/o_fb/H200_fwdbwd.json "$OUT/H200_fwdbwd_8_24.json"; cp /tmp/o_fb/H200_fwdbwd.md "$OUT/H200_fwdbwd_8_24.md"
grep "^| [A-Z0-9]" "$OUT/H200_fwdbwd_8_24.md" | cut -c1-170 | tail -19; grep "^\[bench\]" /tmp/o_fb/bench_fwdbwd.log | tail -1
