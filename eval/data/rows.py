"""Reading JSON-lines files and checking their rows, with errors that name file, line and field.

Two row shapes exist (see the datasets README):
- grouped: one document with many queries, `{"doc_id", "context", "queries": [{"input",
  "answers", "type"?}]}`;
- LongBench: one question per row, `{"input", "context", "answers", ...}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.data.errors import DatasetError
from eval.data.records import Query


@dataclass(slots=True, frozen=True)
class Row:
    """One parsed line of a JSON-lines file and where it was."""

    path: Path
    line_no: int
    data: dict[str, Any]

    def where(self, field_name: str | None = None) -> str:
        place = f"{self.path}:{self.line_no}"
        return place if field_name is None else f"{place}: field {field_name!r}"


def read_rows(path: Path) -> Iterator[Row]:
    """Every non-blank line of `path` as a JSON object, numbered from 1."""
    if not path.is_file():
        raise DatasetError(f"{path}: data file not found")
    with path.open(encoding="utf-8") as lines:
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{path}:{line_no}: not valid JSON ({error.msg})") from error
            if not isinstance(data, dict):
                raise DatasetError(
                    f"{path}:{line_no}: a row must be a JSON object, got {type(data).__name__}"
                )
            yield Row(path, line_no, data)


def is_grouped(row: Row) -> bool:
    """Grouped rows carry their questions under 'queries'; LongBench rows carry one 'input'."""
    return "queries" in row.data


def text_field(row: Row, data: dict[str, Any], name: str, label: str | None = None) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(
            f"{row.where(label or name)} must be a non-empty string, got {value!r:.60}"
        )
    return value


def answers_field(row: Row, data: dict[str, Any], label: str) -> list[str]:
    value = data.get("answers")
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(answer, str) and answer.strip() for answer in value)
    ):
        raise DatasetError(
            f"{row.where(label)} must be a non-empty list of non-empty strings, got {value!r:.60}"
        )
    return list(value)


def grouped_queries(row: Row) -> list[Query]:
    raw_queries = row.data.get("queries")
    if not isinstance(raw_queries, list) or not raw_queries:
        raise DatasetError(f"{row.where('queries')} must be a non-empty list")
    queries = []
    for index, raw in enumerate(raw_queries):
        label = f"queries[{index}]"
        if not isinstance(raw, dict):
            raise DatasetError(f"{row.where(label)} must be an object")
        kind = raw.get("type")
        if kind is not None and not isinstance(kind, str):
            raise DatasetError(f"{row.where(label + '.type')} must be a string")
        queries.append(
            Query(
                question=text_field(row, raw, "input", f"{label}.input"),
                answers=answers_field(row, raw, f"{label}.answers"),
                kind=kind,
            )
        )
    return queries


def longbench_query(row: Row) -> Query:
    return Query(
        question=text_field(row, row.data, "input"), answers=answers_field(row, row.data, "answers")
    )
