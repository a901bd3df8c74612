"""The connector's scheduler half: decide which prompts cacheprune computes, order those
prefills from the worker, and tell it how each request ended.

A prompt cacheprune computes is reported to vLLM as external tokens: all of it but the last
token (which vLLM computes itself to sample). In the worker, cacheprune's prefill writes the
KV of those tokens into the request's blocks before vLLM's forward pass, reusing pooled
segments wherever they match. With a probe (`cold_probe`, `cold_prompts` "vllm"), a prompt
the pool has little of is left to vLLM (0 external tokens), unless it has something to
publish from its tokens alone: then the worker publishes it first and computes it from the
pool (`PrefillOrder.publish_first`).

Calling contract (vLLM's scheduler, one thread, in the engine-core process):
- `arrived` when a request is added: with `detection_thread` on, its detection starts in a
  background thread (`detection_thread`); with a probe, the same thread then looks the prompt
  up in the pool (counting its windows; no read, no lease).
- `matched_tokens` when a waiting request is considered, possibly several times, and again
  after a preemption. Side effects: it memoizes the prompt's mask, forgotten in `finished`,
  and counts the step's prefill tokens (`max_prefill_tokens_per_step`: None, "not this step",
  beyond them); with the detection thread, it waits for the detection within the pass's
  `WaitBudget` and answers None ("ask again") if it is not done by then, and answers None
  for a prompt that a cheaper one waiting behind it goes before (`cheap_first`; the pool is
  looked up again when vLLM next asks).
- `after_alloc` once the request's blocks are allocated for this step (it will run).
- `build_orders` once per step (it opens the next pass's wait budget).
- `worker_reported` with each step's worker report.
- `finished` exactly once per request, on success, abort, error or any other end.

vLLM objects are typed loosely (`Any`): this module imports nothing from vLLM.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cacheprune.detectors import DetectionPolicy
from cacheprune.models import ChatTokenizer
from cacheprune.serving import RequestStatus, ServedRequest
from cacheprune.serving.known_clean import KnownCleanText
from cacheprune.vllm.cheap_first import goes_later
from cacheprune.vllm.cold_probe import ColdProbe, Probe, Route
from cacheprune.vllm.detection_thread import PENDING, DetectionThread, WaitBudget
from cacheprune.vllm.orders import PrefillOrder, StepOrders, VllmPrefill, WorkerReport
from cacheprune.vllm.prompt_mask import mask_token_ids, parse_public_ranges
from cacheprune.vllm.salts import salt_problem
from cacheprune.vllm.settings import ISOLATE_KEY, PUBLIC_RANGES_KEY, ConnectorSettings

logger = logging.getLogger(__name__)

# Request statuses (vLLM's RequestStatus names) after which a request's segments are published.
PUBLISHABLE_ENDS = frozenset({"FINISHED_STOPPED", "FINISHED_LENGTH_CAPPED",
                              "FINISHED_REPETITION"})
SHARED_TENANT = "shared"  # the tenant of every request with tenant_source "none"
CACHEPRUNE_COMPUTES = frozenset({Route.CACHEPRUNE, Route.PUBLISH_FIRST})


@dataclass(frozen=True, slots=True)
class Admission:
    """An admitted request, what the pool holds of it and who is expected to compute it
    without vLLM's own prefix hit (both None: no probe, or its lookup failed)."""

    request: ServedRequest
    probe: Probe | None = None
    expected: Route | None = None


