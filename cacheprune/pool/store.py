"""The pool's store interface: one contract, three backends chosen by URL (`open_pool`).

    memory://                      one process (a dict and an in-process index)
    file:///dev/shm/cacheprune     the processes of one machine (a folder, 0700, owned by us)
    redis://host:6379/0            Valkey or Redis, shared across machines
    unix:///run/valkey.sock        the same over a unix socket

Every backend has the same segment semantics: entries are found anywhere in a prompt by
rolling-hash anchors (the retriever's windows of `min_entry_tokens`), every match is confirmed
by a keyed SHA-256 over the reader's own tokens, and the non-overlapping cover with the most
tokens is chosen (`cacheprune.retriever.find_matches`).

Requests use a store through `PoolStore.session` (see `session.py`): every exit releases the
request's leases and nothing is published unless the request committed. The methods below are
public so that a caller split across processes (the vLLM connector) can do the same steps
itself; they never call each other's private state.

Which process calls what (vLLM V1 runs its scheduler and its workers in separate processes;
both open the pool with the same URL and pool key):
- scheduler process: `lookup` (leases), `release`, `staged_segment` + `publish` / `discard`
  when a request ends, and the admin calls (`invalidate*`, `erase_tenant`, `evict`,
  `purge_expired`, `metrics_text`);
- worker process: `read` (with a `Lease` the scheduler sent in its step metadata) before the
  forward pass, `stage` after it (with a staging id the scheduler chose).
`Lease` and `StagedSegment` are small frozen dataclasses: picklable, safe to send between
processes. With `memory://` both sides must live in one process (the store is a Python object).

Failure contract, on every backend:
- Bad input from the caller (wrong shapes, a private token staged, a prompt longer than the
  context) raises a `PoolError` subclass naming what is wrong, and changes nothing.
- Anything that goes wrong in the store (server gone, entry gone, expired, corrupt, written by a
  process without the key, another identity) is never raised into a request: a lookup finds
  nothing, a read returns None (the caller computes those tokens), a publish is dropped. Each
  such event increments a metric (`store_errors{op}`, `read_misses{reason}`) and, where it
  concerns an entry, writes an audit line.

Identity of an entry: `EntryIdentity` (model weights + config + tokenizer, detector policy
version, KV layout, dtype). A reader uses an entry only if its identity is byte-for-byte the
reader's. Tenants and sharing domains are per session (`Scope`): an entry is found only in the
sharing domain it was published in, and records its publishing tenant as a keyed hash.
"""

from __future__ import annotations

import abc
import hashlib
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.pool.config import KVShape, PoolConfig
from cacheprune.pool.entry import EntryInfo, SegmentKV
from cacheprune.retriever.identity import SegmentHash
from cacheprune.retriever.matching import Match
from cacheprune.tokens import MaskArray, TokenArray

if TYPE_CHECKING:
    from cacheprune.pool.keys import PoolKeys
    from cacheprune.pool.metrics import PoolMetrics
    from cacheprune.pool.session import PoolSession

DEFAULT_DOMAIN = "default"
KV_DTYPE = "float32"


def kv_layout(shape: KVShape) -> str:
    """The layout string of the dense K/V the pool stores: [layers, kv heads, tokens, dim]."""
    return f"layers,kv_heads,tokens,head_dim:{shape.num_layers}x{shape.num_kv_heads}x" \
           f"{shape.head_dim}"


@dataclass(slots=True, frozen=True)
class EntryIdentity:
    """What produced an entry's KV; a reader uses an entry only if this is exactly its own.

    `model_id` must cover the weights, the config (RoPE, norms, ...) and the tokenizer
    (`cacheprune.models.sources.model_identity`); `kv_layout` comes from `kv_layout(shape)`.
    """

    model_id: str
    policy_version: str
    kv_layout: str
    dtype: str = KV_DTYPE

    @classmethod
    def for_shape(cls, model_id: str, policy_version: str, shape: KVShape) -> EntryIdentity:
        return cls(model_id, policy_version, kv_layout(shape), KV_DTYPE)

    def digest(self) -> str:
        """SHA-256 over the length-prefixed fields (unambiguous, no pickle)."""
        digest = hashlib.sha256(b"cacheprune/identity/v2\x00")
        for text in (self.model_id, self.policy_version, self.kv_layout, self.dtype):
            encoded = text.encode("utf-8")
            digest.update(struct.pack("<I", len(encoded)))
            digest.update(encoded)
        return digest.hexdigest()


@dataclass(slots=True, frozen=True)
class Scope:
    """Who asks and for what: one request's identity, tenant and sharing domain.

    `tenant` and `domain` are never stored or logged in clear: entries and audit lines carry
    keyed hashes of them (`PoolKeys.tenant_tag`).
    """

    identity: EntryIdentity
    tenant: str
    domain: str = DEFAULT_DOMAIN

    def __post_init__(self) -> None:
        if not self.tenant:
            raise ValueError("Scope.tenant must be a non-empty string")
        if not self.domain:
            raise ValueError("Scope.domain must be a non-empty string")


@dataclass(slots=True, frozen=True)
class Lease:
    """A leased entry, as `lookup` returns it: picklable, valid until `release`.

    `entry` is the entry's keyed name; `owner` the request that holds it; `locator` a
    backend-specific hint (the header length of a shared entry), never a path to follow.
    """

    entry: SegmentHash
    owner: str
    num_tokens: int
    locator: int = 0


