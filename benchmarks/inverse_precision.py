#!/usr/bin/env python3
"""How precise must the chunk's 64x64 unit-lower-triangular inverse be, and in which number formats can its
blockwise form run? A CPU study (float64 torch) for the inverse's move onto tensor cores (docs/speed_plan.md,
Forward next 1; docs/inverse_precision.md has the results and their reading).

The inverse A = (I + L)^-1, L = strictLower(diag(beta) M), M = K K^T (ungated, as flashqla's prep) or Gamma * K K^T
(gated, as FlashInfer's kernel), by blockwise forward substitution: exact solves of the d x d diagonal blocks, then
merges doubling the block size up to 64, each  X = -D_hi (L_lo D_lo)  for the lower-left block of a 2s x 2s block
whose diagonal blocks have inverses D_lo and D_hi. Each step is emulated in a number format:

    operands of a merge's two products rounded to `op` (fp32, tf32, fp16, bf16), products summed in fp32,
    the inverse's blocks kept between levels in `store` (fp32 as flashqla's prep, fp16 as FlashInfer's),
    the diagonal solves in fp32, the result rounded to bf16 (A's storage) at the end.

    python benchmarks/inverse_precision.py [--chunks 64] [--seed 0]

Prints, per input case and scheme, the worst and median relative L2 error of A against float64 over the chunks,
next to the floor that A's bf16 storage alone costs, the largest |A| entry (fp16 holds up to 65504) and how many
chunks came out with an inf or NaN.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

BT = 64
FP16_MAX = 65504.0


def to_tf32(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32 (10 mantissa bits, fp32's range): round to nearest, ties away, on fp32's bits."""
    bits = x.float().contiguous().view(torch.int32)
    rounded = (bits + 0x1000) & ~0x1FFF
    return rounded.view(torch.float32).double()


def rounder(fmt: str):
    """The function that rounds a float64 tensor to `fmt` and returns it as float64 (inf past fp16's range)."""
    if fmt == "fp64":
        return lambda x: x
    if fmt == "fp32":
        return lambda x: x.float().double()
    if fmt == "tf32":
        return to_tf32
    if fmt == "fp16":
        return lambda x: x.half().double()
    if fmt == "bf16":
        return lambda x: x.bfloat16().double()
    raise ValueError(f"unknown number format {fmt!r}")


