"""The publication threshold measured as the eval measures it, with detection switched off:
one attacker account recovers the victim's values from isolated mode at k = 1 (the positive
control) and none at k = 3; the probe monitor flags the attacker either way."""

from __future__ import annotations

from functools import partial

import pytest

from cacheprune.detectors import load_policy
from cacheprune.detectors.yaml_io import shipped_file
from cacheprune.serving import Engine, EngineConfig
from eval.attacks import AttackSettings, attack_system
from eval.attacks.summary import values_recovered
from eval.data import load_documents, project_data_dir
from eval.runner import SYSTEMS, DocumentSenders, companions_of, with_threshold
from eval.workload import WorkloadConfig, build_requests

pytestmark = pytest.mark.slow
SETTINGS = AttackSettings(dictionary_oracles=("hits",), extension_oracles=("hits",),
                          budget_per_value=6, num_candidates=4)


@pytest.fixture(scope="module")
def requests():
    documents = load_documents("default", project_data_dir(), max_docs=1)
    return build_requests(documents, WorkloadConfig(num_tenants=5, queries_per_document=5,
                                                    max_document_words=120, seed=5))


def test_companions_are_k_other_tenants_of_the_victims_document(requests):
    victim = requests[0]
    found = companions_of([victim], requests, 3)[victim.request_id]
    assert len(found) == 3 and len({r.tenant for r in found}) == 3
    assert all(r.doc_id == victim.doc_id and r.tenant != victim.tenant for r in found)
    assert companions_of([victim], requests, 1) == {}


def test_with_threshold_keeps_the_pinned_control_and_the_baselines():
    systems = with_threshold(SYSTEMS, 2)
    assert systems["cacheprune_isolated"].publish_threshold == 2
    assert systems["cacheprune_isolated (k=1)"].publish_threshold == 1
    assert systems["fixed_chunks_512"].publish_threshold == 1


def test_document_senders_count_distinct_tenants(requests):
    senders = DocumentSenders()
    counts = []
    for request in requests + requests[:2]:
        counts.append(senders.before(request))
        senders.add(request)
    assert counts == [0, 1, 2, 3, 4, 5, 5]


@pytest.mark.parametrize("k", [1, 3])
def test_without_detection_only_the_threshold_keeps_the_values(default_model, requests, k):
    model, tokenizer = default_model
    blind = load_policy(str(shipped_file("policy_none.yaml")))
    config = EngineConfig(mode="cacheprune", publish_mode="isolated", publish_threshold=k)
    victim = requests[0]
    attacks = attack_system(partial(Engine, model, tokenizer, blind, config), [victim],
                            SETTINGS, companions=companions_of([victim], requests, k))
    lost = values_recovered(attacks.outcomes)
    assert lost.num_values >= 3
    if k == 1:
        assert lost.share >= 0.9, "the positive control: nothing masked, nothing counted"
    else:
        assert lost.num_recovered == 0
    assert attacks.prober_flagged == [True]


def test_a_declared_public_document_is_warm_after_one_sender(requests):
    from dataclasses import replace

    from eval.runner import needed_senders

    request = requests[0]
    assert needed_senders(request, 3) == 3
    public = replace(request, public_char_ranges=list(request.document_char_ranges))
    assert needed_senders(public, 3) == 1
