"""Spans grown to whole values: a detector that flags part of a value must not leave the rest.

- Every span is grown to the edges of the words it cuts ('Garc' in 'García' -> 'García').
- A PERSON span (from any detector: spaCy often finds only 'José' in 'José García') is grown
  over the capitalized words, particles, hyphens and apostrophes next to it, on its line.
- A PERSON span also takes initials with their periods ('M. Okonkwo', 'Clara J.', 'Р. А.',
  'J.M. de Groot-Bakker'), and the comma between a surname and the given name another span
  found ('NOVÁKOVÁ, Jana').
- A PERSON span also takes the titles right before it with their periods ('Dr. Sig. Ada
  Rossi', 'pani Anna Nowak'), and degrees right after it ('Erhard Geisler B.Eng.', 'Ana
  Ruiz, PhD'): a title left public would tell a prober where a name starts and, written as
  part of the value, leave the value partly shared.
- A SECRET span is grown over the whole run of characters it stands in, up to a space, a
  quote, a bracket, ',' or ';' (and, before it, '=' or ':'): a password is one word of any
  characters, and a detector that reads 'Kumo2025' in 'Kumo2025!' or '2046' in '#2046*'
  must not leave the symbols around it shared. In scripts written without spaces (Chinese,
  Japanese, Thai) the run also ends where such a letter starts, unless the span holds one.
- A LICENSE_PLATE span takes the groups of its plate next to it, joined by one space, hyphen or
  dot ('GD' of 'GD 7K412', '-123.45' of '51F-123.45'): a group is digits, capitals, or letters
  of a script without case, up to 5 characters; a lower-case word ends the plate.
- A USERNAME span takes the groups joined to it by '.', '_' or '-' ('.t' of 'abdullaev.t'), and
  an identifier's (PERSONAL_ID, MEDICAL_ID, GOV_ID...) those joined by '-', '/' or '.' ('2019/'
  of '2019/004412').
- A USERNAME span takes the emoji and symbols that end the name it cuts ('☆' of 'Yui☆', '🦋' of
  'Rafa 🦋'), as chat apps show display names, and the '@' before it ('@hkowalczyk').
- A STREET_ADDRESS span takes the flats, floors and doors written after it, and the town after
  a postcode that ends it (address_tails.py).
- Any span that opens a bracket takes the bracket that closes it, when it follows within a few
  characters on the line ('(우 13558' -> '(우 13558)').
- A date of birth (DATE_OF_BIRTH, DATE) takes the digit groups next to it joined by '.', '/',
  '-' or '. ' ('98' of '12.03.98'), the last dot of '1990. 08. 19.', a Hijri 'هـ' after it, and a
  Japanese or Taiwanese era name before it ('平成' of '平成7年2月28日').
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import regex

from cacheprune.detectors.address_tails import address_end
from cacheprune.detectors.base import Span
from cacheprune.detectors.name_words import load_name_words
from cacheprune.detectors.repeated_values import SPACELESS_LETTER

PERSON = "PERSON"
SECRET = "SECRET"
LICENSE_PLATE = "LICENSE_PLATE"
STREET_ADDRESS = "STREET_ADDRESS"
DATES_OF_BIRTH = frozenset({"DATE_OF_BIRTH", "DATE"})
# One group of a plate on each side, after or before its joining character; a Chinese plate's
# province ('粤 AD71829' once normalized) only before.
_PLATE_GROUP = r"(?:\p{N}{1,5}|[\p{Lu}\p{N}]{1,5}|[\p{Hangul}\p{Thai}\p{Arabic}]{1,3})"
_PLATE_AFTER = regex.compile(rf"[ \-.·]{_PLATE_GROUP}(?![\p{{L}}\p{{N}}])")
_PLATE_BEFORE = regex.compile(
    rf"(?<![\p{{L}}\p{{N}}])(?:{_PLATE_GROUP}|\p{{Han}})[ \-.·]$")
_MAX_PLATE_CHARS = 12
USERNAME = "USERNAME"
# Identifiers whose groups are joined by '-', '/' or '.' ('2019/004412', 'DIA-2231/17').
IDENTIFIERS = frozenset({"PERSONAL_ID", "MEDICAL_ID", "GOV_ID", "NATIONAL_ID", "PASSPORT",
                         "ACCOUNT_NUMBER", "US_SSN"})
_JOINED_AFTER = regex.compile(r"(?<=[\p{L}\p{N}])([\-/._])[\p{L}\p{N}]+")
_JOINED_BEFORE = regex.compile(r"(?<![\p{L}\p{N}])[\p{L}\p{N}]+([\-/._])\Z")
_MAX_JOINED = 3
_SYMBOL_TAIL = regex.compile(r"[ \t]?[\p{So}\u200d\ufe0f]+")
_CLOSING = {"(": ")", "（": "）", "[": "]", "<": ">"}
_DATE_AFTER = regex.compile(r"(?:(?:[./\-]|\.[ \t])\p{N}{1,4}(?!\p{N}))+")
_DATE_BEFORE = regex.compile(r"(?<!\p{N})(?:\p{N}{1,4}(?:[./\-]|\.[ \t]))+$")
_DATE_GROUPS = regex.compile(r"\p{N}+")
_DATE_SUFFIX = regex.compile(r"\.(?![\p{L}\p{N}])|[ \t]?هـ")
_ERA = regex.compile(r"(?:平成|昭和|令和|大正|明治|民國|民国)[ \t]?$")
# What ends a secret's run of characters: after it, and (with '=' and ':') before it.
_SECRET_END = frozenset(" \t\n\r\"'`“”‘’«»„()[]{}<>,;、，；")
_SECRET_START = _SECRET_END | frozenset("=:：")
# How many words a PERSON span may grow by on each side.
_MAX_WORDS = 4
_WORD_CHAR = regex.compile(r"[\w\p{M}]")
# Letters of a spaceless script that may still be one word: a name between spaces or marks.
_MAX_SPACELESS_WORD = 6
_MAX_THAI_WORD = 14
_THAI = regex.compile(r"\p{Thai}")
_NAME_WORD = r"(?:\p{Lu}[\p{L}\p{M}]*(?:['’\-]\p{L}[\p{L}\p{M}]*)*)"
# 'J.', 'J.M.', 'Р.': capital letters, each with its period.
_INITIALS = r"(?:\p{Lu}\.(?:\p{Lu}\.)*)(?![\p{L}\p{M}])"
_INITIAL_AT_END = regex.compile(r"(?<![\p{L}\p{M}])\p{Lu}$")
# Between a surname and a given name: 'NOVÁKOVÁ, Jana', 'Fisher, Dawn'.
_NAME_COMMA = regex.compile(r",[ \t]+")


@functools.lru_cache(maxsize=1)
def _title_run() -> regex.Pattern[str]:
    """One or two titles, each with an optional period, ending where a name starts."""
    titles = sorted({t.rstrip(".") for t in load_name_words().titles}, key=len, reverse=True)
    title = rf"(?<![\w.])(?i:{'|'.join(regex.escape(t) for t in titles)})\.?"
    return regex.compile(rf"(?:{title}[ \t]+){{1,2}}$")


@functools.lru_cache(maxsize=1)
def _post_nominal_run() -> regex.Pattern[str]:
    """Up to three degrees or suffixes after a name, each with an optional period."""
    # NOTE: case-sensitive ('MA', not the Italian 'ma'); dotted ones also in lower case
    # ('b.eng.' in a lower-case name).
    written = {w.rstrip(".") for w in load_name_words().post_nominals}
    words = sorted(written | {w.lower() for w in written if "." in w}, key=len, reverse=True)
    if not words:
        return regex.compile(r"(?!)")
    degree = rf"(?:{'|'.join(regex.escape(w) for w in words)})\.?(?!\w)"
    return regex.compile(rf"(?:,?[ \t]+{degree}){{1,3}}")


@functools.lru_cache(maxsize=1)
def _name_edges() -> tuple[regex.Pattern[str], regex.Pattern[str], regex.Pattern[str]]:
    words = load_name_words()
    particles = "|".join(regex.escape(p) for p in sorted(words.particles, key=len, reverse=True))
    titles = {t.casefold() for t in words.titles}
    cues = [c for c in words.name_cues if " " not in c and c.casefold() not in titles]
    # A greeting or cue before a name ('Ask', 'Dear') is not part of it; a title is.
    leading_cue = regex.compile(
        rf"(?i:{'|'.join(regex.escape(c) for c in sorted(cues, key=len, reverse=True))})"
        r"\.?[ \t]+"
    )
    word = rf"(?:{_INITIALS}|{_NAME_WORD})"
    step = rf"(?:[ \t](?:(?i:{particles})[ \t])*{word}|[\-'’]{_NAME_WORD})"
    after = regex.compile(rf"(?:{step}){{1,{_MAX_WORDS}}}")
    # Backwards: capitalized words and initials (with particles between), ending where the
    # span starts.
    before = regex.compile(
        rf"(?:{word}(?:[ \t](?:(?i:{particles})[ \t])*|[\-'’])){{1,{_MAX_WORDS}}}\Z"
    )
    return after, before, leading_cue


def whole_values(text: str, spans: Iterable[Span]) -> list[Span]:
    grown = []
    for span in spans:
        start, end = _word_edges(text, span.start, span.end)
        if span.entity == PERSON:
            start, end = _name_edges_of(text, start, end)
        elif span.entity == SECRET:
            start, end = _secret_edges(text, start, end)
        elif span.entity == LICENSE_PLATE:
            start, end = _plate_edges(text, start, end)
        elif span.entity in DATES_OF_BIRTH:
            start, end = _date_edges(text, start, end)
        elif span.entity == STREET_ADDRESS:
            end = address_end(text, end)
        elif span.entity == USERNAME:
            start, end = _joined_edges(text, start, end, "._-")
            if (tail := _SYMBOL_TAIL.match(text, end)) is not None:
                end = tail.end()
            if start > 0 and text[start - 1] in "@＠":
                start -= 1
        elif span.entity in IDENTIFIERS:
            start, end = _joined_edges(text, start, end, "-/.")
        end = _with_closing_bracket(text, start, end)
        grown.append(span if (start, end) == (span.start, span.end) else
                     Span(span.entity, start, end, span.score, span.detector))
    return _with_name_commas(text, grown)


def _with_name_commas(text: str, spans: list[Span]) -> list[Span]:
    """A PERSON span followed by a comma and another PERSON span takes the comma."""
    starts = {span.start for span in spans if span.entity == PERSON}
    joined = []
    for span in spans:
        comma = _NAME_COMMA.match(text, span.end) if span.entity == PERSON else None
        if comma is not None and comma.end() in starts:
            span = Span(span.entity, span.start, comma.end(), span.score, span.detector)
        joined.append(span)
    return joined


def _word_edges(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole words around [start, end). In a script without spaces between words a run of
    its letters is a word only when short ('小林 さくら', a Thai name between spaces); in a
    longer one, a sentence, the span keeps its own edges ('我是王浩然的同学': '王浩然')."""
    grown_start, grown_end = start, end
    while grown_start > 0 and _WORD_CHAR.match(text[grown_start - 1]) and \
            _WORD_CHAR.match(text[grown_start]):
        grown_start -= 1
    while grown_end < len(text) and _WORD_CHAR.match(text[grown_end]) and \
            _WORD_CHAR.match(text[grown_end - 1]):
        grown_end += 1
    word = text[grown_start:grown_end]
    spaceless = len(SPACELESS_LETTER.findall(word))
    if spaceless and spaceless > (_MAX_THAI_WORD if _THAI.search(word) else _MAX_SPACELESS_WORD):
        return start, end
    return grown_start, grown_end


