"""The direct-leakage prober against real engines: it recovers the victim's name from the
unsafe global prefix cache and nothing from cacheprune."""

from __future__ import annotations

import pytest

from cacheprune.detectors import load_policy
from cacheprune.detectors.policy import default_policy_path, policy_from_data
from cacheprune.detectors.yaml_io import read_yaml
from cacheprune.serving import Engine, EngineConfig, SamplingParams
from cacheprune.serving.prompt import render_prompt
from eval.attacks import probe_direct
from eval.data import load_documents, project_data_dir
from eval.leakage import contextual_recovery
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
    engine = Engine(model, tokenizer, load_policy(), EngineConfig(publish_threshold=1, mode=mode))
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


def test_prober_recovers_from_cacheprune_a_name_the_detectors_missed(default_model, victim):
    """Positive control for the cacheprune branch above: with person names dropped from the
    policy (a detector miss), cacheprune publishes the name like public text and the same
    prober and the same contextual reading find it. Their zeros above are measurements."""
    model, tokenizer = default_model
    data = read_yaml(default_policy_path())
    data["thresholds"] = {**data.get("thresholds", {}), "PERSON": 1.0}
    blind = policy_from_data(data, "names-dropped", default_policy_path().parent)
    engine = Engine(model, tokenizer, blind, EngineConfig(publish_threshold=1, mode="cacheprune"))
    record = engine.generate(victim.tenant, victim.messages, SamplingParams(max_new_tokens=1))
    text, _ = render_prompt(tokenizer, victim.messages, ())
    start = text.index(victim.slot_values["name"])
    end = start + len(victim.slot_values["name"])
    name_tokens = [i for i, (s, e) in enumerate(tokenizer.encode(text).offsets)
                   if s < end and e > start]
    assert not record.private_mask[name_tokens].any(), "precondition: the name is not masked"
    assert record.num_private > 0  # the other private values stay masked
    leak = probe_direct(engine, [victim])
    exact, _ = contextual_recovery(engine, [victim])
    # NOTE: a probe is matched only from a full index window (64 tokens) onwards; the name
    # follows ~45 public tokens, so only a guess that completes the whole name matches from the
    # prompt's start: the prober confirms the name's last token, not each of its first ones.
    assert leak.num_recovered >= 1
    assert exact > 0.0
