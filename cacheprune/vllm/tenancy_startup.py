"""What the tenancy front opens when vLLM's OpenAI server starts, from the server's own
arguments: the connector's detection policy and audit log (for the leak monitor and the probe
monitor), the request log (for the pooled-token header), the model's tokenizer.

The connector's settings are read from `--kv-transfer-config`, the one place the operator
writes them; the front accepts a server without the connector (salting and keys only).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cacheprune.monitor import ProbeMonitor
from cacheprune.vllm import CONNECTOR_NAME
from cacheprune.vllm.settings import ConnectorSettings, parse_settings
from cacheprune.vllm.tenancy_reuse import PooledTokens
from cacheprune.vllm.tenancy_watch import AnswerWatch

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class FrontServices:
    watch: AnswerWatch
    pooled: PooledTokens | None  # None: the connector keeps no request log
    probes: ProbeMonitor


def connector_settings(server_args: Any) -> ConnectorSettings | None:
    """The CachePruneConnector's settings from the server's `--kv-transfer-config`, or None
    when the server runs without it."""
    config = getattr(server_args, "kv_transfer_config", None)
    if config is None:
        return None
    if isinstance(config, dict):
        name, extra = config.get("kv_connector"), config.get("kv_connector_extra_config")
    else:
        name, extra = config.kv_connector, config.kv_connector_extra_config
    if name != CONNECTOR_NAME:
        return None
    return parse_settings(extra or {})


def open_front(server_args: Any) -> FrontServices:
    """Raises with a message naming the setting to fix; the server then refuses to start."""
    from cacheprune.models import load_tokenizer
    from cacheprune.monitor import LeakMonitor, LeakMonitorConfig, ProbeMonitorConfig
    from cacheprune.vllm.startup import open_policy

    settings = connector_settings(server_args) or parse_settings({})
    if settings.request_log is None:
        logger.warning("cacheprune front: the connector has no request_log, so responses "
                       "carry no pooled-token count (x-cacheprune-pooled-tokens)")
    source = getattr(server_args, "tokenizer", None) or server_args.model
    monitor = LeakMonitor(LeakMonitorConfig(audit_log_path=settings.audit_log))
    probes = ProbeMonitor(ProbeMonitorConfig(audit_log_path=settings.audit_log,
                                             cooldown_s=settings.probe_cooldown_s))
    _expose(monitor)
    _expose(probes)
    watch = AnswerWatch(open_policy(settings), load_tokenizer(source), monitor)
    pooled = None if settings.request_log is None else PooledTokens(settings.request_log)
    return FrontServices(watch, pooled, probes)


def _expose(monitor: Any) -> None:
    """The monitor's counters on vLLM's `/metrics` (one API server process: with
    PROMETHEUS_MULTIPROC_DIR set vLLM builds a registry per scrape and they do not show)."""
    from vllm.v1.metrics.prometheus import get_prometheus_registry

    get_prometheus_registry().register(monitor.registry)
