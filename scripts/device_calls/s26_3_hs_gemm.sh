#!/usr/bin/env bash
# Twenty-sixth session, call 3: the fused backward's WK forms <S0, dS~> by two tensor-core products (hs_gemm) instead
# of the elementwise fold over 64 KB of shared memory (Nsight Compute, call 2: shared memory is the kernel's busiest
# unit, L1/TEX 64%, 10.9k wavefronts per chunk). fused_bwd_check.py (JIT, the peers bundle's TileLang): the pair
# against the default, hs_gemm, and hs_gemm with two register splits; then hs_gemm's timeline. About 200 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 300 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 --params "{}" "dict(hs_gemm=True)" "dict(hs_gemm=True, regs=(168, 152, 160, 32))" \
  "dict(hs_gemm=True, regs=(176, 152, 160, 24))" > "$OUT/hs_gemm_check.log" 2>&1
echo "check rc=$?"; grep -v "TileLang\|^$" "$OUT/hs_gemm_check.log" | tail -22
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 150 python3 benchmarks/fused_bwd_check.py --heads 32 \
  --mixes 8192x4 --trace --params "dict(hs_gemm=True)" > "$OUT/hs_gemm_trace.log" 2>&1
echo "trace rc=$?"; grep -v "TileLang\|^$" "$OUT/hs_gemm_trace.log" | grep "median period\|WK:" | head -40 | cut -c1-90
grep -A14 "median cycles blocked" "$OUT/hs_gemm_trace.log" | cut -c1-90
