"""The direct-leakage prober against real engines: it recovers the victim's name from the
unsafe global prefix cache and nothing from cacheprune."""

from __future__ import annotations

import pytest

from cacheprune.detectors import load_policy
from cacheprune.engine import SamplingParams
from cacheprune.engine.engine import Engine
from cacheprune.engine.sharing import EngineConfig
from eval.data import load_documents, project_data_dir
from eval.leakage import contextual_recovery, probe_direct
from eval.workload import WorkloadConfig, build_requests


@pytest.fixture(scope="module")
def victim():
    documents = load_documents("default", project_data_dir(), max_docs=1)
    requests = build_requests(documents, WorkloadConfig(num_tenants=1, queries_per_document=1,
                                                         max_document_words=150))
    return requests[0]


@pytest.mark.parametrize("mode", ["global_prefix", "cacheprune"])
def test_prober_against_global_cache_and_cacheprune(default_model, victim, mode):
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, load_policy(), EngineConfig(mode=mode))
    engine.generate(victim.tenant, victim.messages, SamplingParams(max_new_tokens=1))
    leak = probe_direct(engine, [victim])
    exact, _ = contextual_recovery(engine, [victim])
    print(f"{mode}: {leak.num_recovered}/{leak.num_private_tokens} name tokens recovered, "
          f"contextual exact {exact:.0%}")
    assert leak.num_private_tokens >= 2
    if mode == "global_prefix":
        assert leak.ratio == 1.0  # every token of the name, one guess at a time
        assert exact == 1.0  # and the cache holds every private value verbatim
    else:
        assert leak.num_recovered == 0
        assert exact == 0.0
