"""The mbarrier protocol of the fused backward (tilelang_src/sm90/gdn_bwd_fused.py), simulated on the CPU from its
source (scripts/barrier_protocol_sim.py): four warpgroups (WA, WK, the state warpgroup WS, the producer warps)
walking one to six chunks; no random schedule hangs, passes a wait on the wrong phase or lets two roles touch a
shared buffer (one of them writing) without a barrier chain between them; a wait removed, a parity or an arrival
count changed is caught."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from barrier_protocol_sim import check, parse  # noqa: E402

KERNEL = (ROOT / "tilelang_src" / "sm90" / "gdn_bwd_fused.py").read_text()


def test_every_role_and_barrier_is_read():
    counts, roles = parse(KERNEL)
    assert set(roles) == {"WA", "WK", "WS", "WP0", "WP1", "WP2", "WP3"}
    assert counts["ab_free"] == [384, 384] and counts["do_read"] == [256] and counts["bar_dh"] == [128]
    assert counts["h_free"] == [256] and counts["q_free"] == counts["k_free"] == [128]
    for role, (_, ops) in roles.items():
        assert any(op[0] == "wait" for op in ops), role
        assert any(op[0] == "access" for op in ops), role
    ws_reads = {place[0] for op in roles["WS"][1] if op[0] == "access" for place in op[1]}
    assert {"q_s", "k_s", "do_s", "vd_s", "dvd_s", "g_s", "gq_s", "er_s", "hs_s"} <= ws_reads


@pytest.mark.parametrize("flags", [{}, {"hold_gamma": False}, {"dl_in_wk": False},
                                   {"dl_in_wk": False, "hold_gamma": False}, {"dq_after_da": True},
                                   {"dq_fold": True}, {"dq_fold": True, "dq_after_da": True}])
@pytest.mark.parametrize("chunks", [1, 2, 3, 6])
def test_no_schedule_hangs_races_or_misreads_a_phase(chunks, flags):
    assert check(KERNEL, chunks, 1, runs=150, flags=flags) == []


@pytest.mark.parametrize("wait, after, buffer", [
    ("ws_q[0], ph", "T.copy(dqf, q_s)", "q_s"),  # WA's dq into Q's buffer after WS's Q^T dO
    ("dp_read[0], ph", "T.barrier_wait(ws_q[0], ph)", "(q_s|dp_s)"),  # ... after WK's dP^T Q (and dKs after it)
    ("do_read[0], ph", "for r, c in T.Parallel(BT, V):", "do_s"),  # WS scales dO in place after WA's, WK's reads
    ("vd_read[0], ph", "T.copy(acc_k, vd_s)", "vd_s"),  # WK's dv over Vd after WA's dPg
    ("dk_stored[0], (i + 1) % 2", "T.copy(acc_k, dvd_s)", "dvd_s"),  # WK's dVd over dk after WS stored it
    ("dv_read[0], ph", "for r, c in T.Parallel(BT, V):", "vd_s"),  # WS scales dv in place after WK's dv S0^T
    ("bar_dv[0], ph", "store_chunk_rows(vd_s", "vd_s"),  # WS stores dv after WK wrote it
    ("bar_dh[0], ph", "T.gemm(k_s, dh_s", "dh_s"),  # WK reads dS~ after WS wrote it
    ("bar_dkst[0], ph", "for r in T.Parallel(BT):", "(dvd_s|db2_s)"),  # WS stores dk (and dbeta) after WK's
    ("bar_dqs[0], ph", "store_chunk_rows(q_s", "q_s"),  # WS stores dq after WA staged it
    ("sums_read[0], (i + 1) % 2", "for r in T.Parallel(BT):", "gq_s"),  # WA's next sums after WS's dg tail
    ("bar_sums[0], ph", "T.barrier_wait(bar_kg[0], ph)", "(gq|er|ec|db1|db2)_s"),  # WS's dg tail after WA's sums
])
def test_a_missing_wait_is_a_race(wait, after, buffer):
    """Each of these waits is the only barrier chain between a buffer's writer and another role's access: without
    it the run reports the race. (Four waits are implied by others and so not here: WA's on vd_free, by its wait on
    bar_w through WK's on bar_k; WK's on ws_k, by the producer's wait on q_free, which WS arrives after its K^T dVg;
    WS's on dh_free, by its wait on bar_dv; WS's on bar_kg, by its wait on bar_sums through WA's on dp_read.)"""
    line = re.compile(rf"\n +T\.barrier_wait\({re.escape(wait)}\)\n( +{re.escape(after)})")
    bad, n = line.subn(r"\n\1", KERNEL, count=1)  # the default's (dq_after_da stages dq in a second copy)
    assert n == 1
    errors = check(bad, 3, 1, runs=30)
    assert errors and all("race" in e and re.search(buffer, e) for e in errors), errors[:2]


@pytest.mark.parametrize("wait", ["dp_read[0], ph", "ws_q[0], ph"])
def test_dq_after_da_a_missing_wait_is_a_race(wait):
    """With dq_after_da WA stages dq after dA, in the branch's own copy of the two waits that guard Q's buffer (WK's
    dP^T Q, WS's Q^T dO): without either, a race on Q's buffer."""
    line = re.compile(rf"(if dq_after_da:\n( +)(?:T\.barrier_wait\(dp_read\[0\], ph\)\n +)?)T\.barrier_wait\("
                      rf"{re.escape(wait)}\)\n")
    matches = [m for m in line.finditer(KERNEL) if "T.copy(dq_r, q_s)" in KERNEL[m.end():m.end() + 200]]
    assert len(matches) == 1
    m = matches[0]
    bad = KERNEL[:m.start()] + m.group(1) + "pass\n" + KERNEL[m.end():]
    errors = check(bad, 3, 1, runs=30, flags={"dq_after_da": True})
    assert errors and all("race" in e and "q_s" in e for e in errors), errors[:2]


def test_a_wait_on_the_wrong_parity_hangs():
    bad, n = re.subn(r"dks_read\[0\], \(i \+ 1\) % 2", "dks_read[0], i % 2", KERNEL)
    assert n == 1
    errors = check(bad, 2, 1, runs=20)
    assert errors and all("hang" in e for e in errors)


def test_a_wrong_arrival_count_hangs():
    bad, n = re.subn(r"do_read = T\.alloc_barrier\(256\)", "do_read = T.alloc_barrier(384)", KERNEL)
    assert n == 1
    assert check(bad, 2, 1, runs=20)
