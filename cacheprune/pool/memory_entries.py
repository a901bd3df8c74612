"""The entries of a `memory://` pool and what the budget needs of them: the use order (eviction
policy), the publish order (TTL), the prefix index, and the bytes stored and doomed.

Not thread-safe: `MemoryPool` calls every method under its lock. Leases are the pool's; an
entry removed while leased is DOOMED (unfindable, its bytes still counted) until its last
lease is released (`free`).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator

from cacheprune.pool.audit import AuditEvent, AuditLog
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.entry import EntryState, PoolEntry
from cacheprune.pool.eviction import EvictionOrder
from cacheprune.pool.metrics import PoolMetrics
from cacheprune.retriever import EntryName, PrefixIndex


class MemoryEntries:
    """The visible entries, their orders and index, and the byte counts."""

    def __init__(self, config: PoolConfig, hash_base: int, metrics: PoolMetrics,
                 audit: AuditLog, clock: Callable[[], float],
                 on_change: Callable[[], None]) -> None:
        """`on_change()` is called after every removal (the pool updates its gauges)."""
        self.config = config
        self.index = PrefixIndex(config.min_entry_tokens, hash_base, config.anchor_stride)
        self.bytes_in_use = 0
        self.doomed_bytes = 0
        self._entries: OrderedDict[EntryName, PoolEntry] = OrderedDict()  # LRU first
        self._order = EvictionOrder(config.eviction_policy, config.eviction_half_life_s)
        # (publish time, name) in publish order, for TTL expiry; names, not entries, so that an
        # evicted entry's KV is not kept alive until its TTL would have run out.
        self._by_age: deque[tuple[float, EntryName]] = deque()
        self._metrics = metrics
        self._audit = audit
        self._clock = clock
        self._on_change = on_change

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[PoolEntry]:
        return iter(self._entries.values())

    def __contains__(self, name: EntryName) -> bool:
        return name in self._entries

    def get(self, name: EntryName) -> PoolEntry | None:
        return self._entries.get(name)

    def use(self, name: EntryName, now: float) -> PoolEntry:
        """A use of a visible entry now (a lookup's lease or a publish of it again)."""
        self._entries.move_to_end(name)
        self._order.use(name, now)
        return self._entries[name]

    def add(self, entry: PoolEntry) -> None:
        """Make a new entry visible, published now; the caller made room for it."""
        entry.created_at = self._clock()
        self._entries[entry.name] = entry
        self._order.use(entry.name, entry.created_at)
        self.index.add(entry.segment)
        if self.config.ttl_s is not None:
            self._by_age.append((entry.created_at, entry.name))
        self.bytes_in_use += entry.num_bytes
        assert self.bytes_in_use <= self.config.budget_bytes, "budget over-committed"

    def remove(self, entry: PoolEntry, reason: str) -> None:
        """Make the entry unfindable; its bytes are freed now, or at its last release."""
        del self._entries[entry.name]
        self._order.remove(entry.name)
        self.index.remove(entry.name)
        if entry.num_leases > 0:
            entry.state = EntryState.DOOMED
            self.doomed_bytes += entry.num_bytes
        else:
            self.free(entry)
        self._metrics.evictions.labels(reason=reason).inc()
        event: AuditEvent = "invalidate" if reason in ("invalidated", "erased") else "evict"
        self._audit.record(event, entry=entry.name, reason=reason,
                           tenant=entry.tenant_tag if reason == "erased" else None)
        self._on_change()

    def free(self, entry: PoolEntry) -> None:
        """Uncount a removed entry that no lease holds any more."""
        if entry.state is EntryState.DOOMED:
            self.doomed_bytes -= entry.num_bytes
        entry.state = EntryState.FREED
        self.bytes_in_use -= entry.num_bytes

    def evict(self, num_bytes: int) -> int:
        """Remove unleased entries, lowest use rank first, until `num_bytes` are freed."""
        if num_bytes <= 0:
            return 0
        victims, freed = [], 0
        candidates = self._order.lowest_first(lambda name: self._entries[name].num_leases == 0)
        for name in candidates:
            if freed >= num_bytes:
                break
            victims.append(self._entries[name])
            freed += victims[-1].num_bytes
        candidates.close()  # before removing: the order is not changed while it is walked
        for entry in victims:
            self.remove(entry, "budget")
        return freed

    def make_room_in_share(self, kind: str, tag: str, share: int, needed: int) -> bool:
        """Evict this tenant's (domain's) own unleased entries, lowest use rank first, until
        `needed` more bytes fit in its share; False if they cannot."""
        owned = sorted((entry for entry in self._entries.values()
                        if (entry.tenant_tag if kind == "tenant" else entry.domain_tag) == tag),
                       key=lambda entry: self._order.rank(entry.name) or 0.0)
        usage = sum(entry.num_bytes for entry in owned)
        for entry in owned:
            if usage + needed <= share:
                break
            if entry.num_leases == 0:
                self.remove(entry, f"share:{kind}")
                usage -= entry.num_bytes
        return usage + needed <= share

    def purge_expired(self) -> int:
        """Remove the entries past their TTL; returns how many."""
        ttl = self.config.ttl_s
        if ttl is None:
            return 0
        now = self._clock()
        num_expired = 0
        while self._by_age and self._by_age[0][0] + ttl <= now:
            created_at, name = self._by_age.popleft()
            entry = self._entries.get(name)
            if entry is not None and entry.created_at == created_at:
                self.remove(entry, "expired")
                num_expired += 1
        return num_expired