@dataclass(frozen=True)
class Scheme:
    """One way to run the blockwise inverse: diagonal block size, per-level operand format, storage format."""
    name: str
    diag: int  # 8 or 16
    ops: tuple[str, ...]  # the operand format of each merge level, smallest block first (log2(64 / diag) levels)
    store: str  # the format of the inverse's blocks between levels
    accum: str = "fp32"  # the format the products are summed in

    def __post_init__(self):
        assert len(self.ops) == int(math.log2(BT // self.diag)), self.name


SCHEMES = [
    Scheme("float64 (check)", 16, ("fp64", "fp64"), "fp64", "fp64"),
    # flashqla's prep today: fp32 16x16 solves, level 1 by fp32 FMAs, level 2 in TF32 (mma.sync), fp32 in shared memory
    Scheme("flashqla prep: 16, fp32 + tf32", 16, ("fp32", "tf32"), "fp32"),
    Scheme("16, tf32 merges", 16, ("tf32", "tf32"), "fp32"),
    Scheme("16, fp16 merges, fp32 store", 16, ("fp16", "fp16"), "fp32"),
    Scheme("16, fp16 merges, fp16 store", 16, ("fp16", "fp16"), "fp16"),
    Scheme("16, bf16 merges, fp32 store", 16, ("bf16", "bf16"), "fp32"),
    Scheme("8, tf32 merges", 8, ("tf32", "tf32", "tf32"), "fp32"),
    # FlashInfer's SM90 kernel: 8x8 solves in fp32, three mma.sync levels on fp16 operands, the inverse kept in fp16
    Scheme("8, fp16 merges, fp16 store (FlashInfer)", 8, ("fp16", "fp16", "fp16"), "fp16"),
    Scheme("8, fp16 merges, fp32 store", 8, ("fp16", "fp16", "fp16"), "fp32"),
]


def solve_unit_lower(Lb: torch.Tensor) -> torch.Tensor:
    """(I + Lb)^-1 for strictly lower Lb [..., d, d] by forward substitution in fp32 (rounded after every step)."""
    d = Lb.shape[-1]
    f32 = rounder("fp32")
    X = torch.zeros_like(Lb)
    for m in range(d):
        row = torch.zeros_like(Lb[..., 0, :])
        row[..., m] = 1.0
        for j in range(m):
            row = f32(row - f32(Lb[..., m, j, None] * X[..., j, :]))
        X[..., m, :] = row
    return X


def blockwise_inverse(L: torch.Tensor, s: Scheme) -> torch.Tensor:
    """(I + L)^-1 of strictly lower L [C, 64, 64] (float64 in, float64 out) the way scheme `s` computes it."""
    store = rounder(s.store)
    acc = rounder(s.accum)
    C = L.shape[0]
    inv = torch.zeros_like(L)
    for b in range(0, BT, s.diag):
        inv[:, b:b + s.diag, b:b + s.diag] = store(solve_unit_lower(L[:, b:b + s.diag, b:b + s.diag]))
    size = s.diag
    for op_fmt in s.ops:
        op = rounder(op_fmt)
        for b in range(0, BT, 2 * size):
            lo, hi = slice(b, b + size), slice(b + size, b + 2 * size)
            d_lo, d_hi = inv[:, lo, lo], inv[:, hi, hi]
            y = acc(op(L[:, hi, lo]) @ op(d_lo))  # L_lo D_lo, summed in the accumulator's format
            x = acc(op(d_hi) @ op(y))
            inv[:, hi, lo] = store(-x)
        size *= 2
    assert inv.shape == (C, BT, BT)
    return inv


def make_chunks(case: str, C: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """K [C, 64, 128] (bf16-rounded, as the kernels read it), beta [C, 64], chunk-local cumulative gates [C, 64]."""
    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    k = randn(C, BT, 128)
    if case.startswith("correlated"):  # keys around one direction per chunk: cosine similarity about rho
        rho = float(case.split()[1])
        k = math.sqrt(rho) * randn(C, 1, 128) + math.sqrt(1 - rho) * k
    if case != "unnormalized keys":
        k = F.normalize(k, dim=-1)
    k = k.bfloat16().double()
    beta = torch.sigmoid(randn(C, BT))
    if case == "beta = 1":
        beta = torch.ones(C, BT, dtype=torch.float64)
    # the tests' strong gates: per-chunk rates from 0 to 16, a quarter of them without decay
    rate = torch.linspace(0, 16, C, dtype=torch.float64)
    g = (-rate[:, None] * F.softplus(0.5 * randn(C, BT) + 1)).clamp_min(-20)
    g[torch.arange(C) % 4 == 0] = 0.0
    return k, beta, g.cumsum(-1)


def lower_matrix(k: torch.Tensor, beta: torch.Tensor, gc: torch.Tensor, gated: bool) -> torch.Tensor:
    """L = strictLower(diag(beta) M), M = K K^T or Gamma * K K^T with Gamma_ij = exp(gc_i - gc_j)."""
    M = k @ k.transpose(1, 2)
    if gated:
        M = M * torch.exp((gc[:, :, None] - gc[:, None, :]).clamp_max(0.0))
    return torch.tril(beta[:, :, None] * M, diagonal=-1)


def exact_inverse(L: torch.Tensor) -> torch.Tensor:
    """(I + L)^-1 of strictly lower L [C, 64, 64] in float64."""
    eye = torch.eye(BT, dtype=torch.float64).expand_as(L)
    return torch.linalg.solve_triangular(eye + L, eye, upper=False, unitriangular=True)


def rel_err(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Relative L2 error per chunk (inf where x is not finite)."""
    e = (x - ref).flatten(1).norm(dim=1) / ref.flatten(1).norm(dim=1)
    return torch.where(torch.isfinite(x).flatten(1).all(dim=1), e, torch.full_like(e, math.inf))


CASES = ["l2-normalized keys", "beta = 1", "correlated 0.5", "correlated 0.9", "correlated 0.99", "unnormalized keys"]


def study(chunks: int, seed: int) -> list[dict]:
    rows = []
    for gated in (False, True):
        for case in CASES:
            gen = torch.Generator().manual_seed(seed)
            k, beta, gc = make_chunks(case, chunks, gen)
            L = lower_matrix(k, beta, gc, gated)
            exact = exact_inverse(L)
            floor = rel_err(exact.bfloat16().double(), exact)
            for s in SCHEMES:
                A = blockwise_inverse(L, s).bfloat16().double()
                e = rel_err(A, exact)
                rows.append(dict(gated=gated, case=case, scheme=s.name, worst=e.max().item(), median=e.median().item(),
                                 floor=floor.max().item(), max_abs=exact.abs().max().item(),
                                 nonfinite=int((~torch.isfinite(e)).sum()), chunks=chunks))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=64, help="chunks per case (each case draws its own)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = study(args.chunks, args.seed)
    print("| inverse | keys | scheme | worst rel err | median | bf16 floor | max abs(A) | chunks not finite |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        big = " (past fp16)" if r["max_abs"] > FP16_MAX else ""
        print(f"| {'gated' if r['gated'] else 'ungated'} | {r['case']} | {r['scheme']} | {r['worst']:.2e} | "
              f"{r['median']:.2e} | {r['floor']:.2e} | {r['max_abs']:.3g}{big} | {r['nonfinite']} of {r['chunks']} |")


if __name__ == "__main__":
    main()
