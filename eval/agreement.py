"""How close a system's KV is to full recomputation, token by token: the full-recomputation
answer teacher-forced under each system's KV, its next-token distributions compared with those
under the reference's own KV.

Per request, over the first `MAX_SCORED_TOKENS` tokens of the reference's answer (its stop
token included):
- KL divergence KL(reference || system) of the next-token distributions, mean per token;
- top-1 agreement: the share of tokens where both distributions put the same token first;
- log-likelihood gap: mean per token of log p_reference(answer) - log p_system(answer) (> 0:
  the system finds the reference's answer less likely).
F1 against the reference answer moves only when a greedy answer flips; these move with any
difference in the KV.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

MAX_SCORED_TOKENS = 32


@dataclass(slots=True, frozen=True)
class Agreement:
    """Sums over the scored tokens of one request (sums, so that requests pool by tokens)."""

    num_tokens: int
    kl_sum: float
    num_top1_equal: int
    loglik_gap_sum: float


def agreement(reference: torch.Tensor, system: torch.Tensor,
              token_ids: list[int]) -> Agreement:
    """Compare next-token log-probabilities [m, vocab] of the same continuation `token_ids`
    (row i predicts token_ids[i]) under the reference's KV and under a system's."""
    if reference.shape != system.shape or reference.shape[0] != len(token_ids):
        raise ValueError(f"log-probabilities of different continuations: {tuple(reference.shape)}"
                         f" vs {tuple(system.shape)} for {len(token_ids)} tokens")
    reference, system = reference.double(), system.double()
    kl = (reference.exp() * (reference - system)).sum(-1)
    rows = torch.arange(len(token_ids))
    targets = torch.as_tensor(token_ids, dtype=torch.long)
    gap = reference[rows, targets] - system[rows, targets]
    return Agreement(len(token_ids), float(kl.clamp_min(0).sum()),
                     int((reference.argmax(-1) == system.argmax(-1)).sum()), float(gap.sum()))


def pooled(agreements: Iterable[Agreement]) -> dict[str, float]:
    """KL, top-1 agreement and log-likelihood gap per token over all the scored tokens
    (empty when nothing was scored)."""
    items = list(agreements)
    num_tokens = sum(a.num_tokens for a in items)
    if num_tokens == 0:
        return {}
    return {"kl_vs_full": sum(a.kl_sum for a in items) / num_tokens,
            "top1_vs_full": sum(a.num_top1_equal for a in items) / num_tokens,
            "loglik_gap_vs_full": sum(a.loglik_gap_sum for a in items) / num_tokens}
