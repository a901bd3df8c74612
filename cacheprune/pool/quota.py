"""Publish quotas, two kinds, per tenant and per sharing domain:

- a rate: at most N bytes published per time window (`*_quota_bytes` per `quota_window_s`);
  a fixed window keeps the rule the same on every backend: an in-process ledger here, counter
  files under the folder's lock, INCRBY with an expiry on Valkey;
- a share: at most a fraction of the budget held at once (`tenant_share`, `domain_share`).
  A publish over its share evicts the same tenant's (domain's) own oldest entries first, so a
  tenant that publishes without pause displaces itself, never the others.

NOTE: counters on a shared store are named by a keyed hash of (kind, tag, window): whoever can
write the store cannot compute the name of a future window's counter to pre-set it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cacheprune.pool.config import PoolConfig
from cacheprune.pool.keys import PoolKeys


def window_index(now: float, window_s: float) -> int:
    return int(now // window_s)


def quota_limits(config: PoolConfig, tenant_tag: str, domain_tag: str
                 ) -> list[tuple[str, str, int]]:
    """(kind, tag, limit) of every quota that applies to a publish."""
    limits = []
    if config.tenant_quota_bytes is not None:
        limits.append(("tenant", tenant_tag, config.tenant_quota_bytes))
    if config.domain_quota_bytes is not None:
        limits.append(("domain", domain_tag, config.domain_quota_bytes))
    return limits


def quota_counter_name(keys: PoolKeys, kind: str, tag: str, now: float, config: PoolConfig
                       ) -> str:
    """`<kind>.<keyed hash of (kind, tag, window)>`: the name of this window's counter."""
    window = window_index(now, config.quota_window_s)
    return f"{kind}.{keys.counter_tag(f'{kind}/{tag}/{window}')}"


def share_limits(config: PoolConfig, tenant_tag: str, domain_tag: str
                 ) -> list[tuple[str, str, int]]:
    """(kind, tag, bytes) of every share that applies to a publish."""
    limits = []
    if config.tenant_share is not None:
        limits.append(("tenant", tenant_tag, int(config.tenant_share * config.budget_bytes)))
    if config.domain_share is not None:
        limits.append(("domain", domain_tag, int(config.domain_share * config.budget_bytes)))
    return limits


@dataclass(slots=True)
class QuotaLedger:
    """Bytes charged per (kind, tag) in the current window; one process, caller's lock."""

    window: int = -1
    charged: dict[tuple[str, str], int] = field(default_factory=dict)

    def try_charge(self, config: PoolConfig, now: float, tenant_tag: str, domain_tag: str,
                   num_bytes: int) -> str | None:
        """Charge `num_bytes` to every applicable quota, or to none: returns the kind of the
        quota that refused ("tenant" / "domain"), None when charged."""
        current = window_index(now, config.quota_window_s)
        if current != self.window:
            self.window, self.charged = current, {}
        limits = quota_limits(config, tenant_tag, domain_tag)
        for kind, tag, limit in limits:
            if self.charged.get((kind, tag), 0) + num_bytes > limit:
                return kind
        for kind, tag, _ in limits:
            self.charged[(kind, tag)] = self.charged.get((kind, tag), 0) + num_bytes
        return None
