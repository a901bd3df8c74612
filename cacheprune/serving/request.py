"""One request as it travels through the serving path: who sent it, its tokens and which of
them are private. Built once, after detection; read by every step that follows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cacheprune.serving.public_view import PublicView
from cacheprune.tokens import MaskArray, TokenIds


@dataclass(slots=True, frozen=True)
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
    public_view: PublicView = field(init=False, repr=False, compare=False)  # private ones out
    whole_view: PublicView = field(init=False, repr=False, compare=False)  # private ones flagged

    def __post_init__(self) -> None:
        # NOTE: frozen, so the derived views are set the one way a frozen dataclass allows.
        object.__setattr__(self, "public_view", PublicView.of(self.token_ids, self.private))
        object.__setattr__(self, "whole_view", PublicView.whole(self.token_ids, self.private))

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
