"""The mbarrier protocol of the forward without the chunk prep (tilelang_src/sm90/gdn_fwd_noprep.py), simulated on the
CPU from its source (scripts/barrier_protocol_sim.py, its macros inlined): one or two math warpgroups, the auxiliary
warpgroup, three producer warps and the storer warp walking one to five chunks, with P formed by the auxiliary
warpgroup or by each math warpgroup (p_in_math, the shipped row), SK whole or in halves, a ring of two or three stages
for K, g's cumsum and beta (k_stages; V and Q keep two), the next chunk's M formed under the solve (m_ahead) and the
per-row gates formed by the producer warp into the K ring (gates_in_loader): no random schedule hangs, passes a wait
on the wrong phase or lets two roles touch a shared buffer (one of them writing) without a barrier chain between them;
a wait removed or moved and a wrong arrival count are caught."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from barrier_protocol_sim import check, parse  # noqa: E402

KERNEL = (ROOT / "tilelang_src" / "sm90" / "gdn_fwd_noprep.py").read_text()
K3X = {"p_in_math": True, "k_stages": 3, "x_free_early": True}  # the 32nd session's shipped row
SHIPPED = {**K3X, "p_split": True, "log2_gates": True, "solve_shfl": True}
SHIPPED34 = {**SHIPPED, "l2_shfl": True, "m_nomask": True, "g_nomask": True}  # the 34th session's
SHIPPED35 = {**SHIPPED34, "math_pair": True}  # the shipped row since the 35th session
FEWER_SYNCS = {"zero_once": True, "beta_ring": True, "g_direct": True}
OPTIONS = [{"p_in_math": True}, {"p_in_math": True, "sk_halves": False}, {"p_in_math": True, "k_stages": 3}, K3X,
           {**K3X, "p_split": True}, {**K3X, "log2_gates": True}, {**K3X, "solve_shfl": True},
           {**K3X, "solve_shfl": True, "l2_shfl": True}, SHIPPED, {**SHIPPED, "l2_shfl": True},
           {**SHIPPED, "solve_eye": True}, {**SHIPPED, "m_nomask": True},
           {**SHIPPED, "l2_shfl": True, "m_nomask": True, "g_nomask": True}, {**SHIPPED34, "zero_once": True},
           {**SHIPPED34, "zero_once": True, "beta_ring": True},
           {**SHIPPED34, "zero_once": True, "beta_ring": True, "g_direct": True}, {**SHIPPED34, "math_pair": True},
           {"k_stages": 3}, {},
           # the 49th session's: the next chunk's M under the solve, the per-row gates by the producer warp
           {**K3X, "m_nomask": True, "m_ahead": True}, {**K3X, "log2_gates": True, "gates_in_loader": True},
           {**SHIPPED35, "m_ahead": True}, {**SHIPPED35, "gates_in_loader": True},
           {**SHIPPED35, **FEWER_SYNCS, "m_ahead": True, "gates_in_loader": True}]
IDS = ["p_in_math", "p_in_math-sk-whole", "p_in_math-k3", "k3x", "k3x-p-split", "k3x-log2-gates",
       "k3x-solve-shfl", "k3x-solve-l2-shfl", "shipped", "shipped-l2-shfl", "shipped-solve-eye", "shipped-m-nomask",
       "shipped-l2-shfl-no-masks", "s34-zero-once", "s34-beta-ring", "s34-g-direct", "s34-math-pair", "p_in_aux-k3",
       "p_in_aux", "k3x-m-ahead", "k3x-gates-in-loader", "s35-m-ahead", "s35-gates-in-loader", "s35-all-s49"]


def test_every_role_and_barrier_is_read():
    counts, roles = parse(KERNEL, {"NMATH": 2, "p_in_math": True})
    assert set(roles) == {"M0", "M1", "X", "WP0", "WP1", "WP2", "WP3"}
    # with p_in_math only the math warpgroups read Q
    assert counts["empty_k"] == [384, 384] and counts["empty_qz"] == [256, 256] and counts["x_free"] == [256, 256]
    assert counts["empty_v"] == [256, 256] and counts["full_k"] == [32, 32] and counts["full_v"] == [32, 32]
    assert parse(KERNEL, {"NMATH": 2, "k_stages": 3})[0]["empty_k"] == [384, 384, 384]
    assert parse(KERNEL, {"NMATH": 2, "p_in_math": False})[0]["empty_qz"] == [384, 384]
    assert set(parse(KERNEL, {"NMATH": 1})[1]) == {"M0", "X", "WP0", "WP1", "WP2", "WP3"}
    # math_pair: one 256-thread role on one code path instead of M0 and M1, arriving as both did
    counts_p, roles_p = parse(KERNEL, {"NMATH": 2, **SHIPPED34, "math_pair": True})
    assert set(roles_p) == {"MP", "X", "WP0", "WP1", "WP2", "WP3"} and roles_p["MP"][0] == 256
    assert counts_p["empty_k"] == [384] * 3 and counts_p["x_free"] == [256, 256]
    for role, (_, ops) in roles.items():
        assert any(op[0] == "wait" for op in ops), role
        assert any(op[0] == "access" for op in ops), role
    math_reads = {place[0] for op in roles["M0"][1] if op[0] == "access" for place in op[1]}
    assert {"k_s", "q_s", "v_s", "ga_s", "g_s", "gam_s", "gam2_s", "r_s"} <= math_reads
    aux_writes = {place[0] for op in roles["X"][1] if op[0] == "access" for place in op[2]}
    assert {"ga_s", "gam_s", "gam2_s", "r_s"} <= aux_writes


# (p_split only with two math warpgroups: the factory asserts it)
SCHEDULES = [pytest.param(chunks, nmath, options, id=f"{chunks}-{nid}-{oid}")
             for options, oid in zip(OPTIONS, IDS) for nmath, nid in ((2, "BV128"), (1, "BV64"))
             for chunks in (1, 2, 3, 5) if nmath == 2 or not options.get("p_split")]


@pytest.mark.parametrize("chunks, nmath, options", SCHEDULES)
def test_no_schedule_hangs_races_or_misreads_a_phase(chunks, nmath, options):
    assert check(KERNEL, chunks, 1, runs=50, flags={"NMATH": nmath, **options}) == []


def mutated(old: str, new: str) -> str:
    assert KERNEL.count(old) == 1, old
    return KERNEL.replace(old, new)


P_ARRIVALS = """                    T.barrier_arrive(empty_k[i % KS])  # K (SK, the update, Q K^T) and the cumsum read
                    T.barrier_arrive(empty_qz[i % 2])  # Q read (O1, Q K^T)
