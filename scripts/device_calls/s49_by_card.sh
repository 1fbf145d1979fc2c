#!/usr/bin/env bash
# Forty-ninth session: one call, by the card that came. An H200 runs issue 4's forward table (s48_3_table_by_card.sh
# fwd: the acceptance is an H200's, its parts in benchmarks/results/s47); any other card the auxiliary warpgroup's
# ablation and then a part of the H100 table (s49_1_aux_ablation.sh).
set -uo pipefail
. scripts/device_calls/common.sh
if is_h200; then
  echo "== H200: the forward table"
  bash scripts/device_calls/s48_3_table_by_card.sh "${TABLE_MODE:-fwd}"
else
  echo "== not an H200: s49_1"
  bash scripts/device_calls/s49_1_aux_ablation.sh
fi
