"""Try a detection policy on a text: `python -m cacheprune.detectors.cli --text "..."`.

Prints the text with its private tokens between ⟦ ⟧, then one line per span (entity, offsets,
score, detector). Exit status: 0 done, 1 bad input or config, 2 the chain failed closed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cacheprune.detectors.base import DetectorConfigError, DetectorUnavailableError
from cacheprune.detectors.mask import TokenMask
from cacheprune.detectors.policy import DetectionPolicy, load_policy
from cacheprune.tokens import MaskArray

OPEN, CLOSE = "⟦", "⟧"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cacheprune detect", description="Show which tokens of a text a policy makes private."
    )
    parser.add_argument("--config", type=Path,
                        help="policy YAML (default: the shipped default policy)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--text", help="the text to scan")
    source.add_argument("--file", type=Path, help="a UTF-8 file to scan ('-' or neither: stdin)")
    parser.add_argument("--public", action="append", default=[], metavar="START:END",
                        help="a public character range, not scanned (repeatable)")
    parser.add_argument("--widen", type=int, help="override the policy's widening (tokens)")
    parser.add_argument("--chars", action="store_true",
                        help="mark characters, not tokens (no tokenizer is loaded)")
    parser.add_argument("--tokenizer", help="model folder or GGUF for the tokenizer "
                        "(default: the default model's)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of marked text")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        text = _read_text(args.text, args.file)
        public = [_parse_range(value) for value in args.public]
        policy = load_policy(args.config)
        if args.widen is not None:
            if args.widen < 0:
                raise ValueError(f"--widen must be >= 0, got {args.widen}")
            policy.widen = args.widen
        offsets = _char_offsets(text) if args.chars else _token_offsets(text, args.tokenizer)
        result = policy.mask(text, offsets, public)
    except (DetectorConfigError, DetectorUnavailableError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(_as_json(policy, result, offsets), indent=2))
    else:
        print(_report(text, offsets, result, policy, "characters" if args.chars else "tokens"))
    return 2 if result.detection.failed_closed else 0


def _read_text(text: str | None, file: Path | None) -> str:
    if text is not None:
        return text
    if file is not None and str(file) != "-":
        return file.read_text(encoding="utf-8")
    return sys.stdin.read()


def _parse_range(value: str) -> tuple[int, int]:
    start, sep, end = value.partition(":")
    if not sep or not start.strip().isdigit() or not end.strip().isdigit():
        raise ValueError(f"--public expects START:END character offsets, got {value!r}")
    return int(start), int(end)


def _char_offsets(text: str) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(len(text))]


def _token_offsets(text: str, source: str | None) -> list[tuple[int, int]]:
    from cacheprune.models.tokenizer import load_tokenizer

    return [(int(s), int(e)) for s, e in load_tokenizer(source).encode(text).offsets]


def marked_text(text: str, offsets: Sequence[tuple[int, int]], mask: MaskArray) -> str:
    """The text with each run of private units (tokens or characters) between ⟦ ⟧."""
    pieces: list[str] = []
    cursor = 0
    inside = False
    for (start, end), private in zip(offsets, mask, strict=True):
        if start < cursor:  # overlapping offsets (byte-level merges): keep text order
            start = cursor
        if bool(private) != inside:
            pieces.append(text[cursor:start])
            pieces.append(OPEN if private else CLOSE)
            cursor = start
            inside = bool(private)
        pieces.append(text[cursor:max(end, cursor)])
        cursor = max(end, cursor)
    pieces.append(text[cursor:])
    if inside:
        pieces.append(CLOSE)
    return "".join(pieces)


def _report(text: str, offsets: Sequence[tuple[int, int]], result: TokenMask,
            policy: DetectionPolicy, unit: str) -> str:
    lines = [marked_text(text, offsets, result.mask), ""]
    detection = result.detection
    if detection.failed_closed:
        lines.append(f"FAILED CLOSED: {detection.reason}; every {unit[:-1]} is private")
    for span in detection.spans:
        lines.append(f"{span.entity:<16} [{span.start:>6}, {span.end:>6})  score {span.score:.2f}"
                     f"  {span.detector:<10} {text[span.start:span.end]!r}")
    lines.append(f"{result.num_private} of {len(result.mask)} {unit} private; "
                 f"widen {policy.widen}; policy {policy.policy_version[:16]} ({policy.source})")
    return "\n".join(lines)


def _as_json(policy: DetectionPolicy, result: TokenMask,
             offsets: Sequence[tuple[int, int]]) -> dict[str, object]:
    detection = result.detection
    return {
        "policy_version": policy.policy_version,
        "failed_closed": detection.failed_closed,
        "reason": detection.reason,
        "spans": [
            {"entity": s.entity, "start": s.start, "end": s.end, "score": s.score,
             "detector": s.detector}
            for s in detection.spans
        ],
        "private_units": [int(i) for i in np.flatnonzero(result.mask)],
        "offsets": [list(o) for o in offsets],
    }


if __name__ == "__main__":
    sys.exit(main())
