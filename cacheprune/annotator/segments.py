"""What the annotator hands to the pool and the evaluation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


# NOTE: eq=False because a generated __eq__ would compare the `recompute` arrays with `==` and
# fail on their truth value; compare fields explicitly instead.
@dataclass(slots=True, eq=False)
class Segment:
    """A self-contextualized run `[start, end)` of non-private tokens computed in this prefill.

    `internal` and `external` are the segment's summed attention to itself and to the tokens
    before it (sink columns excluded, rows renormalized if the config says so).
    `private_attention` is the part of `external` paid to private tokens: zero means the
    segment's KV never saw a private token (it precedes them all, or attends to none).
    `recompute[k]` is True when token `start + k` must be recomputed when the segment is reused.
    """

    start: int
    end: int
    recompute: npt.NDArray[np.bool_]
    internal: float
    external: float
    private_attention: float

    @property
    def num_tokens(self) -> int:
        return self.end - self.start

    @property
    def num_recompute(self) -> int:
        return int(self.recompute.sum())


@dataclass(slots=True, eq=False)
class Annotation:
    """All segments of one prompt, in order, non-overlapping.

    `num_eligible` counts the tokens that could have been in a segment (computed, not private).
    """

    segments: list[Segment]
    num_tokens: int
    num_eligible: int

    @property
    def num_covered(self) -> int:
        return sum(segment.num_tokens for segment in self.segments)

    @property
    def num_recompute(self) -> int:
        return sum(segment.num_recompute for segment in self.segments)

    @property
    def coverage(self) -> float:
        """Share of eligible tokens that ended up in a segment (0.0 when none were eligible)."""
        return self.num_covered / self.num_eligible if self.num_eligible else 0.0

    @property
    def recompute_ratio(self) -> float:
        """Share of segment tokens marked for recompute (0.0 when there are no segments)."""
        covered = self.num_covered
        return self.num_recompute / covered if covered else 0.0
