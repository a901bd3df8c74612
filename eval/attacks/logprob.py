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
import numpy.typing as npt
import torch

from cacheprune.engine import PrefillPlan, ReusedSpan, Transformer
from cacheprune.models import ChatTokenizer
from cacheprune.pool import Scope
from cacheprune.serving import Engine, render_prompt
from eval.attacks.outcome import AttackOutcome
from eval.attacks.probe import ATTACKER_TENANT, SlotTarget
from eval.workload import Request
from eval.workload.private_values import ValueSource

# Public text after the value that the attacker puts between it and the question: the segment
# right after a private value holds most of its trace.
CONTEXT_CHARS = 1200
QUESTION = "\n\nQuestion: what is the {kind} written just before this text? Answer: "


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
    text, token_ids, first, num_candidate = _tokens(engine.tokenizer, system, prompt,
                                                    candidate)
    encoding = engine.tokenizer.encode(text + candidate)
    private = np.zeros(len(token_ids), dtype=np.bool_)
    mask = engine.policy.mask(text + candidate, encoding.offsets).mask
    private[: min(len(mask), len(private))] = mask[: len(private)]
    reused: list[ReusedSpan] = []
    # The server sees this probe like any request: the probe monitor watches it, and a tenant
    # it cools off is served without reuse.
    monitor = engine.probe_monitor
    if monitor is not None and monitor.observe(ATTACKER_TENANT, token_ids, "logprob-probe"):
        return _score(engine.model, PrefillPlan.full(torch.from_numpy(token_ids)), first,
                      token_ids[first:first + num_candidate].tolist())
    scope = Scope(engine.identity, ATTACKER_TENANT, engine.config.sharing_domain(ATTACKER_TENANT))
    with engine.pool.session("logprob-probe", scope) as session:
        for match in session.lookup(token_ids, private):
            # The logits predicting the candidate come from the tokens before it: cut the
            # reuse so that they are computed.
            end = min(match.request_start + match.length, first - 1)
            if end <= match.request_start:
                continue
            kv = session.read(match)
            if kv is None:  # gone since the lookup: those tokens are computed
                continue
            length = end - match.request_start
            reused.append(ReusedSpan(
                match.request_start, kv.keys[:, :, :length], kv.values[:, :, :length],
                torch.tensor(kv.positions[:length], dtype=torch.long),
                torch.tensor(kv.recompute[:length], dtype=torch.bool)))
        session.commit()
    return _score(engine.model, PrefillPlan(torch.from_numpy(token_ids), reused), first,
                  token_ids[first:first + num_candidate].tolist())


@functools.lru_cache(maxsize=4096)
def _fresh_logprob(model: Transformer, tokenizer: ChatTokenizer, system: str, prompt: str,
                   candidate: str) -> float:
    _, token_ids, first, num_candidate = _tokens(tokenizer, system, prompt, candidate)
    return _score(model, PrefillPlan.full(torch.from_numpy(token_ids)), first,
                  token_ids[first:first + num_candidate].tolist())


def _tokens(tokenizer: ChatTokenizer, system: str, prompt: str,
            candidate: str) -> tuple[str, npt.NDArray[np.int64], int, int]:
    """The attacker's prompt with the candidate where the assistant's answer starts: (the
    prompt's text, ids, position of the candidate's first token, its number of tokens)."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    text, _ = render_prompt(tokenizer, messages, ())
    prompt_ids = tokenizer.encode(text).ids
    candidate_ids = tokenizer.encode(candidate).ids
    return (text, np.asarray(prompt_ids + candidate_ids, dtype=np.int64), len(prompt_ids),
            len(candidate_ids))


def _score(model: Transformer, plan: PrefillPlan, first: int, candidate_ids: list[int]) -> float:
    result = model.prefill(plan, all_logits=True)
    row_of = {position: row for row, position in enumerate(result.computed_positions.tolist())}
    log_probs = torch.log_softmax(result.logits.float(), dim=-1)
    return sum(float(log_probs[row_of[first + offset - 1], token])
               for offset, token in enumerate(candidate_ids))
