import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

# every op call fills its outputs with NaN before the kernels run, so an element the kernels
# never write fails the comparison instead of passing on stale memory (csrc/ops/common.h)
os.environ.setdefault("FLASHQLA_POISON_OUTPUTS", "1")


def _sm90_reason() -> str | None:
    if not torch.cuda.is_available():
        return "no CUDA GPU (torch.cuda.is_available() is False)"
    cc = torch.cuda.get_device_capability()
    if cc[0] != 9:
        return f"the compiled kernels are for SM90; this GPU is sm_{cc[0]}{cc[1]}"
    return None


SM90_SKIP = _sm90_reason()


def pytest_collection_modifyitems(config, items):
    if SM90_SKIP is None:
        return
    skip = pytest.mark.skip(reason=f"GPU test skipped: {SM90_SKIP}")
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
                                    + (f" ({SM90_SKIP})" if SM90_SKIP else ""))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
