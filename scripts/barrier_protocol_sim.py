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

The register-operand forward (gdn_fwd_rs.py) and the forward without the chunk prep (gdn_fwd_noprep.py, whose
shared buffers' stage count may be chosen by a flag) are read after two rewrites of their source (KERNEL_OPTIONS):
their own macros and the common ones that hold barrier operations (store_o_walk, common/chunk_store.py) are inlined
where their roles call them (math_half, release_chunk, store_o_stage, store_o_walk; arguments substituted), and a
staged buffer's first subscript (`i % 2`, `(i - 1) % 2`, `T.min(i + 1, n_iter - 1) % KS`; the stage counts KS and GS
as the flags set them) is evaluated per chunk; branches on the chunk index or the chunk count (`if i > 0:`,
`if n_iter > 0:`) are taken as they evaluate; NMATH (1 or 2 math warpgroups, BV / 64) sets the roles and the arrival
counts written with PT.

    python scripts/barrier_protocol_sim.py KERNEL.py [ITEMS GROUP RUNS] [NAME=True|False|INT ...]
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path
from types import SimpleNamespace

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
    # (MP: both math warpgroups on one code path, math_pair; M0 and M1 otherwise)
    "return gdn_fwd_rs": [("MP", "if math_pair and tx < 256:", 256), ("M0", "elif not math_pair and tx < 128:", 128),
                          ("M1", "elif not math_pair and NMATH == 2 and tx < 256:", 128),
                          ("X", "elif tx < PT:", 128), ("WP0", "if tx < PT + 32:", 32),
                          ("WP1", "elif tx < PT + 64:", 32), ("WP2", "elif tx < PT + 96:", 32), ("WP3", "else:", 32)],
    # the forward without the chunk prep (gdn_fwd_noprep.py): gdn_fwd_rs.py's roles, X the auxiliary warpgroup
    # (MP: both math warpgroups on one code path, math_pair; M0 and M1 otherwise)
    "return gdn_fwd_noprep": [("MP", "if math_pair and tx < 256:", 256),
                              ("M0", "elif not math_pair and tx < 128:", 128),
                              ("M1", "elif not math_pair and NMATH == 2 and tx < 256:", 128),
                              ("X", "elif tx < PT:", 128), ("WP0", "if tx < PT + 32:", 32),
                              ("WP1", "elif tx < PT + 64:", 32), ("WP2", "elif tx < PT + 96:", 32),
                              ("WP3", "else:", 32)],
}
# per kernel: its own macros inlined into the roles, two-stage buffers' first subscripts evaluated per chunk, the
# constants of its arrival counts (from NMATH, given as a flag) and the roles that exist only with two math warpgroups
KERNEL_OPTIONS = {
    # (the math warpgroups write o_s's stage in their own V columns, 64 vh .. 64 vh + 64: not a race between them)
    "return gdn_fwd_rs": dict(inline=True, stage_exprs=True, nmath_role="M1", disjoint={"o_s": {"M0", "M1"}},
                              common_macros={"store_o_walk": "chunk_store.py"},
                              flag_roles={"MP": ("math_pair", True), "M0": ("math_pair", False),
                                          "M1": ("math_pair", False)}),
    # (with p_in_math each math warpgroup writes and reads its own slice of pm_s, pm_s[vh]; with p_split each writes
    # half of a stage's columns and reads the whole stage)
    "return gdn_fwd_noprep": dict(inline=True, stage_exprs=True, nmath_role="M1",
                                  disjoint={"o_s": {"M0", "M1"}, "pm_s": {"M0", "M1"}},
                                  read_whole_if={"pm_s": "p_split"},
                                  common_macros={"store_o_walk": "chunk_store.py"},
                                  flag_roles={"MP": ("math_pair", True), "M0": ("math_pair", False),
                                              "M1": ("math_pair", False)}),
}
LOOPS = {"for it in T.serial(items)": "it", "for jv in T.serial(group)": "jv", "for i in T.serial(n_iter)": "i"}
BARRIER_OP = re.compile(r"T\.barrier_(wait|arrive)\((\w+)\[([^\]]+)\](?:, (.+))?\)$")
# a named barrier (bar.sync): one spanning more threads than the role's is a barrier between roles, simulated as an
# mbarrier of that many arrivals that each role arrives on and waits for (its k-th sync waits for phase k)
SYNC_OP = re.compile(r"T\.sync_threads\((\w+(?: \+ \w+)?), (\w+)\)$")
ALLOC = re.compile(r"(\w+) = T\.alloc_barrier\(([^)]+)\)")
FLAG = re.compile(r"^    (\w+): bool = (True|False),")  # the factory's boolean parameters
STAGES = re.compile(r"^    k_stages: int = (\d+),")  # a ring's stage count, KS in the kernel (gdn_fwd_noprep.py)
IF_FLAG = re.compile(r"if (not )?(\w+)( and .+)?:$")  # `if FLAG:`, `if not FLAG:`, `if FLAG and <run time>:`
# a branch on the chunk index or count, taken as it evaluates (`if i > 0:`, `if n_iter > 0:`)
IF_CHUNK = re.compile(r"if ((?:i|n_iter) [<>=!]=? \d+):$")
SHARED = re.compile(r"(\w+) = T\.alloc_shared\((\((?:2|KS|GS), )?")  # group 2: a buffer of ring stages
SHARED_IF = re.compile(r"(\w+) = T\.alloc_shared\(\(([\w ]+ if \w+ else [\w ]+), ")
# calls whose arguments at these positions a call reads / writes (the others it does not touch)
ACCESS_ARGS = {"T.gemm": ((0, 1), ()), "T.wgmma_gemm": ((0, 1), ()), "T.copy": ((0,), (1,)),
               "load_rows": ((0,), (1,)), "load_gate_beta": ((0, 1), (2, 3)),
               "load_gate_cumsum_beta": ((0, 1), (2, 3, 11)),  # 11: the per-row gates' rings (gates_in_loader)
               "T.tma_copy": ((0,), (1,)), "load_tile": ((0,), (1,)), "store_chunk_rows": ((0,), ()),
               "store_seq_rows": ((0,), ()),
               "col_sums": ((0,), (1,)), "T.cumsum": ((0,), (0,)), "T.reduce_sum": ((0,), (1,)),
               "add_whole_chunk_terms": ((0, 1, 2), (0,)), "fold_state_row_sums": ((0, 1), (4,)),
               # the inverse's steps (common/unit_lower_inverse.py), which may also write G's stage (g_out)
               "diag8_blocks": ((0, 1, 2), (1, 11)), "mma_level1_merge": ((0, 1, 2), (1, 11)),
               "mma_level2_merge": ((0, 1, 2), (1, 11))}
