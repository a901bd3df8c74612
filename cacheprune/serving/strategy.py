"""What differs between sharing modes, behind one small interface.

The engine serves every request the same way (detect, plan, prefill, decode, publish) and asks
its strategy only the two things that differ: where the request's reused KV comes from (`plan`)
and what the request gives back for others to reuse (`publish`).
"""

from __future__ import annotations

import abc

from cacheprune.engine import PrefillPlan, PrefillResult
from cacheprune.pool import PoolSession
from cacheprune.serving.request import Published, ServedRequest
from cacheprune.tokens import TokenIds

__all__ = ["Published", "SharingStrategy"]


class SharingStrategy(abc.ABC):
    """Calling contract (the engine or the vLLM connector, once per request, in this order):
    `plan` before the prefill, in the request's pool session; `publish` after the answer, off
    the TTFT path (any attention it needs it computes there), in the same session or in one
    that carries its count (`PoolSession.carry_count`: the connector's). What `publish`
    stages becomes visible only if the request ends well (the session publishes on commit).
    A strategy reads the request; the caller advances its status (`ServedRequest`). A strategy
    may keep state across requests (a prefix cache); it must never keep a request's private
    tokens in anything another tenant reads."""

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
