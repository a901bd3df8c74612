"""The labelled corpus (corpus/*.txt) and PII-free prose, and how masking is scored on them.

Shared by tests/detectors and benchmarks/detectors_quality.py. A value counts as masked only
when every token that overlaps it is private (what a prober could not recover).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

CORPUS_DIR = Path(__file__).parent / "corpus"
# NOTE: "tuned" and "heldout" were written by the author of the detectors; "blind" by someone
# who had not read them (its figure before the fixes it led to is the estimate of
# generalization); "recheck" after those fixes, never tuned on, to see whether they generalize.
AUTHOR_PARTS = ("tuned", "heldout", "families")
BLIND_PART = "blind"
RECHECK_PART = "recheck"
UNTUNED_PARTS = (BLIND_PART, RECHECK_PART)
PARTS = (*AUTHOR_PARTS, BLIND_PART, RECHECK_PART)
_VALUE = re.compile(r"\[\[([A-Z]+):(.*?)\]\]", re.DOTALL)

Offsets = Sequence[tuple[int, int]]
# text -> (per-token offsets, per-token private flags)
MaskFn = Callable[[str], tuple[Offsets, Sequence[bool]]]


@dataclass(frozen=True)
class Value:
    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Message:
    text: str
    values: tuple[Value, ...]


def read_part(part: str) -> list[Message]:
    """Messages of corpus/<part>.txt with their values' character offsets in the plain text."""
    messages = []
    for line in (CORPUS_DIR / f"{part}.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        marked = line.replace("\\n", "\n")
        pieces: list[str] = []
        values: list[Value] = []
        cursor = 0
        length = 0
        for match in _VALUE.finditer(marked):
            pieces.append(marked[cursor:match.start()])
            length += match.start() - cursor
            value = match.group(2)
            values.append(Value(match.group(1), length, length + len(value)))
            pieces.append(value)
            length += len(value)
            cursor = match.end()
        pieces.append(marked[cursor:])
        messages.append(Message("".join(pieces), tuple(values)))
    return messages


def fully_masked(value: Value, offsets: Offsets, private: Sequence[bool]) -> bool:
    """Every token that overlaps the value is private."""
    return all(is_private for (start, end), is_private in zip(offsets, private, strict=True)
               if start < value.end and end > value.start and end > start)


@dataclass(frozen=True)
class Outcome:
    part: str
    kind: str
    value: str
    masked: bool


def score_corpus(mask: MaskFn, parts: Sequence[str] = PARTS) -> list[Outcome]:
    outcomes = []
    for part in parts:
        for message in read_part(part):
            offsets, private = mask(message.text)
            for value in message.values:
                outcomes.append(Outcome(part, value.kind,
                                        message.text[value.start:value.end],
                                        fully_masked(value, offsets, private)))
    return outcomes


@dataclass(frozen=True)
class FalsePositives:
    """A PII-free message (one with no marked value) and the pieces of it the chain masked."""

    part: str
    num_tokens: int
    num_masked: int
    masked_pieces: tuple[str, ...]  # the masked text, adjacent masked tokens joined


def score_pii_free(mask: MaskFn, parts: Sequence[str] = PARTS) -> list[FalsePositives]:
    results = []
    for part in parts:
        for message in read_part(part):
            if message.values:
                continue
            offsets, private = mask(message.text)
            runs: list[tuple[int, int]] = []  # runs of adjacent masked tokens, as text spans
            for (start, end), is_private in zip(offsets, private, strict=True):
                if not is_private:
                    continue
                if runs and runs[-1][1] == start:
                    runs[-1] = (runs[-1][0], end)
                else:
                    runs.append((start, end))
            results.append(FalsePositives(part, len(offsets), sum(private),
                                          tuple(message.text[a:b] for a, b in runs)))
    return results


def prose_documents(data_dir: Path, num_papers: int, num_stories: int,
                    chars_per_doc: int) -> list[tuple[str, str]]:
    """(label, text) from QASPER papers and NarrativeQA stories, cut at a paragraph end."""
    papers = data_dir / "qasper" / "qasper_leval_grouped.jsonl"
    stories = data_dir / "narrativeqa" / "narrativeqa_minilongbench_longbench.jsonl"
    missing = [str(p) for p in (papers, stories) if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"PII-free prose not found: {', '.join(missing)} (give the folder that holds "
            "qasper/ and narrativeqa/, e.g. ../shared/datasets from the project root)"
        )
    documents = []
    for path, count, label in ((papers, num_papers, "qasper"), (stories, num_stories, "story")):
        with path.open(encoding="utf-8") as rows:
            for index, row in enumerate(rows):
                if index >= count:
                    break
                documents.append((f"{label}-{index}", _cut(json.loads(row)["context"],
                                                           chars_per_doc)))
    return documents


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    end = text.rfind("\n", 0, limit)
    return text[:end if end > limit // 2 else limit]
