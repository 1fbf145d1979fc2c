#!/usr/bin/env python3
"""Audit of the generated CUDA of a lowered TileLang kernel for barriers inside unrolled loops.

TileLang's sync planner puts a block barrier (`__syncthreads()`) or a named barrier
(`tl::__sync_thread_partial`) inside the body of a loop over a fragment when that loop both reads and
writes shared memory (or writes a buffer an earlier GEMM read): one barrier per iteration, 16 or 32 per
chunk. The SM90 forward's `W = V - gamma U` loop lost 0.8-1.8 us of a 1.9-4.7 us chunk that way
(docs/fwd_profile.md, "The W loop's barriers"). The fix is in the source: compute in registers, then copy.

`loop_barriers` lists every barrier whose innermost enclosing block is a loop with a constant trip count
(the unrolled loops over a thread's fragment elements, but also a short unrolled loop around GEMM steps,
where a barrier per step may be needed: the findings are candidates to read); barriers in loops over chunks
or v-heads (a variable bound) are the pipelines' own and are not reported. codegen.py records the findings
per kernel in the build manifest and prints a warning; it does not fail the build.

    python scripts/loop_barrier_audit.py FILE.cu      # print the barriers found, one per line
"""

from __future__ import annotations

import re
import sys

BARRIER = re.compile(r"__syncthreads\(\)|tl::__sync_thread_partial\(")
CONST_LOOP = re.compile(r"^\s*for \(int \w+ = \d+; \w+ < \d+; \+\+\w+\) \{\s*$")


def loop_barriers(source: str) -> list[tuple[int, str]]:
    """(line number, loop header) of each barrier whose innermost enclosing block opens a constant-trip loop."""
    found = []
    stack: list[str] = []  # the line that opened each enclosing block
    for number, line in enumerate(source.split("\n"), start=1):
        if BARRIER.search(line) and stack and CONST_LOOP.match(stack[-1]):
            found.append((number, stack[-1].strip()))
        code = line.split("//", 1)[0]
        for ch in code:
            if ch == "{":
                stack.append(line)
            elif ch == "}" and stack:
                stack.pop()
    return found


def main(argv: list[str]) -> int:
    for path in argv[1:]:
        for number, header in loop_barriers(open(path).read()):
            print(f"{path}:{number}: barrier in `{header}`")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
