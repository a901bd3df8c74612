"""Isolated mode's publish, all from one pass over the prompt's public view (every private
token left out).

Segments, recompute marks, K, V and positions come from that pass: the KV because a segment
cut from it never attended to a private token, and the segments and marks because the
annotator then reads attention that no private token took part in. The same public text
published by two victims with different private values is therefore the same entry, bitwise
(tested in tests/serving/test_serving_private_free.py). The view holds no trace of the private
values, not even their length or where they were: only the public tokens, in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.engine import AttentionCapture, PrefillPlan, Transformer
from cacheprune.serving.kv_sources import PrivateFreeKV
from cacheprune.serving.public_view import PublicView


@dataclass(slots=True)
class PrivateFreePass:
    kv: PrivateFreeKV
    # [end, end] over the view's first `end` tokens: the attention the pass captured
    attention: npt.NDArray[np.float32]

    @classmethod
    def compute(cls, model: Transformer, view: PublicView, end: int,
                capture: AttentionCapture) -> PrivateFreePass:
        """One prefill over the first `end` tokens of `view`, a view without private tokens."""
        if view.private.any():
            raise ValueError("the private-free pass needs a view with no private token")
        result = model.prefill(PrefillPlan.full(torch.from_numpy(view.token_ids[:end])),
                               capture=capture)
        assert result.attention is not None, "the pass was asked to capture attention"
        return cls(PrivateFreeKV(result.keys, result.values), result.attention.numpy())
