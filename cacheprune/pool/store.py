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
from collections.abc import Callable

from cacheprune.pool.entry import EntryInfo
from cacheprune.pool.handles import Scope
from cacheprune.pool.request_store import RequestStore
from cacheprune.pool.session import PoolSession
from cacheprune.retriever import EntryName
from cacheprune.tokens import TokenIds


class PoolStore(RequestStore):
    """The whole contract every backend keeps: the request half (`RequestStore`), sessions over
    it, administration and inspection. Thread-safe; one handle per process per pool."""

    def session(self, request_id: str, scope: Scope, *, timeout_s: float | None = None
                ) -> PoolSession:
        """A request's handle: `with store.session(...) as s: ...; s.commit()`.

        Called once per request by the serving engine. Raises `PoolConfigError` if the scope's
        KV layout is not this store's. No side effect until the session is used.
        """
        self.check_scope(scope)
        return PoolSession(self, request_id, scope, timeout_s)

    # ---- administration ------------------------------------------------------------------

    @abc.abstractmethod
    def invalidate(self, entry: EntryName) -> bool:
        """Remove one entry now (a leased one becomes unreadable at once and is freed when
        released); False if there is no such entry. Audited."""

    @abc.abstractmethod
    def invalidate_where(self, predicate: Callable[[EntryInfo], bool]) -> int:
        """Remove every entry the predicate selects (it sees `EntryInfo`, never tokens or KV);
        if it raises, nothing is removed and the error propagates. Returns the count."""

    @abc.abstractmethod
    def erase_tenant(self, tenant: str) -> int:
        """Remove every entry `tenant` published, in every domain, and the sender marks it
        left for the publication threshold; returns the count of entries. Audited with the
        tenant's keyed hash only."""

    @abc.abstractmethod
    def evict(self, num_bytes: int) -> int:
        """Free at least `num_bytes` of unleased entries, lowest use rank first (eviction.py),
        if there are that many; returns the bytes freed. Publishing evicts the same way when
        the budget is full."""

    @abc.abstractmethod
    def purge_expired(self) -> int:
        """Remove entries older than `config.ttl_s` (and stale staging/lease leftovers of
        processes that died); returns the entries removed."""

    # ---- inspection ----------------------------------------------------------------------

    @abc.abstractmethod
    def entry_infos(self) -> list[EntryInfo]:
        """Provenance of every visible entry (identity, length, age, tenant tag)."""

    @abc.abstractmethod
    def stored_token_ids(self) -> list[TokenIds]:
        """Token ids of every visible entry: for audits and the leakage evaluation only."""

    @property
    @abc.abstractmethod
    def num_entries(self) -> int: ...

    @property
    @abc.abstractmethod
    def bytes_in_use(self) -> int: ...

    @property
    @abc.abstractmethod
    def bytes_per_token(self) -> int:
        """What one pooled token counts against `budget_bytes` here: float32 K and V on
        memory://, `kv_storage_dtype` on the shared backends; plus 13 bytes of bookkeeping."""

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
