"""The full-recompute KV the bound needs, taken from the no-sharing system's own prefill.

The bound reuses each warm request's own KV (`oracle.OracleBound`), which is exactly what the
no-sharing system computes for the same prompt moments before. Recomputing it doubled the
bound's cost in a run (one more full prefill per warm request, off every clock); the no-sharing
engine's strategy keeps it instead, after the answer, so no system's TTFT changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from cacheprune.engine import PrefillResult
from cacheprune.pool import PoolSession
from cacheprune.serving import NoSharing, Published, ServedRequest
from cacheprune.tokens import TokenIds


@dataclass(slots=True, frozen=True)
class ReferenceKV:
    """K and V of a whole prompt computed by a full prefill, at positions 0..n-1."""

    token_ids: TokenIds
    keys: torch.Tensor  # [num_layers, num_kv_heads, n, head_dim]
    values: torch.Tensor

    def matches(self, token_ids: TokenIds) -> bool:
        return bool(np.array_equal(self.token_ids, token_ids))


class KeepReferenceKV(NoSharing):
    """No sharing (nothing reused, nothing published) that keeps the KV of the last prompt it
    served for the bound to take: a reference to the prefill's buffer, no copy."""

    def __init__(self) -> None:
        self._kept: ReferenceKV | None = None

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        n = request.num_tokens  # the buffer holds the decoded tokens too: the prompt's only
        self._kept = ReferenceKV(request.token_ids, prefill.kv.keys[:, :, :n],
                                 prefill.kv.values[:, :, :n])
        return []

    def take(self) -> ReferenceKV | None:
        """The last prompt's KV (once: the buffer is let go)."""
        kept, self._kept = self._kept, None
        return kept
