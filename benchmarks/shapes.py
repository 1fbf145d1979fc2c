"""Benchmark shapes: the Qwen3.5 / Qwen3.6 GDN head configurations and length mixes of FlashQLA's
published H200 table (reference/published_h200.csv), plus the backward shapes of that table."""

from __future__ import annotations

# (name, h_qk, h_v)
HEAD_CONFIGS = [
    ("397B/122B TP8", 2, 8),
    ("397B/122B TP4", 4, 16),
    ("397B/122B TP2", 8, 32),
    ("397B/122B TP1", 16, 64),
    ("35B/9B/4B TP1", 16, 32),
    ("27B TP2", 8, 24),
    ("27B TP1", 16, 48),
    ("2B/0.8B TP1", 16, 16),
    ("Sym h32", 32, 32),
]

# sequence lengths packed into one batch (B = 1, cu_seqlens)
LENGTH_MIXES = {
    "1x32768": [32768], "1x16384": [16384], "1x8192": [8192], "1x4096": [4096], "1x2048": [2048],
    "28672+4096": [28672, 4096], "24576+8192": [24576, 8192], "16384+16384": [16384, 16384],
    "8192+24576": [8192, 24576], "4096+28672": [4096, 28672], "12288+4096": [12288, 4096],
    "6144+2048": [6144, 2048], "4096+4096": [4096, 4096], "2048+6144": [2048, 6144], "1024+7168": [1024, 7168],
    "8192x4": [8192] * 4, "4096x8": [4096] * 8, "2048x4": [2048] * 4, "1024x8": [1024] * 8,
}

# backward table: (h_qk, h_v) x total tokens split into 1, 2, 4, 8 sequences
BWD_HEADS = [(16, 32), (8, 16), (4, 8), (2, 4)]
BWD_TOTALS = {"8k": 8192, "32k": 32768}
BWD_SPLITS = [1, 2, 4, 8]


def parse_lengths(text: str) -> list[int]:
    """'1x32768', '4096+28672', '8192x4', or a comma list '100,200'."""
    if text in LENGTH_MIXES:
        return list(LENGTH_MIXES[text])
    if "," in text:
        return [int(x) for x in text.split(",")]
    if "+" in text:
        return [int(x) for x in text.split("+")]
    if "x" in text:
        a, b = text.split("x")
        return [int(b)] * int(a) if a == "1" else [int(a)] * int(b)
    return [int(text)]
