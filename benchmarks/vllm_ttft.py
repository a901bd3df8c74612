"""vLLM benchmark: TTFT of tenant B right after tenant A sent the same ~2000-token public
document followed by a private question, for three set-ups measured in one run:

- cacheprune: the CachePruneConnector, tenants salted (B reuses A's non-private prefix);
- salted:     plain vLLM, one cache_salt per tenant (isolation: B computes everything);
- unsalted:   plain vLLM, no salt (B hits A's blocks in vLLM's prefix cache: unsafe).

Each set-up runs in its own process (one vLLM engine each); every repeat uses a fresh
document variant, so no repeat is served from an earlier one's cache. TTFT is the wall time
of a generate() call for one token.

    python benchmarks/vllm_ttft.py [--repeats 3] [--doc-tokens 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
       # NOTE: spawn, not fork: a forked vLLM worker inherits numba/llvmlite, which breaks
       # vLLM-CPU's kernel scan at start-up (see docs/vllm.md).
       "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
DOCUMENTS = Path(__file__).resolve().parent.parent / "datasets" / "default" / \
    "default_grouped.jsonl"
QUESTION_A = "\n\nI am Alice (alice.moreau@example.com). Question: who keeps the official copy?"
QUESTION_B = "\n\nI am Bob (bob.okafor@example.org). Question: who keeps the official copy?"


def public_document(tokenizer, num_tokens: int, variant: int) -> str:
    """About `num_tokens` tokens of the repo's default documents (public text), tagged with
    `variant` so that each repeat has its own prefix."""
    contexts = [json.loads(line)["context"] for line in DOCUMENTS.read_text().splitlines()]
    text, index = f"Reference copy {variant}.\n", 0
    while len(tokenizer.encode(text).ids) < num_tokens:
        text += contexts[index % len(contexts)] + "\n\n"
        index += 1
    return text[:tokenizer.encode(text).offsets[num_tokens - 1][1]]


def run_setup(setup: str, repeats: int, doc_tokens: int) -> None:
    """One engine; prints a JSON line per measurement."""
    from vllm import LLM, SamplingParams

    from cacheprune.models.convert import converted_folder
    from cacheprune.models.tokenizer import load_tokenizer
    from cacheprune.vllm import kv_transfer_config

    folder = str(converted_folder())
    tokenizer = load_tokenizer(folder)
    extra = {}
    if setup == "cacheprune":
        pool = tempfile.mkdtemp(prefix="cacheprune-bench-", dir="/dev/shm"
                                if os.path.isdir("/dev/shm") else None)
        extra["kv_transfer_config"] = kv_transfer_config(pool_dir=pool,
                                                         pool_budget_bytes=1 << 30)
    llm = LLM(folder, dtype="float32", enforce_eager=True, max_model_len=4096, seed=0,
              **extra)
    one_token = SamplingParams(temperature=0.0, max_tokens=1)

    def ttft(prompt: str, salt: str | None) -> tuple[float, int]:
        request: dict[str, str] = {"prompt": prompt}
        if salt is not None:
            request["cache_salt"] = salt
        start = time.perf_counter()
        output = llm.generate([request], one_token, use_tqdm=False)[0]
        return time.perf_counter() - start, int(output.num_cached_tokens or 0)

    ttft(public_document(tokenizer, 300, -1) + QUESTION_A, "warm-up")  # first-call costs
    modes = ["cacheprune"] if setup == "cacheprune" else ["salted", "unsalted"]
    for repeat in range(repeats):
        for mode in modes:
            document = public_document(tokenizer, doc_tokens, repeat * 10 + len(mode))
            salts = (None, None) if mode == "unsalted" else (f"a{repeat}", f"b{repeat}")
            a_seconds, _ = ttft(document + QUESTION_A, salts[0])
            b_seconds, b_cached = ttft(document + QUESTION_B, salts[1])
            print(json.dumps({"mode": mode, "a_s": a_seconds, "b_s": b_seconds,
                              "b_cached": b_cached,
                              "prompt_tokens": len(tokenizer.encode(document + QUESTION_B).ids)}),
                  flush=True)


def measure(setup: str, repeats: int, doc_tokens: int) -> list[dict]:
    command = [sys.executable, __file__, "--setup", setup, "--repeats", str(repeats),
               "--doc-tokens", str(doc_tokens)]
    done = subprocess.run(command, env={**os.environ, **ENV}, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"{setup} run failed:\n{done.stderr[-4000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--doc-tokens", type=int, default=2000)
    parser.add_argument("--setup", choices=["cacheprune", "plain"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup:
        run_setup(args.setup, args.repeats, args.doc_tokens)
        return
    rows = measure("cacheprune", args.repeats, args.doc_tokens) + \
        measure("plain", args.repeats, args.doc_tokens)
    median = {mode: statistics.median(r["b_s"] for r in rows if r["mode"] == mode)
              for mode in ("cacheprune", "salted", "unsalted")}
    cached = {mode: statistics.median(r["b_cached"] for r in rows if r["mode"] == mode)
              for mode in median}
    prompt_tokens = rows[0]["prompt_tokens"]
    print(f"tenant B's TTFT, {prompt_tokens}-token prompt, median of {args.repeats}:")
    print(f"{'set-up':<12}{'TTFT s':>9}{'B cached tokens':>17}{'salted / this':>15}")
    for mode, seconds in median.items():
        print(f"{mode:<12}{seconds:>9.3f}{cached[mode]:>17.0f}"
              f"{median['salted'] / seconds:>14.2f}x")
    ratio = median["salted"] / median["cacheprune"]
    print(f"cacheprune vs salted isolation: {ratio:.2f}x lower TTFT (target >= 3x: "
          f"{'met' if ratio >= 3 else 'NOT met'})")


if __name__ == "__main__":
    main()
