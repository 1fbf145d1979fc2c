#!/usr/bin/env bash
# Forty-eighth session: one call, by the card that came. An H200 runs a part of issue 4's forward table
# (s47_3_table_parts.sh fwd: the acceptance is an H200's); any other card runs s48_1 (every GPU test, the 32-wide plan's
# A/B, the 32-wide CP sweep), which needs no particular card.
set -uo pipefail
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "== H200: a part of the forward table"
  bash scripts/device_calls/s47_3_table_parts.sh "${TABLE_MODE:-fwd}"
else
  echo "== not an H200: s48_1"
  bash scripts/device_calls/s48_1_suite_plan32_sweep.sh
fi
