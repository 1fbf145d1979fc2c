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
S=/tmp/site
MIXES="1x8192 4096+4096 1x32768 8192x4"
AB_TIMEOUT=60 ab_runs bwd "4,8 2,4 8,16" "$MIXES" walk=$S rs=$S:FLASHQLA_WALK_BV=64 walk2=$S > "$OUT/ab_bwd.txt"
AB_TIMEOUT=60 ab_runs fwd "4,8 2,4 2,8" "$MIXES" walk=$S rs=$S:FLASHQLA_WALK_BV=64 walk2=$S > "$OUT/ab_fwd.txt"
for mode in bwd fwd; do
  grep "rc=" "$OUT/ab_$mode.txt" | tr '\n' ' '; echo
  python3 scripts/device_calls/ab_ratio.py "$mode" rs="$OUT/ab_${mode}_rs.json" walk="$OUT/ab_${mode}_walk.json" \
    walk2="$OUT/ab_${mode}_walk2.json" | cut -c1-120
done
for bv in 32 64; do
  FLASHQLA_WALK_BV=$bv PYTHONPATH=$S timeout 60 python3 benchmarks/profile_kernels.py --heads 2,4 \
    --mixes 1x32768 1x8192 > "$OUT/profile_bv$bv.log" 2>&1
  echo "== profile FLASHQLA_WALK_BV=$bv rc=$?"
  grep "ms of kernels\|cp_correct" "$OUT/profile_bv$bv.log" | cut -c1-120 | head -14
done
echo "elapsed $(( $(date +%s) - T0 )) s"
[ $(( $(date +%s) - T0 )) -lt 330 ] || exit 0
export PYTHONPATH=$S
regions() { python3 scripts/ncu_regions.py "$1" --min 3 2>&1 | cut -c1-170 | head -"${2:-40}"; }
FLASHQLA_WALK_BV=64 bash scripts/ncu_profile.sh /tmp/ncu_rs 2,4 32768 cp_correct@1
regions /tmp/ncu_rs/cp_correct.sass.csv 30
bash scripts/ncu_profile.sh /tmp/ncu_walk 2,4 32768 cp_correct@1
regions /tmp/ncu_walk/cp_correct.sass.csv 30
echo "elapsed $(( $(date +%s) - T0 )) s"
[ $(( $(date +%s) - T0 )) -lt 470 ] || exit 0
bash scripts/ncu_profile.sh /tmp/ncu_dh 4,8 8192 gdn_bwd_dh@1
regions /tmp/ncu_dh/gdn_bwd_dh.sass.csv 40
