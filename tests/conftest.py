import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

# every op call fills its outputs with NaN before the kernels run, so an element the kernels
# never write fails the comparison instead of passing on stale memory (csrc/ops/common.h)
os.environ.setdefault("FLASHQLA_POISON_OUTPUTS", "1")


def _gpu_reason() -> str | None:
    """Why the GPU tests cannot run here, or None: the GPU needs kernels in the installed library."""
    from flashqla._ops import unsupported_gpu_reason

    return unsupported_gpu_reason()


GPU_SKIP = _gpu_reason()


def pytest_report_header(config):
    if GPU_SKIP is None:
        from flashqla._ops import kernel_family

        return f"flashqla: GPU tests run the {kernel_family(torch.cuda.get_device_capability())} kernels"
    return f"flashqla: GPU tests skipped ({GPU_SKIP})"


def pytest_collection_modifyitems(config, items):
    if GPU_SKIP is None:
        return
    skip = pytest.mark.skip(reason=f"GPU test skipped: {GPU_SKIP}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    from gdn_inputs import WORST

    if WORST:
        terminalreporter.write_line("flashqla: worst relative L2 error per tensor (vs float64):")
        for name, (err, case) in sorted(WORST.items()):
            terminalreporter.write_line(f"  {name:14s} {err:.3e}  ({case})")
    skipped = terminalreporter.stats.get("skipped", [])
    if skipped:
        terminalreporter.write_line(f"flashqla: {len(skipped)} tests skipped"
                                    + (f" ({GPU_SKIP})" if GPU_SKIP else ""))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