class SchedulerSide:
    def __init__(self, settings: ConnectorSettings, tokenizer: ChatTokenizer,
                 policy: DetectionPolicy, min_tokens: int, probe: ColdProbe | None = None
                 ) -> None:
        self._settings = settings
        self._probe = probe
        self._tokenizer = tokenizer
        self._policy = policy
        self._min_tokens = min_tokens  # shorter prompts can neither reuse nor publish
        # Each request vLLM asked about, until it finishes: ADMITTED, then PREFILLED once its
        # first prefill is ordered; None when vLLM computes it alone.
        self._requests: dict[str, ServedRequest | None] = {}
        # With a probe: what the pool holds of each admitted request, then who computes it
        # (decided when vLLM first asks, knowing its own prefix hit), and that hit.
        self._admissions: dict[str, Admission] = {}
        self._routes: dict[str, Route] = {}
        self._num_local: dict[str, int] = {}
        # With the detection thread: requests that arrived and are not allocated yet (in
        # arrival order), and those put back for cheaper ones (`cheap_first`), to be looked up
        # again, with the times each was.
        self._waiting: dict[str, None] = {}
        self._deferred: dict[str, ServedRequest] = {}
        self._num_deferrals: dict[str, int] = {}
        # Requests whose publication was ordered and the worker has not settled (finished or
        # not); a FINISHED one keeps vLLM stepping.
        self._unsettled: dict[str, ServedRequest] = {}
        # What the next step's metadata carries: prefill orders and how requests ended.
        self._orders: list[PrefillOrder] = []
        self._vllm_prefills: list[VllmPrefill] = []
        self._verdicts: dict[str, bool] = {}
        self._warned_unsalted = False
        self._step_tokens = 0  # prompt tokens granted a prefill in the step being scheduled
        self._granted: set[str] = set()
        self._detection: DetectionThread[Admission] | None = \
            DetectionThread() if settings.detection_thread else None
        self._wait = WaitBudget()
        self._known_clean = KnownCleanText(settings.publish_threshold) \
            if settings.skip_known_clean else None

    # ---- admission -----------------------------------------------------------------------

    @property
    def loads_async(self) -> bool:
        """Whether vLLM waits for cacheprune's prefills asynchronously (`async_load`)."""
        return self._settings.async_load

    def arrived(self, request: Any) -> None:
        """A request was added: start its detection in the thread (or settle that vLLM
        computes it alone), before vLLM considers it."""
        request_id = request.request_id
        if self._detection is None or request_id in self._requests:
            return
        eligible = self._eligible(request)
        if eligible is None:
            self._requests[request_id] = None
            return
        self._waiting[request_id] = None
        self._detection.start(request_id, lambda: self._masked_and_probed(*eligible))

    def matched_tokens(self, request: Any, num_computed_tokens: int) -> int | None:
        """Tokens beyond `num_computed_tokens` (vLLM's own prefix hit) that cacheprune will
        supply: every token but the last, or 0 when cacheprune leaves the prompt to vLLM;
        None when this step's prefill tokens are spent (vLLM asks again next step)."""
        admitted = self._admit(request)
        if admitted is PENDING:
            return None
        if admitted is None:
            return 0
        assert isinstance(admitted, ServedRequest)
        route = self._route(admitted, num_computed_tokens)
        if self._goes_later(admitted, route):
            return None
        if route not in CACHEPRUNE_COMPUTES:
            return 0
        num_external = max(int(request.num_tokens) - 1 - num_computed_tokens, 0)
        if num_external == 0 or request.request_id in self._granted:
            return num_external
        num_tokens, budget = int(request.num_tokens), self._settings.max_prefill_tokens_per_step
        if budget is not None and self._granted and self._step_tokens + num_tokens > budget:
            return None
        self._granted.add(request.request_id)
        self._step_tokens += num_tokens
        return num_external

    def _admit(self, request: Any) -> ServedRequest | None | object:
        """The request, ADMITTED (None: vLLM computes it alone); PENDING while its detection
        (or a deferred request's new lookup) runs in the thread past this pass's wait
        budget."""
        request_id = request.request_id
        if request_id in self._requests:
            return self._requests[request_id]
        deferred = self._deferred.get(request_id)
        eligible = None if deferred is not None else self._eligible(request)

        def admission_work() -> Admission | None:
            if deferred is not None:
                return self._probed(deferred)
            return None if eligible is None else self._masked_and_probed(*eligible)

        admission: Admission | None
        if deferred is None and eligible is None:
            admission = None
        elif self._detection is None:
            admission = admission_work()
        else:
            detection = self._detection
            found = self._wait.spend(lambda wait_s: detection.poll(
                request_id, admission_work, wait_s))
            if found is PENDING:
                return PENDING
            admission = found  # type: ignore[assignment]
        self._deferred.pop(request_id, None)
        if admission is None:
            self._requests[request_id] = None
            return None
        self._requests[request_id], self._admissions[request_id] = \
            admission.request, admission
        return admission.request

    def _masked_and_probed(self, request_id: str, tenant: str, prompt: tuple[int, ...],
                           public_ranges: list[tuple[int, int]]) -> Admission | None:
        """Detection, then (with a probe) the pool's lookup: the admission's costly parts."""
        masked = self._masked(request_id, tenant, prompt, public_ranges)
        return None if masked is None else self._probed(masked)

    def _probed(self, masked: ServedRequest) -> Admission:
        """The pool's lookup of the masked request (with a probe; its windows counted)."""
        if self._probe is None:
            return Admission(masked)
        probe = self._probe.probe(masked)
        return Admission(masked, probe, self._probe.route(masked, probe, 0))

    def _route(self, admitted: ServedRequest, num_local: int) -> Route:
        """Who computes the admitted request (decided once; CACHEPRUNE without a probe)."""
        request_id = admitted.request_id
        self._num_local[request_id] = num_local
        route = self._routes.get(request_id)
        if route is None:
            route = Route.CACHEPRUNE if self._probe is None else \
                self._probe.route(admitted, self._admissions[request_id].probe, num_local)
            self._routes[request_id] = route
        return route

    def _goes_later(self, admitted: ServedRequest, route: Route) -> bool:
        """Put the request back for a cheaper one waiting (`cheap_first`): only before its
        first prefill, with the detection thread (which knows the others' routes). Its route
        is decided again, after a new lookup, when vLLM next asks."""
        request_id = admitted.request_id
        if self._detection is None or not self._settings.cheap_first \
                or admitted.status is not RequestStatus.ADMITTED or request_id in self._granted:
            return False
        num_deferrals = self._num_deferrals.get(request_id, 0)
        others = (self._expected_route(other) for other in self._waiting if other != request_id)
        if not goes_later(route, others, num_deferrals):
            return False
        self._num_deferrals[request_id] = num_deferrals + 1
        self._deferred[request_id] = admitted
        for memo in (self._requests, self._admissions, self._routes):
            memo.pop(request_id, None)
        return True

    def _expected_route(self, request_id: str) -> Route | None:
        """Who computes a waiting request: decided, or expected from its lookup (None: not
        known yet, or no probe)."""
        route = self._routes.get(request_id)
        if route is not None:
            return route
        admission = self._admissions.get(request_id)
        if admission is None and self._detection is not None:
            found = self._detection.peek(request_id)
            admission = found if isinstance(found, Admission) else None
        return None if admission is None else admission.expected

    def _eligible(self, request: Any
                  ) -> tuple[str, str, tuple[int, ...], list[tuple[int, int]]] | None:
        """(request id, tenant, prompt, declared public ranges) of a prompt cacheprune may
        compute, before detection; None when vLLM computes it alone."""
        prompt = request.prompt_token_ids
        if not prompt or getattr(request, "mm_features", None) \
                or getattr(request, "prompt_embeds", None) is not None \
                or getattr(request, "pooling_params", None) is not None:
            return None  # embeddings, images or pooling: token ids alone do not define the KV
        if len(prompt) < self._min_tokens:
            return None
        tenant = self._tenant(request)
        if tenant is None:
            return None
        if (getattr(request, "kv_transfer_params", None) or {}).get(ISOLATE_KEY) is True:
            logger.info("cacheprune: request %s comes from a tenant the front cools off for "
                        "probing; vLLM computes it alone", request.request_id)
            return None
        try:
            public_ranges = self._public_ranges(request)
        except ValueError as error:
            logger.warning("cacheprune: request %s declares bad public ranges (%s); vLLM "
                           "computes it alone", request.request_id, error)
            return None
        return request.request_id, tenant, tuple(int(t) for t in prompt), public_ranges

    def _masked(self, request_id: str, tenant: str, prompt: tuple[int, ...],
                public_ranges: list[tuple[int, int]]) -> ServedRequest | None:
        """Detection (the costly part): runs in the detection thread when it is on."""
        try:
            masked = mask_token_ids(request_id, tenant, prompt, self._tokenizer, self._policy,
                                    public_ranges, self._known_clean)
        except ValueError as error:
            logger.warning("cacheprune: request %s declares bad public ranges (%s); vLLM "
                           "computes it alone", request_id, error)
            return None
        if masked.failed_closed_reason is not None:
            logger.info("cacheprune: request %s is private as a whole (%s); vLLM computes it "
                        "alone", request_id, masked.failed_closed_reason)
            return None
        return masked

    def _public_ranges(self, request: Any) -> list[tuple[int, int]]:
        params = getattr(request, "kv_transfer_params", None) or {}
        if PUBLIC_RANGES_KEY not in params:
            return []
        if not self._settings.accept_public_ranges:
            raise ValueError(f"{PUBLIC_RANGES_KEY} is set but the connector's "
                             "accept_public_ranges is off")
        return parse_public_ranges(params[PUBLIC_RANGES_KEY])

    def _tenant(self, request: Any) -> str | None:
        if self._settings.tenant_source == "none":
            return SHARED_TENANT
        salt = getattr(request, "cache_salt", None)
        if salt is not None:
            problem = salt_problem(salt)
            if problem is None:
                return str(salt)
            # NOTE: fail safe: a salt the connector cannot trust makes the request isolated,
            # never an exception in vLLM's scheduling loop (see `salts`).
            logger.warning("cacheprune: request %s has an invalid cache_salt (%s); vLLM "
                           "computes it alone", request.request_id, problem)
            return None
        if not self._warned_unsalted:
            logger.warning("cacheprune: requests without cache_salt are isolated (no pool "
                           "lookup or publish); the server must set each tenant's salt")
            self._warned_unsalted = True
        return None

    def after_alloc(self, request: Any, block_ids: list[int], num_external_tokens: int) -> None:
        """The request runs this step; order its prefill if vLLM took cacheprune's tokens."""
        request_id = request.request_id
        self._waiting.pop(request_id, None)
        admitted = self._requests.get(request_id)
        if admitted is None:
            return
        route = self._routes.get(request_id)
        if num_external_tokens == 0:
            if admitted.status is not RequestStatus.ADMITTED or route in CACHEPRUNE_COMPUTES:
                return  # vLLM's own cache held it all, or ordered already (a preemption)
            if route is Route.VLLM:
                self._vllm_prefills.append(VllmPrefill(request_id, admitted.num_tokens,
                                                       self._num_local[request_id]))
            admitted.advance(RequestStatus.PREFILLED)
            return
        token_ids = [int(t) for t in request.all_token_ids]
        num_local = len(token_ids) - 1 - num_external_tokens
        first = admitted.status is RequestStatus.ADMITTED
        # NOTE: the order carries a copy that the worker advances (the scheduler's stays
        # here); tokens the model generated before a preemption are private in it.
        self._orders.append(PrefillOrder(admitted.prefill_copy(token_ids), num_local,
                                         tuple(block_ids), publish=first,
                                         publish_first=first and route is Route.PUBLISH_FIRST,
                                         in_background=self._settings.async_load))
        if first:
            admitted.advance(RequestStatus.PREFILLED)
            self._unsettled[request.request_id] = admitted

    # ---- per step ------------------------------------------------------------------------

    def build_orders(self, admits: bool = False, computes: bool = True) -> StepOrders:
        """This step's orders; `admits`: the step starts a request (new or resumed);
        `computes`: it runs a forward pass."""
        in_step = any(not order.in_background for order in self._orders)
        orders = StepOrders(self._orders, self._verdicts, admits or bool(self._orders),
                            computes or in_step, self._vllm_prefills)
        self._orders, self._verdicts = [], {}
        self._vllm_prefills = []
        self._step_tokens, self._granted = 0, set()
        self._wait.step_ordered(orders.computes)
        return orders

    def worker_reported(self, report: WorkerReport) -> None:
        for request_id in report.failed:
            if request_id in self._requests:
                # NOTE: vLLM recomputes a failed synchronous load in place, but puts a failed
                # asynchronous one back in the queue and asks again: the answer is now 0.
                self._requests[request_id] = None
        for request_id in report.settled:
            self._unsettled.pop(request_id, None)
            # NOTE: the request may have ended earlier in the same step's output, its verdict
            # queued: the worker settled it already (nothing to publish) and needs none.
            self._verdicts.pop(request_id, None)

    def has_pending_publications(self) -> bool:
        """True while a request that ended still has a publication the worker has not settled:
        vLLM must keep stepping (with empty steps) for the worker to finish it."""
        return bool(self._verdicts) or any(
            request.status is RequestStatus.FINISHED for request in self._unsettled.values())

    @property
    def num_tracked_requests(self) -> int:
        """Requests the scheduler side holds any state for (for leak checks)."""
        detecting = set() if self._detection is None else self._detection.running_ids
        return len(
            detecting | set(self._requests) | set(self._unsettled) | set(self._verdicts)
            | set(self._admissions) | set(self._routes) | set(self._num_local)
            | set(self._waiting) | set(self._deferred) | set(self._num_deferrals)
            | {order.request.request_id for order in self._orders}
            | {prefill.request_id for prefill in self._vllm_prefills})

    # ---- end of a request ----------------------------------------------------------------

    def close(self) -> None:
        """vLLM shuts down: stop the detection thread, close the probe's pool."""
        if self._detection is not None:
            self._detection.close()
        if self._probe is not None:
            self._probe.close()

    def finished(self, request: Any) -> None:
        """Every end of a request: forget it; tell the worker whether to publish."""
        request_id = request.request_id
        for memo in (self._requests, self._admissions, self._routes, self._num_local,
                     self._waiting, self._deferred, self._num_deferrals):
            memo.pop(request_id, None)
        if self._detection is not None:
            self._detection.forget(request_id)
        self._orders = [order for order in self._orders
                        if order.request.request_id != request_id]
        self._vllm_prefills = [prefill for prefill in self._vllm_prefills
                               if prefill.request_id != request_id]
        # NOTE: the request's first prefill was ordered and its publication is not settled
        # (a later prefill may have failed since: the publication still waits for this).
        unsettled = self._unsettled.get(request_id)
        if unsettled is None:
            return
        unsettled.finish()
        status = getattr(request.status, "name", str(request.status))
        self._verdicts[request_id] = status in PUBLISHABLE_ENDS
