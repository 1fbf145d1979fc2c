"""The lane arithmetic of common/unit_lower_inverse.py's macros with `shfl`, emulated for one warp on the CPU: the
shuffles hand each lane exactly the values that the shared-memory scratch of diag8_blocks, mma_level1_merge and
mma_level2_merge would (a source lane or element off by one fails it). The macros' TileLang code itself runs only on
a GPU (benchmarks/noprep_check.py, gdn_fwd_noprep's solve_shfl)."""

from __future__ import annotations

import numpy as np

LANES = np.arange(32)


def shfl(values: np.ndarray, src: np.ndarray) -> np.ndarray:
    """__shfl_sync over one warp: lane l receives values[src[l]]."""
    return values[src]


def test_diag8_shuffles_give_each_lane_the_rows_of_its_column():
    y = np.random.default_rng(0).standard_normal((8, 8))  # Y = T21 D1 of one 8x8 block
    r, c = LANES // 4, 2 * (LANES % 4)
    yv0, yv1 = y[r, c], y[r, c + 1]  # each lane's two Y elements, as the macro forms them
    for j in range(8):
        src = 4 * j + LANES % 4
        assert np.array_equal(shfl(yv0, src), y[j, c]) and np.array_equal(shfl(yv1, src), y[j, c + 1])


def test_level1_shuffles_turn_the_accumulator_into_the_b_fragments():
    y = np.random.default_rng(1).standard_normal((16, 8))  # Y = T_lo D_lo of one warp (16 rows, 8 columns)
    lg, lt = LANES // 4, LANES % 4
    # m16n8k8 accumulator: fc[i] = C[lg + 8 (i // 2), 2 lt + i % 2]
    fc = np.stack([y[lg + 8 * (i // 2), 2 * lt + i % 2] for i in range(4)])
    for ks in range(2):
        for h in range(2):
            src = 4 * (lt + 4 * h) + lg // 2
            fy = np.where(lg % 2 == 1, shfl(fc[2 * ks + 1], src), shfl(fc[2 * ks], src))
            # the B fragment of the second product: B[k = 8 ks + lt + 4 h, n = lg]
            assert np.array_equal(fy, y[8 * ks + lt + 4 * h, lg]), (ks, h)
    # a wrong source (the row's lane without the 4 h offset) fails
    bad = np.where(lg % 2 == 1, shfl(fc[1], 4 * lt + lg // 2), shfl(fc[0], 4 * lt + lg // 2))
    assert not np.array_equal(bad, y[lt + 4, lg])


def test_level2_shuffles_turn_two_accumulator_tiles_into_the_b_fragments():
    y = np.random.default_rng(2).standard_normal((32, 8))  # Y = T_lo D_lo, the warp's 8 columns, two 16-row tiles
    lg, lt = LANES // 4, LANES % 4
    # fc[4 mt + i] = C_mt[lg + 8 (i // 2), 2 lt + i % 2] = Y[16 mt + lg + 8 (i // 2), 2 lt + i % 2]
    fc = np.stack([y[16 * (i // 4) + lg + 8 * ((i % 4) // 2), 2 * lt + i % 2] for i in range(8)])
    for ks in range(4):
        for h in range(2):
            src = 4 * (lt + 4 * h) + lg // 2
            fy = np.where(lg % 2 == 1, shfl(fc[2 * ks + 1], src), shfl(fc[2 * ks], src))
            assert np.array_equal(fy, y[8 * ks + lt + 4 * h, lg]), (ks, h)
