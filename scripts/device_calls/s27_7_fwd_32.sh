#!/usr/bin/env bash
# Twenty-seventh session, call 7: the forward at (32, 32) with the peers in one process, all 19 mixes, on 8146fb7's
# wheel (z_from_ring at BV = 128), against H200_fwd_a993033_32_32_16_32.md (0.98x the best peer). About 280 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
. scripts/device_calls/common.sh
peer_table fwd 32,32 260