@dataclass(slots=True, frozen=True)
class LookupResult:
    """Matches in request order and one lease per match (`leases[i]` holds `matches[i]`)."""

    matches: list[Match] = field(default_factory=list)
    leases: list[Lease] = field(default_factory=list)

    @property
    def num_matched_tokens(self) -> int:
        return sum(match.length for match in self.matches)


@dataclass(slots=True, frozen=True)
class SegmentData:
    """One segment a request offers to the pool, before validation (see `PoolStore.stage`)."""

    token_ids: Sequence[int] | npt.NDArray[np.integer]
    keys: torch.Tensor  # float32 [num_layers, num_kv_heads, num_tokens, head_dim]
    values: torch.Tensor
    positions: Sequence[int] | npt.NDArray[np.integer]  # where the KV was computed (RoPE)
    recompute: Sequence[bool] | npt.NDArray[np.bool_]
    private_mask: Sequence[bool] | npt.NDArray[np.bool_]  # any True is refused


@dataclass(slots=True, frozen=True)
class StagedSegment:
    """A validated segment waiting for `publish` or `discard`: picklable."""

    staging_id: str
    entry: SegmentHash  # the name it will have once published
    num_tokens: int


class PoolStore(abc.ABC):
    """The contract every backend keeps. Thread-safe; one handle per process per pool.

    Attributes: `config` (the `PoolConfig` it was opened with), `metrics` (Prometheus
    registry private to this handle), `url` (the URL with any password removed), `clock`
    (seconds: TTL and session deadlines; wall clock on shared backends).
    """

    config: PoolConfig
    metrics: PoolMetrics
    url: str
    clock: Callable[[], float]
    keys: PoolKeys  # names and tags under this pool's key (`PoolKeys.entry_name`, ...)

    # ---- requests ------------------------------------------------------------------------

    def session(self, request_id: str, scope: Scope, *, timeout_s: float | None = None
                ) -> PoolSession:
        """A request's handle: `with store.session(...) as s: ...; s.commit()`.

        Called once per request by the serving engine. Raises `PoolConfigError` if the scope's
        KV layout is not this store's. No side effect until the session is used.
        """
        from cacheprune.pool.session import PoolSession

        self.check_scope(scope)
        return PoolSession(self, request_id, scope, timeout_s)

    def check_scope(self, scope: Scope) -> None:
        """Raise `PoolConfigError` unless `scope`'s layout and dtype are what this store holds."""
        from cacheprune.pool.errors import PoolConfigError

        expected = kv_layout(self.config.kv_shape)
        if (scope.identity.kv_layout, scope.identity.dtype) != (expected, KV_DTYPE):
            raise PoolConfigError(
                f"this pool stores {KV_DTYPE} KV laid out as {expected}; the request's identity "
                f"says {scope.identity.dtype} {scope.identity.kv_layout}")

    @abc.abstractmethod
    def lookup(self, scope: Scope, owner: str, token_ids: TokenArray, private_mask: MaskArray
               ) -> LookupResult:
        """Reusable parts of a prompt, each leased for `owner`.

        Caller: the scheduler (or `PoolSession.lookup`), once per request (again after a
        preemption, after releasing the previous leases). `token_ids` is at most
        `config.max_context_tokens` long (checked by the caller); private tokens are never
        hashed, compared or matched. Side effects: one lease per returned match, LRU touch,
        hit/miss counters, one `reuse` audit line per match. A store fault returns an empty
        result (counted), never raises.
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
                ) -> list[SegmentHash]:
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

    # ---- administration ------------------------------------------------------------------

    @abc.abstractmethod
    def invalidate(self, entry: SegmentHash) -> bool:
        """Remove one entry now (a leased one becomes unreadable at once and is freed when
        released); False if there is no such entry. Audited."""

    @abc.abstractmethod
    def invalidate_where(self, predicate: Callable[[EntryInfo], bool]) -> int:
        """Remove every entry the predicate selects (it sees `EntryInfo`, never tokens or KV);
        if it raises, nothing is removed and the error propagates. Returns the count."""

    @abc.abstractmethod
    def erase_tenant(self, tenant: str) -> int:
        """Remove every entry `tenant` published, in every domain; returns the count.
        Audited with the tenant's keyed hash only."""

    @abc.abstractmethod
    def evict(self, num_bytes: int) -> int:
        """Free at least `num_bytes` of unleased entries, least recently used first, if there
        are that many; returns the bytes freed. Publishing calls it when the budget is full."""

    @abc.abstractmethod
    def purge_expired(self) -> int:
        """Remove entries older than `config.ttl_s` (and stale staging/lease leftovers of
        processes that died); returns the entries removed."""

    # ---- inspection ----------------------------------------------------------------------

    @abc.abstractmethod
    def entry_infos(self) -> list[EntryInfo]:
        """Provenance of every visible entry (identity, length, age, tenant tag)."""

    @abc.abstractmethod
    def stored_token_ids(self) -> list[TokenArray]:
        """Token ids of every visible entry: for audits and the leakage evaluation only."""

    @property
    @abc.abstractmethod
    def num_entries(self) -> int: ...

    @property
    @abc.abstractmethod
    def bytes_in_use(self) -> int: ...

    @property
    @abc.abstractmethod
    def num_leases(self) -> int:
        """Leases this handle holds now (all backends count their own leases)."""

    @property
    @abc.abstractmethod
    def leased_bytes(self) -> int: ...

    def metrics_text(self) -> str:
        """This handle's metrics in the Prometheus text format."""
        return self.metrics.text()

    @abc.abstractmethod
    def close(self) -> None:
        """Close files and connections; the handle is unusable afterwards."""
