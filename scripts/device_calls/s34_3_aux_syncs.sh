#!/usr/bin/env bash
# Thirty-fourth session: the auxiliary warpgroup's syncs. noprep_check.py (JIT from the tree): the shipped row (pls2mg)
# against zero_once (z), + beta_ring (zb), + g_direct (zbg): 12, 11, 10 and 9 warpgroup syncs per chunk in the
# lowered code; each should be bitwise equal to the shipped row. Needs the wheel (56d3a2f) and .carry/peers.tar.xz.
# About 200 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
install_wheel
nvidia-smi --query-gpu=name --format=csv,noheader
noprep_check_table 400 fwdnp128k3xpls2mg fwdnp128k3xpls2mgz fwdnp128k3xpls2mgzb fwdnp128k3xpls2mgzbg
