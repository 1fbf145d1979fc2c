#!/usr/bin/env python3
"""Random-schedule simulation of the mbarrier protocol of the warp-specialized chunk gradient
(tilelang_src/sm90/gdn_bwd_chunk_ws.py) and of the fused backward (gdn_bwd_fused.py: a fourth role WS and a loop
over chunks, `for i in T.serial(n_iter)`, whose count is ITEMS), run on their source: a hang, a wait that passes on
the wrong phase or two warpgroups' unordered accesses to a shared buffer show here on the CPU instead of as a stuck
H200 call or wrong gradients.

The roles are the kernel's branches (WA: tx < 128, WK: tx < 256, the producer warps WP0..WP3); each role's
`T.barrier_wait(bar[i], parity)` / `T.barrier_arrive(bar[i])` lines are read in order, inside the loops over
the CTA's items (`for it in T.serial(items)`, if the kernel has them) and the group's v-heads
(`for jv in T.serial(group)`), with the loop variables the kernel uses (it, jv, sj = it * group + jv,
st = ph = sj % 2). Branches on a boolean parameter of the kernel factory (`if u_in_wk:` / `else:`) are taken
by the parameter's value (its default, or as given); other branches are read whole (no barrier operation
sits in one; their accesses all count). Arrival counts come from `T.alloc_barrier`; a warpgroup arrives
with weight 128, a warp with 32; a TMA's bytes are taken to land with its arrival. A wait passes iff the
barrier's completed phases have the other parity than `parity` (the hardware's test). Each run picks a random
ready role per step; it reports a hang (no role can move), an over-arrival, or a wait that passes while the
phase it means is not the last or the one before it (`intent`: X % 2 means phase X, (X + 1) % 2 the phase
before X).

Shared memory: every line of a role that names a shared buffer (`T.alloc_shared`) is an access, a write for
an assignment's target and for the destination argument of the copies and macros in ACCESS_ARGS, a read
otherwise; an index `st` as the first subscript names that stage of a two-stage buffer (as does the buffer
passed whole to a call that also takes `st`), any other index the whole buffer. Vector clocks follow the
barriers (an arrive releases the role's clock into the barrier, a wait that passes acquires every phase
completed so far), and two accesses of different roles to the same
place, one of them a write, must be ordered by them: otherwise the run reports a race (a TMA's write counts
at its issue, in the producer's order; the warps of one role are taken to be in program order, as the
kernel's warpgroup barriers keep them). Not covered: timing, the async proxy's fences.

    python scripts/barrier_protocol_sim.py KERNEL.py [ITEMS GROUP RUNS] [NAME=True|False ...]
"""

from __future__ import annotations

import random
import re
import sys

