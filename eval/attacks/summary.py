"""Attack outcomes folded into the figures of the report: values lost, per kind and attack."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from eval.attacks.outcome import AttackOutcome


@dataclass(slots=True, frozen=True)
class ValuesLost:
    """Private values recovered by at least one attack."""

    num_values: int
    num_recovered: int
    num_masked: int  # recovered although the detectors fully masked them (must be 0)
    num_wrong_claims: int = 0  # attacks that claimed a value other than the victim's

    @property
    def share(self) -> float:
        return self.num_recovered / self.num_values if self.num_values else 0.0


def values_recovered(outcomes: Iterable[AttackOutcome]) -> ValuesLost:
    """Each (victim, slot) counts once: recovered when any attack with any oracle got it."""
    by_value: dict[tuple[str, str], list[AttackOutcome]] = defaultdict(list)
    for outcome in outcomes:
        by_value[(outcome.victim, outcome.slot)].append(outcome)
    recovered = [runs for runs in by_value.values() if any(o.recovered for o in runs)]
    masked = [runs for runs in recovered if runs[0].fully_masked]
    wrong = sum(o.claimed and not o.recovered for runs in by_value.values() for o in runs)
    return ValuesLost(len(by_value), len(recovered), len(masked), wrong)


@dataclass(slots=True)
class KindRow:
    """One kind of value under one system's attacks."""

    kind: str
    num_values: int = 0
    num_masked: int = 0
    num_recovered: int = 0  # by any attack
    # "attack/oracle" -> (recovered, attacked, probes spent, budgets that ran out, true value
    # ranked first by the logprob attack)
    by_attack: dict[str, list[int]] = field(default_factory=dict)


def rows_per_kind(outcomes: list[AttackOutcome]) -> list[KindRow]:
    rows: dict[str, KindRow] = {}
    seen: dict[tuple[str, str], KindRow] = {}
    recovered: set[tuple[str, str]] = set()
    for outcome in outcomes:
        row = rows.setdefault(outcome.kind, KindRow(outcome.kind))
        key = (outcome.victim, outcome.slot)
        if key not in seen:
            seen[key] = row
            row.num_values += 1
            row.num_masked += outcome.fully_masked
        if outcome.recovered and key not in recovered:
            recovered.add(key)
            row.num_recovered += 1
        cell = row.by_attack.setdefault(f"{outcome.attack}/{outcome.oracle}", [0, 0, 0, 0, 0])
        cell[0] += outcome.recovered
        cell[1] += 1
        cell[2] += outcome.num_probes
        cell[3] += outcome.budget_ran_out
        cell[4] += outcome.ranked_first
    return sorted(rows.values(), key=lambda row: row.kind)
