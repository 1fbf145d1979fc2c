"""The scan's smoke run on a GPU (s38_3_cp_scan.sh, s39_1_scan.sh; run with FLASHQLA_CP_SCAN=1): a forward at (2, 8),
8192 tokens, forced 2-chunk segments, two heads without decay (the exact fallback, whose maps compose) and an initial
state, against float64. A hang or an error fails the call before its tests."""

import flashqla
import torch
from flashqla.reference import gdn_chunk_ref
q, k = (torch.randn(1, 8192, 2, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
k = torch.nn.functional.normalize(k.float(), dim=-1).to(torch.bfloat16)
v = torch.randn(1, 8192, 8, 128, device="cuda", dtype=torch.bfloat16)
g = -torch.rand(1, 8192, 8, device="cuda") * 0.05
g[..., :2] = 0  # two heads without decay: the exact fallback, whose maps compose
beta = torch.rand(1, 8192, 8, device="cuda")
h0 = torch.randn(1, 8, 128, 128, device="cuda") / 8
out = flashqla.chunk_gated_delta_rule_fwd(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                          cp_segment_chunks=2)
torch.cuda.synchronize()
o_ref, ht_ref = gdn_chunk_ref(q, k, v, g, beta, initial_state=h0, output_final_state=True)
err = lambda x, r: float((x.double() - r).norm() / r.norm())
print(f"smoke: o rel err {err(out.o, o_ref):.2e}, final state {err(out.final_state, ht_ref):.2e}")
