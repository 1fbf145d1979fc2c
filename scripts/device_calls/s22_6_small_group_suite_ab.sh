#!/usr/bin/env bash
# One GPU, fc30405's wheel (the chunk gradient's small-group variant, groups of 1-2 v-heads per qk-head) and
# a993033's (the default kernel everywhere): the backward's GPU tests (every group size, torch.compile callers,
# dispatch, kept states, non-finite inputs) on the new wheel; then flashqla alone, the backward, at
# groups 1-3, timed a993033 / fc30405 / a993033 (the repeat: the run's drift).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel a993033
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 200 python3 -m pytest -q -rfs -p no:cacheprovider --timeout 120 \
  -m "not edge" tests/test_gdn_bwd_gpu.py tests/test_dispatch_gpu.py tests/test_callers_gpu.py \
  tests/test_chunk_states_gpu.py tests/test_cp_gpu.py tests/test_nonfinite.py tests/test_properties_gpu.py \
  > "$OUT/pytest.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED\|^SKIPPED" "$OUT/pytest.log" | head -12
tail -1 "$OUT/pytest.log"
ab_drift bwd a993033 fc30405 "32,32 16,16 16,32 8,24" "1x8192 1x32768 8192x4 2048x4"
