"""One request's view of a pool, on the request half of the store interface (`RequestStore`) only.

    with store.session(request_id, scope, timeout_s=30) as s:
        matches = s.lookup(token_ids, private_mask)   # leases the matched entries
        kv = s.read(matches[0])                        # None: compute those tokens instead
        ...prefill...
        s.stage(token_ids, keys, values, positions, recompute, private_mask)
        ...decode...
        s.commit()                                     # the request succeeded

On leaving the block every lease is released, whatever happened. Staged segments are published
only if `commit()` was called, no exception escaped the block, `abort()` was not called and the
deadline had not passed; otherwise they are discarded and the rejection is audited.
NOTE: publishing waits for the block to exit (not for `commit()`), so an error raised after
`commit()` — in decode, say — still discards everything: a failed request never publishes.
"""

from __future__ import annotations

import enum
import re
import secrets
from collections.abc import Sequence
from types import TracebackType

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.pool.entry import SegmentKV
from cacheprune.pool.errors import (
    BelowThresholdError,
    PoolError,
    PromptTooLongError,
    SessionStateError,
    SessionTimeoutError,
)
from cacheprune.pool.handles import Lease, Scope, SegmentData, StagedSegment
from cacheprune.pool.request_store import RequestStore
from cacheprune.pool.threshold import CommonWindows, shareable_mask
from cacheprune.retriever import EntryName, Match
from cacheprune.tokens import MaskArray, as_mask_array, as_token_array

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class SessionState(enum.Enum):
    NEW = "new"
    OPEN = "open"
    PUBLISHED = "published"
    DISCARDED = "discarded"


def owner_name(request_id: str) -> str:
    """A name for this request's leases and staged segments, unique across the processes of a
    pool (request ids repeat between processes) and safe as a file or key name."""
    return f"{_UNSAFE.sub('_', request_id)[:64]}.{secrets.token_hex(8)}"


