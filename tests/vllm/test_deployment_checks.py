"""Set-ups the connector refuses at start-up, checked on plain config objects (no engine)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cacheprune.vllm.settings import ConnectorConfigError, parse_settings
from cacheprune.vllm.startup import check_deployment, engine_config


def vllm_config(prefix_caching: bool = True, tensor_parallel: int = 1,
                speculative: object | None = None, tokenizer_mode: str = "cacheprune",
                ) -> SimpleNamespace:
    return SimpleNamespace(
        model_config=SimpleNamespace(tokenizer_mode=tokenizer_mode),
        parallel_config=SimpleNamespace(tensor_parallel_size=tensor_parallel,
                                        pipeline_parallel_size=1),
        speculative_config=speculative,
        cache_config=SimpleNamespace(enable_prefix_caching=prefix_caching))


def test_prefix_caching_needs_per_tenant_salts():
    unsalted = parse_settings({"tenant_source": "none"})
    with pytest.raises(ConnectorConfigError) as error:
        check_deployment(vllm_config(prefix_caching=True), unsalted)
    message = str(error.value)
    assert '"tenant_source": "cache_salt"' in message
    assert "--no-enable-prefix-caching" in message


def test_accepted_set_ups():
    check_deployment(vllm_config(prefix_caching=True), parse_settings({}))
    check_deployment(vllm_config(prefix_caching=False),
                     parse_settings({"tenant_source": "none"}))


@pytest.mark.parametrize("config, named", [
    (vllm_config(tensor_parallel=2), "tensor_parallel_size=1"),
    (vllm_config(speculative=object()), "--speculative-config"),
])
def test_unsupported_set_ups_name_the_setting(config, named):
    with pytest.raises(ConnectorConfigError, match=named):
        check_deployment(config, parse_settings({}))


def test_publish_mode_is_checked_as_the_own_engine_checks_it():
    with pytest.raises(ConnectorConfigError, match="isolated, segment, paper_baseline"):
        engine_config(parse_settings({"publish_mode": "eager"}))
    assert engine_config(parse_settings({"publish_mode": "segment"})).publish_mode == "segment"


def test_a_tokenizer_mode_that_makes_typed_control_tokens_is_named(caplog):
    with caplog.at_level("WARNING", logger="cacheprune.vllm.startup"):
        check_deployment(vllm_config(tokenizer_mode="cacheprune"), parse_settings({}))
    assert not caplog.records
    with caplog.at_level("WARNING", logger="cacheprune.vllm.startup"):
        check_deployment(vllm_config(tokenizer_mode="auto"), parse_settings({}))
    assert "--tokenizer-mode cacheprune" in caplog.text
