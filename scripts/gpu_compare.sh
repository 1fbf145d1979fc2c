#!/usr/bin/env bash
# One device call to judge a kernel change: the kernels of this tree against those of .carry/base (TileLang
# JIT, benchmarks/ablate.py, same process and inputs), then the GPU tests of the wheel carried in .carry/.
# Prepare it on the build machine:
#   bash scripts/export_kernels.sh main .carry/base          # the kernels to compare against
#   pip wheel . --no-deps --no-build-isolation -w .carry     # this tree's wheel
#   bash ../shared/peers/make_bundle.sh .carry               # TileLang for the JIT (peers.tar.xz)
#   pip download --only-binary=:all: --python-version 3.12 --no-deps -d .carry/wheels \
#       hypothesis sortedcontainers attrs pytest-timeout      # test dependencies for the GPU machine
# and run (GPU): bash scripts/gpu_compare.sh [ablate.py args, default: all four kernels, base against cur]
set -uo pipefail
OUT=${OUT:-/tmp/flashqla_out}
mkdir -p "$OUT"
rm -rf /tmp/peers && mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--kernels fwd prep bwdc bwddh --variants base cur --heads 2,8 16,64)
PYTHONPATH=/tmp/peers timeout "${FQ_ABLATE_TIMEOUT:-240}" python3 benchmarks/ablate.py --base-dir .carry/base \
  --workdir /tmp/flashqla_ablate "${args[@]}" > "$OUT/ablate.log" 2>&1
ablate_rc=$?
rm -rf /tmp/site
if compgen -G ".carry/wheels/*.whl" > /dev/null; then  # test dependencies (hypothesis): no package index there
  python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/wheels/*.whl 2>&1 | grep -v WARNING
fi
FQ_TEST_TIMEOUT=${FQ_TEST_TIMEOUT:-300} bash scripts/gpu_check.sh -m "not edge" > "$OUT/check.log" 2>&1
check_rc=$?
grep -E "passed|failed|FAILED" "$OUT/check.log" | tail -5
grep -v -E "TileLang|^compiled" "$OUT/ablate.log" | tail -30
echo "SUMMARY ablate_rc=$ablate_rc check_rc=$check_rc"
