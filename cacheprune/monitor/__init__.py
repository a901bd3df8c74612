"""Watches responses for another tenant's private values, and tenants for probing (both kept
only as keyed hashes)."""

from cacheprune.monitor.ngram import LeakFinding, LeakMonitor, LeakMonitorConfig
from cacheprune.monitor.probe import ProbeMonitor, ProbeMonitorConfig

__all__ = ["LeakFinding", "LeakMonitor", "LeakMonitorConfig", "ProbeMonitor",
           "ProbeMonitorConfig"]
