"""The correction's scan (tilelang_src/sm90/cp_scan.py) emulated on the CPU, branch for branch, in float64: its rounds
(two buffers and two rows of zero flags alternating, the start state folded into walk position 0 in the first round,
a state written once, in the round where its map's A becomes zero, and read from there by later partners; what a
round does not write poisoned before the next reads it) against the walk it replaces (cp_correct.py's
recurrence), forward and reverse, over ragged sequences whose segments mix exact-fallback maps (plan < 0) and decaying
ones, with the host's round count (csrc/ops/gdn_common.cpp scan_segments). Small matrices stand in for the 128 x 128
states: the rounds' logic, not the kernel's arithmetic, is what this checks."""

from __future__ import annotations

import math
import random

import pytest
import torch

D = 4  # stands in for K = V = 128


def segments_of(lengths: list[int], seg_tokens: int) -> list[tuple[int, int, int]]:
    """(sequence, first slot, number of segments) per sequence, slots as seg_plan.py numbers them."""
    out, start = [], 0
    for n, length in enumerate(lengths):
        chunks = -(-length // 64)
        out.append((n, start // seg_tokens + n, -(-chunks // (seg_tokens // 64))))
        start += length
    return out


def walk(seqs, plan, E, M, start, reverse):
    """cp_correct.py: S_{j+1} = E_j + [plan_j < 0] M_j S_j along each sequence (reverse: from its last segment)."""
    out = {}
    for n, first, num_segs in seqs:
        s = start[n].clone() if start is not None else torch.zeros(D, D, dtype=torch.float64)
        order = range(num_segs - 2, -1, -1) if reverse else range(num_segs - 1)
        for j in order:
            slot = first + j
            s = E[slot] + (M[slot] @ s if plan[slot] < 0 else 0)
            out[slot + 1 - reverse] = s.clone()
    return out


def scan(seqs, num_slots, T, seg_tokens, plan, E, M, start, reverse):
    """cp_scan.py's CTAs, one (slot) at a time per round, reading only the round's source buffers."""
    seg_seq = [len(seqs)] * num_slots
    for n, first, num_segs in seqs:
        for j in range(num_segs):
            seg_seq[first + j] = n
    B = [E.clone(), torch.full_like(E, float("nan"))]  # buffer rows [0, NSEG): B; A in the matching A buffers
    A = [M.clone(), torch.full_like(M, float("nan"))]
    Z = [[None] * num_slots, [None] * num_slots]
    cp_h0 = {}
    max_maps = -(-T // seg_tokens) - 1
    rnd, offset = 0, 1
    while rnd == 0 or offset < max_maps:
        src, dst = rnd % 2, (rnd + 1) % 2
        zsrc, zdst = Z[(rnd + 1) % 2], Z[rnd % 2]
        first_round = rnd == 0
        B[dst].fill_(float("nan"))  # what a round does not write is stale: poisoned for the next round's reads
        A[dst].fill_(float("nan"))
        for s in range(num_slots):
            n = seg_seq[s]
            if n >= len(seqs):
                continue
            _, first, num_segs = seqs[n]
            j = s - first
            if j > num_segs - 2:
                continue
            p = num_segs - 2 - j if reverse else j
            q_slot = s + offset if reverse else s - offset
            zero_p = (0 if plan[s] < 0 else 1) if first_round else zsrc[s]
            if not first_round and zero_p != 0:
                zdst[s] = 1  # complete in an earlier round: its state is in cp_h0, nothing else to do
                continue
            zero_new = zero_p
            b = B[src][s].clone()
            if first_round and p == 0:
                if start is not None and zero_p == 0:
                    b = b + A[src][s] @ start[n]
                zero_new = 1
            if zero_p == 0 and p >= offset:
                if first_round:
                    x = B[src][q_slot].clone()
                    zero_q = 0 if plan[q_slot] < 0 else 1
                    if p == offset and start is not None and zero_q == 0:
                        x = x + A[src][q_slot] @ start[n]
                    if p == offset:
                        zero_q = 1
                else:
                    zero_q = zsrc[q_slot]
                    # a complete partner's B is its state, written in an earlier round
                    x = cp_h0[q_slot + 1 - reverse].clone() if zero_q != 0 else B[src][q_slot].clone()
                b = b + A[src][s] @ x
                if zero_q != 0:
                    zero_new = 1
                else:
                    A[dst][s] = A[src][s] @ A[src][q_slot]
            if zero_p == 0 and p < offset and not (first_round and p == 0):
                A[dst][s] = A[src][s].clone()
            if zero_new != 0:
                assert s + 1 - reverse not in cp_h0, "a state written twice"
                cp_h0[s + 1 - reverse] = b.clone()
            else:
                B[dst][s] = b
            zdst[s] = zero_new
        rnd, offset = rnd + 1, offset * 2
    return cp_h0, rnd


CASES = {
    "one long sequence": ([64 * 70], 128),  # 35 segments, 34 maps: 6 rounds
    "ragged with empty and short": ([3000, 1, 0, 700, 64, 2100], 64),
    "two sequences": ([2500, 1500], 192),
    "one segment each": ([100, 64, 1], 256),  # no maps at all
}


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("with_start", [True, False], ids=["start", "no-start"])
@pytest.mark.parametrize("fallback_share", [1.0, 0.5, 0.0])
@pytest.mark.parametrize("case", list(CASES))
def test_scan_rounds_match_the_walk(case, fallback_share, with_start, reverse):
    lengths, seg_tokens = CASES[case]
    rng = random.Random(hash((case, fallback_share, with_start, reverse)) & 0xFFFF)
    torch.manual_seed(rng.randrange(1 << 30))
    seqs = segments_of(lengths, seg_tokens)
    T = sum(lengths) + 37  # a padding tail
    num_slots = -(-T // seg_tokens) + len(lengths)
    plan = [-1 if rng.random() < fallback_share else 3 for _ in range(num_slots)]
    E = torch.randn(num_slots, D, D, dtype=torch.float64)
    M = torch.randn(num_slots, D, D, dtype=torch.float64) / math.sqrt(D)  # products stay of order one
    M[[s for s in range(num_slots) if plan[s] >= 0]] = float("nan")  # never written for decaying segments
    start = torch.randn(len(lengths), D, D, dtype=torch.float64) if with_start else None
    want = walk(seqs, plan, E, M, start, reverse)
    got, rounds = scan(seqs, num_slots, T, seg_tokens, plan, E, M, start, reverse)
    assert set(got) == set(want), f"states written at {sorted(got)}, the walk writes {sorted(want)}"
    for slot, state in want.items():
        assert torch.allclose(got[slot], state, rtol=1e-9, atol=1e-9), f"slot {slot}"
    longest = max(num_segs for _, _, num_segs in seqs) - 1
    assert 2 ** rounds >= longest, f"{rounds} rounds cannot reach {longest} maps"
