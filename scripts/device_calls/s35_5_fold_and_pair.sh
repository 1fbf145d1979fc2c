#!/usr/bin/env bash
# Thirty-fifth session: s35_4 (the fused backward's dq_fold, JIT) then s35_3 without its GPU tests (math_pair's two
# wheels, the single-sequence shapes at BV 128) in one call, machine starts being scarce. Carry .carry/ab and
# .carry/peers.tar.xz. About 450 s.
set -uo pipefail
bash scripts/device_calls/s35_4_dq_fold.sh
SKIP_PYTEST=1 bash scripts/device_calls/s35_3_pair_wheel.sh
