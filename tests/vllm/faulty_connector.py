"""A fault injected on purpose: `CachePruneConnector` whose prefill raises for one tenant.

Loaded by vLLM through `kv_connector_module_path` in `lifecycle_scenario.py`.
"""

from __future__ import annotations

from cacheprune.vllm.connector import CachePruneConnector

FAULTY_TENANT = "tenant-faulty"


class FaultyBlender:
    """The real blender, except that a prefill with one tenant's request fails (a batch
    holding it included: the worker then prefills each of its requests alone)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def plan(self, order, local_keys, local_values):
        return self.inner.plan(order, local_keys, local_values)

    def prefill(self, orders, background=False):
        if any(order.request.tenant == FAULTY_TENANT for order in orders):
            raise RuntimeError("fault injected by the test")
        return self.inner.prefill(orders, background)

    def worth_publishing(self, request):
        return self.inner.worth_publishing(request)

    def publish(self, request, new_text=None, background=True):
        return self.inner.publish(request, new_text, background)


class FaultyConnector(CachePruneConnector):
    def _open_blender(self, opener):
        return FaultyBlender(opener())
