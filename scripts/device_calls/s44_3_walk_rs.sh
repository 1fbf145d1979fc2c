#!/usr/bin/env bash
# Forty-fourth session, call 3: the register walk (tilelang_src/sm90/cp_correct_rs.py; FLASHQLA_WALK_BV=64 takes it with
# split transitions), written and lowered here, never run. Its GPU tests (against float64 and the 32-wide split walk;
# runs where asked) with the split-walk, split-scan and CP tests; flashqla alone at the few-head shapes: the default
# (32-wide split walk), the register walk, the default again; the kernels of a (2, 4) step with each (time per step);
# then, while the call has time, Nsight Compute on a step of each walk and on the state gradient's warm-up pass at
# (4, 8) 8192 (scripts/ncu_regions.py). Needs .carry/flashqla-*.whl built from a commit with cp_correct_rs.py.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
install_wheel
run_pytest "$OUT/pytest_rs.log" 200 gpu tests/test_walk_rs_gpu.py tests/test_walk_split_gpu.py \
  tests/test_cp_scan_split_gpu.py tests/test_cp_gpu.py tests/test_build_manifest.py
MIXES="1x8192 4096+4096 1x32768 8192x4"
ab_base_ratio bwd "4,8 2,4 8,16" "$MIXES" rs FLASHQLA_WALK_BV=64
ab_base_ratio fwd "4,8 2,4 2,8" "$MIXES" rs FLASHQLA_WALK_BV=64
profile_walk_widths "1x32768 1x8192" 60
echo "elapsed $(( $(date +%s) - T0 )) s"
[ $(( $(date +%s) - T0 )) -lt 330 ] || exit 0
export PYTHONPATH=/tmp/site
regions() { python3 scripts/ncu_regions.py "$1" --min 3 2>&1 | cut -c1-170 | head -"${2:-40}"; }
FLASHQLA_WALK_BV=64 bash scripts/ncu_profile.sh /tmp/ncu_rs 2,4 32768 cp_correct@1
regions /tmp/ncu_rs/cp_correct.sass.csv 30
bash scripts/ncu_profile.sh /tmp/ncu_walk 2,4 32768 cp_correct@1
regions /tmp/ncu_walk/cp_correct.sass.csv 30
echo "elapsed $(( $(date +%s) - T0 )) s"
[ $(( $(date +%s) - T0 )) -lt 470 ] || exit 0
bash scripts/ncu_profile.sh /tmp/ncu_dh 4,8 8192 gdn_bwd_dh@1
regions /tmp/ncu_dh/gdn_bwd_dh.sass.csv 40
