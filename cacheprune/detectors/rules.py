"""The rule detector: regex and deny-list rules from a YAML file, run with a timeout."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import regex

from cacheprune.detectors.base import Detector, DetectorConfigError, Span
from cacheprune.detectors.rules_schema import RuleFileSpec, RuleSpec, compile_pattern
from cacheprune.detectors.thresholds import ScoreThresholds
from cacheprune.detectors.validators import VALIDATORS
from cacheprune.detectors.yaml_io import read_yaml, shipped_file, validate


def default_rules_path() -> Path:
    return shipped_file("default.yaml")


def load_rule_file(path: str | Path) -> RuleFileSpec:
    """Parse and validate a rule file."""
    return validate(RuleFileSpec, read_yaml(Path(path)), str(path))


@dataclass(slots=True)
class _CompiledPattern:
    rule: RuleSpec
    pattern: regex.Pattern[str]
    score: float
    group: int | str


class RuleDetector(Detector):
    """Regex patterns (with validators and context words) and deny-lists, one span per hit.

    With neither `rules_file` nor `spec`, it runs the rules shipped with cacheprune.
    """

    path_options: ClassVar[tuple[str, ...]] = ("rules_file",)

    def __init__(
        self,
        rules_file: str | Path | None = None,
        spec: RuleFileSpec | dict[str, Any] | None = None,
        name: str = "rules",
    ) -> None:
        if rules_file is not None and spec is not None:
            raise DetectorConfigError(
                f"detector '{name}': give 'rules_file' or 'spec', not both "
                "(neither means the default rules)"
            )
        if spec is None:
            spec = load_rule_file(default_rules_path() if rules_file is None else rules_file)
        elif isinstance(spec, dict):
            spec = validate(RuleFileSpec, spec, f"inline rules of detector '{name}'")
        self.name = name
        self.spec = spec
        self._timeout_s = spec.regex_timeout_s
        self._thresholds = ScoreThresholds(spec.default_threshold, spec.thresholds)
        disabled = set(spec.disabled_entities)
        active = [r for r in spec.rules if r.enabled and r.entity not in disabled]
        self._patterns = [
            _CompiledPattern(rule, compile_pattern(p.regex, rule.ignore_case), p.score,
                             0 if p.group is None else p.group)
            for rule in active
            for p in rule.patterns
        ]
        self._deny_lists = [(rule, _deny_list_pattern(rule.deny_list)) for rule in active
                            if rule.deny_list]
        self._context = {rule.name: _words_pattern(rule.context) for rule in active if rule.context}

    @property
    def entities(self) -> list[str]:
        return sorted({p.rule.entity for p in self._patterns} | {r.entity for r, _ in
                                                                 self._deny_lists})

    def describe(self) -> dict[str, Any]:
        return {"rules": self.spec.model_dump(mode="json")}

    def detect(self, text: str) -> list[Span]:
        spans: list[Span] = []
        for compiled in self._patterns:
            rule = compiled.rule
            # NOTE: concurrent=True releases the GIL while matching, so the chain's watchdog can
            # still fail the request closed while a pathological pattern runs. overlapped=True:
            # a hit that starts inside an earlier one ('a b' then 'b c' in 'a b c') is private
            # too, and non-overlapping search would skip it.
            # NOTE: the timeout runs from the search's start, so validators (which may load a
            # word list once) run after the matches are collected and are not counted in it.
            found = [match.span(compiled.group) for match in compiled.pattern.finditer(
                text, timeout=self._timeout_s, concurrent=True, overlapped=True)]
            for start, end in found:
                if start >= end:
                    continue
                if rule.validator is not None and not VALIDATORS[rule.validator](text[start:end]):
                    continue
                score = compiled.score
                if rule.doubtful is not None and VALIDATORS[rule.doubtful](text[start:end]):
                    score = min(score, rule.doubtful_score)
                score = self._with_context(rule, text, start, end, score)
                self._keep(spans, rule.entity, start, end, score)
        for rule, pattern in self._deny_lists:
            for match in pattern.finditer(text, timeout=self._timeout_s, concurrent=True,
                                          overlapped=True):
                score = self._with_context(rule, text, match.start(), match.end(), rule.score)
                self._keep(spans, rule.entity, match.start(), match.end(), score)
        return spans

    def _keep(self, spans: list[Span], entity: str, start: int, end: int, score: float) -> None:
        if self._thresholds.passes(entity, score):
            spans.append(Span(entity, start, end, score, self.name))

    def _with_context(self, rule: RuleSpec, text: str, start: int, end: int, score: float) -> float:
        words = self._context.get(rule.name)
        if words is None:
            return score
        before = text[max(0, start - rule.context_window):start]
        after = text[end:end + rule.context_window]
        if words.search(before, timeout=self._timeout_s) or words.search(
            after, timeout=self._timeout_s
        ):
            return min(1.0, score + rule.context_boost)
        return score


def _words_pattern(words: list[str]) -> regex.Pattern[str]:
    # Longest first, so 'e-mail address' wins over 'e-mail' inside one alternation.
    alternatives = "|".join(_bounded(w.strip()) for w in sorted(words, key=len, reverse=True))
    return regex.compile(f"(?:{alternatives})", regex.IGNORECASE)


_SPACED_LETTER = regex.compile(r"[\p{Latin}\p{Cyrillic}\p{Greek}\d_]")


def _bounded(word: str) -> str:
    """The word on word boundaries; a word in a script written without spaces ('マイナンバー')
    has none, so it is found right against the next word ('マイナンバーは')."""
    head = r"(?<!\w)" if _SPACED_LETTER.match(word[:1]) else ""
    tail = r"(?!\w)" if _SPACED_LETTER.match(word[-1:]) else ""
    return f"{head}{regex.escape(word)}{tail}"


def _deny_list_pattern(phrases: list[str]) -> regex.Pattern[str]:
    # Inner whitespace of a phrase matches any run of whitespace ('John  Smith', line breaks).
    escaped = [r"\s+".join(regex.escape(part) for part in p.split())
               for p in sorted(phrases, key=len, reverse=True)]
    return regex.compile(rf"(?<!\w)(?:{'|'.join(escaped)})(?!\w)", regex.IGNORECASE)
