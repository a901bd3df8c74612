"""What each detector of a policy buys and costs: the chain scored without each one, side by side.

    python benchmarks/detectors_ablation.py [DATA_DIR] [--config POLICY] [--heldout 600]
                                            [--papers 8] [--stories 3] [--seed 1]

One row per chain: the whole policy, then the policy without one detector. Columns: values
fully masked on the generated held-out split and on the hand-labelled corpus's untuned parts
(blind, recheck), and the share of tokens masked on PII-free texts (the held-out split's, the
corpus's untuned parts', the tests' PII-free genres, QASPER/NarrativeQA prose). A detector whose
row loses few values but frees many tokens is one the rest of the chain already covers.

Each detector runs once per text: the ablated chains reuse its spans (the chain's own
normalization, growth to whole values and organisation-contact filter run for each row). The
blind set (datasets/pii_blind) is deliberately not read: choosing a chain on it would make it a
tuned set.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "detectors"))

from detector_corpora import (  # noqa: E402
    UNTUNED_PARTS,
    Value,
    fully_masked,
    prose_documents,
    score_corpus,
    score_pii_free,
)
from pii_free_genres import PII_FREE_GENRES  # noqa: E402
from tqdm import tqdm  # noqa: E402

from cacheprune.detectors import load_policy  # noqa: E402
from cacheprune.detectors.base import Detector, Span  # noqa: E402
from cacheprune.detectors.chain import DetectorChain  # noqa: E402
from cacheprune.detectors.mask import mask_text  # noqa: E402
from cacheprune.detectors.train.generate import generate_split  # noqa: E402
from cacheprune.models import load_tokenizer  # noqa: E402


class Remembered(Detector):
    """A detector whose spans for a text are computed once and reused by every chain."""

    def __init__(self, detector: Detector) -> None:
        self.name = detector.name
        self._detector = detector
        self._spans: dict[str, list[Span]] = {}

    def detect(self, text: str) -> list[Span]:
        if text not in self._spans:
            self._spans[text] = self._detector.detect(text)
        return self._spans[text]


def chain_without(chain: DetectorChain, detectors: list[Remembered], left_out: str | None
                  ) -> DetectorChain:
    return DetectorChain(
        [d for d in detectors if d.name != left_out], timeout_s=None,
        thresholds=chain.thresholds, allow_list=chain.allow_list, normalize=chain.normalize,
        whole_values=chain.whole_values, organisation_contacts=chain.organisation_contacts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", type=Path,
                        default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--config", type=Path, help="policy YAML (default: the shipped policy)")
    parser.add_argument("--heldout", type=int, default=600, help="held-out examples")
    parser.add_argument("--papers", type=int, default=8)
    parser.add_argument("--stories", type=int, default=3)
    parser.add_argument("--chars", type=int, default=20000, help="characters per document")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    started = time.perf_counter()
    policy = load_policy(args.config)
    tokenizer = load_tokenizer()
    detectors = [Remembered(d) for d in policy.chain.detectors]
    print(f"policy {policy.source}: {len(detectors)} detectors, loaded in "
          f"{time.perf_counter() - started:.1f} s")
    heldout = generate_split("heldout", args.heldout, args.seed)
    prose = (prose_documents(args.data_dir, args.papers, args.stories, args.chars)
             if args.data_dir.is_dir() else [])
    if not prose:
        print(f"prose: data folder {args.data_dir} is missing; its column is left out")

    rows = [None] + [d.name for d in detectors]
    table = []
    for left_out in tqdm(rows, desc="chains", unit="chain"):
        chain = chain_without(policy.chain, detectors, left_out)

        def mask(text: str, chain=chain):
            offsets = [(int(s), int(e)) for s, e in tokenizer.encode(text).offsets]
            return offsets, list(mask_text(chain, text, offsets, (), policy.widen).mask)

        table.append((left_out, score(mask, heldout, prose)))
    print_table(table, bool(prose))
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    return 0


def score(mask, heldout, prose) -> dict[str, tuple[int, int]]:
    """(hits, total) per column: values fully masked, or tokens masked on PII-free text."""
    columns = {name: [0, 0] for name in
               ("heldout values", "corpus values", "heldout free", "corpus free",
                "tests free", "prose free")}

    def add(column: str, hits: int, total: int) -> None:
        columns[column][0] += hits
        columns[column][1] += total

    for example in heldout:
        offsets, private = mask(example.text)
        if not example.spans:
            add("heldout free", sum(private), len(private))
        for start, end, kind in example.spans:
            add("heldout values", fully_masked(Value(kind, start, end), offsets, private), 1)
    for outcome in score_corpus(mask, UNTUNED_PARTS):
        add("corpus values", outcome.masked, 1)
    for result in score_pii_free(mask, UNTUNED_PARTS):
        add("corpus free", result.num_masked, result.num_tokens)
    for _, text in PII_FREE_GENRES:
        _, private = mask(text)
        add("tests free", sum(private), len(private))
    for _, text in prose:
        _, private = mask(text)
        add("prose free", sum(private), len(private))
    return {name: (hits, total) for name, (hits, total) in columns.items()}


def print_table(table, with_prose: bool) -> None:
    names = [n for n in table[0][1] if with_prose or n != "prose free"]
    print("\nvalues: fully masked (higher is better); free: PII-free tokens masked (lower is "
          "better);\nthe rows below the first leave one detector out, with the change in points")
    print(f"{'chain':<24}" + "".join(f"{n:>16}" for n in names))
    whole = table[0][1]
    for left_out, columns in table:
        cells = []
        for name in names:
            hits, total = columns[name]
            share = 100 * hits / max(total, 1)
            if left_out is None:
                cells.append(f"{share:.2f}%")
            else:
                delta = share - 100 * whole[name][0] / max(whole[name][1], 1)
                cells.append(f"{share:.2f} ({delta:+.2f})")
        label = "whole policy" if left_out is None else f"without {left_out}"
        print(f"{label:<24}" + "".join(f"{c:>16}" for c in cells))
    totals = {name: whole[name][1] for name in names}
    print("counts: " + ", ".join(f"{name} {total}" for name, total in totals.items()))


if __name__ == "__main__":
    raise SystemExit(main())
