"""Shared fixtures: the real default model is loaded once per test session."""

from __future__ import annotations
