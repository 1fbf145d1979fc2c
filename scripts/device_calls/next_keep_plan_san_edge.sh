#!/usr/bin/env bash
# (Written in the twenty-second session for the next one; not yet run.) One GPU, the wheel of .carry/COMMIT (772ffb1 or
# later: the chunk gradient's small-group variant and the kept-states backward's warm-up share): the dispatch and
# kept-states GPU tests (test_chunk_gradient_variant_by_group is new and has never run); the edge stage;
# compute-sanitizer over the chunk gradient (scripts/sanitize_driver.py now runs two and four v-heads per qk-head: both
# variants); the automatic plan with kept states against s22_3's sweep (expected about 1.002 on the backward, 1.012 at
# a993033); the chunk gradient with tma_dqdk and prio_loads. About 520 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 150 python3 -m pytest -q -rfs -p no:cacheprovider --timeout 120 \
  tests/test_dispatch_gpu.py tests/test_chunk_states_gpu.py > "$OUT/pytest_dispatch.log" 2>&1
echo "dispatch / chunk states rc=$?"; grep -h "^FAILED\|Error" "$OUT/pytest_dispatch.log" | head -8
tail -1 "$OUT/pytest_dispatch.log"
run_pytest "$OUT/pytest_edge.log" 100 edge
run_sanitizer /tmp/san gdn_bwd_chunk 60
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|Potential" /tmp/san/*.log | head -8
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/cp_sweep.py --keep --no-wide \
  --heads 32,32 16,16 8,24 2,8 16,64 16,32 --mixes 1x2048 1x4096 1x8192 1x16384 1x32768 4096x4 --cp -1 \
  > "$OUT/cp_keep_auto.log" 2>&1
echo "keep auto rc=$?"
python3 scripts/device_calls/cp_auto_compare.py benchmarks/results/H200_cp_sweep_keep_a993033.log \
  "$OUT/cp_keep_auto.log" | tail -12
# the chunk gradient's dq and dk stored by TMA (tma_dqdk) and dS1, dO loaded after Q, K (prio_loads; both off, written
# in the twenty-second session), alone and together, with the default split and the small-group variant's,
# interleaved (every output should be bitwise the default's)
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/ablate.py --rounds 5 \
  --kernels bwdcwsb bwdcwsqk bwdcwspl bwdcwsr2 bwdcwsr2qk bwdcwsr2pl bwdcwsr2qkpl --variants cur --tokens 16384 \
  --heads 16,16 32,32 16,32 16,64 > "$OUT/ablate_dqdk.log" 2>&1
echo "ablate dqdk rc=$?"; grep -A30 "^kernel " "$OUT/ablate_dqdk.log" | cut -c1-100
