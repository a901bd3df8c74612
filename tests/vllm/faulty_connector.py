"""A fault injected on purpose: `CachePruneConnector` whose prefill raises for one tenant.

Loaded by vLLM through `kv_connector_module_path` in `lifecycle_scenario.py`.
"""

from __future__ import annotations

from cacheprune.vllm.connector import CachePruneConnector

FAULTY_TENANT = "tenant-faulty"


class FaultyBlender:
    """The real blender, except that one tenant's prefill fails."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def prefill(self, order, local_keys, local_values):
        if order.request.tenant == FAULTY_TENANT:
            raise RuntimeError("fault injected by the test")
        return self.inner.prefill(order, local_keys, local_values)

    def publish(self, request):
        return self.inner.publish(request)


class FaultyConnector(CachePruneConnector):
    def _open_blender(self, opener):
        return FaultyBlender(opener())
