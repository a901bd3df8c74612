"""Probe monitor: flags a tenant whose requests look like a search over someone else's text.

A prober learns a prompt it cannot see by sending variations of one prompt and watching hits
or timing: many prompts that share a long stretch and differ in a few tokens (a guessed value,
one token more each time), in a short time. Tenants asking questions about a shared document
also repeat long stretches, but their questions differ in more than a few tokens, and they do
not send dozens of them in minutes.

For each tenant the monitor keeps the last `history` requests as keyed digests of 4-token
blocks, aligned from the prompt's start and from its end (no token id, no text; the key is
drawn when the monitor starts). A request is *near-identical* to a remembered one when at
least `min_shared_tokens` of it are shared and at most `max_difference` tokens are not
(measured to the 4-token block). `flag_after` near-identical requests within `window_s` flag
the tenant: a Prometheus counter and an audit event (the tenant's keyed hash, never its name
or text), once per `window_s`. With `cooldown_s` set, a flagged tenant's requests are served
without cross-tenant reuse (nothing looked up, nothing published) for that long.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from cacheprune.pool.audit import AuditLog
from cacheprune.tokens import common_prefix_length

_BLOCK = 4
_PAD = np.uint64(1 << 32)  # no token id: pads a prompt's last block


@dataclass(slots=True, frozen=True)
class ProbeMonitorConfig:
    window_s: float = 600.0
    flag_after: int = 12  # near-identical requests within window_s
    min_shared_tokens: int = 32
    max_difference: int = 12  # tokens, to the 4-token block
    history: int = 6  # requests remembered per tenant
    max_tenants: int = 4096  # least recently seen tenants are forgotten beyond this
    cooldown_s: float | None = None  # None: flag only; else no cross-tenant reuse that long
    audit_log_path: str | None = None

    def __post_init__(self) -> None:
        if not (self.window_s > 0 and self.flag_after >= 1 and self.history >= 1
                and self.max_tenants >= 1 and self.min_shared_tokens >= 1
                and self.max_difference >= 0):
            raise ValueError("probe monitor: window_s must be > 0, flag_after, history, "
                             "max_tenants and min_shared_tokens >= 1, max_difference >= 0")
        if self.cooldown_s is not None and not self.cooldown_s > 0:
            raise ValueError(f"probe monitor: cooldown_s must be > 0 or None, got "
                             f"{self.cooldown_s}")


@dataclass(slots=True)
class _Prompt:
    seen_at: float
    num_tokens: int
    from_start: npt.NDArray[np.uint64]  # digest of each 4-token block from the start
    from_end: npt.NDArray[np.uint64]  # ... and from the end


@dataclass(slots=True)
class _Tenant:
    recent: deque[_Prompt]
    near_identical: deque[float] = field(default_factory=deque)  # when each arrived
    flagged_at: float | None = None


class ProbeMonitor:
    """Thread-safe; one per server. `observe` each request before it looks anything up."""

    def __init__(self, config: ProbeMonitorConfig | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.config = config or ProbeMonitorConfig()
        self._clock = clock or time.monotonic
        self._weights = np.frombuffer(secrets.token_bytes(8 * _BLOCK), dtype=np.uint64) | 1
        self._tag_key = secrets.token_bytes(16)
        self._tenants: OrderedDict[str, _Tenant] = OrderedDict()
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=True)
        self._audit = AuditLog(self.config.audit_log_path, Counter(
            "cacheprune_probe_audit_failures", "Audit events that could not be written",
            registry=self.registry))
        self.flags = Counter("cacheprune_probe_flags", "Tenants flagged as probing (once per "
                             "window)", registry=self.registry)
        self.near_identical = Counter("cacheprune_probe_near_identical_requests",
                                      "Requests nearly identical to one the same tenant sent "
                                      "shortly before", registry=self.registry)
        self.cooling = Gauge("cacheprune_probe_cooling_tenants", "Flagged tenants served "
                             "without cross-tenant reuse now", registry=self.registry)

    def observe(self, tenant: str, token_ids: npt.NDArray[np.integer], request_id: str) -> bool:
        """Remember this request of `tenant`; True when the tenant is cooling off (serve it
        without cross-tenant reuse)."""
        now = self._clock()
        prompt = self._digest(np.asarray(token_ids, dtype=np.uint64), now)
        config = self.config
        with self._lock:
            state = self._tenants.get(tenant)
            if state is None:
                state = self._tenants[tenant] = _Tenant(deque(maxlen=config.history))
                while len(self._tenants) > config.max_tenants:
                    self._tenants.popitem(last=False)
            self._tenants.move_to_end(tenant)
            recent = [p for p in state.recent if now - p.seen_at <= config.window_s]
            if any(self._nearly_identical(prompt, earlier) for earlier in recent):
                state.near_identical.append(now)
                self.near_identical.inc()
            while state.near_identical and now - state.near_identical[0] > config.window_s:
                state.near_identical.popleft()
            state.recent.append(prompt)
            if len(state.near_identical) >= config.flag_after and (
                    state.flagged_at is None or now - state.flagged_at > config.window_s):
                state.flagged_at = now
                self.flags.inc()
                self._audit.record("probe_suspected", request_id=request_id,
                                   tenant=self._tag(tenant),
                                   reason=f"near_identical={len(state.near_identical)}")
            cooling = self._is_cooling(state, now)
            self.cooling.set(sum(self._is_cooling(s, now) for s in self._tenants.values()))
        return cooling

    def is_cooling(self, tenant: str) -> bool:
        """Whether the tenant is served without cross-tenant reuse now (flagged within
        `cooldown_s`), before its next request is observed."""
        with self._lock:
            state = self._tenants.get(tenant)
            return state is not None and self._is_cooling(state, self._clock())

    def flagged_tenants(self) -> list[str]:
        """Tenants flagged so far and still remembered (for evaluations and operators)."""
        with self._lock:
            return [name for name, state in self._tenants.items()
                    if state.flagged_at is not None]

    def metrics_text(self) -> str:
        return generate_latest(self.registry).decode("utf-8")

    def close(self) -> None:
        with self._lock:
            self._audit.close()

    def _is_cooling(self, state: _Tenant, now: float) -> bool:
        cooldown = self.config.cooldown_s
        return (cooldown is not None and state.flagged_at is not None
                and now - state.flagged_at < cooldown)

    def _nearly_identical(self, a: _Prompt, b: _Prompt) -> bool:
        shared = _BLOCK * (common_prefix_length(a.from_start, b.from_start)
                           + common_prefix_length(a.from_end, b.from_end))
        shared = min(shared, a.num_tokens, b.num_tokens)
        return (shared >= self.config.min_shared_tokens
                and max(a.num_tokens, b.num_tokens) - shared <= self.config.max_difference)

    def _digest(self, tokens: npt.NDArray[np.uint64], now: float) -> _Prompt:
        return _Prompt(now, int(tokens.shape[0]), self._blocks(tokens),
                       self._blocks(tokens[::-1]))

    def _blocks(self, tokens: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        padded = np.full(-(-tokens.shape[0] // _BLOCK) * _BLOCK, _PAD, dtype=np.uint64)
        padded[:tokens.shape[0]] = tokens
        with np.errstate(over="ignore"):  # arithmetic modulo 2**64, on purpose
            return (padded.reshape(-1, _BLOCK) * self._weights).sum(axis=1, dtype=np.uint64)

    def _tag(self, tenant: str) -> str:
        return hashlib.blake2b(tenant.encode(), key=self._tag_key, digest_size=16).hexdigest()

