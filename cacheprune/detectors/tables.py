"""Cells of tables (CSV, TSV, semicolon- or pipe-separated, Markdown) under a private column,
and the parts of a person's address that records split over their own keys.

A table's values rarely carry their own evidence: 'Tyrone' in a first-name column, 'asmith'
under 'owner'. A header row is a line of two or more short, label-like cells separated by one
delimiter, two of which name private columns (rules/table_fields.yaml); the rows under it with
the same number of cells are its data, and each cell in a private column is a span. Where the
header names a person and a street, its address parts ('house_no', 'postcode') are private too;
so are the values of address parts in a JSON or YAML object that is an address ('"address":
{"line1": ..., "city": "London"}', '"domicilio": {"calle": ..., "cp": "03300"}') in a record that
names a person (record_fields.py).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import regex
from pydantic import BaseModel, ConfigDict, Field

from cacheprune.detectors.base import Detector, Span
from cacheprune.detectors.record_fields import address_parts_of_records
from cacheprune.detectors.yaml_io import load_spec

_DELIMITERS = ("\t", "|", ";", ",")
_PERSON, _ADDRESS = "PERSON", "STREET_ADDRESS"
_LABEL = regex.compile(r"[\p{L}][\p{L}\d _.\-/#()']{0,39}")
_SEPARATOR_ROW = regex.compile(r"[ \t|:\-]+")
_MAX_CELL = 80
# One cell: a quoted value (quotes doubled inside) or anything up to the next delimiter.
_CELL = {d: regex.compile(rf'[ \t]*"(?:[^"]|"")*"[ \t]*(?={regex.escape(d)}|$)'
                          rf"|[^{regex.escape(d)}]*") for d in _DELIMITERS}


class TableFieldsSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    columns: dict[str, list[str]] = Field(min_length=1)
    address_parts: list[str] = Field(default_factory=list)
    address_keys: list[str] = Field(default_factory=list)
    generic_names: list[str] = Field(default_factory=list)
    public_qualifiers: list[str] = Field(default_factory=list)


@functools.lru_cache(maxsize=4)
def load_table_fields(path: str | None = None) -> TableFieldsSpec:
    return load_spec(TableFieldsSpec, path, "table_fields.yaml")


def _words(label: str) -> str:
    return " ".join(regex.sub(r"[_.\-/#()'\"]+", " ", label.casefold()).split())


class TableColumnDetector(Detector):
    """Private columns of tables, found by their header."""

    path_options: ClassVar[tuple[str, ...]] = ("fields_file",)

    def __init__(self, fields_file: str | None = None, name: str = "tables") -> None:
        self.name = name
        self.fields_file = fields_file
        self.fields = load_table_fields(fields_file)
        self._columns = {_words(word): entity for entity, words in self.fields.columns.items()
                         for word in words}
        self._public = frozenset(_words(w) for w in self.fields.public_qualifiers)
        self._address_parts = frozenset(_words(w) for w in self.fields.address_parts)
        self._address_keys = frozenset(_words(w) for w in self.fields.address_keys)
        self._person_keys = frozenset(_words(w) for w in self.fields.columns.get(_PERSON, []))
        self._generic_names = frozenset(_words(w) for w in self.fields.generic_names)
        keys = sorted({k for w in self.fields.address_keys for k in _words(w).split()}, key=len,
                      reverse=True)
        self._address_hint = regex.compile(
            rf"(?i:{'|'.join(regex.escape(k) for k in keys) or '(?!)'})[\"']?[ \t]*[:=]")

    def describe(self) -> dict[str, Any]:
        return {"fields": self.fields.model_dump(mode="json")}

    def detect(self, text: str) -> list[Span]:
        lines = [(m.start(), m.end()) for m in regex.finditer(r"[^\n]+", text)]
        spans: list[Span] = []
        index = 0
        while index < len(lines):
            header = self._header(text, *lines[index])
            index += 1
            if header is None:
                continue
            delimiter, entities = header
            while index < len(lines):
                start, end = lines[index]
                if _SEPARATOR_ROW.fullmatch(text, start, end):
                    index += 1
                    continue
                cells = _cells(text, start, end, delimiter)
                if len(cells) != len(entities) or any(b - a > _MAX_CELL for a, b in cells):
                    break
                spans.extend(Span(entity, a, b, 0.8, self.name)
                             for (a, b), entity in zip(cells, entities, strict=True)
                             if entity is not None and b > a)
                index += 1
        if self._address_hint.search(text):  # no key that names an address: no record to read
            spans.extend(Span(_ADDRESS, a, b, 0.7, self.name)
                         for a, b in address_parts_of_records(
                             text, lambda key: _words(key) in self._address_parts,
                             lambda key: _words(key) in self._address_keys,
                             self._is_person_key,
                             lambda key: _words(key) not in self._generic_names))
        return spans

    def _header(self, text: str, start: int, end: int) -> tuple[str, list[str | None]] | None:
        for delimiter in _DELIMITERS:
            if delimiter not in text[start:end]:
                continue
            cells = [text[a:b] for a, b in _cells(text, start, end, delimiter)]
            if len(cells) < 2 or not all(_LABEL.fullmatch(c) for c in cells):
                continue
            entities = [self._entity(cell) for cell in cells]
            if _ADDRESS in entities and any(
                    e == _PERSON and _words(c) not in self._generic_names
                    for c, e in zip(cells, entities, strict=True)):
                # 'holder_name,house_no,street,postcode': the address's other columns
                entities = [_ADDRESS if e is None and _words(c) in self._address_parts else e
                            for c, e in zip(cells, entities, strict=True)]
            if sum(e is not None for e in entities) >= 2:
                return delimiter, entities
        return None

    def _is_person_key(self, key: str) -> bool:
        return self._entity(key) == _PERSON

    def _entity(self, cell: str) -> str | None:
        label = _words(cell)
        if any(f" {q} " in f" {label} " for q in self._public):
            return None
        found = self._columns.get(label)
        if found is not None:
            return found
        # A longer label holding a column name as whole words: 'customer email', 'home phone'.
        hits = [entity for word, entity in self._columns.items() if f" {word} " in f" {label} "]
        return hits[0] if len(set(hits)) == 1 else None


def _cells(text: str, start: int, end: int, delimiter: str) -> list[tuple[int, int]]:
    """[start, end) of each cell's value, without spaces and quotes around it."""
    line = text[start:end]
    if delimiter == "|":
        stripped = line.strip()
        offset = line.index(stripped) if stripped else 0
        line = stripped
        if line.startswith("|"):
            line, offset = line[1:], offset + 1
        line = line[:-1] if line.endswith("|") else line
        start += offset
    cells = []
    pattern = _CELL[delimiter]
    position = 0
    while position <= len(line):
        match = pattern.match(line, position)
        assert match is not None  # the second alternative matches the empty string
        value = match.group()
        left = len(value) - len(value.lstrip(" \t\"'"))
        right = len(value.rstrip(" \t\"'"))
        a, b = start + position + left, start + position + max(left, right)
        cells.append((a, b))
        position = match.end() + 1
    return cells
