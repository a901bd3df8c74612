"""The schema of a rule file: regex and deny-list rules, scores, context words, thresholds."""

from __future__ import annotations

from typing import Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cacheprune.detectors.validators import VALIDATORS

ValidatorName = Literal[
    "luhn", "payment_card", "not_placeholder", "iban", "us_ssn", "ip_address", "phone",
    "es_dni_nie", "it_codice_fiscale", "nl_bsn",
    "fr_nir", "de_idnr", "gb_nhs", "in_aadhaar", "in_pan", "br_cpf", "ca_sin", "cn_ric",
    "pl_pesel", "mx_curp", "sg_nric", "se_personnummer", "nordic_personal_number", "kr_rrn",
    "ie_pps", "jp_individual_number", "pl_id_card", "hk_id", "tw_id", "cz_birth_number",
    "ro_cnp", "not_english_word", "recent_date",
]
assert set(VALIDATORS) == set(ValidatorName.__args__)  # type: ignore[attr-defined]

# NOTE: a pattern whose matching time explodes on these inputs is rejected when the file is
# loaded. Real patterns finish them in microseconds; catastrophic backtracking shows at once.
_PROBE_LENGTH = 3000
_PROBE_TIMEOUT_S = 0.5
_PROBES = tuple(
    unit * (_PROBE_LENGTH // len(unit)) + tail
    for unit in ("a", "1", " ", "a ", "1.", "a@", "1-", "A1")
    for tail in ("!", "")
)
# Overlapping alternatives under a quantifier, '(b|bb)+c', explode only on runs of their own
# characters: each literal character of the pattern, each pair of adjacent ones and each run
# of literals is repeated into a probe. Exponential blow-up shows within a few dozen repetitions.
_LITERAL_PROBE_LENGTH = 240
_MAX_LITERAL_UNITS = 96
_LITERAL = regex.compile(r"\\(.)|(\w)")


def literal_probes(pattern: str) -> list[str]:
    """Probes made of the pattern's literals: each character, each adjacent pair, each run of
    literals ('foo' in '(foo|foofoo)+bar'); escapes are unwrapped, classes skipped."""
    chars: list[str] = []
    runs: list[str] = []
    run_end = -1
    for match in _LITERAL.finditer(pattern):
        escaped, plain = match.group(1), match.group(2)
        if escaped is not None and escaped.isalnum():
            continue  # \d, \w, \p...: a class, not a literal
        char = escaped or plain
        chars.append(char)
        if match.start() == run_end and runs:
            runs[-1] += char
        else:
            runs.append(char)
        run_end = match.end()
    units = list(dict.fromkeys(chars))
    units += list(dict.fromkeys(a + b for a, b in zip(chars, chars[1:], strict=False)))
    units += list(dict.fromkeys(r for r in runs if len(r) > 2))
    units = units[:_MAX_LITERAL_UNITS]
    return [unit * (_LITERAL_PROBE_LENGTH // len(unit)) + tail for unit in units
            for tail in ("!", "")]


def compile_pattern(pattern: str, ignore_case: bool) -> regex.Pattern[str]:
    flags = regex.IGNORECASE if ignore_case else 0
    return regex.compile(pattern, flags | regex.VERSION0)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PatternSpec(_Strict):
    regex: str
    score: float = Field(ge=0.0, le=1.0)
    # Report only this capture group (e.g. the value after 'password='), not the whole match.
    group: int | str | None = None

    @field_validator("regex")
    @classmethod
    def _compiles_and_terminates(cls, pattern: str) -> str:
        try:
            compiled = compile_pattern(pattern, ignore_case=False)
        except regex.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc
        if compiled.search("") is not None:
            raise ValueError(f"regular expression {pattern!r} matches the empty string")
        for probe in (*_PROBES, *literal_probes(pattern)):
            try:
                for _ in compiled.finditer(probe, timeout=_PROBE_TIMEOUT_S):
                    pass
            except TimeoutError as exc:
                raise ValueError(
                    f"regular expression {pattern!r} backtracks catastrophically "
                    f"(no answer within {_PROBE_TIMEOUT_S} s on a {len(probe)}-character probe)"
                ) from exc
        return pattern

    @model_validator(mode="after")
    def _group_exists(self) -> PatternSpec:
        if self.group is None:
            return self
        compiled = compile_pattern(self.regex, ignore_case=False)
        known = self.group in compiled.groupindex if isinstance(self.group, str) else (
            0 <= self.group <= compiled.groups
        )
        if not known:
            raise ValueError(f"group {self.group!r} does not exist in {self.regex!r}")
        return self


class RuleSpec(_Strict):
    name: str = Field(min_length=1)
    entity: str = Field(min_length=1)
    enabled: bool = True
    patterns: list[PatternSpec] = Field(default_factory=list)
    # Case-insensitive phrases matched on word boundaries; each hit scores `score`.
    deny_list: list[str] = Field(default_factory=list)
    score: float = Field(default=1.0, ge=0.0, le=1.0)
    ignore_case: bool = False
    validator: ValidatorName | None = None
    # A match this check accepts is doubtful: it scores at most `doubtful_score` (below 0.5 it
    # then needs a context word), e.g. a recent date is mostly an event's, not a birth's.
    doubtful: ValidatorName | None = None
    doubtful_score: float = Field(default=0.3, ge=0.0, le=1.0)
    # Words near a match that make it more likely private (raise its score by context_boost).
    context: list[str] = Field(default_factory=list)
    context_boost: float = Field(default=0.35, ge=0.0, le=1.0)
    context_window: int = Field(default=48, ge=1, le=2000)

    @model_validator(mode="after")
    def _one_kind(self) -> RuleSpec:
        if bool(self.patterns) == bool(self.deny_list):
            raise ValueError("a rule needs exactly one of 'patterns' or 'deny_list'")
        if any(not phrase.strip() for phrase in self.deny_list):
            raise ValueError("deny_list holds an empty phrase")
        return self


class RuleFileSpec(_Strict):
    version: Literal[1] = 1
    # Budget for one pattern over one text; exceeding it raises, and the chain fails closed.
    regex_timeout_s: float = Field(default=0.5, gt=0.0, le=60.0)
    default_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    thresholds: dict[str, float] = Field(default_factory=dict)
    disabled_entities: list[str] = Field(default_factory=list)
    rules: list[RuleSpec] = Field(min_length=1)

    @field_validator("thresholds")
    @classmethod
    def _thresholds_in_range(cls, thresholds: dict[str, float]) -> dict[str, float]:
        for entity, value in thresholds.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"threshold of {entity} must lie in [0, 1], got {value}")
        return thresholds

    @model_validator(mode="after")
    def _unique_names(self) -> RuleFileSpec:
        names = [rule.name for rule in self.rules]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"rule names must be unique; repeated: {', '.join(duplicates)}")
        return self
