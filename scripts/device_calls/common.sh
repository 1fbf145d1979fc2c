# Steps the device-call scripts share (sourced: `. scripts/device_calls/common.sh`). Scripts of sessions before the
# eighteenth write them out (records of what each call ran).

# begin_call: the prologue of a device call (forty-eighth session on): OUT (default /tmp/fq_out) made, T0 the call's
# start, the GPU named, the carried wheel installed into /tmp/site
begin_call() {
  OUT=${OUT:-/tmp/fq_out}
  mkdir -p "$OUT"
  T0=$(date +%s)
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  install_wheel
}

# is_h200: whether the GPU that came is an H200 (the issues' acceptance tables are an H200's; the by-card calls,
# forty-ninth session on)
is_h200() {
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200
}

# pip_install_wheel SITE WHEEL: the wheel into SITE, offline, without its dependencies
pip_install_wheel() {
  python3 -m pip install -q --no-deps --no-index --target "$1" "$2" 2>&1 | grep -v WARNING
}

# the carried wheel into /tmp/site (or $1), and the commit it was built from; an earlier call's install on a warm
# machine is removed first (pip --target leaves an existing package in place: s43_3 ran the last call's wheel)
install_wheel() {
  local site=${1:-/tmp/site}
  rm -rf "$site"
  pip_install_wheel "$site" .carry/flashqla-*.whl
  echo "wheel commit: $(site_commit "$site")"
}

# site_commit SITE: the commit the wheel installed in SITE was built from (its build manifest)
site_commit() {
  PYTHONPATH=$1 python3 -c 'import flashqla; print(flashqla.build_manifest().get("source_commit"))'
}

# the carried peer bundle (FLA, FlashQLA, TileLang) into /tmp/peers: PYTHONPATH=...:/tmp/peers for the peers' tables
# and for TileLang's JIT (walk_bench.py, ablate.py, tests/test_seg_plan_gpu.py)
install_peers() {
  mkdir -p /tmp/peers && tar xJf .carry/peers.tar.xz -C /tmp/peers
}

# install_ab_wheel COMMIT: another commit's wheel, carried as .carry/ab/COMMIT.zip (pip wants a wheel's file name),
# into /tmp/site_COMMIT, for flashqla-alone comparisons by wheel in one call; prints the commit it was built from
install_ab_wheel() {
  rm -rf "/tmp/site_$1"
  mkdir -p "/tmp/w_$1" && cp ".carry/ab/$1.zip" "/tmp/w_$1/flashqla-0.1.0-py3-none-linux_x86_64.whl"
  pip_install_wheel "/tmp/site_$1" "/tmp/w_$1/flashqla-0.1.0-py3-none-linux_x86_64.whl"
  echo "$1 wheel commit: $(site_commit "/tmp/site_$1")"
}

