#!/usr/bin/env bash
# NVIDIA compute-sanitizer over every compiled flashqla kernel on small shapes (scripts/sanitize_driver.py):
# memcheck, racecheck, synccheck and initcheck, one run each. Each tool's full report, with the driver's
# own output, goes to <out>/<tool>.log; each tool's summary line is printed.
#
#   PYTHONPATH=/tmp/site bash scripts/sanitize.sh [out_dir]     (default: $OUT, else ./sanitize_out)
#
# Exit status 1 if memcheck, racecheck or synccheck report an error, or the driver fails under any tool.
# initcheck is reported but not counted unless FQ_SANITIZE_STRICT_INIT=1: the chunk-gradient kernel loads
# the per-chunk state workspaces (h, dh) of every chunk slot, also of idle slots that no chunk owns and
# whose workspace rows were never written; those values never reach an output (their stores are masked).
# Extra compute-sanitizer arguments: FQ_SANITIZER_ARGS (e.g. a kernel-name filter); each tool's time
# limit: FQ_SANITIZE_TOOL_TIMEOUT (seconds, default 300; rc 124 when it is hit). At most 200 errors are
# printed per tool; the summary line counts all of them.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-sanitize_out}}
mkdir -p "$out"
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [ ! -x "$sanitizer" ]; then
  echo "sanitize: compute-sanitizer not found (set COMPUTE_SANITIZER)"
  exit 2
fi
# one cudaMalloc per tensor, so that an access past a tensor's end leaves its allocation and is caught
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
# outputs are not pre-filled: initcheck then also sees a kernel reading an output it never wrote
export FLASHQLA_POISON_OUTPUTS=0
export PYTHONUNBUFFERED=1
"$sanitizer" --version | head -n 2 | tail -n 1
status=0
# FQ_SANITIZE_TOOLS picks a subset (e.g. "racecheck memcheck" after a change of one kernel's shared-memory use)
for tool in ${FQ_SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout "${FQ_SANITIZE_TOOL_TIMEOUT:-300}" "$sanitizer" --tool "$tool" --print-limit 200 ${FQ_SANITIZER_ARGS:-} \
    python3 "$here/sanitize_driver.py" > "$out/$tool.log" 2>&1
  rc=$?
  summary=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$out/$tool.log" | tr -s ' ' | paste -sd ';' -)
  if [ "$tool" = racecheck ]; then  # "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
    errors=$(grep -Eo "RACECHECK SUMMARY: .*\(([0-9]+) errors" "$out/$tool.log" | grep -Eo "\(([0-9]+)" | tr -d '(' | tail -n 1)
  else
    errors=$(grep -Eo "ERROR SUMMARY: [0-9]+ errors?$|ERROR SUMMARY: [0-9]+ errors? *$" "$out/$tool.log" | grep -Eo "[0-9]+" | head -n 1)
  fi
  driver_ok=$(grep -c "malformed cu_seqlens .* done" "$out/$tool.log")
  printf '%-10s %4ss  rc=%-3s %s\n' "$tool" "$(( $(date +%s) - start ))" "$rc" \
    "${summary:-no summary line (see $out/$tool.log)}"
  fatal=1
  [ "$tool" = initcheck ] && [ "${FQ_SANITIZE_STRICT_INIT:-0}" != 1 ] && fatal=0
  if [ "$driver_ok" = 0 ]; then
    echo "           the driver did not finish under $tool: see $out/$tool.log"
    status=1
  elif [ -z "$errors" ] || { [ "$errors" != 0 ] && [ "$fatal" = 1 ]; }; then
    status=1
  fi
done
echo "sanitize: reports in $out; exit status $status"
exit $status
