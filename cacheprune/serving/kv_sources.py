"""Where the KV a request publishes comes from: as the prefill computed it, or recomputed so
that it never attended to a private token. Each source answers `segment(start, end)` with the
K, V and positions to store for prompt tokens [start, end)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.engine.model import Transformer
from cacheprune.engine.plan import PrefillPlan, PrefillResult
from cacheprune.serving.request import ServedRequest

SegmentKV = tuple[torch.Tensor, torch.Tensor, npt.NDArray[np.int64]]  # keys, values, positions


class KVSource(Protocol):
    def segment(self, start: int, end: int) -> SegmentKV: ...


@dataclass(slots=True)
class InContextKV:
    """The prompt's KV as the request's prefill computed it, at the prompt's positions."""

    prefill: PrefillResult

    def segment(self, start: int, end: int) -> SegmentKV:
        return (self.prefill.keys[:, :, start:end], self.prefill.values[:, :, start:end],
                np.arange(start, end))


@dataclass(slots=True)
class PrivateFreeKV:
    """K and V of a prompt's first tokens with its private tokens taken out; `index_of[p]` is
    where prompt position p sits in it (-1 for a private token). A segment cut from it never
    attended to a private token, yet saw the public text before it (the system prompt, the
    document's earlier part)."""

    keys: torch.Tensor
    values: torch.Tensor
    index_of: npt.NDArray[np.int64]

    def segment(self, start: int, end: int) -> SegmentKV:
        first = int(self.index_of[start])
        if first < 0 or int(self.index_of[end - 1]) != first + end - start - 1:
            raise ValueError(f"segment [{start}, {end}) holds a private token")
        return (self.keys[:, :, first:first + end - start],
                self.values[:, :, first:first + end - start],
                np.arange(first, first + end - start))


@dataclass(slots=True)
class AloneKV:
    """Each span computed with nothing before it but the sequence's first token (the attention
    sink the model expects), unless that token is private: the fixed-chunk baselines' KV."""

    model: Transformer
    request: ServedRequest

    def segment(self, start: int, end: int) -> SegmentKV:
        token_ids = self.request.token_ids
        lead = [] if self.request.private[0] or start == 0 else [int(token_ids[0])]
        ids = torch.as_tensor(lead + token_ids[start:end].tolist(), dtype=torch.long)
        result = self.model.prefill(PrefillPlan.full(ids))
        skip = len(lead)
        return (result.keys[:, :, skip:], result.values[:, :, skip:],
                np.arange(skip, skip + end - start))
