"""Isolated mode's publish, all from one pass over the prompt with its private tokens left out.

Segments, recompute marks, K, V and positions come from that pass: the KV because a segment
cut from it never attended to a private token, and the segments and marks because the
annotator then reads attention that no private token took part in. The same public text
published by two victims with different private values is therefore the same entry, bitwise
(tested in tests/serving/test_serving_private_free.py). Which segments exist still follows where
private spans begin and end in the prompt, never what they hold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.engine.model import Transformer
from cacheprune.engine.plan import AttentionCapture, PrefillPlan
from cacheprune.serving.kv_sources import PrivateFreeKV
from cacheprune.serving.request import ServedRequest


@dataclass(slots=True)
class PrivateFreePass:
    kv: PrivateFreeKV
    # [n, n] over the request's positions: the pass's attention where both tokens are public
    # and before `end`, zero elsewhere (no private token is there to attend or be attended)
    attention: npt.NDArray[np.float32]

    @classmethod
    def compute(cls, model: Transformer, request: ServedRequest, end: int,
                capture: AttentionCapture) -> PrivateFreePass:
        """One prefill over the first `end` tokens of the prompt minus its private tokens."""
        kept = np.flatnonzero(~request.private[:end])
        result = model.prefill(PrefillPlan.full(torch.from_numpy(request.token_ids[kept])),
                               capture=capture)
        assert result.attention is not None, "the pass was asked to capture attention"
        index_of = np.full(end, -1, dtype=np.int64)
        index_of[kept] = np.arange(kept.size)
        attention = np.zeros((request.num_tokens, request.num_tokens), dtype=np.float32)
        attention[np.ix_(kept, kept)] = result.attention.numpy()
        return cls(PrivateFreeKV(result.keys, result.values, index_of), attention)
