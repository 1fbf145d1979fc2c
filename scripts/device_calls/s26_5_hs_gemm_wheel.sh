#!/usr/bin/env bash
# Twenty-sixth session, call 5: HEAD's wheel (hs_gemm on in the fused backward and the gmax 2 chunk gradient) on the
# user's path. The GPU tests of the backward (fused, two passes, CP, chunk states, properties) against float64, then
# flashqla alone by wheel: the backward and the training step against b5b9bd6's wheel (before hs_gemm) and b5b9bd6's
# again (the run's drift), at one and two v-heads per qk-head. About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
install_ab_wheel b5b9bd6
t0=$(date +%s)
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 260 python3 -m pytest tests/test_fused_bwd_gpu.py tests/test_gdn_bwd_gpu.py \
  tests/test_cp_gpu.py tests/test_chunk_states_gpu.py tests/test_properties_gpu.py -q -rfs -p no:cacheprovider \
  --timeout 120 > "$OUT/pytest_bwd.log" 2>&1
echo "pytest rc=$? $(( $(date +%s) - t0 )) s"; grep -h "^FAILED\|^SKIPPED\|^ERROR" "$OUT/pytest_bwd.log" | head -12
tail -1 "$OUT/pytest_bwd.log"
ab_drift bwd b5b9bd6 head "32,32 16,16 16,32" "1x8192 1x32768 8192x4 1024x8"
ab_drift fwdbwd b5b9bd6 head "32,32 16,16 16,32" "1x8192 1x32768 8192x4 1024x8"
