#!/usr/bin/env python3
"""Audit of the generated CUDA: every TMA store (`tl::tma_store(`) must read a shared tile whose generic writes are
ordered before it for the async proxy.

Two patterns are accepted, found by walking back from the store over the lines that only open or close blocks (an
`if (...)` such as the elected thread's test, a `for`, `#pragma unroll`, braces) and over earlier TMA stores of the
same group:
  1. a thread barrier (`__syncthreads()`, `tl::__sync_thread_partial(...)`) directly after `tl::fence_proxy_async()`:
     the warpgroup that wrote the tile fenced, then synchronized, then one thread stores (all writers' fences come
     before the barrier);
  2. an mbarrier wait (`X[...].wait(...)`): another role wrote the tile and, by this project's rule, fenced before
     arriving (the producer side is not checked here).
Anything else is a violation. The seventeenth session's first `tma_dv` (tilelang_src/sm90/gdn_bwd_chunk_ws.py) put
the fence inside `if (full)`, after the barrier TileLang inserted ahead of that `if`: the elected thread could issue
the store before the other threads had fenced their writes. codegen.py fails the build on a violation.

    python scripts/tma_store_audit.py FILE.cu      # print the violations
"""

from __future__ import annotations

import re
import sys

STORE = "tl::tma_store("
FENCE = "tl::fence_proxy_async();"
THREAD_BARRIER = re.compile(r"^(__syncthreads\(\);|tl::__sync_thread_partial\(.*\);)$")
MBARRIER_WAIT = re.compile(r"^\w+\[.*\]\.wait\(.*\);$")
# lines that only open or close a block, or belong to the same group of stores
PASSABLE = re.compile(r"^(\}|\{|\} else \{|#pragma unroll|if \(.*\) \{|for \(.*\) \{|tl::tma_store\(.*\);|"
                      r"tl::tma_store_arrive\(\);)$")


def tma_store_violations(source: str) -> list[str]:
    """One message per TMA store that follows neither pattern (line numbers 1-based)."""
    lines = [line.strip() for line in source.split("\n")]
    out = []
    for n, line in enumerate(lines):
        if not line.startswith(STORE):
            continue
        k = n - 1
        while k >= 0 and (not lines[k] or PASSABLE.match(lines[k])):
            k -= 1
        if k >= 0 and MBARRIER_WAIT.match(lines[k]):
            continue
        if k >= 0 and THREAD_BARRIER.match(lines[k]):
            j = k - 1
            while j >= 0 and not lines[j]:
                j -= 1
            if j >= 0 and lines[j] == FENCE:
                continue
            out.append(f"line {n + 1}: the barrier before this TMA store (line {k + 1}) is not preceded by "
                       f"{FENCE} (the writers' generic stores are not ordered before the store's read)")
            continue
        out.append(f"line {n + 1}: no fenced barrier or mbarrier wait before this TMA store "
                   f"(line {k + 1}: {lines[k][:80] if k >= 0 else 'start of file'})")
    return out


def main() -> int:
    bad = 0
    for path in sys.argv[1:]:
        found = tma_store_violations(open(path).read())
        bad += len(found)
        print(path, "ok" if not found else "\n  ".join([""] + found))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
