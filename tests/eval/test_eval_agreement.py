"""Teacher-forced agreement with full recomputation, against figures computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from eval.agreement import Agreement, agreement, pooled


def _logprobs(rows):
    return torch.tensor(rows, dtype=torch.float64).log()


def test_agreement_by_hand():
    reference = _logprobs([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]])
    system = _logprobs([[0.25, 0.5, 0.25], [0.1, 0.8, 0.1]])
    result = agreement(reference, system, [0, 1])
    # row 0: KL = 0.5 ln 2 + 0.25 ln 0.5 + 0 = 0.25 ln 2; row 1: 0
    assert result.kl_sum == pytest.approx(0.25 * math.log(2))
    assert result.num_top1_equal == 1  # row 0's top tokens differ (0 vs 1)
    # log p_ref - log p_sys of the scored tokens: ln 0.5 - ln 0.25 = ln 2, then 0
    assert result.loglik_gap_sum == pytest.approx(math.log(2))
    assert agreement(reference, reference, [0, 1]) == Agreement(2, 0.0, 2, 0.0)


def test_pooled_weights_requests_by_tokens():
    figures = pooled([Agreement(3, 0.3, 3, 0.6), Agreement(1, 0.1, 0, 0.2)])
    assert figures == pytest.approx({"kl_vs_full": 0.1, "top1_vs_full": 0.75,
                                     "loglik_gap_vs_full": 0.2})
    assert pooled([]) == {}


def test_different_continuations_are_refused():
    with pytest.raises(ValueError, match="different continuations"):
        agreement(_logprobs([[0.5, 0.5]]), _logprobs([[0.5, 0.5], [0.5, 0.5]]), [0])
