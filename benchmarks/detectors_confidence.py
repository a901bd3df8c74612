"""How well the learned detector's span confidence separates values from PII-free text.

    python benchmarks/detectors_confidence.py [DATA_DIR] [--model DIR] [--beam-width 8]
                                              [--heldout 600] [--train-sample 300] [--seed 1]
                                              [--papers 8] [--stories 3]

The model alone (no rules), greedy as in the chain; each span it finds gets its beam marginal
(`cacheprune/detectors/span_confidence.py`). A span is a hit when it overlaps a labelled value
of the held-out split or of a fresh sample of the training genres, and a false alarm when it
lies in a PII-free text: those splits' negatives, the hand-labelled corpus's PII-free messages,
the tests' PII-free texts (tests/detectors/pii_free_genres.py) and PII-free prose (QASPER
papers; NarrativeQA stories are left out, since their character names are names). For each
threshold: hits kept, false alarms kept, and the characters of PII-free text those cover.
Never reads the blind set.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "detectors"))

from detector_corpora import PARTS, prose_documents, read_part  # noqa: E402
from pii_free_genres import PII_FREE_GENRES  # noqa: E402

from cacheprune.detectors.learned import LearnedDetector  # noqa: E402
from cacheprune.detectors.span_confidence import span_confidences  # noqa: E402
from cacheprune.detectors.train.generate import generate_split  # noqa: E402

THRESHOLDS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)


def scored_spans(detector: LearnedDetector, text: str, beam_width: int):
    """(start, end, label, confidence) of the model's spans in `text`."""
    doc = detector.nlp(text)
    ents = list(doc.ents)
    confidences = span_confidences(detector.nlp, doc, ents, beam_width)
    return [(e.start_char, e.end_char, e.label_, c) for e, c in zip(ents, confidences,
                                                                   strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", type=Path,
                        default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--model", type=Path, help="spaCy pipeline folder (default: shipped)")
    parser.add_argument("--beam-width", type=int, default=8)
    parser.add_argument("--heldout", type=int, default=600)
    parser.add_argument("--train-sample", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--papers", type=int, default=8)
    parser.add_argument("--stories", type=int, default=0)
    args = parser.parse_args()
    detector = LearnedDetector(model_dir=str(args.model) if args.model else None)

    hits: dict[str, list[float]] = {}       # source -> confidences of spans on values
    alarms: dict[str, list[tuple[float, int]]] = {}  # source -> (confidence, characters)
    free_chars: dict[str, int] = {}
    splits = {"heldout": generate_split("heldout", args.heldout, args.seed),
              "train-genres": generate_split("train", args.train_sample, 1000 + args.seed)}
    for name, examples in splits.items():
        for example in examples:
            spans = scored_spans(detector, example.text, args.beam_width)
            if example.spans:
                for start, end, _, confidence in spans:
                    if any(start < e and s < end for s, e, _ in example.spans):
                        hits.setdefault(name, []).append(confidence)
            else:
                source = f"{name} PII-free"
                free_chars[source] = free_chars.get(source, 0) + len(example.text)
                alarms.setdefault(source, []).extend((c, e - s) for s, e, _, c in spans)
    free_texts = [("corpus PII-free", m.text) for part in PARTS for m in read_part(part)
                  if not m.values]
    free_texts += [("tests' PII-free genres", text) for _, text in PII_FREE_GENRES]
    if args.data_dir.is_dir():
        free_texts += [("prose", text) for _, text in
                       prose_documents(args.data_dir, args.papers, args.stories, 20000)]
    for source, text in free_texts:
        free_chars[source] = free_chars.get(source, 0) + len(text)
        alarms.setdefault(source, []).extend(
            (c, e - s) for s, e, _, c in scored_spans(detector, text, args.beam_width))

    print(f"model {detector.model_dir}, beam width {args.beam_width}")
    print("spans on values kept (share of the model's hits on values)")
    for source, confidences in hits.items():
        print(f"  {source:<24}" + "".join(
            f" {t:>5}:{sum(c >= t for c in confidences) / len(confidences):6.1%}"
            for t in THRESHOLDS))
    print("characters of PII-free text the model's spans cover")
    for source, spans in alarms.items():
        print(f"  {source:<24}" + "".join(
            f" {t:>5}:{sum(n for c, n in spans if c >= t) / free_chars[source]:6.2%}"
            for t in THRESHOLDS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
