"""What one request did: its answer, timing, and what it took from and gave to the pool."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cacheprune.engine import RequestStats
from cacheprune.pool import EntryName
from cacheprune.tokens import MaskArray


@dataclass(slots=True, frozen=True)
class ScoredContinuation:
    """A continuation teacher-forced under the request's KV, after its answer (for measuring how
    close reused KV is to full recomputation)."""

    token_ids: list[int]
    logprobs: torch.Tensor  # [len(token_ids), vocab] float32: row i predicts token_ids[i]
    seconds: float  # the scoring pass, after the answer (off every timing of the request)


@dataclass(slots=True)
class RequestRecord:
    request_id: str
    tenant: str
    text: str
    token_ids: list[int]
    stats: RequestStats
    num_private: int
    num_hit_tokens: int  # tokens whose KV came from a cache (the prober's timing oracle)
    hit_spans: list[tuple[int, int]]  # where those tokens are: [start, end) prompt positions
    private_mask: MaskArray  # per prompt token: True where the detectors flagged it
    num_published_tokens: int
    published: list[EntryName]  # the pool's keyed names of the entries it published
    failed_closed_reason: str | None
    finish_reason: str
    publish_error: str | None = None  # publishing failed after decoding: nothing was shared
    num_leak_findings: int = 0  # response n-grams matching another tenant's private text
    scored: ScoredContinuation | None = None  # when the caller asked for one
