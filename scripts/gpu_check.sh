#!/usr/bin/env bash
# One device call: install the wheel carried in .carry/, print versions, run the demo (with a hang
# guard), the test suite (again per kernel family in a check build), and optionally a benchmark;
# logs under $OUT, a short summary last.
#   bash scripts/gpu_check.sh [pytest args...]
set -uo pipefail
OUT=${OUT:-/tmp/flashqla_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  git log -1 --format='commit %h %s' 2>/dev/null || true
} 2>&1 | tee "$OUT/versions.txt"
timeout 180 python3 -m flashqla --info 2>&1 | tee "$OUT/info.log"
timeout 180 python3 -m flashqla 2>&1 | tee "$OUT/demo.log"
demo_rc=${PIPESTATUS[0]}
if [ "$demo_rc" = 124 ]; then echo "DEMO HUNG (timeout): skipping tests"; exit 1; fi
timeout ${FQ_TEST_TIMEOUT:-420} python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 "$@" \
  > "$OUT/pytest.log" 2>&1
test_rc=$?
grep -E "rel err|Error|error:" "$OUT/pytest.log" | head -40
tail -25 "$OUT/pytest.log"
# a check build (FLASHQLA_CHECK_FAMILIES) also carries the sm100 / sm120 programs compiled for sm_90a:
# the demo and the GPU tests once more with each of those kernel families
families=$(python3 -c "import flashqla; print(' '.join(sorted({c.split('@')[0] for c in flashqla.build_manifest().get('check_families', [])})))")
family_rcs=""
for fam in $families; do
  FLASHQLA_KERNEL_FAMILY=$fam timeout 180 python3 -m flashqla > "$OUT/demo_$fam.log" 2>&1
  FLASHQLA_KERNEL_FAMILY=$fam timeout ${FQ_TEST_TIMEOUT:-420} python3 -m pytest tests -q -rfs -p no:cacheprovider \
    --timeout 120 -m gpu "$@" > "$OUT/pytest_$fam.log" 2>&1
  rc=$?
  echo "== kernel family $fam: pytest rc=$rc"; tail -4 "$OUT/demo_$fam.log"; tail -12 "$OUT/pytest_$fam.log"
  family_rcs="$family_rcs ${fam}_rc=$rc"
done
echo "SUMMARY demo_rc=$demo_rc pytest_rc=$test_rc$family_rcs"
