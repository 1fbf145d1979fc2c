#!/usr/bin/env bash
# Twenty-sixth session, call 6: the training step at (32, 32) with the peers in one process for the six mixes the
# twenty-fifth session's call did not reach (H200_fwdbwd_8077b2c_32_32.md: 13 of 19), on HEAD's wheel (84ac579: hs_gemm
# on). The peers' first-use compiles take ~290 s at (32, 32). About 400 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
peer_table fwdbwd 32,32 470 "--mixes 2048+6144 1024+7168 8192x4 4096x8 2048x4 1024x8"
