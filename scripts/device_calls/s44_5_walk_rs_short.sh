#!/usr/bin/env bash
# Forty-fourth session, call 5 (s44_4 cut to the device time left, about 150 s): the swizzled register walk's tests
# (test_walk_rs_gpu.py and test_cp_gpu.py's 32-against-64 test on the plain walks), its kernel time per step in a (2, 4)
# step beside the default's, and the backward with each at (2, 4) and (4, 8). Needs .carry/flashqla-*.whl (c56f571).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_rs.log" 60 gpu tests/test_walk_rs_gpu.py "tests/test_cp_gpu.py::test_walk_of_32_wide_slices_matches_reference_and_64"
S=/tmp/site
for bv in 32 64; do
  FLASHQLA_WALK_BV=$bv PYTHONPATH=$S timeout 40 python3 benchmarks/profile_kernels.py --heads 2,4 \
    --mixes 1x32768 > "$OUT/profile_bv$bv.log" 2>&1
  echo "== profile FLASHQLA_WALK_BV=$bv rc=$?"
  grep "ms of kernels\|cp_correct" "$OUT/profile_bv$bv.log" | cut -c1-120 | head -6
done
AB_TIMEOUT=40 ab_runs bwd "4,8 2,4" "1x8192 1x32768 8192x4" walk=$S rs=$S:FLASHQLA_WALK_BV=64 walk2=$S > "$OUT/ab_bwd.txt"
grep "rc=" "$OUT/ab_bwd.txt" | tr '\n' ' '; echo
python3 scripts/device_calls/ab_ratio.py bwd rs="$OUT/ab_bwd_rs.json" walk="$OUT/ab_bwd_walk.json" \
  walk2="$OUT/ab_bwd_walk2.json" | cut -c1-120