"""
P_PRODUCT = ("                    T.wgmma_gemm(q_s[i % 2, :, :], k_s[i % KS, :, :], p_frag, transpose_B=True, "
             "clear_accum=True,\n                                 policy=ppol)\n"
             "                    T.wait_wgmma(0)  # the update and Q K^T\n")

R_PASS = """            for a, t in T.Parallel(rows, BT):
                ut_frag[a, t] = u_frag[a, t]
                wt_frag[a, t] = u_frag[a, t] * r_s[i % GS, t]
"""
EARLY_FREE = """            if x_free_early:
                T.barrier_arrive(x_free[i % 2])  # G (U) and the gates (W^T, O1's scale, r) read
"""

@pytest.mark.parametrize("old, new, options, buffer", [
    # the math warpgroups read G and the gates of a stage only after the auxiliary warpgroup wrote them
    ("            T.barrier_wait(x_ready[i % 2], (i // 2) % 2)\n", "", {"p_in_math": True}, "(ga_s|gam_s|gam2_s|r_s)"),
    # with P in the auxiliary warpgroup it overwrites a stage's P only after chunk i - 2's O2 read it (with p_in_math
    # and two stages the ring's full_k implies the wait: the math warpgroups read G and the gates before freeing K)
    ("                    T.barrier_wait(x_free[i % 2], (i // 2 + 1) % 2)  # chunk i - 2's products are done\n", "",
     {}, "pg_s"),
    # with p_in_math the ring's K, Q and the cumsum are freed only after Q K^T and P's gating have read them
    (P_PRODUCT + "                    gate_p(p_frag", P_ARRIVALS + P_PRODUCT + "                    gate_p(p_frag",
     {"p_in_math": True}, "(k_s|q_s|g_s)"),
    # with three stages the auxiliary warpgroup runs two chunks ahead of the math warpgroups' K: its output stage
    # (G, gates) is free only once they are done with chunk i - 2
    ("                    T.barrier_wait(x_free[i % 2], (i // 2 + 1) % 2)  # chunk i - 2's products are done\n", "",
     {"p_in_math": True, "k_stages": 3}, "(ga_s|gam_s|gam2_s|r_s)"),
    # freed early, the auxiliary stage is released only after the per-row gates' passes read r (here: before them)
    (R_PASS + EARLY_FREE, EARLY_FREE + R_PASS, {"p_in_math": True, "k_stages": 3, "x_free_early": True}, "r_s"),
    # V is overwritten only after both math warpgroups formed W^T from it (its release moved ahead of W^T)
    ("            T.barrier_arrive(empty_v[i % 2])  # V read (W^T)\n", "", {"p_in_math": True}, "v_s"),
])
@pytest.mark.parametrize("nmath", [2, 1], ids=["BV128", "BV64"])
def test_a_missing_or_moved_wait_is_a_race(old, new, options, buffer, nmath):
    source = mutated(old, new)
    if P_ARRIVALS in new:  # the moved arrivals: drop their later copy
        head, tail = source.split(P_PRODUCT, 1)
        source = head + P_PRODUCT + tail.replace(P_ARRIVALS, "", 1)
    if "empty_v" in old:  # the release moved ahead of W^T
        wait_v = "            T.barrier_wait(full_v[i % 2], (i // 2) % 2)\n"
        source = source.replace(wait_v, wait_v + old, 1)
    errors = check(source, 4, 1, runs=30, flags={"NMATH": nmath, **options})
    assert errors and all(("race" in e and re.search(buffer, e)) or "phase" in e for e in errors), errors[:2]


M_AHEAD_WAIT = ("                        T.barrier_wait(full_k[T.min(i + 1, n_iter - 1) % KS], "
                "(T.min(i + 1, n_iter - 1) // KS) % 2)\n")
MATH_K_FREE = "                    T.barrier_arrive(empty_k[i % KS])  # K (SK, the update, Q K^T) and the cumsum read\n"


@pytest.mark.parametrize("options", [{**K3X, "m_nomask": True, "m_ahead": True}, {**SHIPPED35, "m_ahead": True}],
                         ids=["k3x", "s35"])
def test_m_ahead_reads_the_next_chunk_only_once_it_is_loaded(options):
    """m_ahead: the auxiliary warpgroup's K K^T and gating of chunk i + 1 wait for that chunk's K stage (without the
    wait they read a stage the producer is still filling)."""
    errors = check(mutated(M_AHEAD_WAIT, ""), 4, 1, runs=30, flags={"NMATH": 2, **options})
    assert errors and all(("race" in e and re.search("(k_s|g_s)", e)) or "phase" in e for e in errors), errors[:2]


def test_gates_in_loader_are_freed_with_k():
    """gates_in_loader: the per-row gates live in the K ring's stages, so the math warpgroups read r before they free
    K: the r pass moved after that release races with the producer's write of the stage's gates for chunk i + 3."""
    moved = "".join("        " + line + "\n" for line in R_PASS.rstrip("\n").split("\n"))  # at the branch's depth
    source = mutated(R_PASS, "")
    assert source.count(MATH_K_FREE) == 2  # the p_split branch's first
    source = source.replace(MATH_K_FREE, MATH_K_FREE + moved, 1)
    errors = check(source, 4, 1, runs=30, flags={"NMATH": 2, **SHIPPED35, "gates_in_loader": True})
    assert errors and all("race" in e and "r_s" in e and "WP0" in e for e in errors), errors[:2]


def test_with_p_split_the_pair_barrier_orders_the_halves_of_p():
    """A math warpgroup's O2 reads the other's half of P only after the pair barrier (two math warpgroups)."""
    source = mutated("                    T.sync_threads(MATH_PAIR_BARRIER, 256)  # both halves of P written before "
                     "either product reads it\n", "")
    errors = check(source, 4, 1, runs=30, flags={"NMATH": 2, **SHIPPED, "p_split": True})
    assert errors and all(("race" in e and "pm_s" in e) or "phase" in e for e in errors), errors[:2]


@pytest.mark.parametrize("old, new, options", [
    # with p_in_math the auxiliary warpgroup does not arrive on empty_qz: counting it hangs the Q producer
    ("empty_qz = T.alloc_barrier([PT - 128, PT - 128] if p_in_math else [PT, PT])",
     "empty_qz = T.alloc_barrier([PT, PT])", {"p_in_math": True}),
    ("x_ready = T.alloc_barrier([128, 128])", "x_ready = T.alloc_barrier([256, 256])", {"p_in_math": True}),
])
def test_a_wrong_count_hangs(old, new, options):
    errors = check(mutated(old, new), 3, 1, runs=20, flags=options)
    assert errors and all("hang" in e for e in errors), errors[:2]
