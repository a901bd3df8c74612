"""python -m cacheprune.detectors.train {generate,fit,fit-tagger}: make training data, train the
spaCy model (`fit`) or the token tagger (`fit-tagger`).

One CPU thread: set before numpy or spaCy is imported, since other work shares the machine.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402


def _training_options(parser: argparse.ArgumentParser, count: int, epochs: int,
                      max_minutes: float) -> None:
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--data", type=Path,
                        help="training JSONL (default: generate --count examples from --seed)")
    parser.add_argument("--count", type=int, default=count)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--max-minutes", type=float, default=max_minutes)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--written", type=Path, action="append", default=[],
                        help="hand-written labelled JSONL (a file or a folder of them) to train "
                             "on besides the generated examples; may be repeated")
    parser.add_argument("--written-repeat", type=int, default=3,
                        help="how many times each hand-written example is seen per epoch")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cacheprune.detectors.train")
    commands = parser.add_subparsers(dest="command", required=True)
    generate = commands.add_parser("generate", help="write a split of labelled examples (JSONL)")
    generate.add_argument("--split", choices=("train", "heldout"), default="train")
    generate.add_argument("--count", type=int, default=12000)
    generate.add_argument("--seed", type=int, required=True)
    generate.add_argument("--out", type=Path, required=True)
    _training_options(commands.add_parser("fit", help="train the spaCy NER pipeline"),
                      count=12000, epochs=12, max_minutes=20.0)
    _training_options(commands.add_parser(
        "fit-tagger", help="train the token tagger over SmolLM2's embeddings"),
        count=24000, epochs=6, max_minutes=40.0)
    args = parser.parse_args(argv)

    from cacheprune.detectors.train.examples import read_jsonl, write_jsonl
    from cacheprune.detectors.train.generate import generate_split
    from cacheprune.detectors.train.written import WrittenDataError, read_written_files

    if args.command == "generate":
        count = write_jsonl(generate_split(args.split, args.count, args.seed), args.out)
        print(f"{count} {args.split} examples written to {args.out}")
        return 0
    examples = (list(read_jsonl(args.data)) if args.data is not None
                else generate_split("train", args.count, args.seed))
    if any(example.split != "train" for example in examples):
        print("refusing to train on examples that are not of the train split", file=sys.stderr)
        return 1
    if args.written_repeat < 1:
        print(f"--written-repeat must be at least 1, got {args.written_repeat}", file=sys.stderr)
        return 1
    try:
        written = read_written_files(args.written, "train")
    except WrittenDataError as exc:
        print(exc, file=sys.stderr)
        return 1
    if written:
        print(f"{len(written)} hand-written examples, each {args.written_repeat} times")
    examples += written * args.written_repeat
    if args.command == "fit-tagger":
        from cacheprune.detectors.train.fit_tagger import fit_tagger

        out = fit_tagger(examples, args.seed, args.out, args.epochs, args.max_minutes)
    else:
        from cacheprune.detectors.train.fit import fit as fit_model

        out = fit_model(examples, args.seed, args.out, args.epochs, args.max_minutes)
    print(f"model written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