def _joined_edges(text: str, start: int, end: int, joiners: str) -> tuple[int, int]:
    """The groups of letters and digits joined to [start, end) by one of `joiners` ('2019/' of
    '2019/004412', '/17' of 'DIA-2231/17', '.t' of 'abdullaev.t'), a few on each side."""
    for _ in range(_MAX_JOINED):
        group = _JOINED_AFTER.match(text, end)
        if group is None or group.group(1) not in joiners:
            break
        end = group.end()
    for _ in range(_MAX_JOINED):
        group = _JOINED_BEFORE.search(text, max(0, start - 24), start)
        if group is None or group.group(1) not in joiners or not text[start].isalnum():
            break
        start = group.start()
    return start, end


def _secret_edges(text: str, start: int, end: int) -> tuple[int, int]:
    unspaced = SPACELESS_LETTER.search(text, start, end) is not None

    def ends(char: str, stops: frozenset[str]) -> bool:
        return char in stops or char.isspace() or (not unspaced and SPACELESS_LETTER.match(char))

    while start > 0 and not ends(text[start - 1], _SECRET_START):
        start -= 1
    while end < len(text) and not ends(text[end], _SECRET_END):
        end += 1
    # A full stop, comma or semicolon that ends the sentence is not the secret's ('48210000.'
    # before a space); '!' and the like stay ('Kumo2025!').
    if end - start > 1 and text[end - 1] in ".,;" and (end == len(text) or text[end].isspace()):
        end -= 1
    return start, end


