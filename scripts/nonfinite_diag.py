"""Which outputs and rows outside sequence 1 change when a NaN is put into sequence 1 or the padding (the failing
tests/test_nonfinite.py layout): PYTHONPATH=<site> python scripts/nonfinite_diag.py k,v  (HV=2 for group = 1)."""
import os, sys, torch
sys.path.insert(0, "tests")
os.environ.setdefault("FLASHQLA_POISON_OUTPUTS", "1")
import flashqla
from gdn_inputs import make_problem, ragged_cu_seqlens
NAMES = ("q", "k", "v", "g", "beta", "initial_state")
torch.manual_seed(0)
lengths, tail, H, HV = [130, 200, 70], 30, 2, int(os.environ.get("HV", 8))
p = make_problem(1, sum(lengths) + tail, H, HV, device="cuda", N=3)
cu = ragged_cu_seqlens(lengths, "cuda")
T = p["v"].shape[1]
do = torch.randn(1, T, HV, 128, device="cuda"); dht = torch.randn(3, HV, 128, 128, device="cuda") / 8
def run(pp):
    leaves = {n: pp[n].detach().clone().requires_grad_() for n in NAMES}
    o, ht = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, cu_seqlens=cu)
    ((o.float() * do).sum() + (ht * dht).sum()).backward()
    return {"o": o.detach(), **{"d" + n: leaves[n].grad for n in NAMES}}
def diff(a, b, tag):
    out = []
    for key in a:
        if key == "dinitial_state": continue
        x, y = a[key][0], b[key][0]
        bad = ~((x == y) | (torch.isnan(x) & torch.isnan(y)))
        while bad.dim() > 1: bad = bad.any(-1)
        rows = [r for r in bad.nonzero().flatten().tolist() if not (130 <= r < 330)]
        nf = (~torch.isfinite(y.float()))
        while nf.dim() > 1: nf = nf.any(-1)
        nfr = [r for r in nf.nonzero().flatten().tolist() if not (130 <= r < 330)]
        if rows or nfr: out.append(f"{key}: diff rows {rows[:12]}{'...' if len(rows)>12 else ''} nonfinite {nfr[:12]}")
    print(tag, "|", "; ".join(out) if out else "clean", flush=True)
c = run(p)
diff(c, run(p), "repeat")
for name in sys.argv[1].split(","):
    for tok in (130, 207, 329):
        q = dict(p); q[name] = p[name].clone(); q[name][0, tok] = float("nan")
        diff(c, run(q), f"{name}@{tok}")
q = dict(p)
for i, n in enumerate(("q", "k", "v", "g", "beta")):
    q[n] = p[n].clone(); q[n][0, 400:] = float("nan")
diff(c, run(q), "padding")
for n in ("q", "k", "v", "g", "beta"):
    q = dict(p); q[n] = p[n].clone(); q[n][0, 400:] = float("nan")
    diff(c, run(q), f"padding-{n}")
torch.cuda.synchronize()
