"""The TTFT oracle's decision rule against independent references: the rank-sum law by brute
force over every rank sequence, the false-claim rate by simulating the null hypothesis."""

from __future__ import annotations

import itertools
import random

import pytest

from eval.attacks.timing_rule import judge_rounds, rank_sum_cdf


@pytest.mark.parametrize(("num_candidates", "num_rounds"), [(2, 3), (4, 3), (4, 5), (8, 2)])
def test_rank_sum_law_matches_enumeration(num_candidates: int, num_rounds: int) -> None:
    sums = [sum(ranks) for ranks in
            itertools.product(range(1, num_candidates + 1), repeat=num_rounds)]
    for rank_sum in range(num_rounds - 1, num_candidates * num_rounds + 1):
        expected = sum(s <= rank_sum for s in sums) / len(sums)
        assert rank_sum_cdf(rank_sum, num_candidates, num_rounds) == pytest.approx(expected)


def _null_rounds(rng: random.Random, num_candidates: int, num_rounds: int,
                 ) -> list[dict[int, float]]:
    # No candidate cached: every probe's TTFT is noise around the same mean, plus a round-wide
    # load level (the machine got busier) that a per-round ranking must ignore.
    return [{c: load + rng.gauss(1.0, 0.2) for c in range(num_candidates)}
            for load in (rng.uniform(0.0, 2.0) for _ in range(num_rounds))]


@pytest.mark.parametrize(("num_candidates", "num_rounds"), [(4, 5), (8, 5), (4, 8)])
def test_claims_by_chance_stay_under_the_stated_rate(num_candidates: int,
                                                     num_rounds: int) -> None:
    rng = random.Random(7)
    trials = 4_000
    # gap 0.0 would refuse every claim; a tiny gap leaves the rank test alone to decide.
    claims = sum(judge_rounds(_null_rounds(rng, num_candidates, num_rounds), 1e-9, 0.01).claim
                 is not None for _ in range(trials))
    assert claims / trials <= 0.01 + 3 * (0.01 * 0.99 / trials) ** 0.5


def test_one_lucky_round_is_no_claim_and_a_consistent_hit_is() -> None:
    # One round where candidate 2 was fastest by far: 1 in 4 by chance, no claim.
    one = [{0: 1.0, 1: 1.1, 2: 0.5, 3: 1.2}]
    assert judge_rounds(one, gap_s=0.4, false_claim_rate=0.01).claim is None
    # Fastest in all five rounds by about the calibrated gap: claimed.
    five = [{0: 1.0 + r / 10, 1: 1.1, 2: 0.55, 3: 1.2 - r / 20} for r in range(5)]
    verdict = judge_rounds(five, gap_s=0.4, false_claim_rate=0.01)
    assert verdict.claim == 2
    assert verdict.p_value == pytest.approx(4 / 4 ** 5)


def test_a_consistent_edge_smaller_than_a_cache_hit_is_no_claim() -> None:
    # Candidate 0 always wins by 10 ms (say, text the detectors scan faster) while a cache hit
    # buys 300 ms: significant, but not a hit.
    rounds = [{0: 1.00, 1: 1.01, 2: 1.02, 3: 1.03} for _ in range(6)]
    verdict = judge_rounds(rounds, gap_s=0.3, false_claim_rate=0.01)
    assert verdict.best == 0 and verdict.p_value < 0.01
    assert verdict.claim is None
    # Without a calibrated gap (known hits were not faster) nothing is claimed either.
    assert judge_rounds(rounds, gap_s=0.0, false_claim_rate=0.01).claim is None


def test_bad_rounds_are_refused() -> None:
    with pytest.raises(ValueError, match="same candidates"):
        judge_rounds([{0: 1.0, 1: 2.0}, {0: 1.0, 2: 2.0}], 0.1, 0.01)
    with pytest.raises(ValueError, match="at least one round"):
        judge_rounds([], 0.1, 0.01)
    with pytest.raises(ValueError, match="false_claim_rate"):
        judge_rounds([{0: 1.0}], 0.1, 1.5)
