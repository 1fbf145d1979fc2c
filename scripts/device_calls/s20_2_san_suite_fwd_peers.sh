#!/usr/bin/env bash
# One GPU, fe5d491's wheel (the prep's mma_level1 + diag8 on; diag8's zeros without the named barrier):
# compute-sanitizer over the prep (racecheck's hazards printed if any), the GPU suite; then ablate.py: the prep with
# z_rs off again (prep4nz), without diag8 / mma_level1 (prep4nd8 / prep4nm1 / prep4s19), and the new inverse's latency
# on a lone warpgroup (prep16 masks 120 127). The forward with peers only with FQ_PEERS=1 (FQ_HEADS, default (16, 16)).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_sanitizer /tmp/san gdn_chunk_prep 50
grep -m6 -A2 "Potential" /tmp/san/racecheck.log | cut -c1-200
run_pytest "$OUT/pytest.log" 220 "not edge"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/ablate.py --kernels prep prep4nz prep4nd8 \
  prep4nm1 prep4s19 --variants cur --tokens 32768 --heads 2,8 16,16 16,32 16,64 > "$OUT/ablate_prep.log" 2>&1
echo "prep rc=$?"; grep -A21 "^kernel " "$OUT/ablate_prep.log" | cut -c1-120
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 90 python3 benchmarks/ablate.py --kernels prep16 --variants ablate \
  --heads 1,16 --tokens 8448 --masks 0 120 127 > "$OUT/ablate_inverse16.log" 2>&1
echo "inverse rc=$?"; grep "^prep16 " "$OUT/ablate_inverse16.log" | cut -c1-110
[ "${FQ_PEERS:-0}" = 1 ] || exit 0
heads=${FQ_HEADS:-16,16}
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-230} OUT=/tmp/o_fwd bash scripts/gpu_bench.sh --fwd "--heads $heads"
cp /tmp/o_fwd/H200_fwd.json /tmp/o_fwd/H200_fwd.md "$OUT/" 2>/dev/null
grep "^| [0-9(A-Z]" "$OUT/H200_fwd.md" | cut -c1-170 | tail -26; tail -3 /tmp/o_fwd/bench_fwd.log
