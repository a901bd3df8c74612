"""Which waiting prompt goes first: the ones the pool serves, then the k-th tenant's (which
publishes its document first), then the cold ones vLLM computes.

vLLM admits waiting requests first come, first served, and runs their prefills in the step
that admits them. A warm prompt costs a few percent of a cold one (its private tokens and the
pool's recompute marks), but queued behind a cold one it waits for that prompt's prefill
chunks, steps of seconds on a CPU. The k-th tenant's prompt costs a full pass (the
private-free pass that publishes its document), but from that step on the document is warm
for every tenant, the ones already waiting included.

So when vLLM considers a prompt and a cheaper one waits behind it (its detection and pool
lookup done in the detection thread), the scheduler half answers "not this step" (None) and
vLLM goes on down its queue: shortest job first, which lowers the median wait. A prompt is
put back at most `MAX_DEFERRALS` times, so cold prompts are never starved by a stream of warm
ones; and each time, the pool is looked up again when vLLM next considers it, since the step
it waited for may have published its document (it is then served warm).

Measured in `benchmarks/vllm_load.py` (docs/vllm.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from cacheprune.vllm.cold_probe import Route

# Lower goes first.
RANKS = {Route.CACHEPRUNE: 0, Route.PUBLISH_FIRST: 1, Route.VLLM: 2}
CHEAPEST = min(RANKS.values())
# The most scheduling passes a prompt is put back for cheaper ones.
MAX_DEFERRALS = 4


def goes_later(route: Route, waiting: Iterable[Route | None], num_deferrals: int) -> bool:
    """Whether a prompt of `route`, put back `num_deferrals` times already, waits for one of
    the `waiting` prompts (their expected routes; None: not known yet)."""
    rank = RANKS[route]
    if num_deferrals >= MAX_DEFERRALS or rank == CHEAPEST:
        return False  # NOTE: before `waiting` is read: each of its routes costs a look-up
    return any(other is not None and RANKS[other] < rank for other in waiting)
