#!/usr/bin/env bash
# Forty-fourth session, call 4: the register walk again (s44_3: correct, but 2.9 us per step against the 32-wide split
# walk's 2.25; ncu: its transposed reads of E hit four lanes per bank and its 64 scalar stores per thread per step
# throttled the LSU). Now E's tile and a store tile are swizzled and S_{j+1} leaves by one TMA store. Its GPU tests
# with the walk and CP tests (test_cp_gpu.py's 32-against-64 test now compares the plain walks); the default, the
# register walk and the default again at the few-head shapes; per-step kernel times in a (2, 4) step; ncu of a
# register-walk launch. Needs .carry/flashqla-*.whl built from a commit with the swizzled tiles. About 5 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
run_pytest "$OUT/pytest_rs.log" 200 gpu tests/test_walk_rs_gpu.py tests/test_walk_split_gpu.py tests/test_cp_gpu.py \
  tests/test_build_manifest.py
MIXES="1x8192 4096+4096 1x32768 8192x4"
ab_base_ratio bwd "4,8 2,4 8,16" "$MIXES" rs FLASHQLA_WALK_BV=64
ab_base_ratio fwd "4,8 2,4 2,8" "$MIXES" rs FLASHQLA_WALK_BV=64
profile_walk_widths "1x32768 1x8192" 60
echo "elapsed $(( $(date +%s) - T0 )) s"
[ $(( $(date +%s) - T0 )) -lt ${NCU_GATE_S:-200} ] || exit 0
FLASHQLA_WALK_BV=64 PYTHONPATH=/tmp/site bash scripts/ncu_profile.sh /tmp/ncu_rs 2,4 32768 cp_correct@1
PYTHONPATH=/tmp/site python3 scripts/ncu_regions.py /tmp/ncu_rs/cp_correct.sass.csv --min 3 2>&1 | cut -c1-170 | head -30