# calls that take a ring stage as an argument of its own: its position (the buffers they name are that stage's)
STAGE_ARGS = {"load_rows": 2, "load_gate_beta": 4, "load_gate_cumsum_beta": 4, "scale_gamma": 3, "gate_a": 5,
              "store_seq_rows": 8, "RingStage": 1, "diag8_blocks": 12, "mma_level1_merge": 12,
              "mma_level2_merge": 12}


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


def first_subscript(text: str, start: int) -> str:
    """The first top-level index of the subscript that opens just before text[start] (`i % 2` of `x[i % 2, :]`;
    brackets and calls inside it, `T.min(i + 1, n - 1) % 3`, kept whole)."""
    depth, k = 1, start
    while k < len(text) and depth:
        depth += text[k] in "([{"
        depth -= text[k] in ")]}"
        k += 1
    args = split_args(text[start:k - 1])
    return args[0] if args else ""


def places(text: str, shared: dict, stage_arg: bool = False, stage_exprs: bool = False,
           stage_of_call: str | None = None) -> list[tuple[str, str | None]]:
    """The shared buffers a piece of code names: (buffer, its stage as an expression, else None). The stage is "st"
    where the first subscript is `st` or, stage_arg, the code is a call that also takes `st` and passes a two-stage
    buffer whole (a macro such as form_gamma(gm, g_s, st)); with stage_exprs any first subscript of a two-stage
    buffer (`i % 2`), and stage_of_call for a two-stage buffer passed whole to a call that takes its stage apart
    (STAGE_ARGS)."""
    out = []
    for m in re.finditer(r"\b(\w+)\b(\[)?", text):
        if m.group(1) in shared:
            first = first_subscript(text, m.end()) if m.group(2) else ""
            if first == "st" or (m.group(2) is None and stage_arg and shared[m.group(1)]):
                out.append((m.group(1), "st"))
            elif stage_exprs and shared[m.group(1)] and m.group(2) is not None and first not in ("", ":"):
                out.append((m.group(1), first))
            elif stage_exprs and shared[m.group(1)] and m.group(2) is None and stage_of_call is not None:
                out.append((m.group(1), stage_of_call))
            else:
                out.append((m.group(1), None))
    return out


