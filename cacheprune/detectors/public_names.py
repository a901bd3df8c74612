"""Names everyone knows: spans the chain drops before masking.

A syllabus on Marie Curie, a review of 'Евгений Онегин', a walk down Avenida Paulista or a
CI log signed by `dependabot` holds no tenant's private value, yet the detectors read a person
or an account in each. Two lists say which names are public:

- `rules/public_people.yaml`: public people and characters (historical and political figures,
  writers, scientists, saints, national heroes whom streets and airports are named after,
  characters of literature and film), written as texts write them, in their scripts and
  common case forms. A PERSON span whose whole text is one of them, or a list of them joined by
  commas and 'and' ('Voltaire, Jean-Jacques Rousseau'), stays public.
- `service_accounts` of `rules/names.yaml`: software's own accounts (`github-actions`,
  `dependabot`, `pagerduty`). A USERNAME span that is one of them stays public.

NOTE: a missed private value costs more than a masked public one, so a span stays masked where
its line says "this person": a personal word or a form's label right before it ('my friend
Victor Hugo', 'Patient: Victor Hugo', 'Dear Marie Curie'). A private person who bears a public
name elsewhere in running text is left public; the lists hold full names and true mononyms
only (no lone given name or common surname), and sharing needs several tenants (the pool's
publication threshold) beyond detection.
"""

from __future__ import annotations

import functools
from typing import Literal

import regex
from pydantic import BaseModel, ConfigDict, Field

from cacheprune.detectors.base import Span
from cacheprune.detectors.name_words import load_name_words
from cacheprune.detectors.yaml_io import load_spec

_PERSON = "PERSON"
_USERNAME = "USERNAME"
# Between the names of a list: 'Voltaire, Rousseau', 'Victor Hugo and Marie Curie'.
_LIST_JOIN = regex.compile(
    r"[ \t]*(?:[,;、，]|\s(?:and|&|et|und|y|e|i|и|і|ve|và|dan|na|و)\s)[ \t]*")
