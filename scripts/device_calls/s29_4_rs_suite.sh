#!/usr/bin/env bash
# Twenty-ninth session, call 4 (not run; for the session that makes the register-operand forward the default): the
# GPU suite (but the edge shapes) and the edge shapes with FLASHQLA_FWD_RS=1 in the environment, so that every
# forward main pass the suite runs without chunk states goes through gdn_fwd_rs.py at the op's width (tests that set
# FLASHQLA_FWD_RS themselves keep their setting). About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
export FLASHQLA_FWD_RS=1
run_pytest "$OUT/pytest_rs_suite.log" 280 "gpu and not edge"
run_pytest "$OUT/pytest_rs_edge.log" 100 edge
