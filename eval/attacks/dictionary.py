"""Dictionary attack: the true value hidden among realistic decoys, each sent as a full guess.

The decoys come from the same generator as the workload (Faker) with *another seed*, in the
victim value's locale and case: the attacker is assumed to know the victim's country and the
template, not the value. A candidate list that holds the true value is the attacker's best
case (a leaked customer list, a directory of the victim's town).
"""

from __future__ import annotations

import random

from eval.attacks.oracles import Oracle, miss_guesses
from eval.attacks.outcome import AttackOutcome, Budget
from eval.attacks.probe import Prober, SlotTarget, split_value, suffix_head, tokens_from
from eval.workload.private_values import ValueSource

# Kinds for which a realistic dictionary exists (directories, mailing lists).
DICTIONARY_KINDS = ("name", "address", "email")


def candidate_list(target: SlotTarget, num_candidates: int, attacker_seed: int) -> list[str]:
    """`num_candidates` distinct values, the true one at a seeded place among the decoys."""
    if num_candidates < 2:
        raise ValueError(f"a dictionary needs at least 2 candidates, got {num_candidates}")
    source = ValueSource(attacker_seed, [target.info.locale])
    decoys: list[str] = []
    seen = {target.value.casefold()}
    while len(decoys) < num_candidates - 1:
        decoy = source.draw(target.info.kind, target.info.locale, target.info.lower).text
        if decoy.casefold() not in seen:
            seen.add(decoy.casefold())
            decoys.append(decoy)
    rng = random.Random(f"{attacker_seed}/{target.slot}/{target.value}")
    decoys.insert(rng.randrange(num_candidates), target.value)
    return decoys


def dictionary_attack(prober: Prober, target: SlotTarget, oracle: Oracle, budget: Budget,
                      candidates: list[str], outcome: AttackOutcome) -> None:
    """Send each candidate followed by the template's next tokens; claim the first one whose
    tokens all hit beyond a known miss (the hit-count oracle; the TTFT oracle reads the same
    list over rounds, `timed_dictionary`)."""
    tokenizer = prober.tokenizer
    head, _ = suffix_head(tokenizer, target.suffix)
    reference = prober.send(target.system, target.prefix + miss_guesses(1)[0] + head)
    budget.spend()
    for candidate in candidates:
        if budget.exhausted:
            outcome.budget_ran_out = True
            break
        result = prober.send(target.system, target.prefix + candidate + head)
        budget.spend()
        fixed, _ = split_value(tokenizer, target.prefix, candidate)
        # NOTE: one token of slack: the first template token after the value may tokenize
        # differently in the victim's prompt than in this probe.
        num_tokens = tokens_from(tokenizer, target.prefix + candidate + head, len(fixed)) - 1
        if oracle.is_hit(result, reference, num_tokens):
            outcome.claimed = True
            outcome.recovered = candidate == target.value
            break
    outcome.num_probes += budget.used
