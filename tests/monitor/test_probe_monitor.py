"""The probe monitor: searches over one prompt are flagged, questions about one document are not;
near-identity agrees with a token-by-token comparison away from the 4-token rounding."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.monitor import ProbeMonitor, ProbeMonitorConfig


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


rng = np.random.default_rng(7)
DOCUMENT = rng.integers(10, 40_000, size=600).tolist()
QUESTIONS = [rng.integers(10, 40_000, size=int(rng.integers(14, 30))).tolist()
             for _ in range(40)]


def test_a_token_by_token_search_is_flagged_once_and_audited(tmp_path):
    audit = tmp_path / "audit.jsonl"
    clock = Clock()
    monitor = ProbeMonitor(ProbeMonitorConfig(flag_after=8, audit_log_path=str(audit)), clock)
    victim_prefix = DOCUMENT[:200]
    for guess in range(30):  # one more guessed token each time, then the end marker
        clock.now += 2
        monitor.observe("mallory", np.array(victim_prefix + [guess % 7] * (1 + guess // 7) + [5]),
                        f"p{guess}")
    assert monitor.flagged_tenants() == ["mallory"]
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [line["event"] for line in lines] == ["probe_suspected"]  # once per window
    assert "mallory" not in audit.read_text()
    assert "cacheprune_probe_flags_total 1.0" in monitor.metrics_text()


def test_a_dictionary_of_values_in_one_slot_is_flagged():
    clock = Clock()
    monitor = ProbeMonitor(ProbeMonitorConfig(flag_after=8), clock)
    for candidate in range(12):  # same template, a different value of 3 tokens each time
        clock.now += 1
        value = [1000 + candidate, 2000 + candidate, 3000 + candidate]
        monitor.observe("mallory", np.array(DOCUMENT[:150] + value + DOCUMENT[150:170]), "p")
    assert monitor.flagged_tenants() == ["mallory"]


def test_questions_about_one_document_are_not_flagged():
    clock = Clock()
    monitor = ProbeMonitor(ProbeMonitorConfig(), clock)
    for tenant in ("a", "b", "c"):
        for question in QUESTIONS:
            clock.now += 1
            monitor.observe(tenant, np.array(DOCUMENT + question + [2, 3]), "q")
    assert monitor.flagged_tenants() == []


def test_retries_spread_over_time_are_not_flagged():
    clock = Clock()
    monitor = ProbeMonitor(ProbeMonitorConfig(flag_after=6, window_s=600), clock)
    for _ in range(20):
        clock.now += 400  # one retry every 400 s: never 6 within 600 s
        monitor.observe("a", np.array(DOCUMENT), "r")
    assert monitor.flagged_tenants() == []


def test_a_flagged_tenant_cools_off_then_comes_back():
    clock = Clock()
    monitor = ProbeMonitor(ProbeMonitorConfig(flag_after=3, cooldown_s=60), clock)
    verdicts = []
    for step in range(4):
        clock.now += 1
        verdicts.append(monitor.observe("m", np.array(DOCUMENT + [step]), "p"))
    assert verdicts == [False, False, False, True]
    assert monitor.is_cooling("m") and not monitor.is_cooling("someone-else")
    assert not monitor.observe("someone-else", np.array(DOCUMENT + [9]), "o")
    clock.now += 61
    assert not monitor.is_cooling("m")
    assert not monitor.observe("m", np.array(QUESTIONS[0] * 3), "later")


@settings(max_examples=60, deadline=None)
@given(st.integers(40, 300), st.integers(0, 40), st.integers(0, 40), st.integers(0, 2**31))
def test_near_identity_agrees_with_a_token_comparison(length, cut, replaced, seed):
    """Prompts that differ in `replaced` tokens at `cut` from the end: flagged as near-identical
    when the difference is clearly within the limit, never when it is clearly beyond."""
    gen = np.random.default_rng(seed)
    base = gen.integers(10, 50_000, size=length)
    other = base.copy()
    start = max(0, length - cut - replaced)
    other[start:start + replaced] = gen.integers(50_001, 60_000, size=min(replaced, length))
    differing = int((base != other).sum())
    limit = 12
    monitor = ProbeMonitor(ProbeMonitorConfig(flag_after=1, max_difference=limit,
                                              min_shared_tokens=32), Clock())
    monitor.observe("t", base, "a")
    monitor.observe("t", other, "b")
    flagged = monitor.flagged_tenants() == ["t"]
    if differing + 8 <= limit and length - differing >= 40:
        assert flagged  # at most 3 tokens of rounding on each side of the difference
    if differing > limit:
        assert not flagged
