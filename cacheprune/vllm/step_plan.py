"""What the scheduler-side connector tells the workers to do in one step (picklable, vLLM-free)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class LoadSpec:
    """Copy tokens [start, stop) of the leased entry at `lease_path` into `block_ids`."""

    lease_path: str
    start: int
    stop: int
    block_ids: tuple[int, ...]


@dataclass(slots=True, frozen=True)
class SaveSpec:
    """Stage the KV of the request's first `len(token_ids)` tokens (none private) as `owner`."""

    owner: str
    token_ids: tuple[int, ...]
    block_ids: tuple[int, ...]


@dataclass(slots=True)
class StepPlan:
    loads: list[LoadSpec] = field(default_factory=list)
    saves: list[SaveSpec] = field(default_factory=list)
