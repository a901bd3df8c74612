"""How much a detection policy masks: private values fully masked, per kind, and prose masked.

    python benchmarks/detectors_quality.py [DATA_DIR] [--config POLICY] [--show-misses]
                                           [--papers 20] [--stories 6] [--chars 20000]
                                           [--heldout 600] [--train-sample 300] [--seed 1]
                                           [--blind FILE] [--written-test DIR] [--blind-only]

Every figure is given twice in one run: "before" (the policy without its learned detectors,
`learned` and `tagger`) and "after" (the policy as it is). First the blind set
(datasets/pii_blind: texts written from a
description of the genres by someone who had read neither the detectors nor the training
data; per kind, genre and language, and the tokens masked on its PII-free texts): the figure
that estimates text nobody here has seen. Then the hand-written test split (datasets/pii_written/
test: written apart from the texts the tagger trains on). Then the generated splits of
`cacheprune.detectors.train`: the held-out split (its own templates, locales and value pools,
never trained on) apart from a fresh sample of the training genres, per kind and per genre,
and the tokens masked on their PII-free texts per genre.

Values: the project's hand-labelled corpus (tests/detectors/corpus: a tuned part and a
held-out part written before tuning, and a blind part written by someone who had not read the
detectors, and a recheck part written after the fixes the blind part led to). A value is fully
masked when every token that overlaps it is private, with the default model's tokenizer and the
real mask path (`DetectionPolicy.mask`). The blind and recheck parts' missed values are always
listed (the other parts' with --show-misses). The corpus's PII-free messages give a first
false-positive figure, with what was masked in them, and the tests' PII-free texts
(tests/detectors/pii_free_genres.py) a second one, per genre. Prose: QASPER papers and NarrativeQA
stories (PII-free apart from author and character names) from DATA_DIR (default:
../shared/datasets from the project root); the share of their tokens the policy masks, and which
detectors masked them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLIND = ROOT / "datasets" / "pii_blind" / "blind_2026_12.jsonl"
WRITTEN_TEST = ROOT / "datasets" / "pii_written" / "test"
sys.path.insert(0, str(ROOT / "tests" / "detectors"))

from detector_corpora import (  # noqa: E402
    PARTS,
    UNTUNED_PARTS,
    FalsePositives,
    Outcome,
    Value,
    fully_masked,
    prose_documents,
    score_corpus,
    score_pii_free,
)
from pii_free_genres import PII_FREE_GENRES  # noqa: E402

from cacheprune.detectors import DetectionPolicy, load_policy, token_mask  # noqa: E402
from cacheprune.detectors.policy import default_policy_path, policy_from_data  # noqa: E402
from cacheprune.detectors.train.generate import generate_split  # noqa: E402
from cacheprune.detectors.train.written import read_written, read_written_files  # noqa: E402
from cacheprune.detectors.yaml_io import read_yaml  # noqa: E402
from cacheprune.models import load_tokenizer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", type=Path,
                        default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--config", type=Path, help="policy YAML (default: the shipped policy)")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--papers", type=int, default=20)
    parser.add_argument("--stories", type=int, default=6)
    parser.add_argument("--chars", type=int, default=20000, help="characters per document")
    parser.add_argument("--heldout", type=int, default=600, help="held-out examples")
    parser.add_argument("--train-sample", type=int, default=300,
                        help="examples of the training genres (a seed training did not use)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--blind", type=Path, default=BLIND, help="the blind set (JSON lines)")
    parser.add_argument("--written-test", type=Path, nargs="+", default=[WRITTEN_TEST],
                        help="hand-written texts training never reads (JSON-lines files or "
                             "folders of them, scored together)")
    parser.add_argument("--blind-only", action="store_true",
                        help="score the hand-written sets only, blind and test (a quick run)")
    args = parser.parse_args()

    started = time.perf_counter()
    after = load_policy(args.config)
    before = without_learned(after, args.config)
    tokenizer = load_tokenizer()
    print(f"policy {after.source} loaded in {time.perf_counter() - started:.1f} s; "
          "'before' is the same chain without the learned detectors")

    def masker(policy):
        def mask(text: str):
            offsets = [(int(s), int(e)) for s, e in tokenizer.encode(text).offsets]
            result = policy.mask(text, offsets)
            if result.detection.failed_closed:
                raise SystemExit(f"the chain failed closed: {result.detection.reason}")
            return offsets, list(result.mask)
        return mask

    masks = {"before": masker(before), "after": masker(after)}
    if args.blind.is_file():
        print_scores(f"blind set {args.blind.name}", read_written(args.blind, "blind"), masks,
                     misses=True, by_language=True)
    else:
        print(f"\nblind set {args.blind} is missing: skipped")
    if all(path.exists() for path in args.written_test):
        print_scores(f"hand-written test split {' '.join(map(str, args.written_test))}",
                     read_written_files(args.written_test, "test"), masks, misses=True,
                     by_language=True)
    if args.blind_only:
        return 0
    print_generated(masks, args)
    for label, mask in masks.items():
        print(f"\n===== the project's hand-labelled corpus, {label} =====")
        print_values(score_corpus(mask), args.show_misses)
        print_pii_free_messages(score_pii_free(mask))
        print_pii_free_genres(mask)
    if not args.data_dir.is_dir():
        print(f"\nprose: data folder {args.data_dir} is missing; give the folder that holds "
              "qasper/ and narrativeqa/ as the first argument")
        return 1
    for label, policy in (("before", before), ("after", after)):
        print(f"\n===== PII-free prose, {label} =====")
        print_prose(policy, tokenizer, args)
    return 0


LEARNED_DETECTORS = ("learned", "tagger")


def without_learned(policy: DetectionPolicy, config: Path | None) -> DetectionPolicy:
    """The same policy file without its trained models (the chain before them)."""
    path = config if config is not None else default_policy_path()
    data = read_yaml(path)
    data["detectors"] = [d for d in data["detectors"]
                         if d.get("detector") not in LEARNED_DETECTORS]
    return policy_from_data(data, f"{path} without {' or '.join(LEARNED_DETECTORS)}",
                            path.parent)


def print_generated(masks, args) -> None:
    """The generated splits: the held-out one (never trained on) and the training genres."""
    splits = {"train-genres": generate_split("train", args.train_sample, 1000 + args.seed),
              "heldout": generate_split("heldout", args.heldout, args.seed)}
    for split, examples in splits.items():
        print_scores(f"generated split '{split}' (seed {args.seed})", examples, masks,
                     misses=split == "heldout")


def print_scores(title: str, examples, masks, misses: bool, by_language: bool = False) -> None:
    """Values fully masked per kind, genre (and language), and PII-free tokens masked per
    genre, before | after; the values missed after, when `misses`."""
    tables: dict[str, dict[str, dict[str, list[bool]]]] = {
        name: defaultdict(lambda: defaultdict(list))
        for name in ("kind", "genre") + (("language",) if by_language else ())}
    negatives: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(
        lambda: [0, 0]))
    missed: list[str] = []
    for example in examples:
        for label, mask in masks.items():
            offsets, private = mask(example.text)
            if not example.spans:
                cell = negatives[example.genre][label]
                cell[0] += sum(private)
                cell[1] += len(offsets)
            for start, end, kind in example.spans:
                masked = fully_masked(Value(kind, start, end), offsets, private)
                keys = {"kind": kind, "genre": example.genre, "language": example.locale}
                tables["kind"]["ALL"][label].append(masked)
                for name, table in tables.items():
                    table[keys[name]][label].append(masked)
                if label == "after" and not masked:
                    missed.append(f"{kind}: {example.text[start:end]!r}")
    print(f"\n===== {title}, {len(examples)} texts: values fully masked, before | after =====")
    for name, table in tables.items():
        print(f"{name:<14}{'before':>18}{'after':>18}")
        for key in sorted(table, key=lambda k: (k == "ALL", k)):
            cells = [f"{sum(v)}/{len(v)} {_share(v):>7}" for v in
                     (table[key]["before"], table[key]["after"])]
            print(f"{key:<14}" + "".join(f"{c:>18}" for c in cells))
    print("PII-free texts of the same genres: tokens masked, before | after")
    totals = {label: [0, 0] for label in masks}
    for genre in sorted(negatives):
        for label in masks:
            totals[label][0] += negatives[genre][label][0]
            totals[label][1] += negatives[genre][label][1]
        cells = [f"{m}/{t} {m / max(t, 1):>7.2%}" for m, t in
                 (negatives[genre]["before"], negatives[genre]["after"])]
        print(f"  {genre:<18}" + "".join(f"{c:>18}" for c in cells))
    cells = [f"{m}/{t} {m / max(t, 1):>7.2%}" for m, t in totals.values()]
    print(f"  {'ALL':<18}" + "".join(f"{c:>18}" for c in cells))
    if misses:
        for miss in sorted(missed)[:80]:
            print(f"  missed after: {miss}")


def print_values(outcomes: list[Outcome], show_misses: bool) -> None:
    table: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for outcome in outcomes:
        table[(outcome.part, outcome.kind)].append(outcome.masked)
        table[(outcome.part, "ALL")].append(outcome.masked)
    kinds = sorted({kind for _, kind in table if kind != "ALL"}) + ["ALL"]
    print(f"\nvalues fully masked at token level\n{'kind':<10}" +
          "".join(f"{part:>18}" for part in PARTS))
    for kind in kinds:
        cells = []
        for part in PARTS:
            masked = table.get((part, kind), [])
            cells.append(f"{sum(masked)}/{len(masked)} {_share(masked):>7}" if masked else "-")
        print(f"{kind:<10}" + "".join(f"{cell:>18}" for cell in cells))
    missed = [o for o in outcomes if not o.masked and (show_misses or o.part in UNTUNED_PARTS)]
    for outcome in sorted(missed, key=lambda o: (o.part, o.kind)):
        print(f"  missed [{outcome.part}] {outcome.kind}: {outcome.value!r}")


def print_pii_free_messages(results: list[FalsePositives]) -> None:
    print("\ncorpus messages with no private value: tokens masked (false positives)")
    for part in PARTS:
        mine = [r for r in results if r.part == part]
        if not mine:
            continue
        tokens = sum(r.num_tokens for r in mine)
        masked = sum(r.num_masked for r in mine)
        print(f"  {part:<8} {len(mine)} messages, {masked}/{tokens} tokens masked "
              f"({masked / tokens:.2%})")
        for result in mine:
            if result.masked_pieces:
                print(f"    masked: {', '.join(repr(p) for p in result.masked_pieces)}")


def print_pii_free_genres(mask) -> None:
    """The tests' PII-free texts of the genres the chain over-masked (pii_free_genres.py)."""
    print("\nthe tests' PII-free texts (tests/detectors/pii_free_genres.py): tokens masked")
    per_genre: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for genre, text in PII_FREE_GENRES:
        _, private = mask(text)
        per_genre[genre][0] += sum(private)
        per_genre[genre][1] += len(private)
    for genre, (masked, tokens) in sorted(per_genre.items()):
        print(f"  {genre:<14} {masked}/{tokens} tokens masked ({masked / tokens:.2%})")
    masked = sum(m for m, _ in per_genre.values())
    tokens = sum(t for _, t in per_genre.values())
    print(f"  all            {masked}/{tokens} tokens masked ({masked / tokens:.2%})")


