"""Where the KV a request publishes comes from: as the prefill computed it, or recomputed so
that it never attended to a private token. Each source answers `segment(start, end)` with the
K, V and positions to store for tokens [start, end): of the request's public view for the
product's sources, of the prompt for the fixed-chunk baseline's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.engine import PrefillPlan, PrefillResult, Transformer
from cacheprune.serving.request import ServedRequest

# keys, values, positions of one span (the pool's `SegmentKV` is what a read returns)
SpanKV = tuple[torch.Tensor, torch.Tensor, npt.NDArray[np.int64]]


class KVSource(Protocol):
    def segment(self, start: int, end: int) -> SpanKV: ...


@dataclass(slots=True)
class InContextKV:
    """The prompt's KV as the request's prefill computed it. Spans are of the request's public
    view (`positions[i]`: the prompt position of public token i), stored at prompt positions."""

    prefill: PrefillResult
    positions: npt.NDArray[np.int64]

    def segment(self, start: int, end: int) -> SpanKV:
        positions = self.positions[start:end]
        first, last = int(positions[0]), int(positions[-1])
        if last - first == end - start - 1:  # no private token inside: a view, not a copy
            index: slice | torch.Tensor = slice(first, last + 1)
        else:
            index = torch.from_numpy(positions)
        return self.prefill.keys[:, :, index], self.prefill.values[:, :, index], positions


@dataclass(slots=True)
class PrivateFreeKV:
    """K and V of the first public tokens of a prompt's public view, computed as one sequence
    (every private token left out): a segment cut from it never attended to a private token,
    yet saw the public text before it (the system prompt, the document's earlier part)."""

    keys: torch.Tensor
    values: torch.Tensor

    def segment(self, start: int, end: int) -> SpanKV:
        return (self.keys[:, :, start:end], self.values[:, :, start:end],
                np.arange(start, end))


@dataclass(slots=True)
class AloneKV:
    """Each span computed with nothing before it but the sequence's first token (the attention
    sink the model expects), unless that token is private: the fixed-chunk baselines' KV."""

    model: Transformer
    request: ServedRequest

    def segment(self, start: int, end: int) -> SpanKV:
        token_ids = self.request.token_ids
        skip = 0 if self.request.private[0] or start == 0 else 1
        ids = torch.from_numpy(np.concatenate([token_ids[:skip], token_ids[start:end]]))
        result = self.model.prefill(PrefillPlan.full(ids))
        return (result.keys[:, :, skip:], result.values[:, :, skip:],
                np.arange(skip, skip + end - start))
