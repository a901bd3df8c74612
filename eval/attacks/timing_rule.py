"""When may a timing attacker claim a candidate? A rank test over rounds, at a stated rate.

Each round times every candidate once, in a shuffled order, on a cache that holds the victim's
request and none of the attacker's earlier probes. If no candidate was cached (the null), the
candidates' ranks in a round are a uniformly random order, independent between rounds, so the
rank sum S of one candidate over R rounds is the sum of R uniform draws from 1..n. The fastest
candidate's rank sum is tested against that law, with a Bonferroni factor n for having picked
the best of n: P(some candidate's sum <= s) <= n * P(S <= s). A claim also needs an effect the
size of a cache hit: the candidate's median TTFT ahead of the others' by half the gap the
attacker calibrated between its own known misses and known hits, so a small systematic
difference between candidates (text the detectors scan longer, say) is not a claim.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


def rank_sum_cdf(rank_sum: int, num_candidates: int, num_rounds: int) -> float:
    """P(S <= rank_sum) for S the sum of `num_rounds` uniform draws from 1..num_candidates."""
    if num_candidates < 1 or num_rounds < 1:
        raise ValueError(f"need at least one candidate and one round, got {num_candidates} "
                         f"candidates and {num_rounds} rounds")
    counts = {0: 1}  # sum -> number of rank sequences giving it
    for _ in range(num_rounds):
        following: dict[int, int] = {}
        for total, count in counts.items():
            for rank in range(1, num_candidates + 1):
                following[total + rank] = following.get(total + rank, 0) + count
        counts = following
    favourable = sum(count for total, count in counts.items() if total <= rank_sum)
    return favourable / num_candidates ** num_rounds


@dataclass(slots=True, frozen=True)
class TimingVerdict(Generic[T]):
    """The rank test's outcome for one decision; `claim` is None unless both tests pass."""

    best: T
    rank_sum: int
    p_value: float  # Bonferroni bound: chance that some candidate ranks this well by luck
    advantage_s: float  # the others' median TTFT minus the best's
    gap_s: float  # calibrated: median known-miss TTFT minus median known-hit TTFT
    claim: T | None


def judge_rounds(rounds: Sequence[Mapping[T, float]], gap_s: float,
                 false_claim_rate: float) -> TimingVerdict[T]:
    """The verdict on rounds of TTFTs (one mapping candidate -> seconds per round, the same
    candidates in each)."""
    if not rounds or not rounds[0]:
        raise ValueError("the rank test needs at least one round of at least one candidate")
    candidates = list(rounds[0])
    if any(set(timings) != set(candidates) for timings in rounds):
        raise ValueError("every round must time the same candidates")
    if not 0.0 < false_claim_rate < 1.0:
        raise ValueError(f"false_claim_rate must be in (0, 1), got {false_claim_rate}")
    rank_sums = dict.fromkeys(candidates, 0)
    for timings in rounds:
        for rank, candidate in enumerate(sorted(candidates, key=timings.__getitem__), start=1):
            rank_sums[candidate] += rank
    best = min(candidates, key=rank_sums.__getitem__)
    num = len(candidates)
    p_value = min(1.0, num * rank_sum_cdf(rank_sums[best], num, len(rounds)))
    medians = {c: statistics.median(timings[c] for timings in rounds) for c in candidates}
    others = [medians[c] for c in candidates if c != best]
    advantage = statistics.median(others) - medians[best] if others else 0.0
    claimed = p_value <= false_claim_rate and gap_s > 0.0 and advantage >= gap_s / 2
    return TimingVerdict(best, rank_sums[best], p_value, advantage, gap_s,
                         best if claimed else None)