# per kernel (found by the `return` that ends its program): the roles' branch headers, in source order, and their
# weights (threads). The fused backward (gdn_bwd_fused.py) adds the state warpgroup WS and walks chunks
# (`for i in T.serial(n_iter)`: ITEMS is then the number of chunks)
KERNELS = {
    "return gdn_bwd_chunk_ws": [("WA", "if tx < 128:", 128), ("WK", "elif tx < 256:", 128),
                                ("WP0", "if tx < 256 + 32:", 32), ("WP1", "elif tx < 256 + 64:", 32),
                                ("WP2", "elif tx < 256 + 96:", 32), ("WP3", "else:", 32)],
    "return gdn_bwd_fused": [("WA", "if tx < 128:", 128), ("WK", "elif tx < 256:", 128), ("WS", "elif tx < 384:", 128),
                             ("WP0", "if tx < 384 + 32:", 32), ("WP1", "elif tx < 384 + 64:", 32),
                             ("WP2", "elif tx < 384 + 96:", 32), ("WP3", "else:", 32)],
}
LOOPS = {"for it in T.serial(items)": "it", "for jv in T.serial(group)": "jv", "for i in T.serial(n_iter)": "i"}
BARRIER_OP = re.compile(r"T\.barrier_(wait|arrive)\((\w+)\[([^\]]+)\](?:, (.+))?\)$")
ALLOC = re.compile(r"(\w+) = T\.alloc_barrier\((\[?[\d, ]+\]?)\)")
FLAG = re.compile(r"^    (\w+): bool = (True|False),")  # the factory's boolean parameters
IF_FLAG = re.compile(r"if (not )?(\w+):$")
SHARED = re.compile(r"(\w+) = T\.alloc_shared\((\(2, )?")  # group 2: a two-stage buffer
# calls whose arguments at these positions a call reads / writes (the others it does not touch)
ACCESS_ARGS = {"T.gemm": ((0, 1), ()), "T.wgmma_gemm": ((0, 1), ()), "T.copy": ((0,), (1,)),
               "T.tma_copy": ((0,), (1,)), "load_tile": ((0,), (1,)), "store_chunk_rows": ((0,), ()),
               "col_sums": ((0,), (1,)), "T.cumsum": ((0,), (0,)), "T.reduce_sum": ((0,), (1,)),
               "add_whole_chunk_terms": ((0, 1, 2), (0,)), "fold_state_row_sums": ((0, 1), (4,))}


def intent(parity: str, env: dict) -> int:
    """The phase index a wait means: `X % 2` -> X, `(X + 1) % 2` -> X - 1, `ph` -> sj, a constant -> itself."""
    if parity == "ph":
        return env["sj"]
    m = re.fullmatch(r"\((.+) \+ 1\) % 2", parity)
    if m:
        return eval(m.group(1), {}, dict(env)) - 1
    m = re.fullmatch(r"(.+) % 2", parity)
    return eval(m.group(1) if m else parity, {}, dict(env))


def split_args(text: str) -> list[str]:
    """The top-level comma-separated arguments of a call's argument text."""
    args, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return args + [cur.strip()] if cur.strip() else args


def places(text: str, shared: dict, stage_arg: bool = False) -> list[tuple[str, str | None]]:
    """The shared buffers a piece of code names: (buffer, "st" if its first subscript is the stage, else None).
    stage_arg: the code is a call that also takes `st`, so a two-stage buffer passed whole means its stage st
    (a macro such as form_gamma(gm, g_s, st))."""
    out = []
    for m in re.finditer(r"\b(\w+)\b(\[([^\],]*))?", text):
        if m.group(1) in shared:
            staged = (m.group(3) or "").strip() == "st" or (m.group(2) is None and stage_arg and shared[m.group(1)])
            out.append((m.group(1), "st" if staged else None))
    return out


def accesses(text: str, shared: dict) -> tuple[list, list]:
    """(reads, writes) of one line of a role."""
    m = re.match(r"([\w.]+)\((.*)\)$", text)
    stage_arg = bool(m) and "st" in split_args(m.group(2))
    if m and m.group(1) in ACCESS_ARGS:
        args = split_args(m.group(2))
        rd, wr = ACCESS_ARGS[m.group(1)]
        return ([p for i in rd if i < len(args) for p in places(args[i], shared, stage_arg)],
                [p for i in wr if i < len(args) for p in places(args[i], shared, stage_arg)])
    m = re.match(r"(\w+)\[([^\]]*)\] *[-+*]?= *(.*)$", text)
    if m and m.group(1) in shared:
        target = (m.group(1), "st" if m.group(2).split(",")[0].strip() == "st" else None)
        return places(m.group(3), shared), [target]
    return places(text, shared, stage_arg), []


