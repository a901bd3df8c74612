"""Which prompts vLLM computes itself: the scheduler half looks each admitted prompt up in the
pool before answering vLLM, and leaves to vLLM a prompt the pool has little of.

cacheprune's prefill pays where the pool serves much of a prompt. For a cold one (a new
document) it only computes what vLLM would, with slower kernels than vLLM's and one prompt after
another inside the step, while vLLM batches cold prompts with its chunked prefill and keeps
decoding the running requests. So a prompt whose pooled tokens are under `MIN_POOLED_SHARE` of
what vLLM's own prefix cache leaves is vLLM's:
- nothing to publish (the publication threshold's k tenants have not sent its text yet, or
  the pool holds it already): vLLM computes it, and cacheprune does nothing more;
- something to publish, from its tokens alone (`PoolSharing.needs_request_kv` False: isolated
  mode with a private token, where the private-free pass computes everything it stages): the
  worker publishes it first, in the step that admits it (the private-free pass, over vLLM's
  layers), then computes it as a warm prompt from what it just published
  (`PrefillOrder.publish_first`). The pass costs what vLLM's prefill of the prompt would; the
  request then computes only its private tokens and the pool's recompute marks, and the next
  tenants find the document in the pool from that step on, not after a second pass in the
  background (the k-th tenant's prompt used to be computed twice: by vLLM, then by the
  publisher's pass over its slower copy of the weights, which under load landed after several
  more tenants had missed the pool);
- something to publish from the request's own KV (no private token, or another publish
  mode): cacheprune computes it, as a warm one.

The lookup counts the request's windows for the threshold, as the worker's plan does (a
tenant's mark on a window is the same mark however often it is counted). It runs where the
detection runs (the detection thread, off vLLM's loop); a lookup that fails leaves the prompt to
vLLM without publishing, as a failed prefill would.

Not for `memory://` pools: the scheduler's process cannot see the worker's (`open_probe`
returns None, and every admitted prompt is cacheprune's, as before).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

import numpy as np

from cacheprune.serving import Engine, ServedRequest
from cacheprune.serving.sharing import PoolSharing
from cacheprune.tokens import MaskArray

logger = logging.getLogger(__name__)

# The share of a prompt's tokens (past vLLM's own prefix hit) the pool must serve for
# cacheprune to compute the prompt rather than vLLM.
MIN_POOLED_SHARE = 0.25


class Route(enum.Enum):
    CACHEPRUNE = "cacheprune"  # cacheprune's prefill, reusing the pool (and publishing)
    VLLM = "vllm"  # vLLM computes it alone
    PUBLISH_FIRST = "publish_first"  # cacheprune publishes it, then computes it from the pool


@dataclass(frozen=True, slots=True)
class Probe:
    """What the pool holds of one prompt: the tokens its matches cover, and the threshold's
    verdict over the strategy's search view (None: no threshold)."""

    pooled_tokens: int
    shareable: MaskArray | None


class ColdProbe:
    """Lookups in the scheduler's process, through an engine whose model is never run (its
    identity and shape name the pool's entries; its strategy gives the search view)."""

    def __init__(self, engine: Engine) -> None:
        strategy = engine.strategy
        if not isinstance(strategy, PoolSharing):
            raise ValueError(f"the probe needs a pool strategy, got {type(strategy).__name__}")
        self._engine = engine
        self._strategy = strategy

    def probe(self, request: ServedRequest) -> Probe | None:
        """The pool's view of the ADMITTED request (its windows counted); None if the lookup
        failed (logged)."""
        try:
            with self._engine.session(request) as session:
                matches = self._strategy.matches(request, session)
                num_view_tokens = self._strategy.search_view(request).num_tokens
                shareable = session.shareable_mask(num_view_tokens)
        except Exception:  # noqa: BLE001 - any pool fault: vLLM computes the prompt
            logger.exception("cacheprune: looking up request %s failed; vLLM computes it "
                             "alone", request.request_id)
            return None
        return Probe(sum(match.length for match in matches), shareable)

    def route(self, request: ServedRequest, probe: Probe | None, num_local: int) -> Route:
        """Who computes the request, whose first `num_local` tokens vLLM's prefix cache holds."""
        if probe is None:
            return Route.VLLM
        if probe.pooled_tokens >= MIN_POOLED_SHARE * (request.num_tokens - num_local):
            return Route.CACHEPRUNE
        new_text = new_text_after(request, num_local)
        if not self._strategy.worth_publishing_new_text(request, new_text, probe.shareable):
            return Route.VLLM
        if self._strategy.needs_request_kv(request):
            return Route.CACHEPRUNE
        return Route.PUBLISH_FIRST

    def close(self) -> None:
        self._engine.close()


def new_text_after(request: ServedRequest, num_local: int) -> MaskArray:
    """The new text of a prompt the pool had little of: every token after vLLM's own prefix
    hit."""
    return np.arange(request.num_tokens) >= num_local