def print_prose(policy, tokenizer, args) -> None:
    documents = prose_documents(args.data_dir, args.papers, args.stories, args.chars)
    total_tokens = total_private = 0
    by_entity: Counter[str] = Counter()
    per_source: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    started = time.perf_counter()
    for label, text in documents:
        offsets = [(int(s), int(e)) for s, e in tokenizer.encode(text).offsets]
        result = policy.mask(text, offsets)
        if result.detection.failed_closed:
            raise SystemExit(f"{label}: the chain failed closed: {result.detection.reason}")
        total_tokens += len(offsets)
        total_private += result.num_private
        source = label.split("-")[0]
        per_source[source][0] += result.num_private
        per_source[source][1] += len(offsets)
        for entity in {s.entity for s in result.detection.spans}:
            spans = [s for s in result.detection.spans if s.entity == entity]
            by_entity[entity] += int(token_mask(spans, offsets).sum())
    seconds = time.perf_counter() - started
    print(f"\nPII-free prose: {len(documents)} documents, {total_tokens} tokens, "
          f"{seconds:.1f} s")
    for source, (private, tokens) in sorted(per_source.items()):
        print(f"  {source:<8} {private}/{tokens} tokens masked ({private / tokens:.2%})")
    print(f"  all      {total_private}/{total_tokens} tokens masked "
          f"({total_private / total_tokens:.2%})   target <= 3%")
    print("  tokens masked by entity (overlapping): " +
          ", ".join(f"{entity} {count}" for entity, count in by_entity.most_common()))


def _share(flags: list[bool]) -> str:
    return f"{sum(flags) / len(flags):.1%}"


if __name__ == "__main__":
    raise SystemExit(main())
