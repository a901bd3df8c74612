"""A detection policy: one YAML file naming the detectors, thresholds, allow-list and widening.

Its `policy_version` (SHA-256 of a canonical form, including the rule files it points at and
the detectors' code) is the identity the pool stores with every entry: KV published under one
policy is never served under another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

import cacheprune
from cacheprune.detectors.base import Detector, DetectorConfigError, DetectorUnavailableError
from cacheprune.detectors.chain import CharRange, DetectorChain
from cacheprune.detectors.mask import TokenMask, mask_text
from cacheprune.detectors.registry import build_detector, detector_class
from cacheprune.detectors.thresholds import ScoreThresholds
from cacheprune.detectors.yaml_io import read_yaml, shipped_file, validate

_VERSION_TAG = "cacheprune-detector-policy/1"
_DETECTORS_DIR = Path(__file__).resolve().parent


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DetectorEntry(_Strict):
    detector: str = Field(min_length=1)  # a registered name or 'package.module:Class'
    options: dict[str, Any] = Field(default_factory=dict)


class PolicySpec(_Strict):
    version: Literal[1] = 1
    detectors: list[DetectorEntry]
    # An empty chain flags nothing: every token is public to the pool. Only for measuring the
    # defences that do not rest on detection (rules/policy_none.yaml); it must be said.
    detect_nothing: bool = False
    timeout_s: float | None = Field(default=5.0, gt=0.0)
    widen: int = Field(default=0, ge=0, le=64)
    default_threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    thresholds: dict[str, float] = Field(default_factory=dict)
    allow_list: list[str] = Field(default_factory=list)
    # Detect on NFKC text without zero-width characters and with look-alike letters folded.
    normalize: bool = True
    # Grow spans to whole words, and names over the rest of the name.
    whole_values: bool = True
    # Drop phone numbers, addresses and register numbers the text marks as an organisation's
    # (a hotline, a registered office, a company number; `public_contacts.py`).
    organisation_contacts: bool = False
    # Leave public people's names and software's own accounts public (`public_names.py`).
    public_names: bool = False
    # Leave the values a text gives as examples of a format public (`example_values.py`).
    examples: bool = False

    @model_validator(mode="after")
    def _empty_only_when_said(self) -> PolicySpec:
        if not self.detectors and not self.detect_nothing:
            raise ValueError("detectors: the list is empty; list at least one detector, or set "
                             "detect_nothing: true for a policy that flags nothing")
        if self.detectors and self.detect_nothing:
            raise ValueError("detect_nothing: true, but detectors are listed; keep one of them")
        return self


@dataclass(slots=True)
class DetectionPolicy:
    """A loaded policy: its chain, how far to widen masks, and its version."""

    chain: DetectorChain
    widen: int
    policy_version: str
    source: str

    def mask(
        self,
        text: str,
        offsets: Sequence[tuple[int, int]],
        public_ranges: Iterable[CharRange] = (),
        skipped: Sequence[CharRange] = (),
    ) -> TokenMask:
        return mask_text(self.chain, text, offsets, public_ranges, self.widen, skipped)


def default_policy_path() -> Path:
    return shipped_file("policy.yaml")


def load_policy(path: str | Path | None = None) -> DetectionPolicy:
    """Load a policy file; None loads the one shipped with cacheprune (rules/policy.yaml)."""
    resolved = default_policy_path() if path is None else Path(path)
    return policy_from_data(read_yaml(resolved), str(resolved), resolved.parent)


def policy_from_data(data: Any, source: str, base_dir: Path) -> DetectionPolicy:
    spec = validate(PolicySpec, data, source)
    detectors: list[Detector] = []
    described: list[dict[str, Any]] = []
    for index, entry in enumerate(spec.detectors):
        where = f"{source}: detectors[{index}] ('{entry.detector}')"
        try:
            path_options = detector_class(entry.detector).path_options
            options = {
                key: str(base_dir / value) if key in path_options and value is not None else value
                for key, value in entry.options.items()
            }
            detector = build_detector(entry.detector, **options)
        except DetectorConfigError as exc:
            raise DetectorConfigError(f"{where}: {exc}") from exc
        except DetectorUnavailableError as exc:
            raise DetectorUnavailableError(f"{where}: {exc}") from exc
        detectors.append(detector)
        described.append({
            "detector": entry.detector,
            "options": {k: v for k, v in entry.options.items() if k not in path_options},
            "describe": detector.describe(),
        })
    try:
        chain = DetectorChain(
            detectors,
            timeout_s=spec.timeout_s,
            thresholds=ScoreThresholds(spec.default_threshold, spec.thresholds),
            allow_list=spec.allow_list,
            normalize=spec.normalize,
            whole_values=spec.whole_values,
            organisation_contacts=spec.organisation_contacts,
            public_names=spec.public_names,
            examples=spec.examples,
            detect_nothing=spec.detect_nothing,
        )
    except ValueError as exc:
        raise DetectorConfigError(f"{source}: {exc}") from exc
    canonical = {
        "tag": _VERSION_TAG,
        # The same file may detect differently under another release of the detectors, or
        # under the same release with their code changed.
        "implementation": f"cacheprune {cacheprune.__version__}",
        "code": detectors_code_digest(_DETECTORS_DIR),
        "policy": spec.model_dump(mode="json", exclude={"detectors"}),
        "detectors": described,
    }
    return DetectionPolicy(chain, spec.widen, policy_version(canonical), source)


@lru_cache(maxsize=4)
def detectors_code_digest(folder: Path) -> str:
    """SHA-256 of the detectors' Python sources under `folder` (names and contents), training
    code excluded: a change to how text is read changes the policy version."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder).as_posix()
        if relative.startswith("train/"):
            continue
        digest.update(relative.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def policy_version(canonical: dict[str, Any]) -> str:
    encoded = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()
