"""The connector's extra config is checked before anything starts (no vLLM needed)."""

from __future__ import annotations

import pytest

from cacheprune.vllm.settings import ConnectorConfigError, parse_settings


def test_defaults_need_only_a_pool_location():
    settings = parse_settings({"pool_dir": "pool"})
    assert settings.tenant_source == "cache_salt" and settings.detector_config is None


@pytest.mark.parametrize("extra, named", [
    ({}, "'pool_dir': Field required"),
    ({"pool_dir": "p", "pool_budget_bytes": -1}, "'pool_budget_bytes'"),
    ({"pool_dir": "p", "min_shared_tokens": 0}, "'min_shared_tokens'"),
    ({"pool_dir": "p", "tenant_source": "header"}, "'tenant_source'"),
    ({"pool_dir": "p", "pool_size": 3}, "'pool_size': Extra inputs are not permitted"),
])
def test_bad_extra_config_names_the_key(extra, named):
    with pytest.raises(ConnectorConfigError, match="Allowed keys") as error:
        parse_settings(extra)
    assert named in str(error.value)


def test_extra_config_must_be_an_object():
    with pytest.raises(ConnectorConfigError, match="JSON object, got list"):
        parse_settings(["pool_dir"])


def test_importing_the_plugin_does_not_import_vllm():
    import subprocess
    import sys

    code = ("import sys, cacheprune.vllm, cacheprune.vllm.settings, "
            "cacheprune.vllm.scheduler_side, cacheprune.vllm.worker_side, cacheprune.pool; "
            "assert not any(m == 'vllm' or m.startswith('vllm.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
