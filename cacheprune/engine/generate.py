"""Decode after a prefill: greedy by default, temperature / top-p sampling on request, the
model's stop tokens, and the per-request figures callers need (TTFT, token counts)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from cacheprune.engine.model import Transformer
from cacheprune.engine.plan import PrefillPlan, PrefillResult


@dataclass(slots=True, frozen=True)
class SamplingParams:
    max_new_tokens: int = 64
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    seed: int | None = None
    stop_token_ids: frozenset[int] = frozenset()  # in addition to the model's own

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


@dataclass(slots=True)
class RequestStats:
    num_prompt_tokens: int
    num_reused: int
    num_recomputed: int
    num_computed: int
    ttft_s: float  # request start -> first generated token chosen
    prefill_s: float
    decode_s: float = 0.0
    num_generated: int = 0


@dataclass(slots=True)
class Generation:
    token_ids: list[int]
    prefill: PrefillResult
    stats: RequestStats
    finish_reason: str  # "stop" or "length"
    stop_token_id: int | None = None  # the stop token that ended it (not in `token_ids`)


def sample(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None) -> int:
    if params.temperature == 0:
        return int(logits.argmax())
    probs = torch.softmax(logits.float() / params.temperature, dim=-1)
    if params.top_p < 1:
        sorted_probs, order = probs.sort(descending=True)
        # keep the smallest prefix whose mass reaches top_p (the first token always survives)
        keep = sorted_probs.cumsum(0) - sorted_probs < params.top_p
        probs = torch.zeros_like(probs).scatter_(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1, generator=generator))


def generate(
    model: Transformer,
    plan: PrefillPlan,
    params: SamplingParams,
    stop_token_ids: frozenset[int],
    request_start: float | None = None,
) -> Generation:
    """Prefill under `plan`, then decode until a stop token or `max_new_tokens`.

    TTFT counts from `request_start` (a `time.perf_counter()` reading) when the caller did work
    for the request before the prefill (tokenizing, detecting, looking up), else from here."""
    start = time.perf_counter()
    request_start = start if request_start is None else request_start
    generator = None
    if params.seed is not None:
        generator = torch.Generator().manual_seed(params.seed)
    capacity = min(plan.num_tokens + params.max_new_tokens, model.config.max_context)
    result = model.prefill(plan, capacity=capacity)
    prefill_done = time.perf_counter()
    token = sample(result.logits, params, generator)
    first_token = time.perf_counter()
    stops = stop_token_ids | params.stop_token_ids
    tokens = [token]
    finish = "stop" if token in stops else "length"
    while finish == "length" and len(tokens) < params.max_new_tokens:
        if result.kv.length >= capacity:
            break
        token = sample(model.decode_step(token, result.kv), params, generator)
        tokens.append(token)
        if token in stops:
            finish = "stop"
    end = time.perf_counter()
    stop_token_id = tokens.pop() if finish == "stop" else None  # not part of the answer
    stats = RequestStats(
        num_prompt_tokens=plan.num_tokens,
        num_reused=result.num_reused,
        num_recomputed=result.num_recomputed,
        num_computed=result.num_computed,
        ttft_s=first_token - request_start,
        prefill_s=prefill_done - start,
        decode_s=end - first_token,
        num_generated=len(tokens),
    )
    return Generation(tokens, result, stats, finish, stop_token_id)
