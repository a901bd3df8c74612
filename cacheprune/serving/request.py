"""One request as it travels through the serving path, from detection to its publication: who
sent it, its tokens and which of them are private, and what each step made of it, with a status
that says how far it got (as nano-vllm's `Sequence` carries a request from scheduler to runner).

    ADMITTED -> PLANNED -> PREFILLED -> STAGED -> FINISHED

- ADMITTED: tokens and private mask fixed (`mask_prompt`, after detection);
- PLANNED: `plan`, the KV it reuses from the pool, and `counted`, what the publication
  threshold found common in its lookup;
- PREFILLED: `prefill`, the prompt's KV;
- STAGED: `published`, the segments it gives back, staged; the pool shows them only once the
  request ends well;
- FINISHED: over (answered, failed or aborted); nothing more happens to it.

A request may finish from any status (a failure, an abort). The driver advances it: the own
engine (`Engine.generate`), or on vLLM the connector's scheduler (ADMITTED, then PREFILLED once
it orders the prefill: its worker plans) and worker (a copy per prefill order, through STAGED to
FINISHED once the publication is settled). Strategies read a request; they never advance it.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from cacheprune.detectors import DetectionPolicy
from cacheprune.engine import PrefillPlan, PrefillResult
from cacheprune.models import ChatTokenizer, Encoding
from cacheprune.pool import CommonWindows, EntryName
from cacheprune.serving.known_clean import KnownCleanText
from cacheprune.serving.prompt import Prompt, PublicRange, inside_ranges, render
from cacheprune.serving.public_view import PublicView
from cacheprune.tokens import MaskArray, TokenIds, as_mask_array, as_token_ids


class RequestStatus(enum.Enum):
    ADMITTED = "admitted"
    PLANNED = "planned"
    PREFILLED = "prefilled"
    STAGED = "staged"
    FINISHED = "finished"


# NOTE: ADMITTED -> PREFILLED skips PLANNED for vLLM's scheduler, which orders the prefill
# and never sees the plan (the worker makes it, on its own copy of the request).
_NEXT: dict[RequestStatus, frozenset[RequestStatus]] = {
    RequestStatus.ADMITTED: frozenset({RequestStatus.PLANNED, RequestStatus.PREFILLED,
                                       RequestStatus.FINISHED}),
    RequestStatus.PLANNED: frozenset({RequestStatus.PREFILLED, RequestStatus.FINISHED}),
    RequestStatus.PREFILLED: frozenset({RequestStatus.STAGED, RequestStatus.FINISHED}),
    RequestStatus.STAGED: frozenset({RequestStatus.FINISHED}),
    RequestStatus.FINISHED: frozenset(),
}


class RequestStatusError(RuntimeError):
    """A step asked of a request in the wrong status (a bug in the driver, never bad input)."""


class Published(NamedTuple):
    """A segment a request staged for the pool."""

    entry: EntryName  # the pool's keyed name of the entry it becomes once published
    num_tokens: int


@dataclass(slots=True, eq=False)
class ServedRequest:
    request_id: str
    tenant: str
    token_ids: TokenIds
    private: MaskArray  # one flag per token: True where the detectors flagged it
    failed_closed_reason: str | None  # detection failed: every token is private
    # one flag per token: True where the operator declared the token's text public (the
    # publication threshold does not count what lies wholly inside it)
    declared_public: MaskArray
    # The two ways the pool sees the prompt (`PublicView`), built once here: plan, capture and
    # publish each read them, and rebuilding them per step cost time for nothing.
    public_view: PublicView = field(init=False, repr=False)  # private ones out
    whole_view: PublicView = field(init=False, repr=False)  # private ones flagged
    # What the steps made of it, set as it advances (see the module's docstring).
    status: RequestStatus = field(default=RequestStatus.ADMITTED, init=False)
    plan: PrefillPlan | None = field(default=None, init=False, repr=False)
    counted: CommonWindows | None = field(default=None, init=False, repr=False)
    prefill: PrefillResult | None = field(default=None, init=False, repr=False)
    published: list[Published] = field(default_factory=list, init=False, repr=False)
    publish_error: str | None = field(default=None, init=False)
    # How it ended, once known: True publishes what it staged (vLLM: the scheduler's verdict,
    # which may come before the staging or after it).
    ended_well: bool | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.private = as_mask_array(self.private, self.num_tokens)
        self.declared_public = as_mask_array(self.declared_public, self.num_tokens)
        self.public_view = PublicView.of(self.token_ids, self.private)
        self.whole_view = PublicView.whole(self.token_ids, self.private)

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.shape[0])

    @property
    def num_private(self) -> int:
        return int(self.private.sum())

    @property
    def first_private(self) -> int:
        """Position of the first private token, or the prompt's length if there is none: the
        KV of every token before it never attended to a private token (causality)."""
        positions = np.flatnonzero(self.private)
        return int(positions[0]) if positions.size else self.num_tokens

    # ---- the lifecycle ---------------------------------------------------------------------

    def advance(self, status: RequestStatus) -> None:
        """Move to `status`; raises RequestStatusError unless it follows the current one."""
        if status not in _NEXT[self.status]:
            allowed = ", ".join(sorted(s.name for s in _NEXT[self.status])) or "none"
            raise RequestStatusError(
                f"request {self.request_id!r} is {self.status.name} and cannot become "
                f"{status.name} (allowed next: {allowed})")
        self.status = status

    def attach_plan(self, plan: PrefillPlan, counted: CommonWindows | None) -> None:
        self.advance(RequestStatus.PLANNED)
        self.plan, self.counted = plan, counted

    def attach_prefill(self, prefill: PrefillResult) -> None:
        self.advance(RequestStatus.PREFILLED)
        self.prefill = prefill

    def attach_published(self, published: list[Published]) -> None:
        self.advance(RequestStatus.STAGED)
        self.published = published

    def finish(self) -> None:
        self.advance(RequestStatus.FINISHED)

    def prefill_copy(self, token_ids: Sequence[int]) -> ServedRequest:
        """A new ADMITTED request for one prefill of this one over `token_ids`: its prompt,
        then the tokens it generated before a preemption, if any, which are private (never
        looked up or published). Without those it shares this request's arrays and views."""
        ids = as_token_ids(token_ids)
        num_generated = ids.shape[0] - self.num_tokens
        if num_generated < 0 or not np.array_equal(ids[:self.num_tokens], self.token_ids):
            raise ValueError(f"request {self.request_id!r}: {ids.shape[0]} tokens do not "
                             f"continue its {self.num_tokens}-token prompt")
        if num_generated == 0:
            twin = copy.copy(self)
            twin.status, twin.plan, twin.counted, twin.prefill = \
                RequestStatus.ADMITTED, None, None, None
            twin.published, twin.publish_error, twin.ended_well = [], None, None
            return twin
        return ServedRequest(
            self.request_id, self.tenant, ids,
            np.concatenate([self.private, np.ones(num_generated, dtype=np.bool_)]),
            self.failed_closed_reason,
            np.concatenate([self.declared_public, np.zeros(num_generated, dtype=np.bool_)]))