def role_spans(lines: list[str]) -> tuple[list, int]:
    """([(role, line of its branch header, weight)], line of the program's end) of a kernel's source lines."""
    end_marker = next(m for m in KERNELS if any(m in line for line in lines))
    starts, pos, indent_of = [], 0, None
    for name, marker, weight in KERNELS[end_marker]:
        # the producer warps' branches are siblings: the same indentation as the first of them
        pos = next(i for i in range(pos, len(lines)) if lines[i].strip() == marker
                   and (indent_of is None or len(lines[i]) - len(lines[i].lstrip()) == indent_of))
        if name == "WP0":
            indent_of = len(lines[pos]) - len(lines[pos].lstrip())
        starts.append((name, pos, weight))
    return starts, next(i for i in range(pos, len(lines)) if end_marker in lines[i])


def parse(source: str, flags: dict | None = None) -> tuple[dict, dict]:
    """({barrier: [arrivals per index]}, {role: (weight, ops)}); ops hold ("loop", var) | ("end",) marks
    and ("access", reads, writes) for the lines that name shared buffers.
    flags: values of the factory's boolean parameters (the defaults otherwise)."""
    lines = source.split("\n")
    shared = {m.group(1): m.group(2) is not None for line in lines if (m := SHARED.search(line))}
    params = {m.group(1): m.group(2) == "True" for line in lines if (m := FLAG.match(line))}
    params.update(flags or {})
    counts = {}
    for line in lines:
        m = ALLOC.search(line)
        if m:
            v = eval(m.group(2))
            counts[m.group(1)] = v if isinstance(v, list) else [v]
    starts, end = role_spans(lines)
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
            code = text.split("  #")[0].rstrip()  # without a trailing comment
            # the ifs nested deeper than this line are closed; an else at an open if's indentation flips it
            while conds and indent < conds[-1][0]:
                conds.pop()
            if code == "else:" and conds and conds[-1][0] == indent:
                taken = conds[-1][1]
                conds[-1] = (indent, None if taken is None else not taken)
                continue
            while conds and indent <= conds[-1][0]:
                conds.pop()
            if code.startswith("if ") and code.endswith(":"):
                m = IF_FLAG.fullmatch(code)
                taken = None
                if m and m.group(2) in params:
                    taken = params[m.group(2)] != bool(m.group(1))
                conds.append((indent, taken))
                continue
            if any(t is False for _, t in conds):
                continue
            loop = next((var for head, var in LOOPS.items() if text.startswith(head)), None)
            if loop:
                open_loops.append(indent)
                ops.append(("loop", loop))
            else:
                m = BARRIER_OP.search(text)
                if m:
                    ops.append((m.group(1), m.group(2), m.group(3), m.group(4)))
                elif not text.startswith(("for ", "elif ", "else")):
                    reads, writes = accesses(text, shared)
                    if reads or writes:
                        ops.append(("access", reads, writes))
        ops += [("end",)] * len(open_loops)
        roles[name] = (weight, ops)
    return counts, roles


def expand(ops: list, items: int, group: int) -> list:
    """The role's barrier operations in program order: (kind, barrier, index, parity, meant phase), and its
    accesses: ("access", reads, writes, None, None) with places (buffer, stage or None)."""
    def walk(body, env):
        out, i = [], 0
        while i < len(body):
            op = body[i]
            if op[0] == "loop":
                depth, j = 1, i + 1
                while depth:
                    depth += body[j][0] == "loop"
                    depth -= body[j][0] == "end"
                    j += 1
                var = op[1]
                count = group if var == "jv" else items
                for v in range(count):
                    out += walk(body[i + 1:j - 1], dict(env, **{var: v}))
                i = j
            elif op[0] == "access":
                st = (env["it"] * group + env["jv"] + env["i"]) % 2
                def at(ps):
                    return [(b, st if s == "st" else None) for b, s in ps]
                out.append(("access", at(op[1]), at(op[2]), None, None))
                i += 1
            else:
                kind, bar, idx, parity = op
                e = dict(env, group=group)
                e["sj"] = e["it"] * group + e["jv"] + e["i"]
                e["st"] = e["ph"] = e["sj"] % 2
                out.append((kind, bar, eval(idx, {}, dict(e)), eval(parity, {}, dict(e)) % 2 if parity else None,
                            intent(parity, e) if parity else None))
                i += 1
        return out
    return walk(ops, {"it": 0, "jv": 0, "i": 0})


