"""Cross-tenant n-gram leak monitor.

Each request's private text (what the detectors masked) is cut into word n-grams that are kept
only as xxh3-64 hashes under a secret seed drawn when the monitor starts: no value is stored as
text, and without the seed nobody can test a guessed value against the table. Each response is
cut the same way; an n-gram whose hash belongs to *another* tenant raises a Prometheus counter
and an audit event (hashes and ids only), unless the answered tenant vouched for it: it sent
the n-gram inside a private value of its own, one holding an n-gram no other tenant had sent
(two tenants at one mail domain both hold "example com": echoing one's own address is not a
leak of the other's). A value that is wholly another tenant's vouches for nothing, so a
tenant's answer that quotes another tenant's whole value is flagged even if it sent the value
itself.

Words are runs of letters and digits, case-folded, so "Tatiana Quiroga" in a prompt and
"tatiana quiroga," in an answer meet. Two-word n-grams cover names, addresses and spaced
numbers; a single word counts alone only when it holds a digit and is at least
`min_single_word_chars` long (ids, account numbers, keys), because single common words would
raise alarms on every answer.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import xxhash
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from cacheprune.pool.audit import AuditLog

_WORD = re.compile(r"[^\W_]+")


@dataclass(slots=True, frozen=True)
class LeakMonitorConfig:
    ngram_words: int = 2
    min_single_word_chars: int = 6
    max_hashes: int = 1_000_000  # oldest hashes are forgotten beyond this (memory bound)
    audit_log_path: str | None = None

    def __post_init__(self) -> None:
        if self.ngram_words < 1:
            raise ValueError(f"ngram_words must be >= 1, got {self.ngram_words}")
        if self.min_single_word_chars < 1 or self.max_hashes < 1:
            raise ValueError("min_single_word_chars and max_hashes must be >= 1")


@dataclass(slots=True, frozen=True)
class LeakFinding:
    """A response n-gram that matches another tenant's private text."""

    ngram_hash: str  # hex of the keyed hash, never the words
    owners: frozenset[str]  # tenants whose private text holds it


class LeakMonitor:
    """Thread-safe; one per server. `remember` after detection, `check` after decoding."""

    def __init__(self, config: LeakMonitorConfig | None = None, seed: int | None = None) -> None:
        self.config = config or LeakMonitorConfig()
        # NOTE: the seed is the secret that keeps the table from confirming guesses.
        self._seed = secrets.randbits(64) if seed is None else seed
        self._owners: OrderedDict[int, set[str]] = OrderedDict()
        self._vouched: dict[int, set[str]] = {}  # n-gram -> tenants that sent it in a value
        # of their own (see the module's docstring); forgotten with `_owners`
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=True)
        self._audit = AuditLog(self.config.audit_log_path, Counter(
            "cacheprune_monitor_audit_failures", "Audit events that could not be written",
            registry=self.registry))
        self.matches = Counter("cacheprune_monitor_cross_tenant_ngrams",
                               "Response n-grams matching another tenant's private text",
                               registry=self.registry)
        self.flagged = Counter("cacheprune_monitor_flagged_responses",
                               "Responses holding at least one such n-gram",
                               registry=self.registry)
        self.check_seconds = Histogram("cacheprune_monitor_check_seconds",
                                       "Time to check one response", registry=self.registry)

    def remember(self, tenant: str, private_texts: Iterable[str]) -> None:
        """Keep the hashes of `tenant`'s private texts (e.g. each masked span of a prompt)."""
        values = [set(self._hashes(text)) for text in private_texts]
        with self._lock:
            for grams in values:
                # NOTE: decided before this value's own grams are added: a value vouches for
                # its grams when one of them was nobody else's.
                own = any(not self._owners.get(gram, set()) - {tenant} for gram in grams)
                for gram in grams:
                    self._owners.setdefault(gram, set()).add(tenant)
                    self._owners.move_to_end(gram)
                    if own:
                        self._vouched.setdefault(gram, set()).add(tenant)
            while len(self._owners) > self.config.max_hashes:
                gram, _ = self._owners.popitem(last=False)
                self._vouched.pop(gram, None)

    def check(self, tenant: str, request_id: str, response: str) -> list[LeakFinding]:
        """Findings for `response` to `tenant`; each is counted and audited."""
        with self.check_seconds.time():
            findings: list[LeakFinding] = []
            seen: set[int] = set()
            with self._lock:
                for value in self._hashes(response):
                    owners = self._owners.get(value)
                    if (owners and value not in seen and owners - {tenant}
                            and tenant not in self._vouched.get(value, ())):
                        seen.add(value)
                        findings.append(LeakFinding(f"{value:016x}",
                                                    frozenset(owners - {tenant})))
                for finding in findings:
                    self._audit.record("leak_suspected", request_id=request_id,
                                       ngram_hash=finding.ngram_hash,
                                       reason=f"owners={len(finding.owners)}")
            if findings:
                self.matches.inc(len(findings))
                self.flagged.inc()
            return findings

    def metrics_text(self) -> str:
        return generate_latest(self.registry).decode("utf-8")

    def close(self) -> None:
        with self._lock:
            self._audit.close()

    def _hashes(self, text: str) -> Iterator[int]:
        words = [word.casefold() for word in _WORD.findall(text)]
        size = self.config.ngram_words
        for word in words:
            if len(word) >= self.config.min_single_word_chars and any(c.isdigit() for c in word):
                yield xxhash.xxh3_64_intdigest(word.encode(), seed=self._seed)
        for start in range(len(words) - size + 1):
            gram = "\x1f".join(words[start:start + size])  # a separator no word holds
            yield xxhash.xxh3_64_intdigest(gram.encode(), seed=self._seed)
