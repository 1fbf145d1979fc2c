#!/usr/bin/env bash
# Forty-ninth session, call 1 on a card other than an H200 (s49_by_card.sh): where the 128-wide prep-free forward's
# period goes now. The last breakdown by ablation (docs/fwd_noprep.md) predates p_in_math, p_split, the solve's
# shuffles and math_pair; the multi-sequence mixes that lose to FlashInfer's published times need a ~20 % shorter
# chunk (s48). benchmarks/noprep_check.py (TileLang JIT from the tree, the carried peers' TileLang; the compiles in
# parallel): the shipped row (pls2mgp), with the next chunk's M formed under the solve (m_ahead: pls2mgpa), with the
# per-row gates formed by the producer warp (gates_in_loader: pls2mgpg), with pls2mgzbg's fewer auxiliary syncs
# (pls2mgpzbg), m_ahead with them (pls2mgpazbg) and all of them (pls2mgpazbgg), checked against float64 and bit for
# bit against the shipped row, timed, then
# the shipped row's ablate variant with each piece of the auxiliary warpgroup skipped (NOPREP_ABLATIONS bits: 1 gates,
# 2 K K^T, 4 the solve's 8x8 blocks, 64 its level-1 merge, 128 its level-2 merge, 8 G, 16 M's gating, 256 M to shared
# memory; 479 all of them: the math warpgroups' chain alone). Then what is left of DEADLINE_S goes to the next part of
# the forward table (s48_3's H100 parts of 3b82ff7). Needs .carry/flashqla-*.whl, .carry/COMMIT, .carry/peers.tar.xz.
set -uo pipefail
. scripts/device_calls/common.sh
begin_call
install_peers
PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout "${ABL_TIMEOUT:-360}" python3 benchmarks/noprep_check.py \
  --kernels fwdnp128k3xpls2mgp fwdnp128k3xpls2mgpa fwdnp128k3xpls2mgpg fwdnp128k3xpls2mgpzbg fwdnp128k3xpls2mgpazbg \
  fwdnp128k3xpls2mgpazbgg \
  --time 32,32:8192x4 16,64:8192x4 8,32:4096x8 4,16:4096x8 \
  --masks 0 1 2 4 64 128 8 16 256 479 > "$OUT/noprep_ablation.log" 2>&1
echo "noprep_check rc=$?"
grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_ablation.log" | tail -45 | cut -c1-200
el=$(( $(date +%s) - T0 ))
echo "elapsed $el s"
# the rest of the call: the next part of the forward table (its own wheel install and warm-up)
if [ $(( ${DEADLINE_S:-580} - el )) -gt 200 ]; then
  PARTS_DIR=benchmarks/results/s48/h100_parts DEADLINE_S=$(( ${DEADLINE_S:-580} - el )) \
    FQ_WARM_TIMEOUT=$(( (${DEADLINE_S:-580} - el) / 2 )) bash scripts/device_calls/s47_3_table_parts.sh fwd
fi