# noprep_check_table LIMIT_S KERNEL...: benchmarks/noprep_check.py on the installed wheel with the carried peers'
# TileLang (JIT builds from the tree): float64, each kernel against the first bit for bit, then time at (32, 32)
# 8192x4, 4096x8, 2048x4, 8192x1; its log in $OUT/noprep_check.log, the summary on stdout (thirty-third session)
noprep_check_table() {
  local limit=$1
  shift
  install_peers
  PYTHONPATH=/tmp/site:/tmp/peers PYTHONUNBUFFERED=1 timeout "$limit" python3 benchmarks/noprep_check.py \
    --kernels "$@" --time 32,32:8192x4 32,32:4096x8 32,32:2048x4 32,32:8192x1 > "$OUT/noprep_check.log" 2>&1
  echo "noprep_check rc=$?"
  grep -v "TileLang\|^$\|Warning\|read before\|Initialize the" "$OUT/noprep_check.log" | tail -$(( 4 * $# + 7 )) \
    | cut -c1-200
}

# pytest on the installed wheel: run_pytest LOG LIMIT_S MARK_EXPR [FILE...] (default: all of tests/); prints rc, time,
# failures, skips, the summary line and the worst errors against float64 (the device tool may not return the log:
# what matters goes to stdout). PYTEST_SITE (default /tmp/site) picks another installed wheel, e.g. /tmp/site_ff of
# install_ab_wheel ff
run_pytest() {
  local log=$1 limit=$2 marks=$3 t0
  shift 3
  [ $# -gt 0 ] || set -- tests
  t0=$(date +%s)
  PYTHONPATH=${PYTEST_SITE:-/tmp/site} PYTHONUNBUFFERED=1 timeout "$limit" python3 -m pytest "$@" -q -rfs -p no:cacheprovider \
    --timeout 120 -m "$marks" > "$log" 2>&1
  echo "pytest -m '$marks' rc=$? $(( $(date +%s) - t0 )) s"
  grep -h "^FAILED\|^SKIPPED" "$log" | head -12; tail -1 "$log"
  grep -h -A12 "worst relative" "$log" | head -14
}

# run_sanitizer DIR KERNEL_PREFIX TOOL_LIMIT_S [TOOLS]: compute-sanitizer (scripts/sanitize.sh) on the installed wheel,
# over the kernels whose names start with KERNEL_PREFIX (e.g. gdn_, gdn_chunk_prep), each tool within TOOL_LIMIT_S;
# TOOLS default "racecheck synccheck memcheck". Reports in DIR; an environment prefix (FLASHQLA_FWD_BLOCK_V=128)
# reaches the driver
run_sanitizer() {
  mkdir -p "$1"
  PYTHONPATH=/tmp/site FQ_SANITIZE_TOOLS="${4:-racecheck synccheck memcheck}" FQ_SANITIZER_ARGS="--kernel-name kns=$2" \
    FQ_SANITIZE_TOOL_TIMEOUT="$3" bash scripts/sanitize.sh "$1"
}

# ab_flashqla "HEADS" BASE...: flashqla alone by wheel, one process per wheel: forward and training step at HEADS (e.g.
# "16,64 2,8") x four mixes on each BASE commit's wheel (installed by install_ab_wheel) and on the installed one
# ("head"), then ms_table.py's table per mode (every BASE and head side by side)
ab_flashqla() {
  local heads=$1 mode c
  shift
  ln -sfn /tmp/site /tmp/site_head
  for mode in fwd fwdbwd; do
    for c in "$@" head; do
      # shellcheck disable=SC2086
      PYTHONPATH=/tmp/site_$c PYTHONUNBUFFERED=1 timeout 60 python3 benchmarks/bench_gdn.py --mode $mode --libs flashqla \
        --heads $heads --mixes 1x8192 1x32768 8192x4 4096x8 --json "$OUT/ab_${mode}_$c.json" \
        > "$OUT/ab_${mode}_$c.log" 2>&1
      echo "$mode $c rc=$?"
    done
  done
  for mode in fwd fwdbwd; do
    local tables=()
    for c in "$@" head; do tables+=("$c=$OUT/ab_${mode}_$c.json"); done
    python3 scripts/device_calls/ms_table.py $mode "${tables[@]}"
  done
}

# ab_drift MODE BASE NEW "HEADS" "MIXES": flashqla alone by wheel (--mode MODE), one process per run: BASE's wheel
# (installed by install_ab_wheel), NEW's (the installed one, /tmp/site) and BASE's again (the run's drift), then
# ms_table.py's table of the three
ab_drift() {
  local mode=$1 base=$2 new=$3 heads=$4 mixes=$5 c n
  ln -sfn /tmp/site "/tmp/site_$new"
  for c in "$base" "$new" "$base"; do
    n=$([ -f "$OUT/ab_${mode}_${c}.json" ] && echo 2 || echo 1)
    # shellcheck disable=SC2086
    PYTHONPATH=/tmp/site_$c PYTHONUNBUFFERED=1 timeout 70 python3 benchmarks/bench_gdn.py --mode "$mode" --libs flashqla \
      --heads $heads --mixes $mixes --json "$OUT/ab_${mode}_${c}_$n.json" > "$OUT/ab_${mode}_${c}_$n.log" 2>&1
    echo "$mode $c ($n) rc=$?"
    [ "$n" = 1 ] && cp "$OUT/ab_${mode}_${c}_1.json" "$OUT/ab_${mode}_${c}.json"
  done
  python3 scripts/device_calls/ms_table.py "$mode" "$base=$OUT/ab_${mode}_${base}_1.json" \
    "$new=$OUT/ab_${mode}_${new}_1.json" "${base}again=$OUT/ab_${mode}_${base}_2.json"
}

# ab_runs MODE "HEADS" "MIXES" LABEL=SITE[:VAR=VALUE[,VAR=VALUE]] ...: flashqla alone (bench_gdn.py --mode MODE), one
# process per run in the order given, each with PYTHONPATH=SITE and the optional environment settings (e.g.
# pdl0=/tmp/site:FLASHQLA_PDL=0), each within AB_TIMEOUT seconds (default 70); then ms_table.py's table of the runs
# (the first over the last) (twenty-eighth session)
ab_runs() {
  local mode=$1 heads=$2 mixes=$3 spec label site setting rc tables=()
  shift 3
  for spec in "$@"; do
    label=${spec%%=*}
    site=${spec#*=}
    setting=""
    case $site in *:*) setting=${site#*:}; site=${site%%:*} ;; esac
    setting=${setting//,/ }  # several settings: VAR=VALUE,VAR=VALUE
    # shellcheck disable=SC2086
    env $setting PYTHONPATH="$site" PYTHONUNBUFFERED=1 timeout "${AB_TIMEOUT:-70}" python3 benchmarks/bench_gdn.py \
      --mode "$mode" --libs flashqla --heads $heads --mixes $mixes --json "$OUT/ab_${mode}_$label.json" \
      > "$OUT/ab_${mode}_$label.log" 2>&1
    rc=$?
    echo "$mode $label rc=$rc"
    [ $rc -eq 0 ] || tail -3 "$OUT/ab_${mode}_$label.log"
    tables+=("$label=$OUT/ab_${mode}_$label.json")
  done
  python3 scripts/device_calls/ms_table.py "$mode" "${tables[@]}"
}

# ab_ratio_table MODE "HEADS" "MIXES" BASE=SITE[:SETTINGS] CAND=SITE[:SETTINGS] ...: ab_runs of BASE, the candidates and
# BASE again (labelled BASE2), each within AB_TIMEOUT (default 60) seconds (their JSON in $OUT/ab_MODE_*.json, the table
# in $OUT/ab_MODE.txt); prints the runs' rc, then ab_ratio.py's each candidate over the mean of BASE's two runs, per
# shape and by geomean (44th session; by wheel in the 46th)
ab_ratio_table() {
  local mode=$1 heads=$2 mixes=$3 base=$4 b=${4%%=*} spec c
  shift 4
  AB_TIMEOUT=${AB_TIMEOUT:-60} ab_runs "$mode" "$heads" "$mixes" "$base" "$@" "${b}2=${base#*=}" > "$OUT/ab_$mode.txt"
  grep "rc=" "$OUT/ab_$mode.txt" | tr '\n' ' '; echo
  for spec in "$@"; do
    c=${spec%%=*}
    python3 scripts/device_calls/ab_ratio.py "$mode" "$c=$OUT/ab_${mode}_$c.json" "$b=$OUT/ab_${mode}_$b.json" \
      "${b}2=$OUT/ab_${mode}_${b}2.json" | cut -c1-120
  done
}

# ab_base_ratio MODE "HEADS" "MIXES" LABEL SETTINGS: ab_ratio_table of the installed wheel as base (walk, walk2) and
# LABEL, the same wheel with SETTINGS (VAR=VALUE[,VAR=VALUE])
ab_base_ratio() {
  ab_ratio_table "$1" "$2" "$3" walk=/tmp/site "$4=/tmp/site:$5"
}

# profile_walk_widths "MIXES" LIMIT_S: profile_kernels.py at (2, 4) with FLASHQLA_WALK_BV=32 and 64 (the installed
# wheel), each within LIMIT_S; prints each shape's kernel total and its correction walk's time (44th session)
profile_walk_widths() {
  local bv
  for bv in 32 64; do
    # shellcheck disable=SC2086
    FLASHQLA_WALK_BV=$bv PYTHONPATH=/tmp/site timeout "$2" python3 benchmarks/profile_kernels.py --heads 2,4 \
      --mixes $1 > "$OUT/profile_bv$bv.log" 2>&1
    echo "== profile FLASHQLA_WALK_BV=$bv rc=$?"
    grep "ms of kernels\|cp_correct" "$OUT/profile_bv$bv.log" | cut -c1-120 | head -14
  done
}

# walk_bench_compile "VARIANTS": benchmarks/walk_bench.py's variants compiled by TileLang's JIT in parallel, each
# `--compile-only` in a process of its own, into TileLang's cache (with the carried peers' TileLang: install_peers
# first), so that walk_bench_run finds them there; prints the count and a failed compile's log tail (45th session)
walk_bench_compile() {
  local t0 v
  t0=$(date +%s)
  for v in $1; do
    PYTHONPATH=/tmp/peers timeout 200 python3 benchmarks/walk_bench.py --compile-only --variants "$v" \
      > "$OUT/compile_$v.log" 2>&1 &
  done
  wait
  # shellcheck disable=SC2086
  echo "compiled in $(( $(date +%s) - t0 )) s: $(cat "$OUT"/compile_*.log | grep -c ': compiled') of $(echo $1 | wc -w)"
  for v in $1; do grep -q ": compiled" "$OUT/compile_$v.log" || { echo "== $v"; tail -5 "$OUT/compile_$v.log"; }; done
}

# walk_bench_run "VARIANTS" LIMIT_S LOG [WALK_BENCH_ARGS...]: one timed walk_bench.py run of the variants within
# LIMIT_S into $OUT/LOG; prints its table (45th session)
walk_bench_run() {
  local variants=$1 limit=$2 log=$3
  shift 3
  # shellcheck disable=SC2086
  PYTHONPATH=/tmp/peers PYTHONUNBUFFERED=1 timeout "$limit" python3 benchmarks/walk_bench.py "$@" --variants $variants \
    > "$OUT/$log" 2>&1
  echo "walk_bench $* rc=$?"
  grep -v "TileLang\|Warning\|^$" "$OUT/$log" | tail -16 | cut -c1-160
}

# peer_table MODE HEADS LIMIT_S [BENCH_ARGS]: bench_gdn.py --mode MODE with the carried peers (scripts/gpu_bench.sh) at
# HEADS, every mix unless BENCH_ARGS name others, within LIMIT_S; its table and JSON into $OUT as
# H200_MODE_HEADS.{md,json}; prints the run's table (the first in the file) and its summary
peer_table() {
  local mode=$1 heads=$2 limit=$3 extra=${4:-} tag
  tag=${heads//,/_}
  rm -f "/tmp/o_$mode/H200_$mode.json" "/tmp/o_$mode/H200_$mode.md"  # a run that times out must not leave the last's
  FQ_TMP=/tmp/g0 FQ_BENCH_TIMEOUT=$limit OUT=/tmp/o_$mode bash scripts/gpu_bench.sh "--$mode" "--heads $heads $extra"
  if [ ! -f "/tmp/o_$mode/H200_$mode.md" ]; then
    echo "peer_table $mode $heads: no table (not done within $limit s; with the peers' first-use compiles a cold" \
      "head configuration needs 300-360 s)"
    return 1
  fi
  cp "/tmp/o_$mode/H200_$mode.json" "$OUT/H200_${mode}_$tag.json"
  cp "/tmp/o_$mode/H200_$mode.md" "$OUT/H200_${mode}_$tag.md"
  awk '/^\| model/ {t = 1} t && /^$/ {exit} t' "$OUT/H200_${mode}_$tag.md" | cut -c1-150
  grep "^\[bench\]" "/tmp/o_$mode/bench_$mode.log" | tail -2
}

# bwd_peer_table HEADS LIMIT_S: the backward beside FlashQLA alone (FLA, 1.8-3.6x slower in the 40th session's tables,
# left out) at HEADS over the 8 published backward mixes, by peer_table (43rd session)
bwd_peer_table() {
  peer_table bwd "$1" "$2" \
    "--libs flashqla,flash_qla --mixes 1x32768 1x8192 16384+16384 4096+4096 8192x4 4096x8 2048x4 1024x8"
}

# ab_fused_setting MODE "HEADS" "MIXES": flashqla alone in one wheel (the installed one) with FLASHQLA_FUSED_BWD 0, 1
# and 0 again (the run's drift), then ms_table.py's table of the three (twenty-fifth session): ab_runs' case
ab_fused_setting() {
  AB_TIMEOUT=90 ab_runs "$1" "$2" "$3" pair=/tmp/site:FLASHQLA_FUSED_BWD=0 fused=/tmp/site:FLASHQLA_FUSED_BWD=1 \
    pair_again=/tmp/site:FLASHQLA_FUSED_BWD=0
}

# profile_step FUSED "HEADS" "MIXES" [LIMIT_S]: benchmarks/profile_kernels.py with FLASHQLA_FUSED_BWD=FUSED (the
# installed wheel) within LIMIT_S (default 60), its log in $OUT; prints the training step's kernels of each shape
profile_step() {
  local log="$OUT/profile_$1_${2//[, ]/_}.log"
  # shellcheck disable=SC2086
  FLASHQLA_FUSED_BWD=$1 PYTHONPATH=/tmp/site timeout "${4:-60}" python3 benchmarks/profile_kernels.py --heads $2 \
    --mixes $3 > "$log" 2>&1
  echo "== FLASHQLA_FUSED_BWD=$1 heads $2 rc=$?"
  awk '/training step:/{p=1} /chunk states kept/{p=0} p' "$log"
}

# fused_groups_call: the fused backward in groups of v-heads (s25_1, s25_3, s25_4): its GPU tests and the backward's
# against float64, then ab_fused_setting for the backward alone at the published backward's head configurations and
# for the training step at groups of two and four
fused_groups_call() {
  PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 170 python3 -m pytest tests/test_fused_bwd_gpu.py \
    tests/test_gdn_bwd_gpu.py -q -rfs -p no:cacheprovider --timeout 120 -x > "$OUT/pytest_fused.log" 2>&1
  echo "pytest fused rc=$?"; grep -h "^FAILED\|^SKIPPED\|Error" "$OUT/pytest_fused.log" | head -8
  tail -1 "$OUT/pytest_fused.log"
  grep -h -A10 "worst relative" "$OUT/pytest_fused.log" | head -12
  ab_fused_setting bwd "16,32 8,16 4,8 2,4" "1x8192 2048x4 1x32768 4096x8"
  ab_fused_setting fwdbwd "16,32 16,64 2,8" "1x8192 1x32768 8192x4"
}
