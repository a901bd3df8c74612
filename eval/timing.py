"""Where a run's wall time went: seconds per (part, phase), summed over the run.

The report prints it so that a slow run says what made it slow (a system's serving, its
attacks, the bound, loading the model) rather than only how long it took."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(slots=True)
class RunClock:
    """Wall seconds per part of the run (a system's label, "bound", "setup"...) and phase."""

    seconds: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, part: str, phase: str, seconds: float) -> None:
        phases = self.seconds.setdefault(part, {})
        phases[phase] = phases.get(phase, 0.0) + seconds

    @contextmanager
    def time(self, part: str, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(part, phase, time.perf_counter() - started)

    def total(self) -> float:
        return sum(sum(phases.values()) for phases in self.seconds.values())

    def table(self) -> str:
        """A markdown table: one row per part, one column per phase, and the row totals."""
        phases = list(dict.fromkeys(p for parts in self.seconds.values() for p in parts))
        lines = ["| part | " + " | ".join(phases) + " | total |",
                 "|---|" + "---:|" * (len(phases) + 1)]
        for part, spent in self.seconds.items():
            cells = [f"{spent[p]:.1f}" if p in spent else "" for p in phases]
            lines.append(f"| {part} | " + " | ".join(cells) + f" | {sum(spent.values()):.1f} |")
        lines.append("| all | " + " | ".join("" for _ in phases) + f" | {self.total():.1f} |")
        return "\n".join(lines)
