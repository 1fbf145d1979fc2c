"""The mbarrier protocol of the register-operand forward (tilelang_src/sm90/gdn_fwd_rs.py), simulated on the CPU from
its source (scripts/barrier_protocol_sim.py, its macros inlined): one or two math warpgroups, X's warpgroup, three
producer warps and the storer warp walking one to five chunks; with the ring freed late or early (early_release),
with Z or A formed by X's warpgroup (z_in_x, a_in_x) and with SK in halves (sk_halves): no random schedule hangs,
passes a wait on the wrong phase or lets two roles touch a shared buffer (one of them writing) without a barrier chain
between them; a wait removed or moved, a parity or an arrival count changed is caught."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from barrier_protocol_sim import check, parse  # noqa: E402

KERNEL = (ROOT / "tilelang_src" / "sm90" / "gdn_fwd_rs.py").read_text()
OPTIONS = [{}, {"early_release": True}, {"early_release": True, "z_in_x": True},
           {"early_release": True, "a_in_x": True}, {"early_release": True, "sk_halves": True},
           {"early_release": True, "sk_halves": True, "a_in_x": True}]


def test_every_role_and_barrier_is_read():
    counts, roles = parse(KERNEL, {"NMATH": 2})
    assert set(roles) == {"M0", "M1", "X", "WP0", "WP1", "WP2", "WP3"}
    assert counts["empty_kv"] == counts["empty_qz"] == [384, 384] and counts["x_free"] == [256, 256]
    assert set(parse(KERNEL, {"NMATH": 1})[1]) == {"M0", "X", "WP0", "WP1", "WP2", "WP3"}
    assert parse(KERNEL, {"NMATH": 1})[0]["o_full"] == [128, 128]
    for role, (_, ops) in roles.items():
        assert any(op[0] == "wait" for op in ops), role
        assert any(op[0] == "access" for op in ops), role
    math_reads = {place[0] for op in roles["M0"][1] if op[0] == "access" for place in op[1]}
    assert {"k_s", "q_s", "v_s", "x_s", "zr_s", "g_s", "gam_s", "gam2_s"} <= math_reads


@pytest.mark.parametrize("options", OPTIONS, ids=["late", "early", "early-z", "early-a", "early-sk", "early-sk-a"])
@pytest.mark.parametrize("nmath", [2, 1], ids=["BV128", "BV64"])
@pytest.mark.parametrize("chunks", [1, 2, 3, 5])
def test_no_schedule_hangs_races_or_misreads_a_phase(chunks, nmath, options):
    assert check(KERNEL, chunks, 1, runs=60, flags={"NMATH": nmath, **options}) == []


@pytest.mark.parametrize("options", [{"early_release": True, "math_pair": True}, {"math_pair": True}],
                         ids=["early-pair", "late-pair"])
@pytest.mark.parametrize("chunks", [1, 2, 3, 5])
def test_math_pair_one_role_for_both_math_warpgroups(chunks, options):
    """math_pair: both math warpgroups on one code path, one 256-thread role arriving as M0 and M1 did"""
    counts, roles = parse(KERNEL, {"NMATH": 2, **options})
    assert set(roles) == {"MP", "X", "WP0", "WP1", "WP2", "WP3"} and roles["MP"][0] == 256
    assert counts["empty_kv"] == [384, 384] and counts["x_free"] == [256, 256]
    assert check(KERNEL, chunks, 1, runs=60, flags={"NMATH": 2, **options}) == []


def mutated(old: str, new: str) -> str:
    assert KERNEL.count(old) == 1, old
    return KERNEL.replace(old, new)


EARLY_ARRIVAL = """            if early_release:
                T.barrier_arrive(empty_kv[i % 2])  # K (SK), V and g read
"""
# W^T's formation (both forms: whole, or in halves with sk_halves) up to the early release of K, V and g
W_FORMED = KERNEL[KERNEL.index("            # W^T = V^T - SK diag(gamma)\n"):KERNEL.index(EARLY_ARRIVAL)]
X_FREE_WAIT = "                    T.barrier_wait(x_free[i % 2], (i // 2 + 1) % 2)  # chunk i - 2's products are done\n"


@pytest.mark.parametrize("old, new, options, buffer", [
    # the math warpgroups' O1 reads Q only after the producer's load of it
    ("            # O1 = S~^T Q^T, under W\n            T.barrier_wait(full_qz[i % 2], (i // 2) % 2)\n",
     "            # O1\n", {"early_release": True}, "q_s"),
    # the early release of K, V, g once W^T is formed, not before it reads V
    (W_FORMED + EARLY_ARRIVAL, EARLY_ARRIVAL + W_FORMED, {"early_release": True}, "v_s"),
    # (with sk_halves SK's second half reads K after that point too)
    (W_FORMED + EARLY_ARRIVAL, EARLY_ARRIVAL + W_FORMED, {"early_release": True, "sk_halves": True}, "(v_s|k_s)"),
    # X's warpgroup overwrites a stage's X and gates only after chunk i - 2's update and O have read them (with the
    # late release the wait on full_kv implies it)
    (X_FREE_WAIT, "", {"early_release": True}, "(x_s|gam_s|gam2_s)"),
    # with z_in_x X's warpgroup reads Q for Q K^T only after its load
    ("                    if z_in_x:\n                        T.barrier_wait(full_qz[i % 2], (i // 2) % 2)\n", "",
     {"early_release": True, "z_in_x": True}, "q_s"),
])
@pytest.mark.parametrize("nmath", [2, 1], ids=["BV128", "BV64"])
def test_a_missing_or_moved_wait_is_a_race(old, new, options, buffer, nmath):
    errors = check(mutated(old, new), 4, 1, runs=30, flags={"NMATH": nmath, **options})
    assert errors and all("race" in e and re.search(buffer, e) for e in errors), errors[:2]


@pytest.mark.parametrize("old, new, options", [
    ("x_ready = T.alloc_barrier([128, 128])", "x_ready = T.alloc_barrier([256, 256])", {}),
    (EARLY_ARRIVAL, "", {"early_release": True}),  # the kv group never freed
    ("T.barrier_wait(o_free[j % 2], (j // 2 + 1) % 2)", "T.barrier_wait(o_free[j % 2], (j // 2) % 2)", {}),
])
def test_a_wrong_count_arrival_or_parity_hangs(old, new, options):
    errors = check(mutated(old, new), 3, 1, runs=20, flags=options)
    assert errors and all("hang" in e for e in errors), errors[:2]
