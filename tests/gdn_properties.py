"""Random GDN problems for the property-based tests (hypothesis): the `Case` strategy and the settings.

A drawn case covers dense batches (B 1-3) or packed varlen sequences (lengths that favour 0 and 1,
including no sequence at all) with or without a padding tail, head ratios HV = H * {1, 2, 3, 4}, bf16 or
fp16, strong or mild gates, initial state on/off, output_final_state on/off, both state layouts, l2norm in
the kernel on/off. The properties themselves are gdn_checks.check_forward and check_backward.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from gdn_checks import Case


def hypothesis_settings(examples: int) -> settings:
    """`examples` scaled by FLASHQLA_HYPOTHESIS_SCALE (default 1); no example database is written, and a
    failure prints the blob that reproduces it (@reproduce_failure)."""
    scale = float(os.environ.get("FLASHQLA_HYPOTHESIS_SCALE", "1"))
    return settings(max_examples=max(1, int(examples * scale)), deadline=None, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


@st.composite
def cases(draw, max_tokens: int, max_heads: int, max_seqs: int, dtypes: tuple) -> Case:
    H = draw(st.integers(1, max_heads))
    HV = H * draw(st.sampled_from([1, 2, 3, 4]))
    length = st.one_of(st.integers(0, 2), st.integers(0, max_tokens))  # 0 and 1 often
    if draw(st.booleans()):  # packed varlen
        lengths = draw(st.lists(length, max_size=max_seqs))
        while sum(lengths) > max_tokens:
            lengths = lengths[:-1]
        tail = draw(st.one_of(st.just(0), st.integers(1, 70)))
        B, T, lengths = 1, sum(lengths) + tail, tuple(lengths)
    else:
        B = draw(st.integers(1, 3))
        T, lengths = min(draw(length), max_tokens // B), None
    return Case(B, T, H, HV, lengths, h0=draw(st.booleans()), final=draw(st.booleans()),
                v_first=draw(st.booleans()), l2=draw(st.booleans()), gate=draw(st.sampled_from(["strong", "mild"])),
                dtype=draw(st.sampled_from(dtypes)), seed=draw(st.integers(0, 2**31 - 1)))
