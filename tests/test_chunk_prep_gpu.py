"""The forward's chunk prep on the GPU with several v-heads per CTA (tilelang_src/sm90/chunk_prep.py: Q, K,
K K^T and Q K^T once per CTA; 2, 3 or 4 v-heads, the largest divisor of the group up to 4) and with one
(FLASHQLA_PREP_GROUP=0). Each against the float64 stages (g_cumsum, A) and the reference output, and the two
bit for bit against each other (per v-head the kernel does the same work whatever its count per CTA), over group
sizes that give every count of v-heads per CTA, several blocks per qk-head, a group with no divisor in 2..4 (one
v-head per CTA in both runs), ragged sequences with empty and one-token ones, the padding tail and fp16.

Outputs are NaN-poisoned before every kernel run (conftest sets FLASHQLA_POISON_OUTPUTS).
"""

from __future__ import annotations

import pytest
import torch

import flashqla
from flashqla.reference import chunk_local_cumsum_ref, gdn_chunk_ref, gdn_recurrent_ref, kkt_solve_ref
from gdn_inputs import TOL, make_problem, ragged_cu_seqlens, record, rel_err

pytestmark = pytest.mark.gpu
DEV = "cuda"

CASES = {
    # name: (H, HV, lengths, padding tail, dtype); v-heads per CTA in the name
    "group 4 (4 per CTA) ragged+tail": (2, 8, [1, 0, 130, 64, 1000, 63, 2000], 77, torch.bfloat16),
    "group 8 (two blocks of 4)": (1, 8, [700, 129], 3, torch.bfloat16),
    "group 3 (3 per CTA) fp16": (2, 6, [65, 1, 200, 0, 64], 5, torch.float16),
    "group 6 (two blocks of 3)": (2, 12, [300], 0, torch.bfloat16),
    "group 2 (2 per CTA)": (3, 6, [500, 17], 64, torch.bfloat16),
    "group 5 (1 per CTA in both)": (1, 5, [190, 66], 1, torch.bfloat16),
    "group 1": (4, 4, [129, 3000], 2, torch.bfloat16),
}


def forward(p, cu, monkeypatch, grouped: bool):
    monkeypatch.setenv("FLASHQLA_PREP_GROUP", "1" if grouped else "0")
    out = flashqla.chunk_gated_delta_rule_fwd(p["q"], p["k"], p["v"], p["g"], p["beta"],
                                              initial_state=p["initial_state"], output_final_state=True,
                                              cu_seqlens=cu)
    monkeypatch.delenv("FLASHQLA_PREP_GROUP")
    return out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU test skipped: no CUDA GPU")
@pytest.mark.parametrize("case", list(CASES))
def test_prep_matches_stages_and_reference_at_any_heads_per_cta(case, monkeypatch):
    H, HV, lengths, tail, dtype = CASES[case]
    cu = ragged_cu_seqlens(lengths, DEV)
    end = sum(lengths)
    p = make_problem(1, end + tail, H, HV, dtype=dtype, device=DEV, N=len(lengths))
    fn = gdn_recurrent_ref if end <= 2048 else gdn_chunk_ref
    o_ref, ht_ref = fn(p["q"], p["k"], p["v"], p["g"], p["beta"], initial_state=p["initial_state"],
                       output_final_state=True, cu_seqlens=cu)
    gc_ref = chunk_local_cumsum_ref(p["g"], cu)
    a_ref = kkt_solve_ref(p["k"], p["beta"], cu)
    outs = {}
    for grouped in (True, False):
        out = forward(p, cu, monkeypatch, grouped)
        what = f"{case} {'grouped' if grouped else 'one v-head per CTA'}"
        assert record("g_cumsum", rel_err(out.g_cumsum[:, :end], gc_ref[:, :end]), what) <= TOL["g_cumsum"], what
        assert record("A", rel_err(out.A[:, :end], a_ref[:, :end]), what) <= TOL["A"], what
        assert record("o", rel_err(out.o, o_ref), what) <= TOL["o"], what
        assert record("final_state", rel_err(out.final_state, ht_ref), what) <= TOL["final_state"], what
        for name in ("o", "g_cumsum", "A"):
            t = getattr(out, name)[:, end:]
            assert torch.equal(t, torch.zeros_like(t)), f"{what}: padding tail of {name}"
        outs[grouped] = out
    for name in ("g_cumsum", "A", "o", "final_state"):
        assert torch.equal(getattr(outs[True], name), getattr(outs[False], name)), f"{case}: {name} depends on vpc"
