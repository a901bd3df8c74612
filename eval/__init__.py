"""Offline evaluation of cacheprune: datasets, multi-tenant workloads, answer and leakage metrics.

A top-level package next to `cacheprune/`, run as `python -m eval` from the project root; it is
not installed with the library.
"""
