#!/usr/bin/env bash
# (Written in the twenty-third session for the next one; not yet run.) One GPU, the wheel of .carry/COMMIT: the tables
# not yet at the current kernels that fit one call: the published backward's (2, 4) against FlashQLA (the twenty-third
# session's run stopped before it; FlashQLA compiles its backward for 61-69 s per configuration) and the forward with
# every peer at (16, 64) (last table 7d6da95). About 420 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
peer_table bwd 2,4 170 "--published-bwd --libs flashqla,flash_qla"
peer_table fwd 16,64 220
