"""What differs between sharing modes, behind one small interface.

The engine serves every request the same way (detect, plan, prefill, decode, publish) and asks
its strategy only the two things that differ: where the request's reused KV comes from (`plan`)
and what the request gives back for others to reuse (`publish`).
"""

from __future__ import annotations

import abc
from typing import NamedTuple

from cacheprune.engine.plan import PrefillPlan, PrefillResult
from cacheprune.pool import PoolSession
from cacheprune.serving.request import ServedRequest
from cacheprune.tokens import TokenIds


class Published(NamedTuple):
    """A segment a request staged for the pool."""

    segment_hash: str
    num_tokens: int


class SharingStrategy(abc.ABC):
    """Calling contract (the engine, once per request, in this order, inside the request's pool
    session): `plan` before the prefill; `publish` after the answer, off the TTFT path (any
    attention it needs it computes there). What `publish` stages becomes visible
    only if the request ends well (the session publishes on commit). A strategy may keep state
    across requests (a prefix cache); it must never keep a request's private tokens in anything
    another tenant reads."""

    @abc.abstractmethod
    def plan(self, request: ServedRequest, session: PoolSession) -> PrefillPlan:
        """The prefill plan: which of the request's tokens reuse cached KV, and from where."""

    @abc.abstractmethod
    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        """Stage what this request contributes for later requests to reuse."""

    def cached_token_ids(self) -> list[TokenIds]:
        """Token ids the strategy holds outside the pool (for audits and the leakage
        evaluation, which must see every cache there is)."""
        return []
