"""Answer quality (LongBench-style token F1 and ROUGE-L) and leakage of private strings.

Normalization follows LongBench's English QA scoring (itself SQuAD's): lowercase, drop ASCII
punctuation, drop the articles a/an/the, collapse whitespace. F1 and ROUGE-L both run on the
normalized whitespace tokens and take the best score over the reference answers.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numba
import numpy as np

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    no_punctuation = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punctuation).split())


def _best(
    prediction: str,
    references: Sequence[str],
    score: Callable[[list[str], list[str]], float],
) -> float:
    if not references:
        raise ValueError("at least one reference answer is needed")
    tokens = normalize_answer(prediction).split()
    return max(score(tokens, normalize_answer(ref).split()) for ref in references)


def _f1(prediction: list[str], reference: list[str]) -> float:
    # NOTE: as in LongBench, no overlap scores 0 even when both sides are empty.
    overlap = sum((Counter(prediction) & Counter(reference)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(prediction), overlap / len(reference)
    return 2 * precision * recall / (precision + recall)


def _lcs_length(a: list[str], b: list[str]) -> int:
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if token == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def _rouge_l(prediction: list[str], reference: list[str]) -> float:
    lcs = _lcs_length(prediction, reference)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(prediction), lcs / len(reference)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: Sequence[str]) -> float:
    """Best bag-of-tokens F1 of `prediction` against any reference, in [0, 1]."""
    return _best(prediction, references, _f1)


def rouge_l(prediction: str, references: Sequence[str]) -> float:
    """Best ROUGE-L F-measure (beta = 1, longest common token subsequence), in [0, 1]."""
    return _best(prediction, references, _rouge_l)


@numba.njit(cache=True)
def _best_substring_distance(pattern: np.ndarray, text: np.ndarray) -> int:
    # Sellers' approximate matching: edit distance of `pattern` to its closest substring of
    # `text`, with free start and end in the text (row 0 is all zeros).
    previous = np.arange(len(pattern) + 1)
    best = len(pattern)
    current = np.empty_like(previous)
    for char in text:
        current[0] = 0
        for i in range(1, len(pattern) + 1):
            substitute = previous[i - 1] + (0 if pattern[i - 1] == char else 1)
            current[i] = min(substitute, previous[i] + 1, current[i - 1] + 1)
        best = min(best, current[len(pattern)])
        previous, current = current, previous
    return best


def _fold(text: str) -> np.ndarray:
    return np.array([ord(ch) for ch in " ".join(text.casefold().split())], dtype=np.int64)


def substring_similarity(value: str, text: str) -> float:
    """1 − (edit distance from `value` to its closest substring of `text`) ÷ len(value).

    Case and runs of whitespace are ignored. 1.0 means `value` occurs in `text`.
    """
    pattern = _fold(value)
    if len(pattern) == 0:
        raise ValueError("a private value must not be empty or only whitespace")
    return 1.0 - _best_substring_distance(pattern, _fold(text)) / len(pattern)


@dataclass(slots=True, frozen=True)
class Recovery:
    """How many private values a text reveals, exactly and approximately."""

    num_values: int
    num_exact: int
    num_fuzzy: int

    @property
    def exact_ratio(self) -> float:
        return self.num_exact / self.num_values

    @property
    def fuzzy_ratio(self) -> float:
        return self.num_fuzzy / self.num_values


def recovery(private_values: Sequence[str], text: str, fuzzy_threshold: float = 0.8) -> Recovery:
    """Which `private_values` appear in `text`: verbatim (exact), or with substring similarity
    at least `fuzzy_threshold` (fuzzy; every exact hit is also a fuzzy hit)."""
    if not private_values:
        raise ValueError("no private values to score")
    if not 0.0 < fuzzy_threshold <= 1.0:
        raise ValueError(f"fuzzy_threshold must lie in (0, 1], got {fuzzy_threshold}")
    num_exact = sum(value in text for value in private_values)
    num_fuzzy = sum(
        substring_similarity(value, text) >= fuzzy_threshold for value in private_values
    )
    return Recovery(len(private_values), num_exact, num_fuzzy)


def exact_recovery_ratio(private_values: Sequence[str], text: str) -> float:
    """Share of `private_values` that occur verbatim in `text`."""
    return recovery(private_values, text).exact_ratio


def fuzzy_recovery_ratio(private_values: Sequence[str], text: str, threshold: float = 0.8) -> float:
    """Share of `private_values` whose closest substring of `text` is at least `threshold`
    similar (see `substring_similarity`)."""
    return recovery(private_values, text, threshold).fuzzy_ratio
