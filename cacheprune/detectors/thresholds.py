"""Per-entity score thresholds, shared by the rule detector, Presidio and the chain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class ScoreThresholds:
    """A span is kept when its score reaches its entity's threshold (or the default)."""

    default: float = 0.0
    per_entity: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for entity, value in {"(default)": self.default, **self.per_entity}.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"threshold of {entity} must lie in [0, 1], got {value}")

    def passes(self, entity: str, score: float) -> bool:
        return score >= self.per_entity.get(entity, self.default)
