"""scripts/ncu_regions.py cuts an Nsight Compute SASS page (its CSV columns as ncu 2025 writes them) into
regions at the barriers, wgmma waits and EXIT, and sums each region's samples, wavefronts, executed
instructions per opcode and stall reasons."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from ncu_regions import SAMPLES, cut_regions  # noqa: E402

HEADER = ["Address", "Source", SAMPLES, "Instructions Executed", "L1 Wavefronts Shared", "stall_long_sb",
          "stall_barrier", "stall_long_sb (Not Issued)"]


def row(source: str, samples: int, executed: int, wavefronts: int = 0, long_sb: int = 0, barrier: int = 0):
    return ["0x0", source, str(samples), f"{executed:,}", str(wavefronts), str(long_sb), str(barrier), "99"]


def test_regions_end_at_barriers_and_sum_their_rows():
    data = [
        row("LDG.E.128 R4, desc[UR4][R2.64]", 10, 1000, long_sb=9),
        row("@P0 STS.128 [R3], R4", 30, 1000, wavefronts=400, long_sb=25),
        row("BAR.SYNC.DEFER_BLOCKING 0x0", 5, 1000, barrier=5),
        row("HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ", 1, 2000),
        row("WARPGROUP.DEPBAR.LE gsb0, 0x0", 4, 1000, barrier=3),
        row("FFMA R1, R2, R3, R1", 2, 4000, wavefronts=100),
        row("EXIT", 0, 1000),
    ]
    regions = cut_regions(HEADER, data)
    assert [(g["start"], g["end"]) for g in regions] == [(0, 2), (3, 4), (5, 6)]
    first, second, third = regions
    assert first["samples"] == 45 and first["wf"] == 400 and first["executed"] == 3000
    # a predicated instruction counts under its opcode; the "(Not Issued)" stall columns are left out
    assert first["ops"] == {"LDG": 1000, "STS": 1000, "BAR": 1000}
    assert first["stalls"] == {"long_sb": 34, "barrier": 5}
    assert second["ops"]["HGMMA"] == 2000 and second["last"].startswith("WARPGROUP.DEPBAR")
    assert third["wf"] == 100 and third["ops"]["FFMA"] == 4000 and third["last"] == "EXIT"
