"""Log-probability distinguishing attack on shared KV.

A segment published in paper mode carries KV computed right after the victim's private value;
its keys and values keep a trace of that value. The attacker reuses the segment behind a
question about the value and scores each candidate with the model's log-probabilities
(what a server returning prompt log-probs, as vLLM does, gives away):

    advantage(c) = log p(c | question after the *reused* KV) - log p(c | the same prompt
                   computed afresh, which holds no trace)

The difference removes each candidate's prior (common names are likely anyway). The attacker
claims the top candidate when its advantage beats the runner-up's by `margin` nats; ranking the
true value first without that margin is reported too (chance is 1 / candidates).
Applies to values before the shared text they would leave a trace in (before and inside the
document); for the others nothing shared was computed after them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from cacheprune.engine import PrefillPlan, Transformer
from cacheprune.models import ChatTokenizer, Encoding
from cacheprune.serving import Engine, mask_prompt, render_prompt
from eval.attacks.outcome import AttackOutcome
from eval.attacks.probe import ATTACKER_TENANT, SlotTarget
from eval.workload import Request
from eval.workload.private_values import ValueSource

# Public text after the value that the attacker puts between it and the question: the segment
# right after a private value holds most of its trace.
CONTEXT_CHARS = 1200
QUESTION = "\n\nQuestion: what is the {kind} written just before this text? Answer: "
PROBE_REQUEST_ID = "logprob-probe"


@dataclass(slots=True, frozen=True)
class LogprobVerdict:
    ranked_first: bool  # the true value had the highest advantage
    claimed: str | None  # the top candidate, when it beat the runner-up by the margin


def attacker_context(victim: Request, slot: str, attacker_seed: int) -> str:
    """The public text after `slot` as the victim's template lays it out, with the attacker's
    own values in the later slots (it knows the template, not those values)."""
    source = ValueSource(attacker_seed)
    values = {name: source.draw(info.kind, info.locale, info.lower).text
              for name, info in victim.slots.items()}
    rendered = victim.template.render(values)
    _, _, end = rendered.slot_spans[slot]
    return rendered.messages[1]["content"][end:end + CONTEXT_CHARS]


def logprob_attack(engine: Engine, target: SlotTarget, context: str, candidates: list[str],
                   margin: float, outcome: AttackOutcome) -> LogprobVerdict:
    """Score every candidate twice (reused KV, fresh) and claim the clear winner, if any."""
    prompt = context + QUESTION.format(kind=target.info.kind.replace("_", " "))
    advantages = []
    for candidate in candidates:
        reused = _candidate_logprob(engine, target.system, prompt, candidate, reuse=True)
        fresh = _candidate_logprob(engine, target.system, prompt, candidate, reuse=False)
        advantages.append(reused - fresh)
        outcome.num_probes += 1
    order = np.argsort(advantages)[::-1]
    best, runner_up = int(order[0]), int(order[1])
    claimed = (candidates[best] if advantages[best] - advantages[runner_up] >= margin
               else None)
    outcome.claimed = claimed is not None
    outcome.recovered = claimed == target.value
    outcome.ranked_first = candidates[best] == target.value
    return LogprobVerdict(outcome.ranked_first, claimed)


def _candidate_logprob(engine: Engine, system: str, prompt: str, candidate: str,
                       reuse: bool) -> float:
    """Sum of log p(candidate tokens) after `prompt`, with the pool's KV where it matches
    (`reuse`) or computed afresh (the same for every system: cached across them)."""
    if not reuse:
        return _fresh_logprob(engine.model, engine.tokenizer, system, prompt, candidate)
    text, encoding, first = _tokens(engine.tokenizer, system, prompt, candidate)
    # The server sees this probe like any request: masked as admitted, planned by the engine's
    # strategy in the attacker's pool session, and watched by the probe monitor (a tenant it
    # cools off is served without reuse).
    request = mask_prompt(PROBE_REQUEST_ID, ATTACKER_TENANT, text + candidate, encoding,
                          engine.policy)
    monitor = engine.probe_monitor
    if monitor is not None and monitor.observe(ATTACKER_TENANT, request.token_ids,
                                               request.request_id):
        plan = PrefillPlan.full(torch.from_numpy(request.token_ids))
    else:
        with engine.session(request) as session:
            planned = engine.plan(request, session)
            # The logits predicting the candidate come from the tokens before it: cut the
            # reuse so that they are computed.
            kept = (span.clipped(0, first - 1) for span in planned.reused)
            plan = PrefillPlan(planned.token_ids, [span for span in kept if span is not None])
            request.attach_plan(plan, session.counted)
            session.commit()
    request.finish()
    return _score(engine.model, plan, first, encoding.ids[first:])


@functools.lru_cache(maxsize=4096)
def _fresh_logprob(model: Transformer, tokenizer: ChatTokenizer, system: str, prompt: str,
                   candidate: str) -> float:
    _, encoding, first = _tokens(tokenizer, system, prompt, candidate)
    return _score(model, PrefillPlan.full(encoding.ids), first, encoding.ids[first:])


def _tokens(tokenizer: ChatTokenizer, system: str, prompt: str,
            candidate: str) -> tuple[str, Encoding, int]:
    """The attacker's prompt with the candidate where the assistant's answer starts: (the
    prompt's text, the encoding of that text followed by the candidate, position of the
    candidate's first token). The two are encoded apart, as a generated answer's tokens
    follow the prompt's."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    text, _ = render_prompt(tokenizer, messages, ())
    prompt_part, candidate_part = tokenizer.encode(text), tokenizer.encode(candidate)
    shift = len(text)
    return (text, Encoding(prompt_part.ids + candidate_part.ids,
                           prompt_part.offsets + [(start + shift, end + shift)
                                                  for start, end in candidate_part.offsets]),
            len(prompt_part.ids))


def _score(model: Transformer, plan: PrefillPlan, first: int, candidate_ids: list[int]) -> float:
    result = model.prefill(plan, all_logits=True)
    row_of = {position: row for row, position in enumerate(result.computed_positions.tolist())}
    log_probs = torch.log_softmax(result.logits.float(), dim=-1)
    return sum(float(log_probs[row_of[first + offset - 1], token])
               for offset, token in enumerate(candidate_ids))
