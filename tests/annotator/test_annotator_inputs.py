"""Bad input is refused with a message that names the fault, and the inputs are left as given."""

from __future__ import annotations

import numpy as np
import pytest
from annotator_reference import synthetic_attention
from pydantic import ValidationError

from cacheprune.annotator import AnnotatorConfig, annotate

N = 12


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return synthetic_attention(N, seed=7), np.zeros(N, dtype=bool), np.ones(N, dtype=bool)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a, p, c: (a.astype(np.float64), p, c), "attention must be float32"),
        (lambda a, p, c: (a[:, :-1], p, c), r"square n x n matrix, got shape \(12, 11\)"),
        (lambda a, p, c: (a.tolist(), p, c), "attention must be a numpy array, got list"),
        (lambda a, p, c: (a, p[:-1], c), r"private_mask must have shape \(12,\)"),
        (lambda a, p, c: (a, p.astype(np.int8), c), "private_mask must be a bool array"),
        (lambda a, p, c: (a, p, c.astype(np.int64)), "computed_mask must be a bool array"),
    ],
)
def test_annotate_names_the_bad_argument(change, message: str) -> None:  # type: ignore[no-untyped-def]
    attention, private_mask, computed_mask = change(*_inputs())
    with pytest.raises((ValueError, TypeError), match=message):
        annotate(attention, private_mask, computed_mask, AnnotatorConfig(min_len=2))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -0.25])
def test_annotate_names_the_row_with_a_bad_value(bad: float) -> None:
    attention, private_mask, computed_mask = _inputs()
    attention[9, 3] = bad
    original = (attention.copy(), private_mask.copy(), computed_mask.copy())

    with pytest.raises(ValueError, match="attention row 9 holds a negative or non-finite"):
        annotate(attention, private_mask, computed_mask, AnnotatorConfig(min_len=2))

    np.testing.assert_array_equal(attention, original[0])
    np.testing.assert_array_equal(private_mask, original[1])
    np.testing.assert_array_equal(computed_mask, original[2])


def test_annotate_refuses_a_computed_row_without_attention() -> None:
    attention, private_mask, computed_mask = _inputs()
    attention[5] = 0.0
    with pytest.raises(ValueError, match="attention row 5 is all zeros"):
        annotate(attention, private_mask, computed_mask, AnnotatorConfig(min_len=2))
    # The same row is fine once its position is marked reused: it is never read.
    computed_mask[5] = False
    annotate(attention, private_mask, computed_mask, AnnotatorConfig(min_len=2))


def test_bad_values_in_unread_places_are_ignored() -> None:
    # Above the diagonal, and rows of private positions, are never part of a segment's sums.
    attention, private_mask, computed_mask = _inputs()
    clean = annotate(attention, private_mask, computed_mask, AnnotatorConfig(min_len=2))
    attention[2, 7] = np.nan
    private_mask[10] = True
    attention[10, 4] = -1.0
    noisy = annotate(attention, private_mask, computed_mask, AnnotatorConfig(min_len=2))
    assert all(s.end <= 10 or s.start > 10 for s in noisy.segments)
    assert noisy.segments[0].start == clean.segments[0].start


def test_empty_prompt_has_no_segments() -> None:
    empty = np.zeros((0, 0), dtype=np.float32)
    mask = np.zeros(0, dtype=bool)
    annotation = annotate(empty, mask, mask, AnnotatorConfig())
    assert annotation.segments == []
    assert annotation.coverage == 0.0
    assert annotation.recompute_ratio == 0.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"min_len": 0}, "min_len"),
        ({"min_len": 8, "max_len": 4}, r"max_len \(4\) must be at least min_len \(8\)"),
        ({"ratio": 0.0}, "ratio"),
        ({"sink_tokens": -1}, "sink_tokens"),
        ({"sink_mode": "drop"}, "sink_mode"),
        ({"recompute": {"kind": "top_fraction", "fraction": 1.5}}, "fraction"),
        ({"recompute": {"kind": "random"}}, "recompute"),
        ({"min_length": 3}, "min_length"),
    ],
)
def test_config_names_the_bad_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AnnotatorConfig.model_validate(fields)