def accesses(text: str, shared: dict, stage_exprs: bool = False) -> tuple[list, list]:
    """(reads, writes) of one line of a role."""
    m = re.match(r"(?:\w+ = )?([\w.]+)\((.*)\)$", text)  # a call, its result named or not
    stage_arg = bool(m) and "st" in split_args(m.group(2))
    of_call = None
    if m and stage_exprs and m.group(1) in STAGE_ARGS:
        args = split_args(m.group(2))
        k = STAGE_ARGS[m.group(1)]
        of_call = args[k] if k < len(args) else None
    if m and m.group(1) in ACCESS_ARGS:
        args = split_args(m.group(2))
        rd, wr = ACCESS_ARGS[m.group(1)]
        return ([p for i in rd if i < len(args) for p in places(args[i], shared, stage_arg, stage_exprs, of_call)],
                [p for i in wr if i < len(args) for p in places(args[i], shared, stage_arg, stage_exprs, of_call)])
    m = re.match(r"(\w+)\[([^\]]*)\] *[-+*]?= *(.*)$", text)
    if m and m.group(1) in shared:
        first = m.group(2).split(",")[0].strip()
        stage = "st" if first == "st" else (first if stage_exprs and shared[m.group(1)] else None)
        return places(m.group(3), shared, stage_exprs=stage_exprs), [(m.group(1), stage)]
    return places(text, shared, stage_arg, stage_exprs, of_call), []


def logical_lines(lines: list[str]) -> list[str]:
    """The source's lines with each statement that spans several (open brackets) joined into one; brackets inside
    strings, docstrings and comments do not count."""
    out, cur, depth, triple = [], "", 0, None
    for line in lines:
        k, quote = 0, None
        while k < len(line):
            if triple:
                if line.startswith(triple, k):
                    k, triple = k + 3, None
                    continue
            elif quote:
                if line[k] == "\\":
                    k += 1
                elif line[k] == quote:
                    quote = None
            elif line.startswith(('"""', "'''"), k):
                triple = line[k:k + 3]
                k += 3
                continue
            elif line[k] in "\"'":
                quote = line[k]
            elif line[k] == "#":
                break
            elif line[k] in "([{":
                depth += 1
            elif line[k] in ")]}":
                depth -= 1
            k += 1
        cur = line if not cur else cur + " " + line.strip()
        if depth <= 0 and not triple:
            out.append(cur)
            cur, depth = "", 0
    return out + ([cur] if cur else [])


COMMON = Path(__file__).resolve().parent.parent / "tilelang_src" / "common"


def common_macro_lines(names: dict) -> list[str]:
    """The definitions (`@T.macro` and its function) of the macros `names` ({name: file under tilelang_src/common})
    that a kernel calls with barrier operations inside: inlined like the kernel's own."""
    out = []
    for name, file in names.items():
        lines = (COMMON / file).read_text().split("\n")
        start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
        end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith((" ", ")"))),
                   len(lines))
        out += ["@T.macro"] + lines[start:end]
    return out