def _plate_edges(text: str, start: int, end: int) -> tuple[int, int]:
    def size(a: int, b: int) -> int:
        return sum(not c.isspace() for c in text[a:b])

    while (after := _PLATE_AFTER.match(text, _without_trailing(text, start, end, " -.·"))) \
            and after.end() > end and size(start, after.end()) <= _MAX_PLATE_CHARS:
        end = after.end()
    while (before := _PLATE_BEFORE.search(text, max(0, start - 7), start)) and \
            size(before.start(), end) <= _MAX_PLATE_CHARS:
        start = before.start()
    return start, end


def _date_edges(text: str, start: int, end: int) -> tuple[int, int]:
    grown_start, grown_end = _date_digits(text, start, end)
    if len(_DATE_GROUPS.findall(text, grown_start, grown_end)) > 3:
        return start, end  # no date: '172.18.0.0/16' around a '0'
    start, end = grown_start, grown_end
    spaced_dots = ". " in text[start:end]
    if end > start and text[end - 1].isdigit() and (suffix := _DATE_SUFFIX.match(text, end)) \
            and (spaced_dots or suffix.group() != "."):
        end = suffix.end()
    if (era := _ERA.search(text, max(0, start - 3), start)) is not None:
        start = era.start()
    return start, end


def _date_digits(text: str, start: int, end: int) -> tuple[int, int]:
    """The span grown over the digit groups of its date on both sides."""
    digits_end = _without_trailing(text, start, end, " ./-")
    if text[digits_end - 1].isdigit() and (after := _DATE_AFTER.match(text, digits_end)) \
            and after.end() > end:
        end = after.end()
    if start < end and text[start].isdigit() and \
            (before := _DATE_BEFORE.search(text, max(0, start - 15), start)):
        start = before.start()
    return start, end


