"""The two oracles an attacking tenant reads: the engine's reported hit count (exact, read probe
by probe) and the time to the first token (noisy, read over rounds with a rank test,
`eval/attacks/timed_dictionary.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from eval.attacks.probe import ProbeResult

ORACLES = ("hits", "ttft")
NUM_CALIBRATION_PROBES = 3


@dataclass(slots=True)
class Oracle:
    """The hit-count oracle: a guess's tokens (`num_guess_tokens`) were all hits beyond what a
    known miss got at the same place (`reference`); exact, so an attack may stop at the first
    accepted guess.

    The TTFT oracle has no single-probe verdict on a shared, busy machine: its dictionary attack
    probes every candidate over several rounds and claims by a rank test (`timed_dictionary`).
    """

    name: str

    def __post_init__(self) -> None:
        if self.name != "hits":
            raise ValueError(f"Oracle judges the hit count only, got {self.name!r}; the TTFT "
                             f"oracle is read over rounds by eval.attacks.timed_dictionary")

    def is_hit(self, result: ProbeResult, reference: ProbeResult, num_guess_tokens: int) -> bool:
        return result.hits >= reference.hits + num_guess_tokens


def miss_guesses(count: int = NUM_CALIBRATION_PROBES) -> list[str]:
    """Guesses no victim's value can start with (no value or template holds '¤')."""
    return [f"¤{index}¤" for index in range(count)]
