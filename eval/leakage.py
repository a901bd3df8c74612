"""Contextual leakage: what can be read back from what the shared caches hold, the share of
private values found in their decoded contents (exact and fuzzy). The attacks through hits,
timing and log-probabilities live in `eval.attacks`."""

from __future__ import annotations

from cacheprune.serving import Engine
from eval.metrics import recovery
from eval.workload import Request


def contextual_recovery(engine: Engine, requests: list[Request]) -> tuple[float, float]:
    """(exact, fuzzy) share of the requests' private values readable from the caches."""
    stored = [engine.tokenizer.decode(ids.tolist()) for ids in engine.cached_token_ids()]
    text = "\n".join(stored)
    values = [value for request in requests for value in request.private_values]
    if not values or not text:
        return 0.0, 0.0
    result = recovery(values, text)
    return result.exact_ratio, result.fuzzy_ratio