def inline_macros(lines: list[str]) -> list[str]:
    """The lines with every call of a macro defined in this source (`@T.macro` then `def NAME(PARAMS):`) replaced by
    its body (docstring dropped), its parameters substituted by the call's arguments (parenthesized unless a name or
    a number), at the call's indentation; macros that call macros are inlined in turn."""
    macros, n = {}, 0
    while n < len(lines):
        if lines[n].strip() == "@T.macro":
            m = re.match(r"( *)def (\w+)\((.*)\):$", lines[n + 1])
            indent = len(m.group(1))
            body, k = [], n + 2
            while k < len(lines) and (not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) > indent):
                body.append(lines[k])
                k += 1
            while body and not body[-1].strip():
                body.pop()
            if body and body[0].strip().startswith('"""'):  # the docstring
                end = next(b for b in range(len(body)) if body[b].rstrip().endswith('"""') and
                           (b > 0 or body[0].strip().count('"""') == 2))
                body = body[end + 1:]
            params = [a.split(":")[0].split("=")[0].strip() for a in split_args(m.group(3))]
            macros[m.group(2)] = (params, body, indent + 4)
            n = k
        else:
            n += 1

    def expand_line(line: str, depth: int) -> list[str]:
        m = re.match(r"( *)(\w+)\((.*)\)$", line)
        if not m or m.group(2) not in macros or depth > 8:
            return [line]
        params, body, body_indent = macros[m.group(2)]
        args = split_args(m.group(3))
        sub = {p: (a if re.fullmatch(r"[\w.]+", a) else f"({a})") for p, a in zip(params, args)}
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sub)) + r")\b") if sub else None
        out = []
        for b in body:
            if not b.strip():
                continue
            text = b[body_indent:]
            if pattern:
                text = pattern.sub(lambda x: sub[x.group(1)], text)
            out += expand_line(m.group(1) + text, depth + 1)
        return out

    return [out for line in lines for out in expand_line(line, 0)]


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
    """({barrier: [arrivals per index]}, {role: (weight, ops)}); ops hold ("loop", var) | ("end",) marks,
    ("cond", expression) | ("endcond",) around a branch on the chunk index or count, and ("access", reads, writes)
    for the lines that name shared buffers.
    flags: values of the factory's boolean parameters (the defaults otherwise), and NMATH for gdn_fwd_rs."""
    lines = source.split("\n")
    end_marker = next(m for m in KERNELS if any(m in line for line in lines))
    opts = KERNEL_OPTIONS.get(end_marker, {})
    params = {m.group(1): m.group(2) == "True" for line in lines if (m := FLAG.match(line))}
    if opts.get("inline"):
        lines = inline_macros(logical_lines(common_macro_lines(opts.get("common_macros", {})) + lines))
    stage_exprs = bool(opts.get("stage_exprs"))
    params.update(flags or {})
    nmath = params.get("NMATH", 2)
    stages = next((int(m.group(1)) for line in lines if (m := STAGES.match(line))), 2)
    consts = {"NMATH": nmath, "PT": 128 * (nmath + 1), "KS": params.get("k_stages", stages)}
    # the per-row gates' stages (gdn_fwd_noprep.py: the K ring's with gates_in_loader, else two)
    consts["GS"] = consts["KS"] if params.get("gates_in_loader") else 2
    shared = {}
    for line in lines:
        m = SHARED.search(line)
        if m:
            # a first dimension chosen by a flag (`(1 if FLAG else 2, ...`) is evaluated with the flags
            c = SHARED_IF.search(line)
            shared[m.group(1)] = (m.group(2) is not None if c is None
                                  else eval(c.group(2), {}, dict(consts, **params)) == 2)
    counts = {}
    for line in lines:
        m = ALLOC.search(line)
        if m:
            v = eval(m.group(2), {}, dict(consts, **params))
            counts[m.group(1)] = v if isinstance(v, list) else [v]
    # a ring's stage count is a number from here on (stage `i % KS`, phase `(i // KS) % 2`)
    lines = [re.sub(r"\bGS\b", str(consts["GS"]), re.sub(r"\bKS\b", str(consts["KS"]), line)) for line in lines]
    starts, end = role_spans(lines)
    roles = {}
    for n, (name, lo, weight) in enumerate(starts):
        hi = starts[n + 1][1] if n + 1 < len(starts) else end
        # the open blocks, innermost last: (indent, "loop", None) or (indent, "cond", (taken, run-time expression));
        # taken is None for a branch read whole, False for one never taken
        ops, blocks = [], []

        def close(block):
            if block[1] == "loop":
                ops.append(("end",))
            elif block[2][1] is not None:
                ops.append(("endcond",))

        for line in lines[lo + 1:hi]:
            if not line.strip() or line.strip().startswith("#"):
                continue
            indent = len(line) - len(line.lstrip())
            text = line.strip()
            code = text.split("  #")[0].rstrip()  # without a trailing comment
            # the blocks nested deeper than this line are closed; an else at an open if's indentation flips it
            while blocks and indent < blocks[-1][0]:
                close(blocks.pop())
            if code == "else:" and blocks and blocks[-1][0] == indent and blocks[-1][1] == "cond":
                taken, expr = blocks[-1][2]
                if expr is not None:
                    ops.append(("endcond",))
                    ops.append(("cond", f"not ({expr})"))
                    expr = f"not ({expr})"
                blocks[-1] = (indent, "cond", (None if taken is None else not taken, expr))
                continue
            while blocks and indent <= blocks[-1][0]:
                close(blocks.pop())
            if code.startswith("if ") and code.endswith(":"):
                m = IF_FLAG.fullmatch(code)
                taken, expr = None, None
                if m and m.group(2) in params and isinstance(params[m.group(2)], bool):
                    taken = params[m.group(2)] != bool(m.group(1))
                    taken = None if taken and m.group(3) else taken  # FLAG and <run time>: read whole if FLAG
                elif stage_exprs and (mc := IF_CHUNK.fullmatch(code)):
                    expr = mc.group(1)
                    ops.append(("cond", expr))
                blocks.append((indent, "cond", (taken, expr)))
                continue
            if any(b[1] == "cond" and b[2][0] is False for b in blocks):
                continue
            loop = next((var for head, var in LOOPS.items() if text.startswith(head)), None)
            if loop:
                blocks.append((indent, "loop", None))
                ops.append(("loop", loop))
            else:
                m = BARRIER_OP.search(code if stage_exprs else text)
                ms = SYNC_OP.search(code)
                sync_threads = eval(ms.group(2), {}, dict(consts, **params)) if ms else 0
                if m:
                    ops.append((m.group(1), m.group(2), m.group(3), m.group(4)))
                elif sync_threads > weight:
                    counts["sync:" + ms.group(1)] = [sync_threads]
                    ops.append(("sync", "sync:" + ms.group(1)))
                elif not text.startswith(("for ", "elif ", "else")):
                    reads, writes = accesses(code if stage_exprs else text, shared, stage_exprs)
                    if reads or writes:
                        ops.append(("access", reads, writes))
        while blocks:
            close(blocks.pop())
        roles[name] = (weight, ops)
    if opts.get("nmath_role") and nmath == 1:
        roles.pop(opts["nmath_role"], None)
    for name, (flag, value) in opts.get("flag_roles", {}).items():  # roles that exist with a flag set (or not)
        if bool(params.get(flag, False)) != value:
            roles.pop(name, None)
    return counts, roles


