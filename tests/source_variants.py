"""tilelang_src/variants.py (the instantiation table) loaded from the source checkout the tests sit in, once per
process, for the tests that compare it with what was built. None where the tests run without the sources."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "tilelang_src" / "variants.py"
_NAME = "flashqla_variants"


def load_variants():
    """The variants module, or None without tilelang_src/ next to tests/."""
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    if not SRC.is_file():
        return None
    spec = importlib.util.spec_from_file_location(_NAME, SRC)
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
