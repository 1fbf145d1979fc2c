#!/usr/bin/env bash
# Twenty-sixth session, call 7: the training step at (16, 16) with the peers in one process, all 19 mixes, on HEAD's
# wheel (84ac579: hs_gemm on), against H200_fwdbwd_8077b2c_16_16.md (0.96x the best peer). About 330 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
peer_table fwdbwd 16,16 380
