"""One request's view of the pool: leases what it looks up, stages what it may publish.

    with pool.session(request_id, model_id, policy_version, timeout_s=30) as s:
        matches = s.lookup(token_ids, private_mask)   # leases the matched entries
        kv = s.read(matches[0])                        # the matched part, at its old positions
        ...prefill...
        s.stage(token_ids, keys, values, positions, recompute, private_mask)
        ...decode...
        s.commit()                                     # the request succeeded

On leaving the block every lease is released, whatever happened. Staged entries are published
only if `commit()` was called, no exception escaped the block, `abort()` was not called and the
deadline had not passed; otherwise they are discarded and the rejection is audited.
NOTE: publishing waits for the block to exit (not for `commit()`), so an error raised after
`commit()` — in decode, say — still discards everything: a failed request never publishes.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.pool.entry import EntryState, PoolEntry, SegmentKV, build_entry
from cacheprune.pool.errors import (
    EntryInvalidatedError,
    PoolError,
    PromptTooLongError,
    SessionStateError,
    SessionTimeoutError,
)
from cacheprune.retriever.identity import SegmentHash
from cacheprune.retriever.matching import Match
from cacheprune.tokens import as_mask_array, as_token_array

if TYPE_CHECKING:
    from cacheprune.pool.pool import KVPool


class SessionState(enum.Enum):
    NEW = "new"
    OPEN = "open"
    PUBLISHED = "published"
    DISCARDED = "discarded"


class PoolSession:
    """Request-scoped handle; create it with `KVPool.session`, use it only inside `with`."""

    __slots__ = (
        "pool", "request_id", "model_id", "policy_version", "deadline", "state",
        "published", "discard_reason", "_leased", "_matches", "_staged", "_committed",
        "_abort_reason",
    )

    def __init__(
        self, pool: KVPool, request_id: str, model_id: str, policy_version: str,
        deadline: float | None,
    ) -> None:
        self.pool = pool
        self.request_id = request_id
        self.model_id = model_id
        self.policy_version = policy_version
        self.deadline = deadline
        self.state = SessionState.NEW
        self.published: list[SegmentHash] = []
        self.discard_reason: str | None = None
        self._leased: list[PoolEntry] = []
        self._matches: dict[Match, PoolEntry] = {}
        self._staged: list[PoolEntry] = []
        self._committed = False
        self._abort_reason: str | None = None

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
            leased, self._leased = self._leased, []
            self._matches.clear()
            self.pool._release(leased)
        if reason is None:
            self.published = self.pool._publish(self.request_id, staged)
            self.state = SessionState.PUBLISHED
        else:
            self.discard_reason = reason
            self.state = SessionState.DISCARDED
            # A read-only request that simply never committed rejected nothing worth auditing.
            if staged or reason != "not_committed":
                self.pool._reject(self.request_id, staged, reason)

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
        return self.deadline is not None and self.pool._now() >= self.deadline

    def _check_open(self, action: str) -> None:
        if self.state is not SessionState.OPEN:
            raise SessionStateError(
                f"cannot {action}: session {self.request_id!r} is {self.state.value}; "
                "use it inside `with pool.session(...) as s:`"
            )
        if self._is_past_deadline():
            raise SessionTimeoutError(f"session {self.request_id!r} passed its deadline")

    def lookup(
        self,
        token_ids: Sequence[int] | npt.NDArray[np.integer],
        private_mask: Sequence[bool] | npt.NDArray[np.bool_],
    ) -> list[Match]:
        """Matches for the request's non-private tokens; each matched entry is leased."""
        self._check_open("look up")
        tokens = as_token_array(token_ids)
        mask = as_mask_array(private_mask, tokens.shape[0])
        max_tokens = self.pool.config.max_context_tokens
        if tokens.shape[0] > max_tokens:
            raise PromptTooLongError(
                f"prompt has {tokens.shape[0]} tokens, the pool's maximum context is {max_tokens}"
            )
        matches, leased = self.pool._lookup(
            self.request_id, tokens, mask, self.model_id, self.policy_version
        )
        self._leased.extend(leased)
        self._matches.update(zip(matches, leased, strict=True))
        return matches

    def read(self, match: Match) -> SegmentKV:
        """K, V, positions and recompute marks of `match`'s part of its entry (views: no copy)."""
        self._check_open("read")
        entry = self._matches.get(match)
        if entry is None:
            raise SessionStateError(f"match {match} was not returned by this session's lookup")
        if entry.state is not EntryState.LIVE:
            raise EntryInvalidatedError(
                f"entry {match.entry_hash} was {entry.state.value} after the lookup; "
                "recompute those tokens"
            )
        part = slice(match.entry_start, match.entry_start + match.length)
        return SegmentKV(
            keys=entry.keys[:, :, part, :],
            values=entry.values[:, :, part, :],
            positions=entry.positions[part],
            recompute=entry.recompute[part],
        )

    def stage(
        self,
        token_ids: Sequence[int] | npt.NDArray[np.integer],
        keys: torch.Tensor,
        values: torch.Tensor,
        positions: Sequence[int] | npt.NDArray[np.integer],
        recompute: Sequence[bool] | npt.NDArray[np.bool_],
        private_mask: Sequence[bool] | npt.NDArray[np.bool_],
    ) -> SegmentHash:
        """Validate and copy a segment to publish if the request succeeds; returns its hash.

        Raises (staging nothing) on a private token, a wrong shape/dtype or length.
        """
        self._check_open("stage")
        if self._committed:
            raise SessionStateError(f"session {self.request_id!r} already committed")
        try:
            entry = build_entry(
                self.pool.config, self.model_id, self.policy_version, token_ids, keys, values,
                positions, recompute, private_mask, self.pool._now(),
            )
        except PoolError as error:
            self.pool._reject(self.request_id, [], f"refused:{type(error).__name__}")
            raise
        self._staged.append(entry)
        return entry.segment_hash

    def commit(self) -> None:
        """Declare the request successful: staged entries are published when the block exits."""
        self._check_open("commit")
        self._committed = True

    def abort(self, reason: str) -> None:
        """Reject the request without raising: nothing staged will be published."""
        self._check_open("abort")
        self._abort_reason = reason

    @property
    def num_staged(self) -> int:
        return len(self._staged)
