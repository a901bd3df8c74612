"""The logprob attack's probe is served through the engine's request steps: with nothing pooled
it scores as a plain forward pass; with the victim's segments pooled it reuses only what the
pool holds and never the tokens whose logits predict the candidate; a prober the monitor cools
off is scored without reuse."""

from __future__ import annotations

import pytest
import torch

from cacheprune.detectors import load_policy
from cacheprune.engine import PrefillPlan, PrefillResult, ReusedSpan, Transformer
from cacheprune.monitor import ProbeMonitorConfig
from cacheprune.pool import PoolSession
from cacheprune.serving import (
    Engine,
    EngineConfig,
    Published,
    SamplingParams,
    ServedRequest,
    SharingStrategy,
    render_prompt,
)
from eval.attacks.logprob import QUESTION, _candidate_logprob, attacker_context
from eval.attacks.probe import SlotTarget
from eval.workload import Request

PAPER_K1 = EngineConfig(mode="cacheprune", publish_mode="paper_baseline", publish_threshold=1)


def _probe(victim: Request) -> tuple[SlotTarget, str]:
    """The attack's prompt about the victim's name (a value before the document)."""
    target = SlotTarget.of(victim, "name")
    context = attacker_context(victim, "name", attacker_seed=0)
    return target, context + QUESTION.format(kind="name")


def _forward_logprob(engine: Engine, system: str, prompt: str, candidate: str
                     ) -> tuple[float, int]:
    """The reference: log p(candidate | prompt) from one plain forward pass, and the position
    of the candidate's first token."""
    text, _ = render_prompt(engine.tokenizer, [{"role": "system", "content": system},
                                               {"role": "user", "content": prompt}], ())
    prompt_ids = engine.tokenizer.encode(text).ids
    candidate_ids = engine.tokenizer.encode(candidate).ids
    log_probs = torch.log_softmax(engine.model.logits(prompt_ids + candidate_ids), dim=-1)
    first = len(prompt_ids)
    return sum(float(log_probs[first + i - 1, token])
               for i, token in enumerate(candidate_ids)), first


def _served(default_model, victim: Request, config: EngineConfig) -> Engine:
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, load_policy(None), config)
    engine.generate(victim.tenant, victim.messages, SamplingParams(max_new_tokens=1),
                    victim.public_char_ranges)
    return engine


class _ExactKV(SharingStrategy):
    """Reuses every token, with KV a plain prefill of the very same tokens computed: exact."""

    def __init__(self, model: Transformer) -> None:
        self.model = model

    def plan(self, request: ServedRequest, session: PoolSession) -> PrefillPlan:
        token_ids = torch.from_numpy(request.token_ids)
        full = self.model.prefill(PrefillPlan.full(token_ids))
        return PrefillPlan(token_ids, [ReusedSpan(0, full.keys, full.values,
                                                  torch.arange(request.num_tokens))])

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        return []


def _holds(entries: list[list[int]], tokens: list[int]) -> bool:
    """Naive substring search: some entry holds `tokens` contiguously."""
    return any(entry[i:i + len(tokens)] == tokens
               for entry in entries for i in range(len(entry) - len(tokens) + 1))


def test_with_nothing_pooled_a_probe_scores_as_a_plain_forward_pass(default_model, victim):
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, load_policy(None), PAPER_K1)
    target, prompt = _probe(victim)
    expected, _ = _forward_logprob(engine, target.system, prompt, target.value)
    assert _candidate_logprob(engine, target.system, prompt, target.value, reuse=True) == \
        pytest.approx(expected, abs=1e-3)


def test_reuse_of_the_whole_prompt_is_cut_so_the_candidate_is_predicted(default_model,
                                                                         victim):
    """The strategy's plan reuses every token, the candidate's too; the probe computes from
    the token before the candidate on, so exact KV scores as the plain forward pass does."""
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, load_policy(None), PAPER_K1, strategy=_ExactKV(model))
    target, prompt = _probe(victim)
    expected, _ = _forward_logprob(engine, target.system, prompt, target.value)
    assert _candidate_logprob(engine, target.system, prompt, target.value, reuse=True) == \
        pytest.approx(expected, abs=1e-3)


def test_a_probe_reuses_pooled_kv_only_before_the_candidates_predicting_token(
        default_model, victim, monkeypatch):
    engine = _served(default_model, victim, PAPER_K1)
    target, prompt = _probe(victim)
    plans: list[PrefillPlan] = []
    prefill = engine.model.prefill

    def spy(plan: PrefillPlan, *args, **kwargs) -> PrefillResult:
        plans.append(plan)
        return prefill(plan, *args, **kwargs)

    monkeypatch.setattr(engine.model, "prefill", spy)
    reused = _candidate_logprob(engine, target.system, prompt, target.value, reuse=True)
    monkeypatch.undo()
    fresh, first = _forward_logprob(engine, target.system, prompt, target.value)
    [plan] = plans
    assert plan.reused, "the victim's document is pooled: the probe reuses some of it"
    entries = [ids.tolist() for ids in engine.cached_token_ids()]
    token_ids = plan.token_ids.tolist()
    for span in plan.reused:
        assert span.end <= first - 1
        assert _holds(entries, token_ids[span.start:span.end])
    assert reused != pytest.approx(fresh, abs=1e-4), "reused KV changes the scores"


def test_a_prober_the_monitor_cools_off_is_scored_without_reuse(default_model, victim):
    monitor = ProbeMonitorConfig(flag_after=1, cooldown_s=600.0)
    engine = _served(default_model, victim, EngineConfig(
        mode="cacheprune", publish_mode="paper_baseline", publish_threshold=1,
        probe_monitor=monitor))
    target, prompt = _probe(victim)
    fresh, _ = _forward_logprob(engine, target.system, prompt, target.value)
    scores = [_candidate_logprob(engine, target.system, prompt, target.value, reuse=True)
              for _ in range(3)]
    assert scores[0] != pytest.approx(fresh, abs=1e-4), "not flagged yet: it reuses"
    assert scores[-1] == pytest.approx(fresh, abs=1e-3)
    assert "prober" in engine.probe_monitor.flagged_tenants()
