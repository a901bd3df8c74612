"""Sensitivity detectors: which characters, then which tokens, of a request are private.

Importing this package never imports Presidio or spaCy; only building a 'presidio' detector does.
"""

from __future__ import annotations

from cacheprune.detectors.base import (
    Detector,
    DetectorConfigError,
    DetectorUnavailableError,
    Span,
)
from cacheprune.detectors.chain import DetectionResult, DetectorChain, scan_pieces
from cacheprune.detectors.mask import TokenMask, mask_text, token_mask, widen_mask
from cacheprune.detectors.policy import DetectionPolicy, load_policy
from cacheprune.detectors.registry import available_detectors, build_detector, register_detector
from cacheprune.detectors.rules import RuleDetector, load_rule_file
from cacheprune.detectors.thresholds import ScoreThresholds

__all__ = [
    "DetectionPolicy",
    "DetectionResult",
    "Detector",
    "DetectorChain",
    "DetectorConfigError",
    "DetectorUnavailableError",
    "RuleDetector",
    "ScoreThresholds",
    "Span",
    "TokenMask",
    "available_detectors",
    "build_detector",
    "load_policy",
    "load_rule_file",
    "mask_text",
    "register_detector",
    "scan_pieces",
    "token_mask",
    "widen_mask",
]
