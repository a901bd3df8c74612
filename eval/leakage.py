"""Leakage under attack.

direct: a PromptPeek-style prober who knows the prompt template attacks each victim's first
private slot (the name in the profile) token by token: for every token it sends the template
up to the slot plus the true tokens so far followed by (a) the true next token and (b) a wrong
one, then the template's public text up to the next slot, and reads the engine's reported hit
count, the strongest timing oracle. A token counts
as recovered when the true guess gets more hits than the wrong one.

contextual: what can be read back from what the shared caches hold: the share of private
values found in the decoded cache contents (exact and fuzzy).
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheprune.serving import Engine, SamplingParams
from eval.metrics import recovery
from eval.workload import Request

ATTACKED_SLOT = "name"
_ONE_TOKEN = SamplingParams(max_new_tokens=1)


@dataclass(slots=True)
class DirectLeakage:
    num_private_tokens: int = 0
    num_recovered: int = 0

    @property
    def ratio(self) -> float:
        return self.num_recovered / self.num_private_tokens if self.num_private_tokens else 0.0


def probe_direct(engine: Engine, victims: list[Request]) -> DirectLeakage:
    """Attack each victim's name slot; the victims' requests must already have been served."""
    tokenizer = engine.tokenizer
    score = DirectLeakage()
    for victim in victims:
        prefix = victim.template.user_text_before(ATTACKED_SLOT, victim.slot_values)
        secret = victim.slot_values[ATTACKED_SLOT]
        encoding = tokenizer.encode(prefix + secret)
        # The secret's tokens are those holding any of its characters; the first one usually
        # carries the space before it too, so the prober's fixed text stops where it begins.
        covering = [i for i, (start, end) in enumerate(encoding.offsets)
                    if end > len(prefix) and start < len(prefix) + len(secret)]
        base = (prefix + secret)[: encoding.offsets[covering[0]][0]]
        secret_tokens = [encoding.ids[i] for i in covering]
        score.num_private_tokens += len(secret_tokens)
        for i, true_token in enumerate(secret_tokens):
            known = secret_tokens[:i]
            wrong = wrong_token(true_token, tokenizer.vocab_size)
            hits_true = _hits(engine, victim, base, known + [true_token])
            hits_wrong = _hits(engine, victim, base, known + [wrong])
            if hits_true > hits_wrong:
                score.num_recovered += 1
    return score


def wrong_token(token: int, vocab_size: int) -> int:
    # a plain-text token id far from the true one (ids below ~100 are special or bytes)
    return 100 + (token + vocab_size // 2) % (vocab_size - 100)


def _hits(engine: Engine, victim: Request, prefix: str, guess_ids: list[int]) -> int:
    guess = engine.tokenizer.decode(guess_ids)
    # The public text after the slot (the prober knows the template) makes the probe long
    # enough to reach the pool's index windows whether the guess is right or wrong.
    after = victim.template.public_text_after(ATTACKED_SLOT)
    messages = [{"role": "system", "content": victim.template.system},
                {"role": "user", "content": prefix + guess + after}]
    return engine.generate("prober", messages, _ONE_TOKEN).num_hit_tokens


def contextual_recovery(engine: Engine, requests: list[Request]) -> tuple[float, float]:
    """(exact, fuzzy) share of the requests' private values readable from the caches."""
    stored = [engine.tokenizer.decode(ids.tolist()) for ids in engine.cached_token_ids()]
    text = "\n".join(stored)
    values = [value for request in requests for value in request.private_values]
    if not values or not text:
        return 0.0, 0.0
    result = recovery(values, text)
    return result.exact_ratio, result.fuzzy_ratio