# the calls an index expression may hold (`T.min(i + 1, n_iter - 1) % KS`), evaluated per chunk
INDEX_CALLS = SimpleNamespace(min=min, max=max)


def expand(ops: list, items: int, group: int) -> list:
    """The role's barrier operations in program order: (kind, barrier, index, parity, meant phase), and its
    accesses: ("access", reads, writes, None, None) with places (buffer, stage or None)."""
    def env_of(env):
        e = dict(env, group=group, n_iter=items, T=INDEX_CALLS)
        e["sj"] = e["it"] * group + e["jv"] + e["i"]
        e["st"] = e["ph"] = e["sj"] % 2
        return e

    def matching(body, i, opening, closing):
        depth, j = 1, i + 1
        while depth:
            depth += body[j][0] == opening
            depth -= body[j][0] == closing
            j += 1
        return j

    def walk(body, env):
        out, i = [], 0
        while i < len(body):
            op = body[i]
            if op[0] == "loop":
                j = matching(body, i, "loop", "end")
                var = op[1]
                count = group if var == "jv" else items
                for v in range(count):
                    out += walk(body[i + 1:j - 1], dict(env, **{var: v}))
                i = j
            elif op[0] == "cond":
                j = matching(body, i, "cond", "endcond")
                if eval(op[1], {}, env_of(env)):
                    out += walk(body[i + 1:j - 1], env)
                i = j
            elif op[0] == "sync":
                k = syncs.get(op[1], 0)
                syncs[op[1]] = k + 1
                out += [("arrive", op[1], 0, None, None), ("wait", op[1], 0, k % 2, k)]
                i += 1
            elif op[0] == "access":
                e = env_of(env)

                def at(ps):
                    return [(b, None if s is None else eval(s, {}, dict(e))) for b, s in ps]
                out.append(("access", at(op[1]), at(op[2]), None, None))
                i += 1
            else:
                kind, bar, idx, parity = op
                e = env_of(env)
                out.append((kind, bar, eval(idx, {}, dict(e)), eval(parity, {}, dict(e)) % 2 if parity else None,
                            intent(parity, e) if parity else None))
                i += 1
        return out
    syncs = {}  # the role's named-barrier syncs so far, per barrier
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
    """Two places overlap: the same buffer, the same stage (or either whole), and the same part where both name the
    part of a buffer that roles write in disjoint pieces (KERNEL_OPTIONS' disjoint)."""
    return (place[0] == other[0] and (place[1] is None or other[1] is None or place[1] == other[1])
            and (len(place) < 3 or len(other) < 3 or place[2] == other[2]))


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
    # the roles that write a buffer in disjoint pieces: their accesses name their own piece
    end_marker = next(m for m in KERNELS if m in source)
    disjoint = KERNEL_OPTIONS.get(end_marker, {}).get("disjoint", {})
    # buffers that a flag makes written in disjoint pieces but read whole
    whole_reads = {b for b, flag in KERNEL_OPTIONS.get(end_marker, {}).get("read_whole_if", {}).items()
                   if (flags or {}).get(flag)}

    def piece(r, places_of, reading=False):
        return [(b, st, r) if r in disjoint.get(b, ()) and not (reading and b in whole_reads) else (b, st)
                for b, st in places_of]
    progs = {r: (w, [("access", piece(r, op[1], True), piece(r, op[2]), None, None) if op[0] == "access" else op
                     for op in prog]) for r, (w, prog) in progs.items()}
    return [f"seed {s}: {err}" for s in range(runs) if (err := simulate(counts, progs, s))]


def main() -> int:
    path = sys.argv[1]
    nums = [a for a in sys.argv[2:] if "=" not in a]
    flags = {k: (v == "True" if v in ("True", "False") else int(v))
             for k, v in (a.split("=", 1) for a in sys.argv[2:] if "=" in a)}
    items, group, runs = (int(x) for x in (nums + ["1", "2", "500"][len(nums):])[:3])
    errors = check(open(path).read(), items, group, runs, flags)
    print(f"{path}: items={items} group={group} {flags or ''}: {len(errors)} of {runs} schedules failed")
    for e in errors[:3]:
        print("  " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