# What may trail a public name inside a span: punctuation, a possessive ("Gorbachev's").
_TRAILING = regex.compile(r"(?:['’]s|['’])?[\s,.;:!?)»”\"']*$")
_LEADING = regex.compile(r"^[\s(«“\"']*")
# Words of a line around a span, and how many a public name may add on each side.
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+(?:['’.\-][\p{L}\p{M}\p{N}]+)*\.?")
_AROUND = 3
_NEXT_CAPITALIZED = regex.compile(r"[ \t]+(\p{Lu}[\p{L}\p{M}]*)")
# The word before a span, with an elided article fused to it ('dall'aeroporto', 'l'aéroport')
# and a quote or a guillemet after it.
_HEAD_BEFORE = regex.compile(r"(?:(?<![\p{L}\p{M}])|['’])([\p{L}\p{M}]+)\.?[ \t]*[«\"“'„]?[ \t]*$")
# Articles the name detector keeps as name particles ('de la', 'van der'), or no list holds.
_LEADING_ARTICLES = ("die", "der", "das", "the", "la", "el", "le", "il", "o", "a", "η")
# A case ending after an apostrophe ('Havalimanı'ndan', 'Gorbachev's').
_SUFFIX = regex.compile(r"['’][\p{L}]+$")
# A person's own name on its line: a personal word right before the span, or a form's label
# that asks for a person ('Patient:', 'Name =').
_PERSONAL_BEFORE = regex.compile(
    r"(?i:(?<![\p{L}])(?:(?:my|our|his|her|their|your|dear|hi|hello|hey|mein[e]?|unser[e]?|"
    r"liebe[r]?|mon|ma|mes|cher|chère|mi|mis|querid[oa]|estimad[oa]|meu|minha|caro|cara|mój|"
    r"moja|мой|моя|дорог(?:ой|ая))[ \t]+(?:\p{L}+[ \t]+)?"
    r"|(?:name|full name|patient|client|customer|tenant|applicant|student|pupil|employee|"
    r"candidate|guest|passenger|member|child|son|daughter|wife|husband|mother|father|friend|"
    r"neighbou?r|contact|nombre|nom|vorname|nachname|nome|imię|nazwisko|имя|фамилия|姓名|氏名|"
    r"이름)[ \t]*(?:[:：=][ \t]*|[ \t]+))$)")


class _PublicPeopleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    names: list[str] = Field(min_length=1)


def _key(phrase: str) -> str:
    """'Martin Luther King Jr.', 'martin  luther king jr' are one key; so are 'Charles de Gaulle'
    and 'Charles-de-Gaulle'."""
    return " ".join(phrase.replace("-", " ").split()).casefold().rstrip(".")


@functools.lru_cache(maxsize=1)
def public_people() -> frozenset[str]:
    """The casefolded names of rules/public_people.yaml."""
    spec = load_spec(_PublicPeopleSpec, None, "public_people.yaml")
    return frozenset(_key(name) for name in spec.names)


@functools.lru_cache(maxsize=1)
def service_accounts() -> frozenset[str]:
    return frozenset(a.casefold() for a in load_name_words().service_accounts)


def drop_public_names(text: str, spans: list[Span]) -> list[Span]:
    """`spans` without public people's names and software's own accounts."""
    return [s for s in spans if not _is_public(text, s)]


def _is_public(text: str, span: Span) -> bool:
    if span.entity not in (_PERSON, _USERNAME):
        return False
    value = text[span.start:span.end]
    before = text[text.rfind("\n", 0, span.start) + 1:span.start]
    if _PERSONAL_BEFORE.search(before[-24:]):
        return False
    if span.entity == _USERNAME:
        account = value.strip().lstrip("@").removesuffix("[bot]").casefold()
        return account in service_accounts()
    if _names_a_place(text, span.start, span.end):
        return True
    known = public_people()
    parts = [_TRAILING.sub("", _LEADING.sub("", p)) for p in _LIST_JOIN.split(value)]
    parts = [p for p in parts if p]
    if len(parts) > 1:
        return all(_key(p) in known for p in parts)
    return _in_public_name(text, span.start, span.end, known)


def _in_public_name(text: str, start: int, end: int, known: frozenset[str]) -> bool:
    """text[start:end] is a public name, or part of one written around it on its line
    ('Sudirman' of 'Jenderal Sudirman', 'Hugo' of 'Victor Hugo'), and the name does not go on
    with another capitalized word ('Victor Hugo Martínez' is someone else; 'Charles de Gaulle
    Airport' is a place)."""
    value = text[start:end]
    start += len(value) - len(_LEADING.sub("", value))
    end -= len(value) - len(_TRAILING.sub("", value))
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    starts = [start] + [m.start() for m in _WORD.finditer(text, line_start, start)][::-1][:_AROUND]
    ends = [end] + [m.end() for m in _WORD.finditer(text, end, line_end)][:_AROUND]
    for left in starts:
        for right in ends:
            if _key(text[left:right]) in known and not _goes_on(text, right):
                return True
    return False


def _names_a_place(text: str, start: int, end: int) -> bool:
    """A person's name in the name of a place, a prize or an institution: after a word that
    starts one ('Aeroporto Humberto Delgado', 'имени Льва Яшина', a span that holds the word:
    'Flughafen Franz Josef Strauß'), or two name words and then a place word ('Lionel Robbins
    Building', 'Sabiha Gökçen Havalimanı'ndan'; not 'John Way')."""
    words = [_SUFFIX.sub("", w) for w in _WORD.findall(text, start, end)]
    articles = _function_words()
    while words and words[0].casefold() in articles:  # 'Το Υπουργείο ...', 'Die ...-Schule'
        words = words[1:]
    if not words:
        return False
    line_start = text.rfind("\n", 0, start) + 1
    before = _HEAD_BEFORE.search(text, max(line_start, start - 30), start)
    heads = _place_heads()
    if words[0].casefold() in heads and len(words) > 1 or (
            before is not None and before.group(1).casefold() in heads):
        return True
    following = _NEXT_CAPITALIZED.match(text, end)  # 'Building', not 'ag' ("at" in Irish)
    places = _place_words()
    last_part = words[-1].rsplit("-", 1)[-1].casefold()  # 'Ferdinand-Porsche-Schule'
    if (len(words) >= 3 or "-" in words[-1]) and (words[-1].casefold() in places
                                                  or last_part in places):
        return True
    return len(words) >= 2 and following is not None and following.group(1).casefold() in places


def _goes_on(text: str, at: int) -> bool:
    following = _NEXT_CAPITALIZED.match(text, at)
    return following is not None and following.group(1).casefold() not in _place_words()


@functools.lru_cache(maxsize=1)
def _function_words() -> frozenset[str]:
    """Words a place's name may start with before its head: the name detector's function words
    and articles that are also name particles there ('Die ...-Schule', 'Η ...', 'La ...')."""
    words = load_name_words()
    return frozenset(w.casefold() for w in (*words.function_words, *_LEADING_ARTICLES))


@functools.lru_cache(maxsize=1)
def _place_heads() -> frozenset[str]:
    return frozenset(w.casefold() for w in load_name_words().place_heads)


@functools.lru_cache(maxsize=1)
def _place_words() -> frozenset[str]:
    words = load_name_words()
    return frozenset(w.casefold() for w in (*words.place_words, *words.organisation_words))