def mask_prompt(request_id: str, tenant: str, text: str, encoding: Encoding,
                policy: DetectionPolicy, public_ranges: Sequence[tuple[int, int]] = (),
                known_clean: KnownCleanText | None = None) -> ServedRequest:
    """The request of `tenant` whose prompt `text` is tokenized as `encoding`: detection over
    the text (every token private when it failed closed), and the tokens wholly inside the
    operator's public ranges. With `known_clean`, detection skips the text enough other
    tenants sent clean, and counts this tenant for what it scanned. The one place a prompt
    becomes a request, for the own engine and the vLLM connector alike."""
    skipped = [] if known_clean is None else known_clean.skippable(text)
    masked = policy.mask(text, encoding.offsets, public_ranges, skipped)
    detection = masked.detection
    if known_clean is not None and not detection.failed_closed:
        known_clean.record(tenant, text, detection.spans, [*public_ranges, *skipped])
    return ServedRequest(
        request_id=request_id,
        tenant=tenant,
        token_ids=as_token_ids(encoding.ids),
        private=masked.mask,
        failed_closed_reason=detection.reason if detection.failed_closed else None,
        declared_public=inside_ranges(encoding.offsets, public_ranges),
    )


def admit(request_id: str, tenant: str, prompt: Prompt, tokenizer: ChatTokenizer,
          policy: DetectionPolicy, public_ranges: Sequence[PublicRange] = (),
          known_clean: KnownCleanText | None = None) -> ServedRequest:
    """`prompt` rendered (`render`, which raises on bad input), tokenized with only the template
    emitting control tokens, and masked (`mask_prompt`, with `known_clean`): the own engine's
    admission, for whoever must see a prompt exactly as the engine does (the evaluation's
    bound and probes)."""
    rendered = render(tokenizer, prompt, public_ranges)
    encoding = tokenizer.encode_prompt(rendered.text, rendered.untrusted)
    return mask_prompt(request_id, tenant, rendered.text, encoding, policy, rendered.public,
                       known_clean)
