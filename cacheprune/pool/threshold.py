"""The publication threshold: a stretch of non-private tokens is looked up and published only
once `publish_threshold` (k) distinct tenants of its sharing domain have sent it.

Detection is the first line of privacy, never a perfect one: a value the detectors miss is
non-private to the pool. The threshold is the second line. Every request that searches the pool
records its windows (every run of `min_entry_tokens` non-private tokens) as sent by its tenant;
a window is *common* once k distinct tenants sent exactly its tokens within
`sender_count_ttl_s`, the reader included. A token is shareable when a common window covers it;
everything else is computed as for a first request, and never published. A value one tenant
typed therefore stays out of the pool unless k tenants typed it in the same context.

One attacker account adds one tenant to a window it probes: with the victim that makes 2, so
k = 3 leaves it nothing to learn (docs/privacy.md; accounts under one control are the
operator's to stop).

What the store keeps (`SenderCountStore`), on every backend: per keyed window id (`PoolKeys.
window_ids`, unpredictable without the pool key), up to `cap` sender marks with the time each
was last renewed. A mark is AES of (tenant tag, window id): no text, no raw ids, unlinkable
across windows, and a mark that was forged or copied from another window does not count
(`PoolKeys.mark_senders`). Operator-declared public tokens are exempt: a window wholly inside
them is common without being counted.
"""

from __future__ import annotations

import abc
import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cacheprune.pool.config import PoolConfig
from cacheprune.pool.handles import Scope
from cacheprune.pool.keys import PoolKeys
from cacheprune.pool.metrics import PoolMetrics
from cacheprune.retriever import window_hashes
from cacheprune.tokens import MaskArray, TokenArray, true_runs

# Marks a window keeps at most: beyond k, more only help against marks planted by a writer
# without the key (they take room but never count).
CAP_PER_THRESHOLD = 4
# Windows a store keeps at most, per token the pool's budget holds (a window per token), and
# never fewer than MIN_WINDOWS; the least recently sent are forgotten first (a forgotten window
# is only less common: a miss, never a leak).
WINDOWS_PER_BUDGET_TOKEN = 16
MIN_WINDOWS = 100_000

# (window id of each mark, the marks) -> which of them to remove
SelectMarks = Callable[[npt.NDArray[np.uint64], list[bytes]], MaskArray]
# What a store answers in place of a missing mark: never a mark (a mark is an AES block whose
# second half must equal its window id; this one's would be zero only by a 2^-64 chance).
PAD = bytes(16)
Guard = Callable[[str, Callable[[], list[list[bytes]]], list[list[bytes]]], list[list[bytes]]]


class SenderCountStore(abc.ABC):
    """Where a backend keeps sender marks; the same semantics on every backend."""

    @abc.abstractmethod
    def add_and_read(self, window_ids: npt.NDArray[np.uint64], marks: Sequence[bytes],
                     now: float, ttl_s: float, cap: int, max_windows: int, read: int
                     ) -> list[list[bytes]]:
        """For each window: forget marks older than `ttl_s`, add or renew `marks[i]` unless
        the window already holds `cap` others, and return `read` of the window's marks at most,
        the least recently renewed first (a store answering over a wire pads each window to
        exactly `read` with `PAD`). Keeps about `max_windows` windows at most (the least
        recently sent go first; a server with its own memory policy may ignore it). Raises
        only `MediumError`/`OSError` (the caller counts nothing common then)."""

    @abc.abstractmethod
    def forget(self, select: SelectMarks) -> int:
        """Remove every mark `select` flags (given, batch by batch, each mark's window id and
        bytes); returns how many. Raises `MediumError`/`OSError` when the store fails."""


