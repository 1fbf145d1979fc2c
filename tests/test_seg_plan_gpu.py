"""The segment plan kernel (tilelang_src/sm90/seg_plan.py) against a sequential Python plan, table for table.

The op tests see the plan only through the results, where a warm-up one chunk short still meets the tolerance
(its error is about exp(-10) of the state). Here the kernel is compiled by TileLang's JIT (skipped where TileLang is
not importable, as on a machine with the wheel alone) and every table it writes is compared exactly: the sequence of
each slot, the main-pass ranges, the warm-up counts (cp_plan) and the warm-up and transition rows, forward and
reverse. The chunk decays are multiples of 1/4 (their float32 sums are exact in any order, so the kernel's warp scan
and the sequential sum agree), some heads never reach the threshold (the fallback) and some reach it only after more
than 32 chunks (the kernel's scan then takes several steps of a warp).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from gdn_inputs import ragged_cu_seqlens

pytestmark = pytest.mark.gpu
tilelang = pytest.importorskip("tilelang")
SRC = Path(__file__).resolve().parents[1] / "tilelang_src"
BT = 64


@pytest.fixture(scope="module")
def plan_kernel():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    sys.path.insert(0, str(SRC))
    from sm90.seg_plan import WARMUP_LOG_DECAY, gdn_seg_plan_sm90

    return tilelang.compile(gdn_seg_plan_sm90(BT=BT), target="cuda"), WARMUP_LOG_DECAY


def reference_tables(cu: list[int], T: int, g_cumsum: torch.Tensor, seg_tokens: int, reverse: bool, threshold: float):
    """{slot: (seq, ranges [3, HV, 3] rows of the slot, cp_plan [HV])} for the slots of real segments, walked one
    chunk at a time in the kernel's order."""
    N, HV, L = len(cu) - 1, g_cumsum.shape[1], seg_tokens // BT
    out = {}
    for i in range(N):
        start, end = cu[i], cu[i + 1]
        nc = -(-(end - start) // BT)
        for j in range(max(-(-nc // L), 1)):
            slot = start // seg_tokens + i + j
            c_lo, c_hi = j * L, min(j * L + L, nc)
            is_last = j == max(-(-nc // L) - 1, 0)
            rows, plan = torch.zeros(3, HV, 3, dtype=torch.int32), torch.zeros(HV, dtype=torch.int32)
            for hv in range(HV):
                rows[0, hv] = torch.tensor([c_lo, max(c_hi - c_lo, 0), (j > 0) + 2 * is_last])
                n_walk = 0 if c_hi >= nc else (min(c_hi + L, nc) - c_hi if reverse else c_hi - c_lo)
                acc, count, done = 0.0, 0, False
                for m in range(n_walk):
                    c_w = c_hi + m if reverse else c_hi - 1 - m
                    acc += float(g_cumsum[min(start + c_w * BT + BT - 1, end - 1), hv])
                    count += 1
                    if acc < threshold:
                        done = True
                        break
                w_first = c_hi if reverse else c_hi - count
                plan[hv] = count if done else -count
                rows[1, hv] = torch.tensor([w_first, count, 0])
                rows[2, hv] = torch.tensor([w_first, 0 if done else count, 4])
            out[slot] = (i, rows, plan)
    return out


def chunk_decays(T: int, HV: int, gen: torch.Generator) -> torch.Tensor:
    """[T, HV] fp32 chunk-local cumsums whose every value is a multiple of 1/4: head 0 never decays (fallback),
    head 1 decays by 1/4 per chunk (the threshold after 41 chunks: several warp steps), the others by random
    multiples of 1/4 in [-3, 0]."""
    g = -torch.randint(0, 13, (T, HV), generator=gen).float() / 4
    g[:, 0] = 0.0
    g[:, 1] = -0.25
    return g


CASES = {  # lengths, padding tail, segment chunks, v-heads
    "one long, segments of 48": ([48 * 64 * 3 + 100], 0, 48, 4),
    "one long, segments of 64": ([64 * 64 * 2 + 64], 0, 64, 3),
    "ragged, segments of 40": ([5000, 1, 0, 64, 40 * 64 * 2 + 7, 3000], 90, 40, 5),
    "ragged, segments of 8": ([700, 3000, 65, 2500], 10, 8, 6),
}


@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("case", list(CASES))
def test_plan_tables_match_sequential_walk(plan_kernel, case, reverse):
    kernel, threshold = plan_kernel
    lengths, tail, seg_chunks, HV = CASES[case]
    seg_tokens = seg_chunks * BT
    T, N = sum(lengths) + tail, len(lengths)
    dev = "cuda"
    cu_dev = ragged_cu_seqlens(lengths, dev)
    cu = cu_dev.tolist()
    gen = torch.Generator().manual_seed(len(lengths) * 31 + seg_chunks + reverse)
    g_cumsum = chunk_decays(T, HV, gen)
    num_segs = -(-T // seg_tokens) + N
    seg_seq = torch.full((num_segs,), -7, dtype=torch.int32, device=dev)  # poisoned: every slot is written
    ranges = torch.full((3 * num_segs, HV, 3), -7, dtype=torch.int32, device=dev)
    cp_plan = torch.full((num_segs, HV), -7777, dtype=torch.int32, device=dev)
    kernel(cu_dev, g_cumsum.to(dev), seg_seq, ranges, cp_plan, seg_tokens, 1, reverse)
    torch.cuda.synchronize()
    seg_seq, ranges, cp_plan = seg_seq.cpu(), ranges.cpu().view(3, num_segs, HV, 3), cp_plan.cpu()
    expected = reference_tables(cu, T, g_cumsum, seg_tokens, bool(reverse), threshold)
    assert expected, "no segment in the case"
    assert seg_chunks <= 32 or any(int(p.abs().max()) > 32 for _, _, p in expected.values()), "no walk past 32"
    for slot, (seq, rows, plan) in expected.items():
        what = f"{case} reverse={reverse} slot {slot} (sequence {seq})"
        assert int(seg_seq[slot]) == seq, f"{what}: seg_seq {int(seg_seq[slot])}"
        assert torch.equal(ranges[:, slot], rows), f"{what}: ranges\n{ranges[:, slot]}\nexpected\n{rows}"
        assert torch.equal(cp_plan[slot], plan), f"{what}: cp_plan {cp_plan[slot].tolist()} expected {plan.tolist()}"
    assert bool((seg_seq != -7).all()), "a slot's sequence was not written"
