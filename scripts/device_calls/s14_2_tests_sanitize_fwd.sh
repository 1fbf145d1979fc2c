#!/usr/bin/env bash
# Two GPUs. GPU0: test suite, kernel profile, fwd bench at (2,8) with peers. GPU1: compute-sanitizer, then a training-step bench.
set -uo pipefail
OUT=${OUT:-/tmp/fq_out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-index --target /tmp/site .carry/flashqla-*.whl 2>&1 | grep -v WARNING
echo "wheel commit: $(PYTHONPATH=/tmp/site python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))')"
(
  export CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
  t0=$(date +%s)
  timeout 300 python3 -m pytest tests -q -rfs -p no:cacheprovider --timeout 120 -m "not edge" > "$OUT/pytest.log" 2>&1
  echo "pytest rc=$? $(( $(date +%s) - t0 )) s" >> "$OUT/pytest.log"
  timeout 70 python3 benchmarks/profile_kernels.py --heads 2,8 16,32 --mixes 1x32768 8192x4 2>&1 | grep -v Warning > "$OUT/profile.log"
  FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=170 OUT=/tmp/g0out bash scripts/gpu_bench.sh --fwd \
    "--heads 2,8 --mixes 1x32768 28672+4096 16384+16384 8192x4 --libs flashqla,fla,flash_qla" > /tmp/g0b.log 2>&1
  cp /tmp/g0out/H200_fwd.json "$OUT/fwd_2_8.json" 2>/dev/null; cat /tmp/g0out/bench_fwd.log > "$OUT/fwd_2_8.log" 2>/dev/null
) &
(
  export CUDA_VISIBLE_DEVICES=1 PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
  mkdir -p /tmp/san
  FQ_SANITIZE_TOOLS="racecheck synccheck memcheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_" FQ_SANITIZE_TOOL_TIMEOUT=150 \
    bash scripts/sanitize.sh /tmp/san > /tmp/san/summary.txt 2>&1
  FLASHQLA_FWD_BLOCK_V=128 FQ_SANITIZE_TOOLS="racecheck" FQ_SANITIZER_ARGS="--kernel-name kns=gdn_fwd" FQ_SANITIZE_TOOL_TIMEOUT=100 \
    bash scripts/sanitize.sh /tmp/san128 >> /tmp/san/summary.txt 2>&1
  for f in /tmp/san/*.log /tmp/san128/*.log; do echo "== $f"; grep -E "SUMMARY|done|Error|error" "$f" | head -20; done > "$OUT/sanitize.txt"
  cat /tmp/san/summary.txt >> "$OUT/sanitize.txt"
) &
wait
tail -15 "$OUT/pytest.log"
grep -E "ms of kernels|cp_correct|gdn_fwd|bwd_dh|bwd_chunk" "$OUT/profile.log"
cat "$OUT/sanitize.txt" | tail -30
grep "^|\|\[bench\]" "$OUT/fwd_2_8.log" 2>/dev/null | tail -10; cat /tmp/g0b.log | tail -3
