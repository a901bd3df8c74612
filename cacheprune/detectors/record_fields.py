"""Records that split a person's address over keys of their own: JSON objects and YAML blocks.

'"address": {"line1": "Flat 9, Kestrel House", "city": "London", "postcode": "SE10 8JL"}' in a
policyholder's record holds one address in four values, and 'London' or '3.º Esq.' carry no
evidence of their own. A record is an address when one of its keys, or the key it is the value
of, names an address; its values under address parts ('city', 'cp', 'andar') are the address's,
where the outermost record or paragraph around it also names a person ('first_name', 'nome').
The key lists are the tables detector's (rules/table_fields.yaml).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import regex

_KEY = r"[\p{L}][\p{L}\p{N}_.\- ]{0,30}?"
# '"key": "value"', "'key': 'value'", 'key: value' up to the next ',', '}', ']' or line end.
_PAIR = regex.compile(
    rf"""(?P<q>["']?)(?P<key>{_KEY})(?P=q)[ \t]*[:=][ \t]*"""
    r"""(?:"(?P<double>[^"\n]{1,80})"|'(?P<single>[^'\n]{1,80})'"""
    r"""|(?P<bare>[^\s"'{}\[\],;][^\n,;{}\[\]"]{0,79}?))[ \t]*(?=[,;}\]\n]|$)"""
)
_OPENER = regex.compile(rf"""(?P<q>["']?)(?P<key>{_KEY})(?P=q)[ \t]*[:=][ \t]*\Z""")
_YAML_LINE = regex.compile(
    rf"""^(?P<indent>[ \t]*)(?:-[ \t]+)?(?P<q>["']?)(?P<key>{_KEY})(?P=q)[ \t]*:[ \t]*"""
    r"(?P<rest>.*)$",
    regex.MULTILINE,
)
_NO_VALUE = frozenset({"null", "none", "nil", "true", "false", "~", "-", "n/a"})
# Objects beyond this many are a document, not a record: left to the other detectors.
_MAX_OBJECTS = 2000

Matcher = Callable[[str], bool]


@dataclass(slots=True)
class _Pair:
    key: str
    value_start: int
    value_end: int
    record: tuple[object, ...]  # which record the pair belongs to
    outer: tuple[int, int]  # the outermost record or paragraph around it


def address_parts_of_records(text: str, is_part: Matcher, is_address: Matcher,
                             is_person: Matcher, is_specific: Matcher) -> list[tuple[int, int]]:
    """[start, end) of each address part's value in a person's address record: an object that
    is the value of an address key, in a record that names a person ('"address": {...}' beside
    '"first_name"'), or a record with an address key and a key that names a person and nothing
    else ('first_name', not a bare 'name')."""
    if ":" not in text and "=" not in text:
        return []
    objects = _objects(text)
    if len(objects) > _MAX_OBJECTS:
        return []
    pairs = list(_json_pairs(text, objects)) + list(_yaml_pairs(text, objects))
    records: dict[tuple[object, ...], list[_Pair]] = {}
    for pair in pairs:
        records.setdefault(pair.record, []).append(pair)
    person_keys = [(pair.outer, pair.key) for pair in pairs if is_person(pair.key)]
    people = {outer for outer, _ in person_keys}
    specific = {outer for outer, key in person_keys if is_specific(key)}
    found: list[tuple[int, int]] = []
    for record, members in records.items():
        parent = record[-1]
        nested = isinstance(parent, str) and is_address(parent)
        if nested:
            named = people  # the address is an object of its own: its street too
        elif any(is_address(p.key) for p in members):
            named = specific
        else:
            continue
        found.extend((p.value_start, p.value_end) for p in members
                     if p.outer in named and (is_part(p.key) or nested and is_address(p.key))
                     and text[p.value_start:p.value_end].strip().casefold() not in _NO_VALUE)
    return found


def _value(match: regex.Match[str]) -> tuple[int, int]:
    group = next(g for g in ("double", "single", "bare") if match.group(g) is not None)
    return match.start(group), match.end(group)


def _json_pairs(text: str, objects: list[tuple[int, int]]) -> Iterator[_Pair]:
    """Pairs inside braces, each in its innermost object; the record is named by the key the
    object is the value of."""
    opens = [start for start, _ in objects]
    pairs = (m for start, end in _outermost(objects) for m in _PAIR.finditer(text, start, end))
    for match in pairs:
        at = match.start()
        index = bisect.bisect_right(opens, at) - 1
        inner = None
        while index >= 0:
            start, end = objects[index]
            if end > at:
                inner = inner or (start, end)
                outer = (start, end)
            index -= 1
        if inner is None:
            continue
        opener = _OPENER.search(text, max(0, inner[0] - 40), inner[0])
        parent = opener.group("key") if opener is not None else None
        yield _Pair(match.group("key"), *_value(match), ("json", inner, parent), outer)


def _objects(text: str) -> list[tuple[int, int]]:
    """[start, end) of each balanced '{...}', sorted by start; braces inside strings skipped."""
    found, stack, in_string, escaped = [], [], False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char in '"\n':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            stack.append(index)
        elif char == "}" and stack:
            found.append((stack.pop(), index + 1))
    return sorted(found)


def _yaml_pairs(text: str, objects: list[tuple[int, int]]) -> Iterator[_Pair]:
    """'key: value' lines outside braces, grouped by their indentation under the same parent
    line ('address:'); the outer region is the paragraph (up to a blank line)."""
    inside = _Inside(objects)
    paragraph_start = 0
    parents: list[tuple[int, str]] = []  # (indent, key) of the open blocks
    previous_end = 0
    for match in _YAML_LINE.finditer(text):
        if inside(match.start()):
            continue
        if "\n\n" in text[previous_end:match.start()] or "{" in match.group("rest"):
            paragraph_start = match.start()
            parents = []
        previous_end = match.end()
        indent = len(match.group("indent").expandtabs(2)) + (
            2 if match.group(0).lstrip().startswith("-") else 0)
        while parents and parents[-1][0] >= indent:
            parents.pop()
        rest = match.group("rest")
        if not rest or rest.startswith("#"):
            parents.append((indent, match.group("key")))
            continue
        start, end = match.span("rest")  # a YAML value runs to the line's end
        while end > start and text[end - 1] in " \t,":
            end -= 1
        if end - start > 1 and text[start] in "\"'" and text[end - 1] == text[start]:
            start, end = start + 1, end - 1
        paragraph_end = text.find("\n\n", match.end())
        outer = (paragraph_start, len(text) if paragraph_end == -1 else paragraph_end)
        parent = parents[-1][1] if parents else None
        yield _Pair(match.group("key"), start, end,
                    ("yaml", paragraph_start, indent, len(parents), parent), outer)


def _outermost(objects: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The objects (sorted by start) that no other holds, in order."""
    spans: list[tuple[int, int]] = []
    for start, end in objects:
        if not spans or start >= spans[-1][1]:
            spans.append((start, end))
    return spans


class _Inside:
    """Whether a position lies inside one of the objects (sorted by start)."""

    def __init__(self, objects: list[tuple[int, int]]) -> None:
        self._spans = _outermost(objects)
        self._starts = [start for start, _ in self._spans]

    def __call__(self, at: int) -> bool:
        index = bisect.bisect_right(self._starts, at) - 1
        return index >= 0 and at < self._spans[index][1]
