"""The eval's quality figures on the real model: the full-recomputation answer teacher-forced
under each system's KV, and the paired speed-up, over a small real workload."""

from __future__ import annotations

import pytest

from cacheprune.detectors import load_policy
from cacheprune.serving import EngineConfig, SamplingParams
from eval.data import load_documents, project_data_dir
from eval.runner import compare_with_reference, run_systems
from eval.workload import WorkloadConfig, build_requests


@pytest.mark.slow
def test_teacher_forced_agreement_on_a_real_workload(default_model):
    model, tokenizer = default_model
    documents = load_documents("default", project_data_dir())[:1]
    requests = build_requests(documents, WorkloadConfig(
        num_tenants=3, max_document_words=300, queries_per_document=1, tenants_per_query=3))
    systems = {
        # listed first on purpose: the reference must still serve each request first
        # k = 1: three tenants, and the second and third requests are warm
        "cacheprune_isolated": EngineConfig(mode="cacheprune", publish_mode="isolated",
                                            publish_threshold=1),
        "no_sharing": EngineConfig(mode="no_sharing"),
        # one prefix cache per tenant, three tenants: nothing reused, the same full prefill
        "tenant_prefix": EngineConfig(mode="tenant_prefix"),
    }
    results = {r.name: r for r in run_systems(
        systems, model, tokenizer, load_policy(), requests, SamplingParams(max_new_tokens=8),
        num_victims=0, attacked=())}
    compare_with_reference(list(results.values()))
    for name in ("no_sharing", "tenant_prefix"):  # the reference itself, by construction
        summary = results[name].summary()
        assert summary["top1_vs_full"] == 1.0
        assert summary["kl_vs_full"] == pytest.approx(0.0, abs=1e-9)
        assert summary["loglik_gap_vs_full"] == pytest.approx(0.0, abs=1e-9)
    isolated = results["cacheprune_isolated"]
    warm = [r for r in isolated.requests if r.document_seen_before]
    assert warm and all(r.num_reused > 0 for r in warm)
    # every request scored over the reference's whole answer (stop token included, <= 9)
    reference_answers = {r.request_id: r for r in results["no_sharing"].requests}
    for request in isolated.requests:
        assert request.agreement is not None
        assert 1 <= request.agreement.num_tokens <= 9
        assert 0 <= request.agreement.num_top1_equal <= request.agreement.num_tokens
        assert request.agreement.kl_sum >= 0
        assert request.request_id in reference_answers
    # reused KV moves the distributions (a little): not bitwise full recomputation
    assert sum(r.agreement.kl_sum for r in warm if r.agreement) > 0
    summary = isolated.summary()
    assert summary["paired_speedup_warm"] > 0
    assert 0 <= summary["top1_vs_full"] <= 1
