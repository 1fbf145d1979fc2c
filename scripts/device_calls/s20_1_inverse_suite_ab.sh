#!/usr/bin/env bash
# One GPU, a4393e2's wheel (the prep's mma_level1 + diag8 on for the sm90 family): the GPU suite and the edge stage
# (A's error against float64 with the TF32 merges), compute-sanitizer over the prep (racecheck, synccheck, memcheck),
# then flashqla alone by wheel (98b49a0: the nineteenth session's kernels; HEAD), forward and training step at
# (16, 64), (16, 32), (16, 16), (2, 8) x four mixes. 98b49a0's wheel in .carry/ab/98b49a0.zip.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 220 "not edge"
run_pytest "$OUT/pytest_edge.log" 100 edge
run_sanitizer /tmp/san gdn_chunk_prep 50
install_ab_wheel 98b49a0
ab_flashqla "16,64 16,32 16,16 2,8" 98b49a0
