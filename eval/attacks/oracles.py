"""The two oracles an attacking tenant reads: the engine's reported hit count, and the time to
the first token judged against a threshold calibrated on the attacker's own probes."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TypeVar

from eval.attacks.probe import Prober, ProbeResult

ORACLES = ("hits", "ttft")
T = TypeVar("T")
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
    candidate of a decision and claims only a clear fastest one (`clear_fastest`).
    """

    name: str
    threshold_s: float | None = None
    gap_s: float = 0.0  # median known-miss TTFT - median known-hit TTFT

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
        self.gap_s = max(0.0, miss - hit)

    def clear_fastest(self, results: list[tuple[ProbeResult, T]]) -> T | None:
        """The TTFT oracle's claim among candidates probed side by side: the fastest, if it is
        under the threshold and faster than every other by half the calibrated gap (a lone
        lucky timing on a busy machine is not a claim)."""
        if self.threshold_s is None or not results:
            return None
        ordered = sorted(results, key=lambda item: item[0].ttft_s)
        fastest = ordered[0][0].ttft_s
        if fastest >= self.threshold_s:
            return None
        if len(ordered) > 1 and ordered[1][0].ttft_s - fastest < self.gap_s / 2:
            return None
        return ordered[0][1]

    def is_hit(self, result: ProbeResult, reference: ProbeResult | None,
               num_guess_tokens: int) -> bool:
        if self.name == "hits":
            assert reference is not None, "the hit-count oracle compares with a known miss"
            return result.hits >= reference.hits + num_guess_tokens
        return self.threshold_s is not None and result.ttft_s < self.threshold_s


def miss_guesses(count: int = NUM_CALIBRATION_PROBES) -> list[str]:
    """Guesses no victim's value can start with (no value or template holds '¤')."""
    return [f"¤{index}¤" for index in range(count)]
