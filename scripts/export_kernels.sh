#!/usr/bin/env bash
# Write the SM90 kernel programs of a git revision into a folder: the `base` variant of
# benchmarks/ablate.py (--base-dir), e.g. to time a branch's kernels against main's on the GPU machine,
# which gets the work tree without .git:
#   bash scripts/export_kernels.sh main .carry/base
#   (GPU) PYTHONPATH=<tilelang site> python benchmarks/ablate.py --variants base cur --base-dir .carry/base
set -euo pipefail
rev=${1:?usage: export_kernels.sh REV DIR}
dir=${2:?usage: export_kernels.sh REV DIR}
mkdir -p "$dir"
for f in $(git ls-tree --name-only "$rev" tilelang_src/sm90/); do
  git show "$rev:$f" > "$dir/$(basename "$f")"
done
ls "$dir"
