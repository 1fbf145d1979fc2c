#!/usr/bin/env bash
# One GPU: the CUDA-graph step test fixed (tokens per case), the grouped prep's options (ablate.py, JIT), then a
# training step with peers at FQ_HEADS (default 16,48).
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
PYTHONPATH=/tmp/site timeout 60 python3 -m pytest tests/test_callers_gpu.py -q -p no:cacheprovider -k graph 2>&1 | tail -2
PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout 100 python3 benchmarks/ablate.py --kernels prep prepg4 prepg4m3 prepg4f \
  prepg4fm3 --variants cur --heads 2,8 8,32 16,64 --tokens 32768 > "$OUT/prepg_opts.log" 2>&1
echo "ablate rc=$?" >> "$OUT/prepg_opts.log"
grep -h "^prep\|rc=" "$OUT/prepg_opts.log" | cut -c1-90
h=${FQ_HEADS:-16,48}
FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=${FQ_BENCH_TIMEOUT:-360} OUT=/tmp/o_$h bash scripts/gpu_bench.sh --fwdbwd \
  "--heads $h --mixes 1x8192 1x32768 --libs flashqla,flashqla_keep,fla,flash_qla" > "$OUT/bench_${h/,/_}.log" 2>&1
cp /tmp/o_$h/H200_fwdbwd.json /tmp/o_$h/H200_fwdbwd.md /tmp/o_$h/bench_fwdbwd.log "$OUT/" 2>/dev/null
grep -h "^|" /tmp/o_$h/H200_fwdbwd.md 2>/dev/null | tail -4; tail -2 "$OUT/bench_${h/,/_}.log"
