"""Token-by-token extension: the attacker grows a guessed prefix of the value one token at a
time, choosing among plausible next tokens, until the template's next words are hit too.

"Plausible" comes from the attacker's own samples of the same kind and locale (the workload's
generator with another seed, tokenized after the same template text): next tokens are tried in
order of how often they followed the previous token, then of how often they came at this
position, then of how often they came at all. The end of the value is one more candidate: the
template's text after the slot.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from cacheprune.models import ChatTokenizer
from eval.attacks.outcome import AttackOutcome, Budget
from eval.attacks.probe import Prober, ProbeResult, SlotTarget, split_value, suffix_head
from eval.workload.private_values import ValueSource

END = -1  # the candidate "the value ends here"
MAX_VALUE_TOKENS = 96
_CONTEXT_CHARS = 64  # template text before the slot that the samples are tokenized after


@dataclass(slots=True)
class TokenStatistics:
    """How the attacker's own samples of one kind tokenize after one template text."""

    fixed_suffix_chars: int  # characters the value's first token takes from the template
    after: defaultdict[int | None, Counter[int]] = field(
        default_factory=lambda: defaultdict(Counter))
    at: defaultdict[int, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    overall: Counter[int] = field(default_factory=Counter)

    @classmethod
    def sample(cls, tokenizer: ChatTokenizer, target: SlotTarget, num_samples: int,
               seed: int) -> TokenStatistics:
        source = ValueSource(seed, [target.info.locale])
        context = target.prefix[-_CONTEXT_CHARS:]
        taken: Counter[int] = Counter()
        stats = cls(0)
        for _ in range(num_samples):
            value = source.draw(target.info.kind, target.info.locale, target.info.lower).text
            fixed, ids = split_value(tokenizer, context, value)
            taken[len(context) - len(fixed)] += 1
            previous: int | None = None
            for position, token in enumerate([*ids, END]):
                stats.after[previous][token] += 1
                stats.at[position][token] += 1
                stats.overall[token] += 1
                previous = token
        stats.fixed_suffix_chars = taken.most_common(1)[0][0]
        return stats

    def candidates(self, known: list[int]) -> list[int]:
        previous = known[-1] if known else None
        after, at = self.after[previous], self.at[len(known)]
        return sorted(self.overall, key=lambda t: (-after[t], -at[t], -self.overall[t], t))


def extension_attack(prober: Prober, target: SlotTarget, budget: Budget,
                     stats: TokenStatistics, outcome: AttackOutcome) -> None:
    """Grow the value token by token; claim it when its end is hit.

    Read with the hit count: the candidates of one step are compared with each other: they
    differ only in their last token, so only the right one gets more hits than the rest. (A
    known-miss reference would have to end differently, and the prober's own cached probes, or
    a reference whose first character merges with the last known token, would skew it.) The
    TTFT oracle is not offered here: a sound timing verdict needs rounds on caches free of the
    attacker's own probes, which means a fresh victim cache per round and per step.
    """
    tokenizer = prober.tokenizer
    fixed = target.prefix[: len(target.prefix) - stats.fixed_suffix_chars]
    head, _ = suffix_head(tokenizer, target.suffix)
    known: list[int] = []
    while len(known) < MAX_VALUE_TOKENS:
        guessed = fixed + tokenizer.decode(known)
        results: list[tuple[ProbeResult, int]] = []
        best: int | None = None
        for candidate in stats.candidates(known):
            if budget.exhausted:
                outcome.budget_ran_out = True
                outcome.num_probes += budget.used
                return
            text = guessed + head if candidate == END else fixed + tokenizer.decode(
                [*known, candidate])
            results.append((prober.send(target.system, text), candidate))
            budget.spend()
            best = _clear_winner(results)
            if best is not None:
                break
        if best is None:
            break
        if best == END:
            outcome.claimed = True
            outcome.recovered = guessed[len(target.prefix):] == target.value
            break
        known.append(best)
    outcome.num_probes += budget.used


def _clear_winner(results: list[tuple[ProbeResult, int]]) -> int | None:
    """The one candidate with more hits than the median of at least three, if there is one."""
    if len(results) < 3:
        return None
    middle = statistics.median(result.hits for result, _ in results)
    above = [candidate for result, candidate in results if result.hits > middle]
    return above[0] if len(above) == 1 else None