class MemorySenderCounts(SenderCountStore):
    """In one process: window id -> {mark: last renewed}, least recently sent first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._windows: OrderedDict[int, dict[bytes, float]] = OrderedDict()

    def add_and_read(self, window_ids: npt.NDArray[np.uint64], marks: Sequence[bytes],
                     now: float, ttl_s: float, cap: int, max_windows: int, read: int
                     ) -> list[list[bytes]]:
        oldest = now - ttl_s
        found = []
        with self._lock:
            for window_id, mark in zip(window_ids.tolist(), marks, strict=True):
                senders = self._windows.setdefault(window_id, {})
                self._windows.move_to_end(window_id)
                stale = [m for m, renewed in senders.items() if renewed < oldest]
                for old in stale:
                    del senders[old]
                if mark in senders or len(senders) < cap:
                    senders[mark] = now
                found.append(sorted(senders, key=senders.__getitem__)[:read])
            while len(self._windows) > max_windows:
                self._windows.popitem(last=False)
        return found

    def forget(self, select: SelectMarks) -> int:
        with self._lock:
            held = [(window_id, mark) for window_id, senders in self._windows.items()
                    for mark in senders]
            if not held:
                return 0
            window_ids = np.fromiter((w for w, _ in held), dtype=np.uint64, count=len(held))
            chosen = select(window_ids, [mark for _, mark in held])
            for window_id, mark in itertools.compress(held, chosen):
                del self._windows[window_id][mark]
            return int(chosen.sum())


@dataclass(slots=True, frozen=True)
class CommonWindows:
    """What one request's count found: which of its windows k tenants have sent.

    `shareable` flags the request's tokens a common window covers (the rest are neither
    looked up nor published); `common_ids` holds the keyed ids of the common windows, so that
    a segment cut from this request can be checked (`shareable_runs`) without counting again.
    """

    threshold: PublicationThreshold
    scope_tag: str
    shareable: MaskArray
    common_ids: frozenset[int]

    def shareable_runs(self, token_ids: TokenArray, min_tokens: int) -> list[tuple[int, int]]:
        """[start, end) of each run of at least `min_tokens` tokens of a segment that common
        windows lying wholly inside the segment cover."""
        num_tokens = int(token_ids.shape[0])
        window = self.threshold.window
        if num_tokens < window:
            return []
        starts, ids = self.threshold.window_ids(self.scope_tag, token_ids,
                                                np.zeros(num_tokens, dtype=np.bool_))
        common = np.fromiter((int(i) in self.common_ids for i in ids.tolist()), dtype=np.bool_,
                             count=ids.shape[0])
        covered = cover(starts[common], window, num_tokens)
        return [(start, end) for start, end in true_runs(covered) if end - start >= min_tokens]


class PublicationThreshold:
    """Counts the tenants that sent each window, and says which tokens are shareable."""

    def __init__(self, config: PoolConfig, keys: PoolKeys, counts: SenderCountStore,
                 metrics: PoolMetrics, clock: Callable[[], float], guard: Guard) -> None:
        self.k = config.publish_threshold
        self.window = config.min_entry_tokens
        self.ttl_s = config.sender_count_ttl_s
        budget_tokens = config.budget_bytes // config.kv_shape.entry_bytes_per_token
        self.max_windows = max(MIN_WINDOWS, WINDOWS_PER_BUDGET_TOKEN * budget_tokens)
        self.keys = keys
        self.counts = counts
        self.metrics = metrics
        self.clock = clock
        self.guard = guard

    def window_ids(self, scope_tag: str, token_ids: TokenArray, private_mask: MaskArray
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """Start and keyed id of every window of `token_ids` free of private tokens."""
        hashes, is_valid = window_hashes(token_ids, private_mask, self.window,
                                         self.keys.hash_base)
        starts = np.flatnonzero(is_valid).astype(np.int64)
        return starts, self.keys.window_ids(scope_tag, hashes[starts])

    def record(self, scope: Scope, token_ids: TokenArray, private_mask: MaskArray,
               declared_public: MaskArray | None = None) -> CommonWindows:
        """Count `scope.tenant` as a sender of each window of the request, and find the
        common ones. Idempotent for one tenant (a retry or a second process of the same
        request counts once). A store fault leaves only declared-public windows common."""
        scope_tag = self.keys.scope_tag(scope.identity.digest(), scope.domain)
        num_tokens = int(token_ids.shape[0])
        starts, ids = self.window_ids(scope_tag, token_ids, private_mask)
        declared = np.zeros(starts.shape[0], dtype=np.bool_)
        if declared_public is not None and declared_public.any():
            inside = cover_counts(declared_public, self.window)
            declared = inside[starts] == self.window
        counted = ~declared
        common = declared.copy()
        if counted.any():
            common[counted] = self._common(scope, ids[counted])
        shareable = cover(starts[common], self.window, num_tokens)
        num_public = int((~private_mask).sum())
        self.metrics.below_threshold_tokens.inc(num_public - int(shareable.sum()))
        return CommonWindows(self, scope_tag, shareable,
                             frozenset(int(i) for i in ids[common].tolist()))

    def forget_tenant(self, tenant: str) -> int:
        """Remove every mark `tenant` left, on every window (erasure: a window it sent then
        counts one sender fewer at once, not only once its marks expire); returns how many.
        Reads every mark in the store; a store failure raises (`MediumError`/`OSError`)."""
        sender = np.uint64(int(self.keys.tenant_tag(tenant)[:16], 16))

        def of_tenant(window_ids: npt.NDArray[np.uint64], marks: list[bytes]) -> MaskArray:
            return self.keys.mark_senders(marks, window_ids) == sender

        forgotten = self.counts.forget(of_tenant)
        self.metrics.erased_senders.inc(forgotten)
        return forgotten

    def _common(self, scope: Scope, window_ids: npt.NDArray[np.uint64]) -> MaskArray:
        tenant_tag = self.keys.tenant_tag(scope.tenant)
        marks = self.keys.sender_marks(tenant_tag, window_ids)
        cap = CAP_PER_THRESHOLD * self.k
        found = self.guard("count_senders", lambda: self.counts.add_and_read(
            window_ids, marks, self.clock(), self.ttl_s, cap, self.max_windows, self.k), [])
        if len(found) != window_ids.shape[0]:
            return np.zeros(window_ids.shape[0], dtype=np.bool_)  # the store did not answer
        # NOTE: exactly k marks per window are checked, padded where fewer came back: the
        # count's time must not tell a prober how many tenants sent the text it guessed
        # (docs/privacy.md). k genuine marks out of the k read make a window common; a mark
        # planted without the key can only take a place and make it less common.
        read = [[m for m in window if isinstance(m, bytes) and len(m) == 16][:self.k]
                for window in found]
        flat = [m for window in read for m in window + [PAD] * (self.k - len(window))]
        senders = self.keys.mark_senders(flat, np.repeat(window_ids, self.k))
        genuine = senders != 0
        padded = np.fromiter((m == PAD for m in flat), dtype=np.bool_, count=len(flat))
        self.metrics.forged_senders.inc(int((~genuine & ~padded).sum()))
        # NOTE: a tenant's mark on a window is always the same 16 bytes and a window holds a
        # set of marks, so its genuine marks are its distinct senders.
        return genuine.reshape(-1, self.k).sum(axis=1) >= self.k


def shareable_mask(counted: CommonWindows | None, publish_threshold: int,
                   num_tokens: int) -> MaskArray | None:
    """Which of the `num_tokens` tokens a request looked up the publication threshold lets it
    publish, from its count (`counted`): None without a threshold (k = 1), none before a
    lookup counted them."""
    if publish_threshold == 1:
        return None
    if counted is None:
        return np.zeros(num_tokens, dtype=np.bool_)
    if counted.shareable.shape != (num_tokens,):
        raise ValueError(f"the count covers {counted.shareable.shape[0]} tokens, not "
                         f"{num_tokens}")
    return counted.shareable


def cover(starts: npt.NDArray[np.int64], window: int, num_tokens: int) -> MaskArray:
    """Tokens that at least one window [start, start + window) covers."""
    edges = np.zeros(num_tokens + 1, dtype=np.int64)
    np.add.at(edges, starts, 1)
    np.add.at(edges, starts + window, -1)
    return np.cumsum(edges[:-1]) > 0


def cover_counts(mask: MaskArray, window: int) -> npt.NDArray[np.int64]:
    """For each start p, how many of tokens [p, p + window) are flagged in `mask`."""
    sums = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
    ends = np.minimum(np.arange(mask.shape[0]) + window, mask.shape[0])
    return sums[ends] - sums[:-1]
