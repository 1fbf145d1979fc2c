#!/usr/bin/env bash
# Builds an A/B wheel of this checkout's HEAD with kernel options turned on in tilelang_src/variants.py, into
# .carry/ab/NAME.zip (install_ab_wheel NAME in common.sh installs it on the device), from a clone in /tmp so that
# the checkout stays as committed (about 8 minutes for sm_90a).
#   bash scripts/device_calls/build_option_wheel.sh NAME 'OLD=>NEW' ['OLD=>NEW' ...]
# Each OLD must occur in variants.py; every occurrence becomes NEW. E.g. the fortieth session's fallback_first:
#   bash scripts/device_calls/build_option_wheel.sh ff 'tma_h=True=>tma_h=True, fallback_first=True' \
#     'tma_dh=True=>tma_dh=True, fallback_first=True'
set -euo pipefail
name=$1
shift
root=$(git rev-parse --show-toplevel)
tmp=/tmp/option_wheel_$name
rm -rf "$tmp" && git clone -q "$root" "$tmp"
python3 - "$tmp/tilelang_src/variants.py" "$@" <<'PY'
import sys
path, edits = sys.argv[1], sys.argv[2:]
src = open(path).read()
for edit in edits:
    old, new = edit.split("=>")
    assert old in src, f"'{old}' not in variants.py"
    src = src.replace(old, new)
open(path, "w").write(src)
PY
(cd "$tmp" && git diff --stat && FLASHQLA_ARCHS=${FLASHQLA_ARCHS:-90a} pip wheel . --no-build-isolation --no-deps \
  -w "$tmp/dist" -q)
mkdir -p "$root/.carry/ab"
cp "$tmp"/dist/flashqla-*.whl "$root/.carry/ab/$name.zip"
echo "built .carry/ab/$name.zip from $(git -C "$tmp" rev-parse --short HEAD) with: $*"
