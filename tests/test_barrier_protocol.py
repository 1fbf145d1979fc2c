"""The mbarrier protocol of the warp-specialized chunk gradient, simulated on the CPU from its source
(scripts/barrier_protocol_sim.py): no random schedule hangs, passes a wait on the wrong phase or lets two
warpgroups touch the same shared buffer (one of them writing) without a barrier chain between them, for one to
four v-heads per qk-head (and two chunk slots per CTA when the kernel walks several); a parity or an arrival
count changed by one, or a wait removed, is caught."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from barrier_protocol_sim import check, parse  # noqa: E402

KERNEL = (ROOT / "tilelang_src" / "sm90" / "gdn_bwd_chunk_ws.py").read_text()
WALKS_ITEMS = "for it in T.serial(items)" in KERNEL
# the factory's flags that move barrier operations between warpgroups, each tried on and off (and the defaults)
FLAG_SETS = [{}] + [{name: on} for name in ("u_in_wk",) if f"    {name}: bool = " in KERNEL for on in (True, False)]
# the waits that lean_waits drops are implied by others with and without u_in_wk
if "    lean_waits: bool = " in KERNEL:
    FLAG_SETS += [{"lean_waits": True}, {"lean_waits": True, "u_in_wk": False}]
# dkk_in_wk moves dL's consumers (and a dbeta term) from WA to WK
if "    dkk_in_wk: bool = " in KERNEL:
    FLAG_SETS += [{"dkk_in_wk": True}, {"dkk_in_wk": True, "u_in_wk": False}]
# dl_rs moves WA's wait on WK's read of Ag a v-head later (before its next write of Ag)
if "    dl_rs: bool = " in KERNEL:
    FLAG_SETS += [{"dl_rs": True}, {"dl_rs": True, "u_in_wk": False}]
# join=False drops the warpgroups' join before the dq and dk stores (ordered by dp_read and bar_dks instead)
if "    join: bool = " in KERNEL:
    FLAG_SETS += [{"join": False}, {"join": False, "dl_rs": True}, {"join": False, "dkk_in_wk": True},
                  {"join": False, "u_in_wk": False}]
# prio_loads adds the producer warps' waits on Q and K; tma_dqdk stores dq and dk from their buffers by TMA
# (prio_v: V's load too; chain_loads: dS1 after S0 arrives, dO after V; dvd_in: dVd loaded by the dO warp, not formed
# by WK)
for _name in ("prio_loads", "tma_dqdk", "prio_v", "chain_loads", "dvd_in", "dq_early"):
    if f"    {_name}: bool = " in KERNEL:
        FLAG_SETS += [{_name: True}, {_name: True, "join": False}]
# and every option that moves shared-memory accesses at once
OPTIONS = ("vd_halves", "dg_warp_sum", "frag_stores", "hs_fold", "wa_async", "lean_waits", "dkk_in_wk", "dl_rs",
           "prio_loads", "tma_dqdk", "prio_v", "chain_loads", "dvd_in", "dq_early")
FLAG_SETS += [{name: True for name in OPTIONS if f"    {name}: bool = " in KERNEL}]


def test_every_role_and_barrier_is_read():
    counts, roles = parse(KERNEL)
    assert set(roles) == {"WA", "WK", "WP0", "WP1", "WP2", "WP3"}
    assert {"bar_qk", "h_free", "ab_free", "fin"} <= set(counts) and counts["ab_free"] == [256, 256]
    assert all(any(op[0] == "wait" for op in ops) for _, ops in roles.values())


@pytest.mark.parametrize("flags", FLAG_SETS)
@pytest.mark.parametrize("group", [1, 2, 4])
@pytest.mark.parametrize("items", [1, 2] if WALKS_ITEMS else [1])
def test_no_schedule_hangs_or_misreads_a_phase(items, group, flags):
    assert check(KERNEL, items, group, runs=150, flags=flags) == []


def test_a_wait_on_the_wrong_parity_hangs():
    bad, n = re.subn(r"dks_read\[0\], \((\w+) \+ 1\) % 2", r"dks_read[0], \1 % 2", KERNEL)
    assert n == 1
    errors = check(bad, 1, 2, runs=20)
    assert errors and all("hang" in e for e in errors)


def test_a_wrong_arrival_count_hangs():
    bad, n = re.subn(r"h_free = T\.alloc_barrier\(256\)", "h_free = T.alloc_barrier(384)", KERNEL)
    assert n == 1
    assert check(bad, 1, 2, runs=20)


def test_every_role_touches_shared_memory():
    _, roles = parse(KERNEL)
    for role, (_, ops) in roles.items():
        assert any(op[0] == "access" for op in ops), role
    wa_reads = {place[0] for op in roles["WA"][1] if op[0] == "access" for place in op[1]}
    assert {"q_s", "k_s", "w_s", "vd_s", "dvd_s", "a_s", "g_s"} <= wa_reads


@pytest.mark.parametrize("barrier, role, buffer", [("bar_w", "WA", "w_s"), ("bar_vd", "WK", "vd_s"),
                                                   ("dp_read", "WA", "dp_s")])
def test_a_missing_wait_is_a_race(barrier, role, buffer):
    """Without the wait, a buffer's reader and writer are ordered by no barrier chain: the run reports the race
    (the wait on bar_w guards W for WA, on bar_vd Vd for WK, on dp_read dP's buffer before WA writes dKs there)."""
    # (the wait on dp_read stands in both branches of dkk_in_wk: each removed, and each branch run)
    bad, n = re.subn(rf"\n +T\.barrier_wait\({barrier}\[0\], ph\)\n", "\n", KERNEL)
    assert n == (2 if barrier == "dp_read" and "    dkk_in_wk: bool = " in KERNEL else 1)
    for flags in ({"u_in_wk": True}, {"u_in_wk": True, "dkk_in_wk": True}):
        errors = check(bad, 1, 2, runs=20, flags=flags)
        assert errors and all("race" in e and buffer in e for e in errors), (flags, errors[:2])


@pytest.mark.skipif("    join: bool = " not in KERNEL, reason="the kernel has no join option")
def test_dq_staged_in_k_without_the_join_is_a_race():
    """Without the join only the barriers that order each warpgroup's last read of the other's staging buffer keep
    the dq / dk stores safe: dq staged in K's buffer (which WK reads until its last dKs K) is then a race, and
    with the join it is still one (both warpgroups write K's buffer unordered after it)."""
    bad, n = re.subn(r"\n( +)T\.copy\(dqf, q_s\)\n", r"\n\1T.copy(dqf, k_s)\n", KERNEL)
    assert n == 1
    for join in (False, True):
        errors = check(bad, 1, 1, runs=20, flags={"join": join, "dl_rs": True})
        assert errors and all("race" in e and "k_s" in e for e in errors), (join, errors[:2])


def test_an_else_after_a_nested_if_is_the_other_branch():
    """An option's `else:` that follows a nested (data) if in the option's branch belongs to the option: the
    simulation takes one branch, not both (it once read such an else as unconditional code, arriving twice)."""
    old = ("                    T.barrier_wait(bar_dp[0], ph)\n"
           "                    T.gemm(dp_s, q_s, dkf, transpose_A=True)\n"
           "                    T.barrier_arrive(dp_read[0])\n")
    new = ("                    T.barrier_wait(bar_dp[0], ph)\n"
           "                    if frag_stores:  # a trailing comment\n"
           "                        T.gemm(dp_s, q_s, dkf, transpose_A=True)\n"
           "                        T.barrier_arrive(dp_read[0])\n"
           "                        for r in T.Parallel(BT):\n"
           "                            if r < n_store:\n"
           "                                dbeta[t0 + r, hv] = 0.0\n"
           "                    else:\n"
           "                        T.gemm(dp_s, q_s, dkf, transpose_A=True)\n"
           "                        T.barrier_arrive(dp_read[0])\n")
    assert KERNEL.count(old) == 1
    variant = KERNEL.replace(old, new)
    for flags in ({"frag_stores": True}, {"frag_stores": False}):
        assert check(variant, 1, 2, runs=30, flags=flags) == [], flags


@pytest.mark.skipif("    dvd_in: bool = " not in KERNEL, reason="the kernel has no dvd_in option")
def test_dvd_in_load_waits_for_the_dv_store():
    # with dVd loaded into the buffer that stages dv, the load of the next v-head's dVd must wait for WK's dv store
    bad, n = re.subn(r"\n( +)T\.barrier_wait\(dvd_free\[0\], \(jv \+ 1\) % 2\)\n", r"\n\1pass\n", KERNEL)
    assert n == 1
    errors = check(bad, 1, 2, runs=20, flags={"dvd_in": True})
    assert errors and all("race" in e for e in errors)
