"""The first-generation prober, kept so its figure stays comparable across versions.

It attacks each victim's name slot token by token: for every token it sends the template up to
the slot plus the true tokens so far followed by (a) the true next token and (b) a wrong one,
then the template's public text up to the next slot, and reads the engine's reported hit
count. A token counts as recovered when the true guess gets more hits than the wrong one.

The wrong token is one the detectors flag exactly like the true one in the probe (a capitalized
word where the true token is part of a flagged name). The pool is searched with the prompt's
public view, so a probe the detectors see differently (a lower-case word after "my name is",
not flagged, stays in the view) is served differently whatever the victim sent: a difference in
hits would measure the detectors, not what the pool learned from the victim.
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheprune.serving import Engine, admit
from eval.attacks.probe import ATTACKER_TENANT, send_probe, split_value
from eval.workload import Request

NAME_SLOT = "name"


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
            wrong = _comparable_wrong_token(engine, victim, base, known, true_token)
            if wrong is None:
                continue  # no comparable wrong guess: the prober learns nothing here
            hits_true = _hits(engine, victim, base, known + [true_token])
            hits_wrong = _hits(engine, victim, base, known + [wrong])
            if hits_true > hits_wrong:
                score.num_recovered += 1
    return score


def wrong_token(token: int, vocab_size: int, attempt: int = 0) -> int:
    # a plain-text token id far from the true one (ids below ~100 are special or bytes)
    return 100 + (token + vocab_size // 2 + 7919 * attempt) % (vocab_size - 100)


_NUM_WRONG_CANDIDATES = 200


def _comparable_wrong_token(engine: Engine, victim: Request, prefix: str, known: list[int],
                            true_token: int) -> int | None:
    """The first wrong next token whose probe the detectors flag exactly like the true one's."""
    flags = _probe_flags(engine, victim, prefix, known + [true_token])
    for attempt in range(_NUM_WRONG_CANDIDATES):
        wrong = wrong_token(true_token, engine.tokenizer.vocab_size, attempt)
        if wrong != true_token and _probe_flags(engine, victim, prefix, known + [wrong]) == flags:
            return wrong
    return None


def _probe_messages(engine: Engine, victim: Request, prefix: str,
                    guess_ids: list[int]) -> list[dict[str, str]]:
    guess = engine.tokenizer.decode(guess_ids)
    # The public text after the slot (the prober knows the template) makes the probe long
    # enough to reach the pool's index windows whether the guess is right or wrong.
    after = victim.template.public_text_after(NAME_SLOT)
    return [{"role": "system", "content": victim.template.system},
            {"role": "user", "content": prefix + guess + after}]


def _probe_flags(engine: Engine, victim: Request, prefix: str,
                 guess_ids: list[int]) -> tuple[bool, ...]:
    """Which of the probe's tokens the engine's detectors flag, admitted as the engine admits."""
    probe = admit("probe-flags", ATTACKER_TENANT,
                  _probe_messages(engine, victim, prefix, guess_ids), engine.tokenizer,
                  engine.policy)
    return tuple(bool(flag) for flag in probe.private)


def _hits(engine: Engine, victim: Request, prefix: str, guess_ids: list[int]) -> int:
    messages = _probe_messages(engine, victim, prefix, guess_ids)
    return send_probe(engine, messages).num_hit_tokens
