"""Annotator speed against prefill, and the attention-sink measurement of docs/annotator.md.

    python benchmarks/annotator_speed.py                  # speed table, n = 1k, 2k, 4k, 8k
    python benchmarks/annotator_speed.py --sinks          # sink table on a 1,200-token prompt
    python benchmarks/annotator_speed.py --sizes 1000 2000 --no-real

Real attention comes from the engine's prefill of a prompt made of a system line, a synthetic
private profile and documents from a JSON-lines file ("context" field; by default the QASPER
subset next to the checkout). Synthetic attention has the same shape: causal rows summing to 1,
a heavy sink on column 0 and a random local window.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cacheprune.annotator import AnnotatorConfig, SummedAreaTable, annotate

# The shared data folder sits next to the checkout.
DEFAULT_DOCUMENTS = (
    Path(__file__).resolve().parents[2] / "shared/datasets/qasper/qasper_leval_grouped.jsonl"
)
SYSTEM = "You are a helpful assistant that answers questions about scientific papers.\n"
PROFILE = (
    "User profile: name Marguerite Oyelaran-Fitch, e-mail m.oyelaran.fitch@examplemail.org, "
    "phone +1 415 555 0187.\n"
)


def synthetic_attention(n: int, seed: int = 0) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    attention = np.zeros((n, n), dtype=np.float32)
    for row in range(n):
        width = int(rng.integers(16, 256))
        start = max(0, row - width)
        weights = rng.random(row + 1 - start, dtype=np.float32)
        attention[row, start : row + 1] = weights / weights.sum() * 0.7
        attention[row, 0] += 0.3
    return attention


def real_prompt(documents: Path, num_tokens: int, tokenizer: object) -> tuple[list[int], int, int]:
    """Token ids of system line + profile + as many documents as fit, and the profile's span."""
    encode = tokenizer.encode  # type: ignore[attr-defined]
    system_ids = encode(SYSTEM).ids
    profile_ids = encode(PROFILE).ids
    ids = system_ids + profile_ids
    with documents.open() as lines:
        for line in lines:
            ids += encode(json.loads(line)["context"] + "\n\n").ids
            if len(ids) >= num_tokens:
                break
    if len(ids) < num_tokens:
        raise SystemExit(f"{documents} holds only {len(ids)} tokens, {num_tokens} asked for")
    return ids[:num_tokens], len(system_ids), len(system_ids) + len(profile_ids)


def best_time_ms(attention: npt.NDArray[np.float32], private_mask: npt.NDArray[np.bool_],
                 config: AnnotatorConfig, repeats: int = 3) -> float:
    computed_mask = np.ones(attention.shape[0], dtype=bool)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        annotate(attention, private_mask, computed_mask, config)
        times.append(time.perf_counter() - start)
    return 1000 * min(times)


def speed(sizes: list[int], documents: Path | None) -> None:
    config = AnnotatorConfig()
    tiny = synthetic_attention(8)
    annotate(tiny, np.zeros(8, dtype=bool), np.ones(8, dtype=bool), config)  # compile
    model = tokenizer = None
    if documents is not None:
        from cacheprune.engine import AttentionCapture, PrefillPlan, load_default

        model, tokenizer = load_default()
    print(f"{'n':>6} {'synth ms':>9} {'real ms':>8} {'prefill s':>10} {'share':>7} "
          f"{'coverage':>9} {'recompute':>10} {'segments':>9}")
    previous: tuple[int, float, float | None] | None = None
    for n in sizes:
        synthetic = synthetic_attention(n)
        private = np.zeros(n, dtype=bool)
        private[20:40] = True
        synthetic_ms = best_time_ms(synthetic, private, config)
        real_ms = prefill_s = None
        real_cells = f"{'-':>8} {'-':>10} {'-':>7} {'-':>9} {'-':>10} {'-':>9}"
        if model is not None and documents is not None:
            ids, profile_start, profile_end = real_prompt(documents, n, tokenizer)
            start = time.perf_counter()
            result = model.prefill(PrefillPlan.full(ids), capture=AttentionCapture())
            prefill_s = time.perf_counter() - start
            assert result.attention is not None, "the engine returned no captured attention"
            attention = result.attention.numpy()
            private = np.zeros(n, dtype=bool)
            private[profile_start:profile_end] = True
            real_ms = best_time_ms(attention, private, config)
            annotation = annotate(attention, private, np.ones(n, dtype=bool), config)
            share = real_ms / 1000 / prefill_s
            real_cells = (f"{real_ms:8.1f} {prefill_s:10.2f} {share:7.2%} "
                          f"{annotation.coverage:9.3f} {annotation.recompute_ratio:10.3f} "
                          f"{len(annotation.segments):9d}")
        print(f"{n:6d} {synthetic_ms:9.1f} {real_cells}")
        if previous is not None:
            previous_n, previous_synthetic, previous_real = previous
            real_growth = "" if real_ms is None or previous_real is None else (
                f", real x{real_ms / previous_real:.2f}")
            print(f"{'':6} growth over n = {previous_n}: synthetic "
                  f"x{synthetic_ms / previous_synthetic:.2f}{real_growth} "
                  f"(n^2 would be x{(n / previous_n) ** 2:.2f})")
        previous = (n, synthetic_ms, real_ms)