def _with_closing_bracket(text: str, start: int, end: int) -> int:
    for opening, closing in _CLOSING.items():
        if text.count(opening, start, end) > text.count(closing, start, end):
            at = text.find(closing, end, end + 4)
            if at != -1 and "\n" not in text[end:at]:
                return at + 1
    return end


def _without_trailing(text: str, start: int, end: int, joiners: str) -> int:
    """The end before the joining characters a span ends with (the '-' of 'KTX-' in
    'KTX-418'), where the next group is looked for."""
    while end - 1 > start and text[end - 1] in joiners:
        end -= 1
    return end


def _name_edges_of(text: str, start: int, end: int) -> tuple[int, int]:
    after, before, leading_cue = _name_edges()
    # Degrees after the name, also when the span already holds the first letters of one
    # ('Erhard Geisler B' of 'Erhard Geisler B.Eng.').
    for at in (end, text.rfind(" ", start, end)):
        degrees = _post_nominal_run().match(text, at) if at > start else None
        if degrees is not None and degrees.end() > end:
            end = degrees.end()
    # Only a name that starts with a capital grows over capitalized neighbours.
    if not text[start:end][:1].isupper():
        return _with_titles(text, start), end
    match = after.match(text, end)
    if match is not None:
        end = match.end()
    if text[end:end + 1] == "." and _INITIAL_AT_END.search(text, start, end):
        end += 1  # 'Clara J.', 'ГУСЕЙНОВ Р. А.'
    window_start = max(0, start - 60)
    back = before.search(text[window_start:start])
    if back is not None:
        start = window_start + back.start()
    while (cue := leading_cue.match(text, start, end)) is not None and cue.end() < end:
        start = cue.end()
    return _with_titles(text, start), end


def _with_titles(text: str, start: int) -> int:
    window_start = max(0, start - 30)
    titles = _title_run().search(text[window_start:start])
    return start if titles is None else window_start + titles.start()