def join(a: dict, b: dict) -> dict:
    return {r: max(a.get(r, 0), b.get(r, 0)) for r in a.keys() | b.keys()}


def simulate(counts: dict, progs: dict, seed: int) -> str | None:
    """None, or what went wrong in this random schedule."""
    rnd = random.Random(seed)
    arrived = {b: [0] * len(c) for b, c in counts.items()}
    done = {b: [0] * len(c) for b, c in counts.items()}
    pc = {r: 0 for r in progs}
    clock = {r: {r: 1} for r in progs}  # each role's vector clock
    pending = {b: [{} for _ in c] for b, c in counts.items()}  # released into the phase in progress
    released = {b: [{} for _ in c] for b, c in counts.items()}  # every completed phase's releases
    last_write = {}  # place -> (role, its clock then)
    reads = {}  # place -> {role: its clock then}, since the last write
    while True:
        ready = []
        for r, (weight, prog) in progs.items():
            if pc[r] < len(prog):
                kind, bar, idx, parity, _ = prog[pc[r]]
                if kind in ("arrive", "access") or done[bar][idx] % 2 != parity:
                    ready.append(r)
        if not ready:
            left = {r: progs[r][1][pc[r]][:4] for r in progs if pc[r] < len(progs[r][1])}
            return f"hang: {left}" if left else None
        r = rnd.choice(ready)
        weight, prog = progs[r]
        op = prog[pc[r]]
        pc[r] += 1
        clock[r][r] += 1
        if op[0] == "access":
            err = access(r, clock[r], op[1], op[2], last_write, reads)
            if err:
                return err
            continue
        kind, bar, idx, parity, meant = op
        if kind == "arrive":
            pending[bar][idx] = join(pending[bar][idx], clock[r])
            arrived[bar][idx] += weight
            if arrived[bar][idx] > counts[bar][idx]:
                return f"over-arrival: {r} on {bar}[{idx}]"
            if arrived[bar][idx] == counts[bar][idx]:
                arrived[bar][idx] = 0
                done[bar][idx] += 1
                released[bar][idx] = join(released[bar][idx], pending[bar][idx])
                pending[bar][idx] = {}
        elif not meant + 1 <= done[bar][idx] <= meant + 2:
            return f"wrong phase: {r} waited on {bar}[{idx}] meaning phase {meant}, {done[bar][idx]} completed"
        else:
            clock[r] = join(clock[r], released[bar][idx])


def overlaps(place: tuple, other: tuple) -> bool:
    return place[0] == other[0] and (place[1] is None or other[1] is None or place[1] == other[1])


def access(r: str, now: dict, reads_of: list, writes_of: list, last_write: dict, reads: dict) -> str | None:
    """Record role r's reads and writes at clock `now`; a race with an access of another role that `now` has not
    seen (no barrier chain orders them) is the error."""
    def seen(role, then):
        return role == r or then[role] <= now.get(role, 0)
    for place in reads_of + writes_of:
        for p, (w, then) in last_write.items():
            if overlaps(place, p) and not seen(w, then):
                return f"race: {r} {'writes' if place in writes_of else 'reads'} {place[0]}[{place[1]}] " \
                       f"unordered after {w}'s write"
    for place in writes_of:
        for p, rs in reads.items():
            for role, then in rs.items():
                if overlaps(place, p) and not seen(role, then):
                    return f"race: {r} writes {place[0]}[{place[1]}] unordered after {role}'s read"
    for place in reads_of:
        reads.setdefault(place, {})[r] = dict(now)
    for place in writes_of:
        for p in [p for p in list(last_write) + list(reads) if overlaps(place, p)]:
            last_write.pop(p, None)
            reads.pop(p, None)
        last_write[place] = (r, dict(now))


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
