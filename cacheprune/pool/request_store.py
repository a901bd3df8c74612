"""The request half of the store interface: what serving a request needs (`lookup`, `read`,
`release`, `stage`, `publish`, `discard`), apart from administration and inspection (`PoolStore`).

`PoolSession` and the vLLM connector use only these methods; keeping them in their own class
lets the session depend on the store's contract without the store depending on the session.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cacheprune.pool.config import PoolConfig
from cacheprune.pool.entry import SegmentKV
from cacheprune.pool.errors import PoolConfigError
from cacheprune.pool.handles import (
    KV_DTYPE,
    Lease,
    LookupResult,
    Scope,
    SegmentData,
    StagedSegment,
    kv_layout,
)
from cacheprune.retriever import EntryName, Match
from cacheprune.tokens import MaskArray, TokenArray

if TYPE_CHECKING:
    from cacheprune.pool.keys import PoolKeys
    from cacheprune.pool.metrics import PoolMetrics
    from cacheprune.pool.threshold import PublicationThreshold


class RequestStore(abc.ABC):
    """The per-request contract every backend keeps. Thread-safe; one handle per process.

    Attributes: `config` (the `PoolConfig` it was opened with), `metrics` (Prometheus
    registry private to this handle), `url` (the URL with any password removed), `clock`
    (seconds: TTL and session deadlines; wall clock on shared backends).
    """

    config: PoolConfig
    metrics: PoolMetrics
    url: str
    clock: Callable[[], float]
    keys: PoolKeys  # names and tags under this pool's key (`PoolKeys.entry_name`, ...)
    # Counts the tenants that sent each window (`config.publish_threshold`); the caller of
    # `lookup` records the request first and looks up only what it found shareable (as
    # `PoolSession.lookup` does), and stages only what `CommonWindows.shareable_runs` allows.
    threshold: PublicationThreshold

    def check_scope(self, scope: Scope) -> None:
        """Raise `PoolConfigError` unless `scope`'s layout and dtype are what this store holds."""
        expected = kv_layout(self.config.kv_shape)
        if (scope.identity.kv_layout, scope.identity.dtype) != (expected, KV_DTYPE):
            raise PoolConfigError(
                f"this pool stores {KV_DTYPE} KV laid out as {expected}; the request's identity "
                f"says {scope.identity.dtype} {scope.identity.kv_layout}")

    @abc.abstractmethod
    def lookup(self, scope: Scope, owner: str, token_ids: TokenArray, private_mask: MaskArray
               ) -> LookupResult:
        """Reusable parts of a prompt, each leased for `owner`.

        Caller: `PoolSession.lookup`, once per request (again after a preemption, after
        releasing the previous leases), which first counts the request under the publication
        threshold and passes as private everything no common window covers. `token_ids` is
        at most `config.max_context_tokens` long (checked by the caller); private tokens are
        never hashed, compared or matched. Side effects: one lease per returned match, a use
        of each matched entry (eviction.py), hit/miss counters, one `reuse` audit line per
        match. A store fault returns an empty result (counted), never raises.
        """

    @abc.abstractmethod
    def read(self, lease: Lease, match: Match) -> SegmentKV | None:
        """K, V, positions and recompute marks of `match`'s part of the leased entry.

        Caller: the process that loads KV (worker, or the session), once per match, after
        `lookup` and before `release`. Verifies the entry's HMAC tag and identity before using
        any byte. Returns None — compute those tokens — if the entry is gone (evicted by the
        server, invalidated, expired), corrupt, foreign or unauthenticated; each is counted in
        `read_misses{reason}` and audited. Returned tensors may be views: never modify them.
        """

    @abc.abstractmethod
    def release(self, leases: Sequence[Lease]) -> None:
        """End these leases. Caller: whoever took them, exactly once per lease, on every exit
        of the request. Never raises (a fault is counted); an entry invalidated while leased
        is freed when its last lease ends."""

    @abc.abstractmethod
    def stage(self, scope: Scope, staging_id: str, segment: SegmentData) -> StagedSegment:
        """Validate and keep a segment that `publish` may later make visible.

        Caller: the process that holds the KV (worker, or the session), any number of times
        per request, with staging ids unique per pool (the caller's request id plus a
        counter). Raises `PrivateTokenError` / `InvalidEntryError` (nothing kept) on a masked
        token, a wrong shape, dtype or length. Copies what it keeps; a store fault returns
        the handle anyway and `publish` later drops it (counted).
        """

    def staged_segment(self, scope: Scope, staging_id: str, token_ids: TokenArray
                       ) -> StagedSegment:
        """The handle of a segment staged (possibly by another process) under `staging_id`
        for exactly `token_ids`: how a scheduler names what its worker staged. Pure."""
        scope_tag = self.keys.scope_tag(scope.identity.digest(), scope.domain)
        return StagedSegment(staging_id, self.keys.entry_name(scope_tag, token_ids),
                             int(token_ids.shape[0]))

    @abc.abstractmethod
    def publish(self, scope: Scope, owner: str, staged: Sequence[StagedSegment]
                ) -> list[EntryName]:
        """Make staged segments visible in `scope.domain`; returns the names published.

        Caller: once per successful request, after it ended well. Consumes every staged
        segment whatever happens. A segment is dropped (not raised) when its staged bytes are
        gone or do not match the handle, when the tenant's or domain's quota is spent, when
        backpressure or the budget refuses it, or on a store fault; each drop is counted and
        audited. An entry already present is not written again (counted as a duplicate).
        """

    @abc.abstractmethod
    def discard(self, owner: str, staged: Sequence[StagedSegment], reason: str) -> None:
        """Drop staged segments of a request that did not succeed; audits `reason` (an
        exception class name or a short code, never a message). Never raises."""
