"""Load the compiled numba kernels of the request path (window hashes, best cover, the
annotator) when an engine starts, not on its first request.

numba keeps their machine code on disk (`cache=True`), but a process's first call of each
still loads it, with numba's typing registries (which import cffi and pycparser): 1.1 s on an
idle 2-core machine, 2.9 s under load, measured on a vLLM server's first pool lookup. Without
this, that time lands on the first request's TTFT, and in vLLM's step when the worker's first
plan or publication runs there. Once per process; tiny inputs, no pool, no state.
"""

from __future__ import annotations

import functools

import numpy as np

from cacheprune.annotator import AnnotatorConfig, annotate
from cacheprune.retriever.cover import best_cover
from cacheprune.retriever.rolling import window_hashes

_TOKENS = 32
_WINDOW = 8
_HASH_BASE = 1_000_003


@functools.cache
def warm_kernels() -> None:
    tokens = np.arange(_TOKENS, dtype=np.uint32)
    public = np.zeros(_TOKENS, dtype=np.bool_)
    window_hashes(tokens, public, _WINDOW, _HASH_BASE)
    tokens.setflags(write=False)  # numba compiles read-only arrays apart: the pool passes both
    window_hashes(tokens, public, _WINDOW, _HASH_BASE)
    best_cover(np.array([0, 4], dtype=np.int64), np.array([16, 24], dtype=np.int64), _WINDOW)
    attention = np.tril(np.ones((_TOKENS, _TOKENS), dtype=np.float32))
    attention /= attention.sum(axis=1, keepdims=True)
    annotate(attention, public, ~public, AnnotatorConfig(min_len=_WINDOW))
