#!/usr/bin/env bash
# Forty-fourth session, call 5 (s44_4 cut to the device time left, about 150 s): the swizzled register walk's tests
# (test_walk_rs_gpu.py and test_cp_gpu.py's 32-against-64 test on the plain walks), its kernel time per step in a (2, 4)
# step beside the default's, and the backward with each at (2, 4) and (4, 8). Needs .carry/flashqla-*.whl (c56f571).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest_rs.log" 60 gpu tests/test_walk_rs_gpu.py "tests/test_cp_gpu.py::test_walk_of_32_wide_slices_matches_reference_and_64"
profile_walk_widths 1x32768 40
AB_TIMEOUT=40 ab_base_ratio bwd "4,8 2,4" "1x8192 1x32768 8192x4" rs FLASHQLA_WALK_BV=64