def sinks(documents: Path, num_tokens: int) -> None:
    from cacheprune.engine import AttentionCapture, PrefillPlan, load_default

    model, tokenizer = load_default()
    ids, profile_start, profile_end = real_prompt(documents, num_tokens, tokenizer)
    attention = model.prefill(PrefillPlan.full(ids), capture=AttentionCapture()).attention
    assert attention is not None, "the engine returned no captured attention"
    matrix = attention.numpy()
    n = matrix.shape[0]
    print(f"{n} tokens, profile [{profile_start}, {profile_end}); mean attention of the document "
          f"rows on column 0: {matrix[profile_end:, 0].mean():.2f}")
    print("internal share of fixed windows in the document (mean / share self-contextualized)")
    print(f"{'sinks':28} " + " ".join(f"{w:>12}" for w in (32, 64, 128, 256)))
    for label, sink_tokens, renormalize in [
        ("none", 0, False), ("column 0 excluded", 1, False),
        ("column 0 excl., renormalized", 1, True), ("columns 0-3 excl., renorm.", 4, True),
    ]:
        table = SummedAreaTable.build(matrix, sink_tokens=sink_tokens, renormalize=renormalize)
        cells = []
        for width in (32, 64, 128, 256):
            shares, kept = [], 0
            for start in range(profile_end, n - width + 1, width // 2):
                inside = table.internal(start, start + width)
                outside = table.external(start, start + width)
                shares.append(inside / (inside + outside))
                kept += inside >= outside
            cells.append(f"{np.mean(shares):.2f} / {kept / len(shares):3.0%}")
        print(f"{label:28} " + " ".join(f"{c:>12}" for c in cells))
    private = np.zeros(n, dtype=bool)
    private[profile_start:profile_end] = True
    print("annotate() on this prompt (profile private, default config otherwise)")
    for label, sink_tokens in [("no sink handling", 0), ("column 0 excluded", 1)]:
        config = AnnotatorConfig(sink_tokens=sink_tokens)
        annotation = annotate(matrix, private, np.ones(n, dtype=bool), config)
        print(f"  {label:18} segments {[(s.start, s.end) for s in annotation.segments]}, "
              f"coverage {annotation.coverage:.3f}, recompute ratio "
              f"{annotation.recompute_ratio:.3f}")
    table = SummedAreaTable.build(matrix, sink_tokens=1, renormalize=True)
    on_profile = [table.block(r, r + 1, profile_start, profile_end) for r in range(profile_end, n)]
    print("share of attention on the profile, tokens 1..10 after it:",
          " ".join(f"{s:.2f}" for s in on_profile[:10]))
    print(f"  tokens 20-29: {np.mean(on_profile[19:29]):.2f}; whole document: "
          f"{np.mean(on_profile):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--documents", type=Path, default=DEFAULT_DOCUMENTS)
    parser.add_argument("--no-real", action="store_true", help="synthetic attention only")
    parser.add_argument("--sinks", action="store_true", help="the sink table instead of speed")
    parser.add_argument("--sink-tokens", type=int, default=1200, help="prompt length for --sinks")
    args = parser.parse_args()
    if not args.no_real and not args.documents.is_file():
        raise SystemExit(f"no documents at {args.documents}: pass --documents FILE or --no-real")
    if args.sinks:
        sinks(args.documents, args.sink_tokens)
    else:
        speed(args.sizes, None if args.no_real else args.documents)


if __name__ == "__main__":
    main()
