#!/usr/bin/env bash
# Thirtieth session, call 4: test_edge_gpu.py with the 4096-sequence test's float64 references taken 512 sequences at a
# time (call 3 ran out of the H100's 80 GB there); then the chunk prep and the 128-wide forward at (32, 32), four
# sequences of 8192 tokens, under Nsight Compute: how far each is from the memory bandwidth (the multi-sequence shapes
# move ~2.1 GB in the two kernels). About 200 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
run_pytest "$OUT/pytest_edge.log" 200 gpu tests/test_edge_gpu.py
PYTHONPATH=/tmp/site bash scripts/ncu_profile.sh "$OUT/ncu" 32,32 8192,8192,8192,8192 chunk_prep gdn_fwd@2
for k in chunk_prep gdn_fwd; do
  echo "== $k"
  grep -E "^\s+(Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Issue Slots Busy|Registers Per Thread|Dynamic Shared Memory Per Block|Waves Per SM|Grid Size)" \
    "$OUT/ncu/$k.details.txt" | head -16
  grep -i -E "stall|One or More Eligible|No Eligible" "$OUT/ncu/$k.details.txt" | head -8 | cut -c1-200
done
rm -f "$OUT"/ncu/*.ncu-rep "$OUT"/ncu/*.sass.csv
