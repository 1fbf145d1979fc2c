#!/usr/bin/env bash
# (Written in the twenty-fifth session for the next one; not yet run.) The fused backward's period: K and Vd in one
# two-stage buffer (the default: stages 0 and 1; its lowered code differs from ccfd14f's by the buffer's offsets only,
# SASS 10856 against 10752 instructions, spills 820 / 1032 against 968 / 1208 bytes) and two options, off:
# dq_after_da (WA forms E and dA before staging dq: the consumers' mutual wait of the shipped timeline) and k_vd_swap
# (the stages swap every chunk: the next K loads without waiting for WK's dKs K).
#   1. the wheel of .carry/COMMIT (HEAD): the fused and backward GPU tests on the default;
#   2. benchmarks/fused_bwd_check.py (JIT, the peers bundle's TileLang): the pair against the default and the options
#      (outputs compared with the pair's, times), then the timeline of both options at (32, 32) 8192x4;
#   3. flashqla alone, training step: .carry/ab/8077b2c.zip (ccfd14f's kernels: build it from a worktree of ccfd14f
#      in a new checkout) against HEAD's wheel and again (the default's code change measured).
# About 480 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 150 python3 -m pytest tests/test_fused_bwd_gpu.py \
  tests/test_gdn_bwd_gpu.py -q -rfs -p no:cacheprovider --timeout 120 -x > "$OUT/pytest_fused.log" 2>&1
echo "pytest fused rc=$?"; grep -h "^FAILED\|^SKIPPED\|Error" "$OUT/pytest_fused.log" | head -8; tail -1 "$OUT/pytest_fused.log"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 240 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 --params "{}" "dict(k_vd_swap=True)" "dict(dq_after_da=True)" \
  "dict(dq_after_da=True, k_vd_swap=True)" > "$OUT/period_check.log" 2>&1
echo "check rc=$?"; grep -v "TileLang\|^$" "$OUT/period_check.log" | tail -16
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 120 python3 benchmarks/fused_bwd_check.py --heads 32 \
  --mixes 8192x4 --trace --params "dict(dq_after_da=True, k_vd_swap=True)" > "$OUT/period_trace.log" 2>&1
echo "trace rc=$?"; grep -v "TileLang\|^$" "$OUT/period_trace.log" | grep -v "WP[123]" | tail -80 | cut -c1-90
install_ab_wheel 8077b2c
ab_drift fwdbwd 8077b2c head "16,16 32,32" "1x8192 1x32768 8192x4 1024x8"
