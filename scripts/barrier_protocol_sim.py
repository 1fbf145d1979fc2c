#!/usr/bin/env python3
"""Random-schedule simulation of the mbarrier protocol of the warp-specialized chunk gradient
(tilelang_src/sm90/gdn_bwd_chunk_ws.py), run on its source: a hang or a wait that passes on the wrong phase
shows here on the CPU instead of as a stuck H200 call.

The roles are the kernel's branches (WA: tx < 128, WK: tx < 256, the producer warps WP0..WP3); each role's
`T.barrier_wait(bar[i], parity)` / `T.barrier_arrive(bar[i])` lines are read in order, inside the loops over
the CTA's items (`for it in T.serial(items)`, if the kernel has them) and the group's v-heads
(`for jv in T.serial(group)`), with the loop variables the kernel uses (it, jv, sj = it * group + jv,
st = ph = sj % 2). Branches on a boolean parameter of the kernel factory (`if u_in_wk:` / `else:`) are taken
by the parameter's value (its default, or as given); other branches are read whole (no barrier operation sits
in one). Arrival counts come from `T.alloc_barrier`; a warpgroup arrives with weight 128, a warp
with 32; a TMA's bytes are taken to land with its arrival. A wait passes iff the barrier's completed phases
have the other parity than `parity` (the hardware's test). Each run picks a random ready role per step; it
reports a hang (no role can move), an over-arrival, or a wait that passes while the phase it means is not the
last or the one before it (`intent`: X % 2 means phase X, (X + 1) % 2 the phase before X).

Not covered: the order of shared-memory reads and writes between the barriers (tests/test_nonfinite.py and
the GPU suite judge those), and timing.

    python scripts/barrier_protocol_sim.py KERNEL.py [ITEMS GROUP RUNS] [NAME=True|False ...]
"""

from __future__ import annotations

import random
import re
import sys

ROLE_MARKERS = [("WA", "if tx < 128:", 128), ("WK", "elif tx < 256:", 128), ("WP0", "if tx < 256 + 32:", 32),
                ("WP1", "elif tx < 256 + 64:", 32), ("WP2", "elif tx < 256 + 96:", 32), ("WP3", "else:", 32)]
END_MARKER = "return gdn_bwd_chunk_ws"
BARRIER_OP = re.compile(r"T\.barrier_(wait|arrive)\((\w+)\[([^\]]+)\](?:, (.+))?\)$")
ALLOC = re.compile(r"(\w+) = T\.alloc_barrier\((\[?[\d, ]+\]?)\)")
FLAG = re.compile(r"^    (\w+): bool = (True|False),")  # the factory's boolean parameters
IF_FLAG = re.compile(r"if (not )?(\w+):$")


def intent(parity: str, env: dict) -> int:
    """The phase index a wait means: `X % 2` -> X, `(X + 1) % 2` -> X - 1, `ph` -> sj, a constant -> itself."""
    if parity == "ph":
        return env["sj"]
    m = re.fullmatch(r"\((.+) \+ 1\) % 2", parity)
    if m:
        return eval(m.group(1), {}, dict(env)) - 1
    m = re.fullmatch(r"(.+) % 2", parity)
    return eval(m.group(1) if m else parity, {}, dict(env))


def parse(source: str, flags: dict | None = None) -> tuple[dict, dict]:
    """({barrier: [arrivals per index]}, {role: (weight, ops)}); ops hold ("loop_it"|"loop_jv"|"end", ...) marks.
    flags: values of the factory's boolean parameters (the defaults otherwise)."""
    lines = source.split("\n")
    params = {m.group(1): m.group(2) == "True" for line in lines if (m := FLAG.match(line))}
    params.update(flags or {})
    counts = {}
    for line in lines:
        m = ALLOC.search(line)
        if m:
            v = eval(m.group(2))
            counts[m.group(1)] = v if isinstance(v, list) else [v]
    starts, pos, indent_of = [], 0, None
    for name, marker, weight in ROLE_MARKERS:
        # the producer warps' branches are siblings: the same indentation as the first of them
        pos = next(i for i in range(pos, len(lines)) if lines[i].strip() == marker
                   and (indent_of is None or len(lines[i]) - len(lines[i].lstrip()) == indent_of))
        if name == "WP0":
            indent_of = len(lines[pos]) - len(lines[pos].lstrip())
        starts.append((name, pos, weight))
    end = next(i for i in range(pos, len(lines)) if END_MARKER in lines[i])
    roles = {}
    for n, (name, lo, weight) in enumerate(starts):
        hi = starts[n + 1][1] if n + 1 < len(starts) else end
        ops, open_loops, conds = [], [], []  # indents of the loops entered; (indent, taken or None) of the ifs
        for line in lines[lo + 1:hi]:
            if not line.strip() or line.strip().startswith("#"):
                continue
            indent = len(line) - len(line.lstrip())
            while open_loops and indent <= open_loops[-1]:
                open_loops.pop()
                ops.append(("end",))
            text = line.strip()
            if text == "else:" and conds and conds[-1][0] == indent:
                taken = conds[-1][1]
                conds[-1] = (indent, None if taken is None else not taken)
                continue
            while conds and indent <= conds[-1][0]:
                conds.pop()
            if text.startswith("if ") and text.endswith(":"):
                m = IF_FLAG.fullmatch(text)
                taken = None
                if m and m.group(2) in params:
                    taken = params[m.group(2)] != bool(m.group(1))
                conds.append((indent, taken))
                continue
            if any(t is False for _, t in conds):
                continue
            if text.startswith("for it in T.serial(items)"):
                open_loops.append(indent)
                ops.append(("loop_it",))
            elif text.startswith("for jv in T.serial(group)"):
                open_loops.append(indent)
                ops.append(("loop_jv",))
            else:
                m = BARRIER_OP.search(text)
                if m:
                    ops.append((m.group(1), m.group(2), m.group(3), m.group(4)))
        ops += [("end",)] * len(open_loops)
        roles[name] = (weight, ops)
    return counts, roles


