#!/usr/bin/env bash
# Forty-eighth session, call 3 (written for the next session: no device time was left): a part of a whole acceptance
# table (s47_3_table_parts.sh MODE, default fwd), its parts by the card that came: an H200's in benchmarks/results/s47
# (issue 4's and 5's acceptance are an H200's), any other card's in benchmarks/results/s48/h100_parts (where s48_2's
# first 81 forward shapes of 3b82ff7 are). s48_2 on an H100: warm_peers.py's nine compiles did not finish within 150 s
# and FlashQLA's leftover compiles took 126 of the timed step's 138 s, so the warm-up gets 300 s here and the timed
# step what is left of DEADLINE_S (580). Needs .carry/flashqla-*.whl (3b82ff7's continues s48_2's parts),
# .carry/COMMIT, .carry/peers.tar.xz.
set -uo pipefail
. scripts/device_calls/common.sh
parts=benchmarks/results/s48/h100_parts
is_h200 && parts=benchmarks/results/s47
echo "== parts in $parts"
PARTS_DIR=$parts DEADLINE_S=${DEADLINE_S:-580} FQ_WARM_TIMEOUT=${FQ_WARM_TIMEOUT:-300} \
  bash scripts/device_calls/s47_3_table_parts.sh "${1:-fwd}"
