"""flashqla: Gated DeltaNet (GDN) chunked prefill as ahead-of-time compiled torch ops.

    import flashqla
    o, final_state = flashqla.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)

Ops: torch.ops.flashqla.gdn_fwd (docs/ops.md). CUDA tensors run the kernels compiled for the GPU's
architecture; CPU tensors run the float64 reference.
"""

import torch  # noqa: F401  (torch's libraries must be loaded before the op library)

from . import reference
from ._ops import build_manifest
from .api import (GdnForward, GdnGrads, chunk_gated_delta_rule, chunk_gated_delta_rule_bwd,
                  chunk_gated_delta_rule_fwd)

__version__ = "0.1.0"
__all__ = ["chunk_gated_delta_rule", "chunk_gated_delta_rule_fwd", "chunk_gated_delta_rule_bwd", "GdnForward",
           "GdnGrads", "reference", "build_manifest", "__version__"]
