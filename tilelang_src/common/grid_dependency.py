"""Programmatic dependent launch (PDL) on SM90: a kernel launched with programmatic stream serialization may
start while the kernel before it on the stream is still running, so its CTAs are resident (shared memory and
barriers set up, TMA descriptors prefetched) when that kernel's last CTAs finish, instead of after the launch
gap that follows them.

`grid_dependency(pdl)` goes first in a kernel's body, before any global-memory access. It
  1. lets the next kernel on the stream launch (griddepcontrol.launch_dependents): its CTAs take the SM
     resources this kernel leaves free, and wait in their own step 2;
  2. waits until every kernel this one depends on has completed and its writes are visible
     (griddepcontrol.wait; a no-op when nothing was launched programmatically before it).
Since every read and write of global memory follows step 2, the order of memory effects is that of a plain
launch: only the launch latency and the set-up overlap. codegen keeps the launch attribute only for kernels
that call it (scripts/codegen.py, `uses_pdl`), and scripts/pdl_audit.py checks in the generated CUDA that the
wait comes before the first global access.
"""

import tilelang.language as T


@T.macro
def grid_dependency(pdl: bool):
    if pdl:
        T.pdl_trigger()
        T.pdl_sync()
