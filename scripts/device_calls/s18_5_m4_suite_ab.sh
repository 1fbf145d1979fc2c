#!/usr/bin/env bash
# One GPU: the GPU suite on HEAD's wheel (TMA stores on, prep at 4 CTAs per SM), then flashqla alone by wheel, one
# process each, same GPU: 27ea851 (before the eighteenth session's changes), c08f10c (TMA stores), HEAD (and 4 prep
# CTAs per SM): forward and training step at (16, 64), (16, 32), (2, 8) x four mixes. Wheels of the first two in
# .carry/ab/<commit>.zip.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
run_pytest "$OUT/pytest.log" 200 "not edge"
for c in 27ea851 c08f10c; do
  install_ab_wheel $c
done
ab_flashqla "16,64 16,32 2,8" 27ea851 c08f10c
