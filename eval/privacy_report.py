"""The privacy part of the report: how much of each kind the detectors masked, and what each
attack recovered from each attacked system, per kind, with the probes it spent."""

from __future__ import annotations

from collections import Counter

from eval.attacks.summary import rows_per_kind, values_recovered
from eval.runner import SystemResult


def detector_coverage(results: list[SystemResult]) -> str:
    """Share of the workload's values whose every token the detectors made private, per kind
    (detection does not depend on the system, so the first system's requests serve)."""
    masked: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for request in results[0].requests:
        for kind, fully_masked in request.masked_values:
            total[kind] += 1
            masked[kind] += fully_masked
    lines = ["| kind | values | fully masked |", "|---|---:|---:|"]
    for kind in sorted(total):
        lines.append(f"| {kind} | {total[kind]} | {masked[kind] / total[kind]:.0%} |")
    all_values = sum(total.values())
    lines.append(f"| **all** | {all_values} | {sum(masked.values()) / max(1, all_values):.0%} |")
    return "\n".join(lines)


def attack_tables(results: list[SystemResult]) -> str:
    """One table per attacked system: values and recoveries per kind and per attack/oracle
    (recovered/attacked, probes spent, and how often the probe budget ran out)."""
    sections = []
    for system in results:
        if system.attacks is None or not system.attacks.outcomes:
            continue
        outcomes = system.attacks.outcomes
        lost = values_recovered(outcomes)
        rows = rows_per_kind(outcomes)
        columns = sorted({column for row in rows for column in row.by_attack})
        lines = [f"**{system.name}**: {lost.num_recovered} of {lost.num_values} values "
                 f"recovered ({lost.share:.0%}); {lost.num_masked} of them fully masked; "
                 f"{lost.num_wrong_claims} wrong claims.\n",
                 "| kind | values | fully masked | recovered | " + " | ".join(columns) + " |",
                 "|---|---:|---:|---:|" + "---:|" * len(columns)]
        for row in rows:
            cells = []
            for column in columns:
                if column not in row.by_attack:
                    cells.append("")
                    continue
                got, attacked, probes, ran_out, first = row.by_attack[column]
                cell = f"{got}/{attacked}, {probes} probes"
                if column.startswith("logprob"):
                    cell = f"{got}/{attacked}, true ranked first {first}x"
                cells.append(cell + (f", budget out {ran_out}x" if ran_out else ""))
            lines.append(f"| {row.kind} | {row.num_values} | {row.num_masked} | "
                         f"{row.num_recovered} | " + " | ".join(cells) + " |")
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def threshold_and_monitor(results: list[SystemResult]) -> str:
    """Per system: its publication threshold, how many requests per document ran before one
    reused any of the document, and what the probe monitor flagged (the workload's tenants,
    who are all benign, and the attacker)."""
    lines = ["| system | threshold k | requests per document before reuse | benign tenants "
             "flagged | attacker flagged |", "|---|---:|---|---:|---:|"]
    for system in results:
        before = system.requests_before_reuse()
        reuse = ", ".join("never" if n is None else str(n) for n in before.values())
        flagged = system.attacks.prober_flagged if system.attacks is not None else []
        attacker = f"{sum(flagged)} of {len(flagged)} attacks" if flagged else "n/a"
        benign = str(len(system.benign_flagged)) if system.served else "n/a"
        lines.append(f"| {system.name} | {system.publish_threshold} | "
                     f"{reuse if system.served else 'not served (attacked only)'} | "
                     f"{benign} | {attacker} |")
    return "\n".join(lines)
