"""What the scheduler-side connector asks of the workers in one step, and what the workers
report back (picklable, vLLM-free: vLLM ships these between its processes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # NOTE: not imported at run time: the connector's module, which imports this one, loads
    # in vLLM's front-end process, where cacheprune's core must not (connector.py).
    from cacheprune.serving import ServedRequest


@dataclass(slots=True, frozen=True)
class PrefillOrder:
    """Compute the KV of every token of `request` but the last into `block_ids`.

    `request` is ADMITTED, a copy of the scheduler's own for this prefill (its tenant, tokens,
    private and declared-public flags; tokens generated before a preemption are private); the
    worker advances it. The first `num_local_tokens` already hold KV in the request's blocks
    (vLLM's own prefix cache); the rest are computed by cacheprune's prefill, reusing pooled
    segments. `publish`: this is the request's first prefill, whose segments are published
    once staged, unless the request ended badly first (not after a preemption, when the
    prefill is repeated).
    `publish_first`: the pool had little of the prompt, whose new text (every token after the
    first `num_local_tokens`) it should publish from the prompt's tokens alone (`cold_probe`:
    the k-th tenant's cold prompt): the worker publishes it before planning, and the prefill
    then reuses what it published (only with `publish`).
    `in_background`: vLLM loads it asynchronously (the worker's loader thread prefills it while
    the steps go on; vLLM schedules the request once the worker reports it done).
    """

    request: ServedRequest
    num_local_tokens: int
    block_ids: tuple[int, ...]
    publish: bool
    in_background: bool = False
    publish_first: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.num_local_tokens < self.request.num_tokens:
            raise ValueError(f"request {self.request.request_id}: {self.num_local_tokens} "
                             f"local tokens of {self.request.num_tokens}")
        if self.publish_first and not self.publish:
            raise ValueError(f"request {self.request.request_id}: publish_first without "
                             "publish (a repeated prefill publishes nothing)")


@dataclass(slots=True, frozen=True)
class VllmPrefill:
    """A prompt vLLM computes alone this step (`cold_probe`: the pool holds little of it) with
    nothing for cacheprune to publish: for the request log, so that every admitted prompt has
    its line."""

    request_id: str
    num_tokens: int
    num_local_tokens: int


@dataclass(slots=True)
class StepOrders:
    """One step's orders. `verdicts`: requests that ended since the last step, with whether
    they ended well or not (a publication not yet committed is then discarded). `admits`: the
    step starts a request (new or resumed), whose first token it may produce. `computes`: the
    step runs a forward pass or a prefill in the engine's thread (false: vLLM steps only for
    the connector). `vllm_prefills`: requests vLLM computes itself (logged only)."""

    prefills: list[PrefillOrder] = field(default_factory=list)
    verdicts: dict[str, bool] = field(default_factory=dict)
    admits: bool = False
    computes: bool = True
    vllm_prefills: list[VllmPrefill] = field(default_factory=list)


@dataclass(slots=True)
class WorkerReport:
    """What a worker tells the scheduler after a step: the requests whose publication is over
    (published, discarded, or nothing to publish), and those whose prefill failed (vLLM
    computes them alone from then on, a failed asynchronous load included, which vLLM would
    otherwise offer the connector again)."""

    settled: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)

    def merge(self, other: WorkerReport) -> WorkerReport:
        return WorkerReport(self.settled | other.settled, self.failed | other.failed)
