"""The dictionary attack read through the TTFT alone, over rounds.

A timing attacker on a shared, busy machine cannot trust one probe per candidate: the fastest
of n candidates is the true one by chance one time in n. So each round times every candidate
of every slot once, in a shuffled order, and the claim is the rank test of
`eval/attacks/timing_rule.py`. A repeated probe must not find the attacker's own earlier probe
of the same candidate in the cache (every sharing system publishes the attacker's text like
anyone's), so each round runs on a fresh engine that has served only the victim's request: the
attacker is granted independent looks at the victim's cache, the strongest position it could
wait for (a real one waits for its probes to be evicted).

Each probe sends the candidate followed by up to `TIMING_SUFFIX_TOKENS` tokens of the public
template text after the slot (a right guess hits them all where the cache is unsafe), padded
with one-token fillers so that every probe of a slot has the same number of tokens: a shorter
candidate is not faster for being shorter.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from cacheprune.models import ChatTokenizer
from cacheprune.serving import Engine
from eval.attacks.oracles import miss_guesses
from eval.attacks.outcome import AttackOutcome
from eval.attacks.probe import PROBE_END, Prober, ProbeResult, SlotTarget
from eval.attacks.timing_rule import judge_rounds

TIMING_SUFFIX_TOKENS = 64
FILLER = " ·"  # one token in the default tokenizer; any text that holds no value works


@dataclass(slots=True)
class TimedSlot:
    """One slot under the timed dictionary attack: what is sent, what was measured."""

    target: SlotTarget
    candidates: list[str]
    outcome: AttackOutcome
    texts: dict[str, str] | None = None  # candidate or miss guess -> padded probe text
    rounds: list[dict[str, ProbeResult]] | None = None  # per round: candidate -> its probe
    gaps: list[float] | None = None


def padded_texts(tokenizer: ChatTokenizer, target: SlotTarget,
                 guesses: list[str]) -> dict[str, str]:
    """guess -> probe text: prefix, guess, the template's next tokens, fillers up to a common
    token count."""
    encoding = tokenizer.encode(target.suffix)
    count = min(TIMING_SUFFIX_TOKENS, len(encoding.ids))
    suffix = target.suffix[: encoding.offsets[count - 1][1]] if count else ""
    texts = {guess: target.prefix + guess + suffix for guess in guesses}
    lengths = {guess: _num_tokens(tokenizer, text) for guess, text in texts.items()}
    longest = max(lengths.values())
    for guess, text in texts.items():
        padding = ""
        while lengths[guess] < longest:
            padding += FILLER
            lengths[guess] = _num_tokens(tokenizer, text + padding)
        texts[guess] = text + padding
    return texts


def _num_tokens(tokenizer: ChatTokenizer, user_text: str) -> int:
    return len(tokenizer.encode(user_text + PROBE_END).ids)


def timed_dictionary_attack(make_engine: Callable[[], Engine],
                            serve_victim: Callable[[Engine], object], slots: list[TimedSlot],
                            num_rounds: int, false_claim_rate: float, seed: int) -> None:
    """Time every slot's candidates over `num_rounds` fresh engines; set each outcome."""
    for slot in slots:
        slot.rounds, slot.gaps = [], []
    for round_index in range(num_rounds):
        engine = make_engine()
        serve_victim(engine)
        prober = Prober(engine)
        for slot in slots:
            _time_round(prober, slot, random.Random(f"{seed}/{slot.outcome.victim}/"
                                                    f"{slot.target.slot}/{round_index}"))
    for slot in slots:
        assert slot.rounds is not None and slot.gaps is not None
        timings = [{candidate: result.ttft_s for candidate, result in probes.items()}
                   for probes in slot.rounds]
        verdict = judge_rounds(timings, statistics.median(slot.gaps), false_claim_rate)
        if verdict.claim is not None:
            slot.outcome.claimed = True
            slot.outcome.recovered = verdict.claim == slot.target.value


def _time_round(prober: Prober, slot: TimedSlot, rng: random.Random) -> None:
    """One round of one slot: the calibration (known misses sent twice: misses, then hits),
    then every candidate once in a shuffled order."""
    assert slot.rounds is not None and slot.gaps is not None
    misses = miss_guesses()
    if slot.texts is None:
        slot.texts = padded_texts(prober.tokenizer, slot.target, [*slot.candidates, *misses])
    start = prober.num_probes
    system = slot.target.system
    missed = [prober.send(system, slot.texts[miss]).ttft_s for miss in misses]
    hit = [prober.send(system, slot.texts[miss]).ttft_s for miss in misses]
    slot.gaps.append(statistics.median(missed) - statistics.median(hit))
    order = list(slot.candidates)
    rng.shuffle(order)
    slot.rounds.append({candidate: prober.send(system, slot.texts[candidate])
                        for candidate in order})
    slot.outcome.num_probes += prober.num_probes - start
