"""The cross-tenant n-gram monitor against a naive reference that keeps n-grams as text."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.monitor import LeakMonitor, LeakMonitorConfig


def _naive_grams(text: str, config: LeakMonitorConfig) -> set[tuple[str, ...]]:
    words = [w.casefold() for w in re.findall(r"[^\W_]+", text)]
    grams = {tuple(words[i:i + config.ngram_words])
             for i in range(len(words) - config.ngram_words + 1)}
    grams |= {(w,) for w in words
              if len(w) >= config.min_single_word_chars and any(c.isdigit() for c in w)}
    return grams


def test_another_tenants_value_in_a_response_is_flagged_once(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    monitor = LeakMonitor(LeakMonitorConfig(audit_log_path=str(log)))
    monitor.remember("tenant-a", ["Tatiana Quiroga", "+34646 318 106", "A49403269"])
    assert monitor.check("tenant-b", "r1", "Ask tatiana quiroga, or tatiana  Quiroga.") != []
    (finding,) = monitor.check("tenant-b", "r2", "Her passport is a49403269.")
    assert finding.owners == {"tenant-a"}
    assert monitor.check("tenant-a", "r3", "Tatiana Quiroga, A49403269") == []  # her own
    assert monitor.check("tenant-b", "r4", "Ask the People Office about leave.") == []
    assert "cacheprune_monitor_flagged_responses_total 2.0" in monitor.metrics_text()
    monitor.close()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["request_id"] for e in events] == ["r1", "r2"]
    assert all(e["event"] == "leak_suspected" for e in events)
    # An n-gram hash is no pool entry: it has its own key.
    assert all("ngram_hash" in e and "entry" not in e for e in events)
    # Hashes and ids only: no word of any value reaches the log.
    assert not re.search(r"tatiana|quiroga|a49403269|34646", log.read_text(), re.IGNORECASE)


def test_a_fragment_of_a_tenants_own_value_is_not_a_finding() -> None:
    """Two tenants at one mail domain: echoing one's own address is not a leak of the other's
    ("whitaker example" is in both), naming the other tenant still is, and so is quoting the
    other's whole address, even one the tenant sent itself."""
    monitor = LeakMonitor()
    monitor.remember("alice", ["alice.brandt@whitaker.example", "Alice Brandt"])
    monitor.remember("dan", ["dan.okafor@whitaker.example"])
    assert monitor.check("dan", "r1", "Write to dan.okafor@whitaker.example.") == []
    (finding,) = monitor.check("dan", "r2", "Alice Brandt wrote this.")
    assert finding.owners == {"alice"}
    assert monitor.check("carla", "r3", "Mail someone at whitaker.example.") != []
    monitor.remember("bob", ["alice.brandt@whitaker.example"])  # wholly Alice's
    assert monitor.check("bob", "r4", "Contact: alice.brandt@whitaker.example") != []


def test_hashes_depend_on_the_secret_seed() -> None:
    one, other = LeakMonitor(seed=1), LeakMonitor(seed=2)
    one.remember("a", ["Tatiana Quiroga"])
    other.remember("a", ["Tatiana Quiroga"])
    assert set(one._owners).isdisjoint(other._owners)
    assert all(isinstance(key, int) for key in one._owners)  # never the text


def test_the_table_stays_within_its_bound() -> None:
    monitor = LeakMonitor(LeakMonitorConfig(max_hashes=10))
    for index in range(50):
        monitor.remember("a", [f"Person{index} Surname{index}"])
    assert len(monitor._owners) == 10
    assert monitor.check("b", "r", "person49 surname49") != []  # the newest are kept


_words = st.lists(st.sampled_from(["ana", "Bo", "quiroga", "x1234567", "12", "Lee", "the"]),
                  max_size=6).map(" ".join)


@given(private=_words, response=_words, size=st.integers(1, 3))
@settings(max_examples=200, deadline=None)
def test_flags_exactly_what_the_naive_reference_flags(private: str, response: str,
                                                      size: int) -> None:
    config = LeakMonitorConfig(ngram_words=size)
    monitor = LeakMonitor(config, seed=7)
    monitor.remember("owner", [private])
    flagged = monitor.check("other", "r", response) != []
    assert flagged == bool(_naive_grams(private, config) & _naive_grams(response, config))
