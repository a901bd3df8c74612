"""What the scheduler-side connector asks of the workers in one step, and what the workers
report back (picklable, vLLM-free: vLLM ships these between its processes)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class PrefillOrder:
    """Compute the KV of every token of `token_ids` but the last into `block_ids`.

    The first `num_local_tokens` already hold KV in the request's blocks (vLLM's own prefix
    cache); the rest are computed by cacheprune's prefill, reusing pooled segments. `private`
    and `declared_public` (the operator's public ranges) have one flag per token. `publish`:
    this is the request's first prefill, whose attention is
    annotated and whose segments are published once the request ends well (not after a
    preemption, when the prefill is repeated).
    """

    request_id: str
    tenant: str
    token_ids: tuple[int, ...]
    private: tuple[bool, ...]
    declared_public: tuple[bool, ...]
    num_local_tokens: int
    block_ids: tuple[int, ...]
    publish: bool

    def __post_init__(self) -> None:
        if not len(self.private) == len(self.declared_public) == len(self.token_ids):
            raise ValueError(f"request {self.request_id}: {len(self.private)} private and "
                             f"{len(self.declared_public)} declared-public flags for "
                             f"{len(self.token_ids)} tokens")
        if not 0 <= self.num_local_tokens < len(self.token_ids):
            raise ValueError(f"request {self.request_id}: {self.num_local_tokens} local tokens "
                             f"of {len(self.token_ids)}")


@dataclass(slots=True)
class StepOrders:
    """One step's orders. `verdicts`: requests that ended since the last step, with whether
    they ended well (their staged segments are published) or not (discarded). `admits`: the
    step starts a request (new or resumed), whose first token it may produce. `computes`: the
    step runs a forward pass (false: vLLM steps only for the connector)."""

    prefills: list[PrefillOrder] = field(default_factory=list)
    verdicts: dict[str, bool] = field(default_factory=dict)
    admits: bool = False
    computes: bool = True


@dataclass(slots=True)
class WorkerReport:
    """What a worker tells the scheduler after a step: the requests whose publication is over
    (published, discarded, or nothing to publish)."""

    settled: set[str] = field(default_factory=set)

    def merge(self, other: WorkerReport) -> WorkerReport:
        return WorkerReport(self.settled | other.settled)
