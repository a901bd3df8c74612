"""The first-generation prober, kept so its figure stays comparable across versions.

It attacks each victim's name slot token by token: for every token it sends the template up to
the slot plus the true tokens so far followed by (a) the true next token and (b) a wrong one,
then the template's public text up to the next slot, and reads the engine's reported hit
count. A token counts as recovered when the true guess gets more hits than the wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheprune.serving import Engine, SamplingParams
from eval.attacks.probe import ATTACKER_TENANT, split_value
from eval.workload import Request

NAME_SLOT = "name"
_ONE_TOKEN = SamplingParams(max_new_tokens=1)


@dataclass(slots=True)
class DirectLeakage:
    num_private_tokens: int = 0
    num_recovered: int = 0

    @property
    def ratio(self) -> float:
        return self.num_recovered / self.num_private_tokens if self.num_private_tokens else 0.0

    def add(self, other: DirectLeakage) -> None:
        self.num_private_tokens += other.num_private_tokens
        self.num_recovered += other.num_recovered


def probe_direct(engine: Engine, victims: list[Request]) -> DirectLeakage:
    """Attack each victim's name slot; the victims' requests must already have been served."""
    tokenizer = engine.tokenizer
    score = DirectLeakage()
    for victim in victims:
        prefix = victim.template.user_text_before(NAME_SLOT, victim.slot_values)
        base, secret_tokens = split_value(tokenizer, prefix, victim.slot_values[NAME_SLOT])
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
    after = victim.template.public_text_after(NAME_SLOT)
    messages = [{"role": "system", "content": victim.template.system},
                {"role": "user", "content": prefix + guess + after}]
    return engine.generate(ATTACKER_TENANT, messages, _ONE_TOKEN).num_hit_tokens
