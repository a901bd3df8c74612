"""Watches responses for another tenant's private values (kept only as keyed hashes)."""

from cacheprune.monitor.ngram import LeakFinding, LeakMonitor, LeakMonitorConfig

__all__ = ["LeakFinding", "LeakMonitor", "LeakMonitorConfig"]
