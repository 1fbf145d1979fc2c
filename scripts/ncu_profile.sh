#!/usr/bin/env bash
# Nsight Compute profile of flashqla's kernels in one training step (forward + backward), on a GPU:
# one report per kernel-name regex, its details page (throughput, occupancy, warp stall reasons,
# instruction mix) and its SASS page with per-instruction stall samples, as text.
#   PYTHONPATH=<site with the wheel> bash scripts/ncu_profile.sh OUTDIR HQK,HV TOKENS REGEX[@SKIP] ...
#   e.g.  bash scripts/ncu_profile.sh /tmp/ncu 16,64 8192 chunk_prep gdn_fwd@2 bwd_chunk
# SKIP (default 1): matching launches to pass over first. Two steps run; a kernel launched once per step is
# profiled in the second (the first loads the modules); gdn_fwd runs twice per step (forward, and the
# backward's state recompute), so gdn_fwd@2 is the second step's forward. ncu gets --clock-control none
# (the device notes: leave the clocks alone). NCU_STEP=prefill: the two steps are inference forwards instead (no
# gradient: flashqla::gdn_prefill), one launch of its kernel each.
set -u
out=$1; heads=$2; tokens=$3; shift 3
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
cat > "$out/step.py" <<PY
import sys, torch
sys.path.insert(0, "$here/benchmarks")
import flashqla
from bench_gdn import make_inputs
hqk, hv = (int(x) for x in "$heads".split(","))
x = make_inputs([$tokens], hqk, hv)
leaves = {n: x[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta", "initial_state")}
do, dht = torch.randn_like(x["v"]), torch.randn_like(x["initial_state"])
for _ in range(2):
    if "${NCU_STEP:-train}" == "prefill":
        with torch.no_grad():
            flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=x["cu_seqlens"])
        continue
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=x["cu_seqlens"])
    torch.autograd.backward([o, ht], [do, dht])
torch.cuda.synchronize()
PY
for arg in "$@"; do
  re=${arg%@*}; skip=1; [ "$arg" != "$re" ] && skip=${arg#*@}
  rep="$out/$re"
  timeout 240 ncu --clock-control none --kernel-name "regex:$re" --launch-skip "$skip" --launch-count 1 --set full \
    -f -o "$rep" python3 "$out/step.py" > "$rep.ncu.log" 2>&1
  echo "ncu $re rc=$?"
  ncu -i "$rep.ncu-rep" --page details > "$rep.details.txt" 2>&1
  ncu -i "$rep.ncu-rep" --page source --print-source sass --csv > "$rep.sass.csv" 2>&1
  grep -E "^\s+(Duration|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Executed Ipc Active|Issue Slots Busy|Memory Throughput|DRAM Throughput|Block Limit)" "$rep.details.txt" | head -20
done
