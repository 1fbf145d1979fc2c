#!/usr/bin/env bash
# Twenty-sixth session, call 4: hs_gemm (WK's <S0, dS~> by two tensor-core products; call 3: the fused kernel 0.98x
# its default's time) with dq_after_da in the fused kernel, and in the chunk gradient of the two passes (the path of
# two and more v-heads per qk-head): ablate.py interleaved, the shipped gmax 2 and default variants' parameters with and
# without it. JIT with the peers bundle's TileLang. About 300 s.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 200 python3 benchmarks/fused_bwd_check.py --heads 32 16 \
  --mixes 8192x4 1024x8 --params "{}" "dict(hs_gemm=True)" "dict(hs_gemm=True, dq_after_da=True)" \
  > "$OUT/hs_gemm_fused.log" 2>&1
echo "fused check rc=$?"; grep -v "TileLang\|^$" "$OUT/hs_gemm_fused.log" | tail -13
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 280 python3 benchmarks/ablate.py --kernels bwdcwsr2 bwdcwsr2hg bwdcws \
  bwdcwshg --variants cur --heads 16,32 2,8 16,64 --tokens 16384 --rounds 5 > "$OUT/hs_gemm_chunk.log" 2>&1
echo "ablate rc=$?"; grep -v "TileLang\|^$" "$OUT/hs_gemm_chunk.log" | tail -24 | cut -c1-160