class PoolSession:
    """Request-scoped handle; create it with `PoolStore.session`, use it only inside `with`."""

    __slots__ = (
        "store", "request_id", "scope", "owner", "deadline", "state", "published",
        "discard_reason", "_leases", "_lease_of", "_staged", "_committed", "_abort_reason",
        "_common",
    )

    def __init__(self, store: RequestStore, request_id: str, scope: Scope,
                 timeout_s: float | None) -> None:
        self.store = store
        self.request_id = request_id
        self.scope = scope
        self.owner = owner_name(request_id)
        self.deadline = None if timeout_s is None else store.clock() + timeout_s
        self.state = SessionState.NEW
        self.published: list[EntryName] = []
        self.discard_reason: str | None = None
        # Every lease taken (released on exit), and which one serves each match: a second
        # lookup of the same tokens returns equal matches with leases of their own.
        self._leases: list[Lease] = []
        self._lease_of: dict[Match, Lease] = {}
        self._staged: list[StagedSegment] = []
        self._committed = False
        self._abort_reason: str | None = None
        # What the publication threshold found common in this request (None: not counted).
        self._common: CommonWindows | None = None

    def __enter__(self) -> PoolSession:
        if self.state is not SessionState.NEW:
            raise SessionStateError(f"session {self.request_id!r} can be entered only once")
        self.state = SessionState.OPEN
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        staged, self._staged = self._staged, []
        try:
            reason = self._discard_reason(exc_type)
        finally:
            leases, self._leases = self._leases, []
            self._lease_of.clear()
            self.store.release(leases)
        if reason is None:
            self.published = self.store.publish(self.scope, self.owner, staged)
            self.state = SessionState.PUBLISHED
        else:
            self.discard_reason = reason
            self.state = SessionState.DISCARDED
            # A read-only request that simply never committed rejected nothing worth auditing.
            if staged or reason != "not_committed":
                self.store.discard(self.owner, staged, reason)

    def _discard_reason(self, exc_type: type[BaseException] | None) -> str | None:
        # Exception class names only: messages may quote the prompt.
        if exc_type is not None:
            return f"exception:{exc_type.__name__}"
        if self._abort_reason is not None:
            return f"aborted:{self._abort_reason}"
        if self._is_past_deadline():
            return "timeout"
        if not self._committed:
            return "not_committed"
        return None

    def _is_past_deadline(self) -> bool:
        return self.deadline is not None and self.store.clock() >= self.deadline

    def _check_open(self, action: str) -> None:
        if self.state is not SessionState.OPEN:
            raise SessionStateError(
                f"cannot {action}: session {self.request_id!r} is {self.state.value}; "
                "use it inside `with store.session(...) as s:`"
            )
        if self._is_past_deadline():
            raise SessionTimeoutError(f"session {self.request_id!r} passed its deadline")

    def lookup(
        self,
        token_ids: Sequence[int] | npt.NDArray[np.integer],
        private_mask: Sequence[bool] | npt.NDArray[np.bool_],
        declared_public: Sequence[bool] | npt.NDArray[np.bool_] | None = None,
    ) -> list[Match]:
        """Matches for the request's non-private tokens; each matched entry is leased.

        Under a publication threshold (`config.publish_threshold` > 1) the request is first
        counted as a sender of its windows, and only the tokens that common windows cover are
        looked up (and may later be staged, `shareable_runs`). `declared_public` flags tokens
        the operator declared public: a window wholly inside them is common uncounted."""
        self._check_open("look up")
        tokens = as_token_array(token_ids)
        mask = as_mask_array(private_mask, tokens.shape[0])
        max_tokens = self.store.config.max_context_tokens
        if tokens.shape[0] > max_tokens:
            raise PromptTooLongError(
                f"prompt has {tokens.shape[0]} tokens, the pool's maximum context is {max_tokens}"
            )
        if self.store.config.publish_threshold > 1:
            declared = (None if declared_public is None
                        else as_mask_array(declared_public, tokens.shape[0]))
            self._common = self.store.threshold.record(self.scope, tokens, mask, declared)
        if self._common is not None:
            mask = mask | ~self._common.shareable
        result = self.store.lookup(self.scope, self.owner, tokens, mask)
        self._leases.extend(result.leases)
        self._lease_of.update(zip(result.matches, result.leases, strict=True))
        return result.matches

    def read(self, match: Match) -> SegmentKV | None:
        """K, V, positions and recompute marks of `match`'s part of its entry, or None when the
        entry went away or failed its checks since the lookup: compute those tokens then."""
        self._check_open("read")
        lease = self._lease_of.get(match)
        if lease is None:
            raise SessionStateError(f"match {match} was not returned by this session's lookup")
        return self.store.read(lease, match)

    def stage(
        self,
        token_ids: Sequence[int] | npt.NDArray[np.integer],
        keys: torch.Tensor,
        values: torch.Tensor,
        positions: Sequence[int] | npt.NDArray[np.integer],
        recompute: Sequence[bool] | npt.NDArray[np.bool_],
        private_mask: Sequence[bool] | npt.NDArray[np.bool_],
    ) -> EntryName:
        """Validate and copy a segment to publish if the request succeeds; returns its name.

        Raises (staging nothing) on a private token, a wrong shape/dtype or length.
        """
        self._check_open("stage")
        if self._committed:
            raise SessionStateError(f"session {self.request_id!r} already committed")
        if self.store.config.publish_threshold > 1:
            tokens = as_token_array(token_ids)
            if self.shareable_runs(tokens, 1) != [(0, int(tokens.shape[0]))]:
                raise BelowThresholdError(
                    f"session {self.request_id!r}: the segment holds tokens that fewer than "
                    f"{self.store.config.publish_threshold} tenants sent (stage only what "
                    "shareable_runs returns, after a lookup)")
        segment = SegmentData(token_ids, keys, values, positions, recompute, private_mask)
        staging_id = f"{self.owner}.{len(self._staged)}"
        try:
            staged = self.store.stage(self.scope, staging_id, segment)
        except PoolError as error:
            self.store.discard(self.owner, [], f"refused:{type(error).__name__}")
            raise
        self._staged.append(staged)
        return staged.entry

    @property
    def counted(self) -> CommonWindows | None:
        """What the publication threshold found common when this session looked up (None:
        nothing counted, or no threshold), for `carry_count`."""
        return self._common

    def carry_count(self, counted: CommonWindows | None) -> None:
        """Take the count that another session of the same request made when it looked up
        (its `counted`): for a session that publishes what another looked up (the vLLM
        connector's), so that the request's windows are counted once. None under a threshold
        leaves nothing shareable."""
        self._check_open("carry a count")
        if counted is not None:
            scope_tag = self.store.threshold.keys.scope_tag(self.scope.identity.digest(),
                                                            self.scope.domain)
            if counted.threshold is not self.store.threshold or counted.scope_tag != scope_tag:
                raise SessionStateError(f"session {self.request_id!r}: the count carried was "
                                        "made by another pool or for another scope")
        self._common = counted

    def shareable_runs(self, token_ids: Sequence[int] | npt.NDArray[np.integer],
                       min_tokens: int) -> list[tuple[int, int]]:
        """[start, end) of each run of at least `min_tokens` tokens of a segment cut from what
        this session looked up that the publication threshold lets it publish: the whole
        segment without a threshold, nothing before a lookup counted it (or a count was
        carried)."""
        tokens = as_token_array(token_ids)
        if self.store.config.publish_threshold == 1:
            num_tokens = int(tokens.shape[0])
            return [(0, num_tokens)] if num_tokens >= min_tokens else []
        if self._common is None:
            return []
        return self._common.shareable_runs(tokens, min_tokens)

    def shareable_mask(self, num_tokens: int) -> MaskArray | None:
        """Which of the `num_tokens` tokens this session looked up the publication threshold
        lets it publish (covered by windows k tenants sent); None without a threshold; none
        before a lookup counted them."""
        return shareable_mask(self._common, self.store.config.publish_threshold, num_tokens)

    def commit(self) -> None:
        """Declare the request successful: staged segments are published when the block exits."""
        self._check_open("commit")
        self._committed = True

    def abort(self, reason: str) -> None:
        """Reject the request without raising: nothing staged will be published."""
        self._check_open("abort")
        self._abort_reason = reason

    @property
    def num_staged(self) -> int:
        return len(self._staged)
