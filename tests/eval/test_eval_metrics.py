"""Answer metrics against hand-computed values and brute force; leakage helpers likewise."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval.metrics import (
    exact_recovery_ratio,
    fuzzy_recovery_ratio,
    normalize_answer,
    recovery,
    rouge_l,
    substring_similarity,
    token_f1,
)


def test_normalization_drops_case_punctuation_articles_and_extra_spaces() -> None:
    assert normalize_answer("The Quick, brown fox!  An apple") == "quick brown fox apple"
    assert normalize_answer("theory, anthem") == "theory anthem"  # articles only as words


def test_token_f1_hand_computed() -> None:
    # prediction tokens: cat sat on mat; reference: cat on mat -> overlap 3, P 3/4, R 1
    assert token_f1("The cat sat on the mat.", ["a cat on a mat"]) == pytest.approx(6 / 7)
    # repeated tokens count once per occurrence on both sides: overlap 2 of 3 and 2 of 2
    assert token_f1("yes yes no", ["yes yes"]) == pytest.approx(0.8)
    assert token_f1("dog", ["cat"]) == 0.0


def test_token_f1_takes_the_best_reference() -> None:
    assert token_f1("ten weeks", ["about two months", "10 weeks", "ten weeks"]) == 1.0
    assert token_f1("ten weeks", ["about two months", "10 weeks"]) == pytest.approx(0.5)


def test_rouge_l_hand_computed() -> None:
    # LCS of 'cat sat on mat' and 'cat on mat sat' is 'cat on mat' (3): P = R = 3/4
    assert rouge_l("cat sat on mat", ["cat on mat sat"]) == pytest.approx(0.75)
    # 'police killed gunman' vs 'gunman was killed by police': LCS 1, P 1/3, R 1/5
    assert rouge_l("police killed the gunman", ["the gunman was killed by police"]) == (
        pytest.approx(0.25)
    )
    assert rouge_l("nothing shared", ["entirely different"]) == 0.0


def test_metrics_need_a_reference() -> None:
    with pytest.raises(ValueError, match="reference"):
        token_f1("x", [])
    with pytest.raises(ValueError, match="reference"):
        rouge_l("x", [])


def _brute_force_lcs(a: list[str], b: list[str]) -> int:
    for size in range(min(len(a), len(b)), 0, -1):
        subsequences = set(itertools.combinations(b, size))
        if any(combo in subsequences for combo in itertools.combinations(a, size)):
            return size
    return 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from("wxyz"), min_size=1, max_size=6),
    st.lists(st.sampled_from("wxyz"), min_size=1, max_size=6),
)
def test_rouge_l_matches_brute_force_lcs(prediction: list[str], reference: list[str]) -> None:
    lcs = _brute_force_lcs(prediction, reference)
    expected = 0.0 if lcs == 0 else 2 * lcs / (len(prediction) + len(reference))
    assert rouge_l(" ".join(prediction), [" ".join(reference)]) == pytest.approx(expected)


def _levenshtein(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        previous_diagonal, row[0] = row[0], i
        for j, char_b in enumerate(b, start=1):
            previous_diagonal, row[j] = (
                row[j],
                min(row[j] + 1, row[j - 1] + 1, previous_diagonal + (char_a != char_b)),
            )
    return row[-1]


def _brute_force_similarity(value: str, text: str) -> float:
    substrings = {text[i:j] for i in range(len(text) + 1) for j in range(i, len(text) + 1)}
    return 1 - min(_levenshtein(value, s) for s in substrings) / len(value)


@settings(max_examples=80, deadline=None)
@given(st.text("abc", min_size=1, max_size=5), st.text("abc", max_size=8))
def test_substring_similarity_matches_brute_force(value: str, text: str) -> None:
    assert substring_similarity(value, text) == pytest.approx(_brute_force_similarity(value, text))


def test_substring_similarity_hand_computed() -> None:
    assert substring_similarity("DE12 3456", "iban de12   3456 on file") == 1.0  # case, spaces
    assert substring_similarity("0123456789", "call 0123456780 now") == pytest.approx(0.9)
    with pytest.raises(ValueError, match="empty"):
        substring_similarity("  ", "text")


def test_recovery_exact_and_fuzzy() -> None:
    values = ["Bianca Vance", "avery.ashdown12@example.com", "(415) 555-0199"]
    text = "Reply to avery.ashdown12@example.com or call (415) 555-0198 today."
    score = recovery(values, text)
    assert (score.num_values, score.num_exact, score.num_fuzzy) == (3, 1, 2)
    assert exact_recovery_ratio(values, text) == pytest.approx(1 / 3)
    assert fuzzy_recovery_ratio(values, text) == pytest.approx(2 / 3)
    assert fuzzy_recovery_ratio(values, text, threshold=1.0) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="no private values"):
        recovery([], text)
