"""Isolated mode publishes nothing that depends on a private value: the same public text sent
by victims with different private values becomes the same entries, bitwise equal in K, V,
positions and recompute marks. Paper mode, the research baseline, fails the same check (its
KV keeps a trace of the value), which shows the check can fail."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cacheprune.detectors import load_policy
from cacheprune.pool import Scope
from cacheprune.serving import Engine, EngineConfig, SamplingParams
from cacheprune.serving.prompt import render_prompt

DOCUMENT = (
    "The river ferry leaves the north pier every forty minutes from six in the morning. "
    "Bicycles ride free on weekdays, and dogs on a lead are welcome on the open deck. "
    "Tickets bought on board cost a little more than tickets bought at the pier office, "
    "which also sells monthly passes for commuters and a family ticket for weekend trips. "
) * 3
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
        engine = Engine(model, tokenizer, policy, EngineConfig(publish_mode=publish_mode))
        messages = _messages(email, phone)
        record = engine.generate("victim", messages, SamplingParams(max_new_tokens=1))
        text, _ = render_prompt(tokenizer, messages, ())
        ids = np.asarray(tokenizer.encode(text).ids, dtype=np.int64)
        public = ids[~record.private_mask]
        scope = Scope(engine.identity, "auditor", engine.config.sharing_domain("auditor"))
        with engine.pool.session("audit", scope) as session:
            entries = []
            for match in session.lookup(public, np.zeros(public.shape[0], dtype=np.bool_)):
                kv = session.read(match)
                assert kv is not None
                entries.append((match.request_start, kv.keys.clone(), kv.values.clone(),
                                np.array(kv.positions), np.array(kv.recompute)))
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
        assert [e[0] for e in entries] == [e[0] for e in first_entries]
        for (_, keys, values, positions, marks), (_, keys0, values0, positions0, marks0) in zip(
                entries, first_entries, strict=True):
            assert torch.equal(keys, keys0) and torch.equal(values, values0)
            np.testing.assert_array_equal(positions, positions0)
            np.testing.assert_array_equal(marks, marks0)


def test_paper_baseline_entries_differ_across_victims(default_model, policy):
    results = _published_entries(default_model, policy, "paper_baseline")
    (_, first_entries), (_, second_entries) = results[0], results[1]
    assert first_entries and second_entries
    differs = any(not torch.equal(a[1], b[1]) for a, b in zip(first_entries, second_entries,
                                                              strict=False))
    assert differs, "paper mode's KV after a private value should carry a trace of it"
