"""The Valkey backend's budget: use ranks, stored sizes and their total, kept on the server.

    cp:r   sorted set: entry name -> use rank (eviction.py)
    cp:z   hash: entry name -> bytes it counts against the budget
    cp:b   counter: the sum of cp:z

Every change is one Lua script (valkey_scripts.py), so processes sharing the server keep one
consistent account; a new entry is admitted and written by one script (`admit`), so concurrent
publishers never hold more than the budget between them. Entries the server removed by itself
(PX expiry, its maxmemory policy) stay counted until `make_room` meets them or `sweep` runs:
the total errs high, so the pool evicts early, never late. Calls raise redis errors; the
backend turns them into `MediumError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import redis

from cacheprune.pool.config import PoolConfig
from cacheprune.pool.valkey_scripts import ADMIT_ENTRY, FORGET_ENTRY, MAKE_ROOM, USE_ENTRIES
from cacheprune.retriever import EntryName

RANKS, SIZES, TOTAL = b"cp:r", b"cp:z", b"cp:b"
ENTRY_PREFIX = b"cp:e:"
_KEYS = [RANKS, SIZES, TOTAL]


@dataclass(slots=True, frozen=True)
class Share:
    """A share an entry counts against: the set of the entries it holds (`key`), its kind
    ("tenant" or "domain", for the eviction metric) and its limit in bytes."""

    key: bytes
    kind: str
    limit: int


def entry_key(name: EntryName) -> bytes:
    return ENTRY_PREFIX + name.encode()


class ValkeyBudget:
    """One process's calls on the server's budget account."""

    def __init__(self, client: redis.Redis, config: PoolConfig, clock: Callable[[], float]
                 ) -> None:
        self._config = config
        self._clock = clock
        self._use = client.register_script(USE_ENTRIES)
        self._admit = client.register_script(ADMIT_ENTRY)
        self._forget = client.register_script(FORGET_ENTRY)
        self._make_room = client.register_script(MAKE_ROOM)

    def use(self, names: list[EntryName], pipe: redis.client.Pipeline | None = None) -> None:
        """A use of each entry now (queued in `pipe` when given)."""
        config = self._config
        half_life = config.eviction_half_life_s if config.eviction_policy == "frequency" else 0
        self._use(keys=[RANKS], client=pipe,
                  args=[repr(self._clock()), repr(half_life), *names])

    def admit(self, name: EntryName, value: bytes, num_bytes: int, ttl_ms: int | None, *,
              leased: set[EntryName], shares: list[Share], member: str, created_at: float
              ) -> tuple[str | None, list[EntryName], list[tuple[EntryName, str]]]:
        """Write a new entry of `num_bytes` (what it counts), ranked now, if it is absent, if
        each of `shares` can make room for it by evicting its own unleased entries, and if
        unleased entries can be evicted, lowest rank first, until it fits in the budget; the
        checks and the write are one step on the server. `member` is the entry in the shares'
        sets (`<name>:<num tokens>`), scored `created_at`. Returns (None when written, else
        "duplicate", "budget" or "share:<kind>"; the names evicted for the budget; (name,
        kind) of those evicted for a share)."""
        config = self._config
        args: list[bytes | str | int] = [
            name, repr(self._clock()), num_bytes, config.budget_bytes, ENTRY_PREFIX,
            "".join(sorted(leased)), value, ttl_ms or 0, config.shared_bytes_per_token, member,
            repr(created_at)]
        for share in shares:
            args += [share.kind, share.limit]
        status, evicted, by_share = self._admit(
            keys=[*_KEYS, entry_key(name), *(share.key for share in shares)], args=args)
        pairs = [(EntryName(n.decode("ascii")), k.decode("ascii"))
                 for n, k in zip(by_share[::2], by_share[1::2], strict=True)]
        return status.decode("ascii") or None, _names(evicted), pairs

    def forget(self, name: EntryName) -> bool:
        """Delete the entry and uncount it; True if it existed."""
        return bool(self._forget(keys=[*_KEYS, entry_key(name)], args=[name]))

    def make_room(self, amount: int, *, relative: bool, leased: set[EntryName]
                  ) -> tuple[int, int, list[EntryName]]:
        """Evict unleased entries, lowest rank first, until the total is at most `amount`
        (`relative`: until `amount` bytes are freed). Returns (total, bytes freed, names
        evicted)."""
        total, freed, evicted = self._make_room(
            keys=_KEYS, args=[amount, "1" if relative else "0", ENTRY_PREFIX,
                              "".join(sorted(leased))])
        return int(total), int(freed), _names(evicted)

    def sweep(self, client: redis.Redis) -> None:
        """Uncount the entries the server expired or evicted by itself."""
        counted = [name for name in client.hkeys(SIZES) if isinstance(name, bytes)]
        pipe = client.pipeline(transaction=False)
        for name in counted:
            pipe.exists(ENTRY_PREFIX + name)
        for name, alive in zip(counted, pipe.execute(), strict=True):
            if not alive:  # the name as stored, whatever bytes it holds
                self._forget(keys=[*_KEYS, ENTRY_PREFIX + name], args=[name])


def _names(replies: list[bytes]) -> list[EntryName]:
    """Entry names as a script returned them (names we counted: 64 hex characters)."""
    return [EntryName(name.decode("ascii")) for name in replies]
