"""Isolated mode publishes nothing that depends on a private value: the same public text sent
by victims with different private values becomes the same entries, bitwise equal in K, V,
positions and recompute marks. Paper mode, the research baseline, fails the same check (its
KV keeps a trace of the value), which shows the check can fail."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from serving_helpers import (
    DOCUMENT,
    assert_bitwise_equal,
    count_private_free_passes,
    pool_entries,
)

from cacheprune.detectors import load_policy
from cacheprune.serving import Engine, EngineConfig, SamplingParams
from cacheprune.serving.prompt import render_prompt

# Values of different lengths and scripts, all of kinds the shipped rules find in full.
VICTIMS = (("marta.k@example.net", "+48 512 345 678"),
           ("li.wei.1987@corp.example", "+86 139 1234 5678"),
           ("s.obrien@example.org", "+353 87 123 4567"))


def _messages(email: str, phone: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You answer questions about the ferry."},
            {"role": "user", "content": f"Reach me at {email} or on {phone}.\n\n{DOCUMENT}\n\n"
                                        "How often does the ferry leave?"}]


def _published_entries(default_model, policy, publish_mode: str):
    """Per victim (each on a fresh engine): the public token ids and, for every pool match of
    them, (start, K, V, positions, marks)."""
    model, tokenizer = default_model
    results = []
    for email, phone in VICTIMS:
        engine = Engine(model, tokenizer, policy,
                        EngineConfig(publish_threshold=1, publish_mode=publish_mode))
        messages = _messages(email, phone)
        record = engine.generate("victim", messages, SamplingParams(max_new_tokens=1))
        text, _ = render_prompt(tokenizer, messages, ())
        ids = np.asarray(tokenizer.encode(text).ids, dtype=np.int64)
        public = ids[~record.private_mask]
        entries = pool_entries(engine, public)
        results.append((public, entries))
    return results


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def test_isolated_entries_are_bitwise_equal_across_victims(default_model, policy):
    results = _published_entries(default_model, policy, "isolated")
    first_public, first_entries = results[0]
    assert first_entries, "nothing was published"
    assert sum(entry[1].shape[2] for entry in first_entries) > len(DOCUMENT.split())
    for public, entries in results[1:]:
        # precondition: the detectors left the same public text in every prompt
        np.testing.assert_array_equal(public, first_public)
        assert_bitwise_equal(entries, first_entries)

def test_paper_baseline_entries_differ_across_victims(default_model, policy):
    results = _published_entries(default_model, policy, "paper_baseline")
    (_, first_entries), (_, second_entries) = results[0], results[1]
    assert first_entries and second_entries
    differs = any(not torch.equal(a[1], b[1]) for a, b in zip(first_entries, second_entries,
                                                              strict=False))
    assert differs, "paper mode's KV after a private value should carry a trace of it"


def test_a_warm_request_runs_no_private_free_pass(default_model, policy, monkeypatch):
    """A request that reuses the document computes only its private values, the question and
    marks: no run long enough for a segment, so the pass (a whole prefill) is skipped."""

    model, tokenizer = default_model
    engine = Engine(model, tokenizer, policy, EngineConfig(publish_threshold=1))
    first = engine.generate("victim", _messages(*VICTIMS[0]), SamplingParams(max_new_tokens=1))
    assert first.num_published_tokens > 0  # positive control: a cold request runs the pass
    passes = count_private_free_passes(monkeypatch)
    warm = engine.generate("other", _messages(*VICTIMS[1]), SamplingParams(max_new_tokens=1))
    assert warm.num_hit_tokens > len(DOCUMENT.split())
    assert (warm.num_published_tokens, passes) == (0, [])
