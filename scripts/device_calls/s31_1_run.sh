#!/usr/bin/env bash
# Thirty-first session, first call: the a_in_x / sk_halves ablations (s31_1_a_in_x.sh), then the two GPU test files
# refactored onto gdn_inputs helpers in the thirtieth session (not rerun there), on the wheel in .carry.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
cat .carry/COMMIT
bash scripts/device_calls/s31_1_a_in_x.sh
pip install --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl > "$OUT/pip.log" 2>&1 || tail -3 "$OUT/pip.log"
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_fwd_rs_gpu.py \
  tests/test_fwd_block_v_gpu.py > "$OUT/pytest_refactored.log" 2>&1
echo "pytest rc=$?"; tail -4 "$OUT/pytest_refactored.log"
