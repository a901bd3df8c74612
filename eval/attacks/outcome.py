"""What one attack on one private value achieved."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class AttackOutcome:
    """One attack (`attack`, with `oracle`) on one value of one victim."""

    victim: str  # request id
    slot: str
    kind: str
    placement: str
    attack: str  # "dictionary", "extension" or "logprob"
    oracle: str  # "hits", "ttft" or "logprob"
    fully_masked: bool  # the detectors made every token overlapping the value private
    recovered: bool = False  # the attacker's claim equals the value
    claimed: bool = False  # the attacker claimed a value (right or wrong)
    num_probes: int = 0
    budget_ran_out: bool = False
    ranked_first: bool = False  # logprob attack: the true value scored best (claimed or not)


class Budget:
    """Probes left for one value; an attack stops when it is spent."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the probe budget must be at least 1, got {limit}")
        self.limit = limit
        self.used = 0

    @property
    def exhausted(self) -> bool:
        return self.used >= self.limit

    def spend(self, count: int = 1) -> None:
        self.used += count