def expand(ops: list, items: int, group: int) -> list:
    """The role's barrier operations in program order: (kind, barrier, index, parity, meant phase)."""
    def walk(body, env):
        out, i = [], 0
        while i < len(body):
            op = body[i]
            if op[0] in ("loop_it", "loop_jv"):
                depth, j = 1, i + 1
                while depth:
                    depth += body[j][0] in ("loop_it", "loop_jv")
                    depth -= body[j][0] == "end"
                    j += 1
                var, count = ("it", items) if op[0] == "loop_it" else ("jv", group)
                for v in range(count):
                    out += walk(body[i + 1:j - 1], dict(env, **{var: v}))
                i = j
            else:
                kind, bar, idx, parity = op
                e = dict(env, group=group)
                e["sj"] = e["it"] * group + e["jv"]
                e["st"] = e["ph"] = e["sj"] % 2
                out.append((kind, bar, eval(idx, {}, dict(e)), eval(parity, {}, dict(e)) % 2 if parity else None,
                            intent(parity, e) if parity else None))
                i += 1
        return out
    return walk(ops, {"it": 0, "jv": 0})


def simulate(counts: dict, progs: dict, seed: int) -> str | None:
    """None, or what went wrong in this random schedule."""
    rnd = random.Random(seed)
    arrived = {b: [0] * len(c) for b, c in counts.items()}
    done = {b: [0] * len(c) for b, c in counts.items()}
    pc = {r: 0 for r in progs}
    while True:
        ready = []
        for r, (weight, prog) in progs.items():
            if pc[r] < len(prog):
                kind, bar, idx, parity, _ = prog[pc[r]]
                if kind == "arrive" or done[bar][idx] % 2 != parity:
                    ready.append(r)
        if not ready:
            left = {r: progs[r][1][pc[r]][:4] for r in progs if pc[r] < len(progs[r][1])}
            return f"hang: {left}" if left else None
        r = rnd.choice(ready)
        weight, prog = progs[r]
        kind, bar, idx, parity, meant = prog[pc[r]]
        pc[r] += 1
        if kind == "arrive":
            arrived[bar][idx] += weight
            if arrived[bar][idx] > counts[bar][idx]:
                return f"over-arrival: {r} on {bar}[{idx}]"
            if arrived[bar][idx] == counts[bar][idx]:
                arrived[bar][idx] = 0
                done[bar][idx] += 1
        elif not meant + 1 <= done[bar][idx] <= meant + 2:
            return f"wrong phase: {r} waited on {bar}[{idx}] meaning phase {meant}, {done[bar][idx]} completed"


def check(source: str, items: int, group: int, runs: int = 500, flags: dict | None = None) -> list[str]:
    counts, roles = parse(source, flags)
    progs = {r: (w, expand(ops, items, group)) for r, (w, ops) in roles.items()}
    return [f"seed {s}: {err}" for s in range(runs) if (err := simulate(counts, progs, s))]


def main() -> int:
    path = sys.argv[1]
    nums = [a for a in sys.argv[2:] if "=" not in a]
    flags = {a.split("=")[0]: a.split("=")[1] == "True" for a in sys.argv[2:] if "=" in a}
    items, group, runs = (int(x) for x in (nums + ["1", "2", "500"][len(nums):])[:3])
    errors = check(open(path).read(), items, group, runs, flags)
    print(f"{path}: items={items} group={group} {flags or ''}: {len(errors)} of {runs} schedules failed")
    for e in errors[:3]:
        print("  " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
