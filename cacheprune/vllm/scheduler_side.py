"""The connector's scheduler half: mask each prompt, offer pooled KV, publish or discard.

Calling contract (vLLM's scheduler, one thread, in the engine-core process):
- `matched_tokens` when a waiting request is considered (again after a preemption);
- `after_alloc` right after blocks were allocated for it;
- `build_plan` once per step, for the loads and saves of that step;
- `finished` exactly once per request, on success, abort, error or any other end.

vLLM objects are typed loosely (`Any`): this module imports nothing from vLLM.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cacheprune.models.tokenizer import ChatTokenizer
from cacheprune.pool.errors import PoolError
from cacheprune.vllm.pool_setup import ConnectorResources
from cacheprune.vllm.prompt_mask import mask_prompt
from cacheprune.vllm.step_plan import LoadSpec, SaveSpec, StepPlan

logger = logging.getLogger(__name__)

# Request statuses (vLLM's RequestStatus names) whose KV may be published.
_PUBLISHABLE_ENDS = frozenset({"FINISHED_STOPPED", "FINISHED_LENGTH_CAPPED"})


@dataclass(slots=True)
class _RequestState:
    owner: str
    token_ids: tuple[int, ...]
    shareable: int  # leading tokens with no private token among them
    publish_len: int = 0  # tokens to publish when the request ends well (0: nothing)
    lease_path: str | None = None
    load: tuple[int, int] | None = None  # [start, stop) to load at the next step
    block_ids: list[int] = field(default_factory=list)
    save_issued: bool = False


class SchedulerSide:
    def __init__(self, resources: ConnectorResources, tokenizer: ChatTokenizer) -> None:
        self._resources = resources
        self._tokenizer = tokenizer
        self._store = resources.store
        # Owners are unique across instances sharing one pool (request ids are not).
        self._instance = uuid.uuid4().hex[:12]
        self._requests: dict[str, _RequestState] = {}
        self._warned_unsalted = False

    # ---- offers --------------------------------------------------------------------------

    def matched_tokens(self, request: Any, num_computed_tokens: int) -> int:
        """Tokens beyond `num_computed_tokens` (vLLM's own prefix hit, block-aligned) that the
        pool supplies for this request's non-private prefix; leases the entry. Never reaches
        the last prompt token, which vLLM must compute to sample."""
        state = self._state(request)
        if state is None:
            return 0
        self._drop_lease(state)
        limit = min(state.shareable, len(state.token_ids) - 1)
        hit = self._store.lookup(state.token_ids[:limit]) if limit > 0 else None
        matched = 0 if hit is None else hit.num_tokens
        state.publish_len = self._publish_len(state, max(matched, num_computed_tokens))
        if hit is None or matched <= num_computed_tokens:
            return 0
        lease = self._store.lease(state.owner, hit)
        if lease is None:  # evicted between lookup and lease
            return 0
        state.lease_path = str(lease)
        state.load = (num_computed_tokens, matched)
        return matched - num_computed_tokens

    def _publish_len(self, state: _RequestState, already_stored: int) -> int:
        """Publish the non-private prefix if it adds at least one minimum segment."""
        minimum = self._resources.settings.min_shared_tokens
        length = min(state.shareable, self._store.config.max_context_tokens)
        return length if length - already_stored >= minimum else 0

    def after_alloc(self, request: Any, num_external_tokens: int) -> None:
        state = self._requests.get(request.request_id)
        if state is not None and num_external_tokens == 0:
            self._drop_lease(state)

    def _state(self, request: Any) -> _RequestState | None:
        state = self._requests.get(request.request_id)
        if state is not None:
            return state
        if not self._eligible(request):
            return None
        token_ids = tuple(request.prompt_token_ids)
        masked = mask_prompt(token_ids, self._tokenizer, self._resources.policy)
        if masked.failed_closed:
            logger.info("cacheprune: request %s is private as a whole (detection failed "
                        "closed or its token ids do not re-encode)", request.request_id)
        digest = hashlib.sha256(str(request.request_id).encode()).hexdigest()[:24]
        state = _RequestState(f"{self._instance}-{digest}", token_ids, masked.shareable)
        self._requests[request.request_id] = state
        return state

    def _eligible(self, request: Any) -> bool:
        if not request.prompt_token_ids or getattr(request, "mm_features", None):
            return False  # embeddings or multimodal inputs: ids alone do not identify the KV
        if self._resources.settings.tenant_source == "cache_salt" and not request.cache_salt:
            if not self._warned_unsalted:
                logger.warning("cacheprune: requests without cache_salt are isolated (no pool "
                               "lookup or publish); the server must set each tenant's salt")
                self._warned_unsalted = True
            return False
        return True

    # ---- per step ------------------------------------------------------------------------

    def build_plan(self, scheduler_output: Any) -> StepPlan:
        plan = StepPlan()
        computed_before: dict[str, int] = {}
        for new in scheduler_output.scheduled_new_reqs:
            state = self._requests.get(new.req_id)
            if state is not None:
                state.block_ids = list(new.block_ids[0])
                computed_before[new.req_id] = new.num_computed_tokens
        cached = scheduler_output.scheduled_cached_reqs
        for i, req_id in enumerate(cached.req_ids):
            state = self._requests.get(req_id)
            if state is None:
                continue
            new_blocks = cached.new_block_ids[i]
            if req_id in cached.resumed_req_ids:
                state.block_ids = list(new_blocks[0]) if new_blocks else []
            elif new_blocks:
                state.block_ids.extend(new_blocks[0])
            computed_before[req_id] = cached.num_computed_tokens[i]
        for req_id, before in computed_before.items():
            state = self._requests[req_id]
            if state.load is not None and state.lease_path is not None:
                start, stop = state.load
                plan.loads.append(LoadSpec(state.lease_path, start, stop, tuple(state.block_ids)))
                state.load = None
            scheduled = scheduler_output.num_scheduled_tokens.get(req_id, 0)
            if state.publish_len and not state.save_issued \
                    and before + scheduled >= state.publish_len:
                plan.saves.append(SaveSpec(state.owner, state.token_ids[:state.publish_len],
                                           tuple(state.block_ids)))
                state.save_issued = True
        return plan

    # ---- end of a request ----------------------------------------------------------------

    def finished(self, request: Any) -> None:
        """Every end of a request: release its lease; publish only after a normal finish."""
        state = self._requests.pop(request.request_id, None)
        if state is None:
            return
        self._drop_lease(state)
        status = getattr(request.status, "name", str(request.status))
        if not (state.save_issued and status in _PUBLISHABLE_ENDS):
            self._store.discard(state.owner)
            return
        length = state.publish_len
        try:
            self._store.publish(state.owner, state.token_ids[:length],
                                np.zeros(length, dtype=np.bool_))
        except (PoolError, FileNotFoundError) as error:
            logger.warning("cacheprune: not published for request %s: %s",
                           request.request_id, error)
            self._store.discard(state.owner)

    def _drop_lease(self, state: _RequestState) -> None:
        if state.lease_path is not None:
            self._store.release(state.owner)
            state.lease_path = None
            state.load = None
