"""The two oracles an attacking tenant reads: the engine's reported hit count, and the time to
the first token judged against a threshold calibrated on the attacker's own probes."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from eval.attacks.probe import Prober, ProbeResult

ORACLES = ("hits", "ttft")
NUM_CALIBRATION_PROBES = 3


@dataclass(slots=True)
class Oracle:
    """Judges whether a probe's guess was served from a cache.

    hits: the guess's tokens (`num_guess_tokens`) were all hits beyond what a known miss got at
    the same place (`reference`, one probe per decision point); exact, so an attack may stop at
    the first accepted guess (`sequential`).
    ttft: the probe was faster than `threshold_s`, the midpoint between the median TTFT of the
    attacker's own fresh probes (known misses) and of the same probes sent again (known hits:
    they now find themselves in the cache wherever the engine shares). When known hits are not
    faster, the oracle has no signal and accepts nothing. Noisy, so an attack probes every
    candidate of a decision and takes the fastest accepted one.
    """

    name: str
    threshold_s: float | None = None

    def __post_init__(self) -> None:
        if self.name not in ORACLES:
            raise ValueError(f"unknown oracle {self.name!r}; oracles: {ORACLES}")

    @property
    def sequential(self) -> bool:
        return self.name == "hits"

    @property
    def needs_reference(self) -> bool:
        return self.name == "hits"

    def calibrate(self, prober: Prober, system: str, miss_texts: list[str]) -> None:
        """Set the TTFT threshold from `miss_texts` (guesses certain to be wrong), each sent
        twice; does nothing for the hit-count oracle."""
        if self.name != "ttft":
            return
        misses = [prober.send(system, text).ttft_s for text in miss_texts]
        hits = [prober.send(system, text).ttft_s for text in miss_texts]
        miss, hit = statistics.median(misses), statistics.median(hits)
        self.threshold_s = (miss + hit) / 2 if hit < miss else None

    def is_hit(self, result: ProbeResult, reference: ProbeResult | None,
               num_guess_tokens: int) -> bool:
        if self.name == "hits":
            assert reference is not None, "the hit-count oracle compares with a known miss"
            return result.hits >= reference.hits + num_guess_tokens
        return self.threshold_s is not None and result.ttft_s < self.threshold_s


def miss_guesses(count: int = NUM_CALIBRATION_PROBES) -> list[str]:
    """Guesses no victim's value can start with (no value or template holds '¤')."""
    return [f"¤{index}¤" for index in range(count)]
