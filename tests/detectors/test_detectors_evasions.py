"""Evasions: zero-width characters, look-alike letters and full-width forms hide nothing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.detectors import DetectorChain, RuleDetector
from cacheprune.detectors.normalize import normalize_for_detection

EMAIL = "jane.doe@example.com"
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]
# Cyrillic and Greek letters that look like Latin ones, by their Unicode names.
LOOK_ALIKES = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441",
               "x": "\u0445", "i": "\u0456", "j": "\u0458", "l": "\u04cf"}


def covered(chain: DetectorChain, text: str) -> list[tuple[int, int]]:
    """The union of the chain's spans as sorted, merged character ranges."""
    chars = sorted({i for s in chain.run(text).spans for i in range(s.start, s.end)})
    ranges: list[tuple[int, int]] = []
    for i in chars:
        if ranges and ranges[-1][1] == i:
            ranges[-1] = (ranges[-1][0], i + 1)
        else:
            ranges.append((i, i + 1))
    return ranges


def email_rules() -> DetectorChain:
    spec = {"rules": [{"name": "email", "entity": "EMAIL_ADDRESS", "patterns": [
        {"regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+", "score": 0.9}]}]}
    return DetectorChain([RuleDetector(spec=spec)], timeout_s=None)


def test_zero_width_space_inside_an_email_is_found_with_original_offsets() -> None:
    hidden = "jane.doe\u200b@exa\u200dmple.com"
    text = f"Write to {hidden} today."
    at = text.index(hidden)
    assert covered(email_rules(), text) == [(at, at + len(hidden))]
    plain = DetectorChain(email_rules().detectors, timeout_s=None, normalize=False)
    assert covered(plain, text) != [(at, at + len(hidden))]


def test_cyrillic_look_alikes_and_full_width_forms_are_folded() -> None:
    cyrillic = "".join(LOOK_ALIKES.get(ch, ch) for ch in EMAIL)
    full_width = "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in EMAIL)
    for hidden in (cyrillic, full_width):
        assert hidden != EMAIL
        text = f"Mail {hidden}, please."
        at = text.index(hidden)
        assert covered(email_rules(), text) == [(at, at + len(hidden))]


def test_words_in_one_script_are_not_folded() -> None:
    text = "Анна Петрова and José Müller"
    assert normalize_for_detection(text).text == text


def test_the_turkish_dotless_i_is_a_letter_not_a_look_alike() -> None:
    text = "Sistem kullanıcı adı: gkaraca, Soyadı: YILMAZ"
    assert normalize_for_detection(text).text == text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(EMAIL)), st.sampled_from(ZERO_WIDTH)),
                max_size=6),
       st.sets(st.sampled_from(sorted(LOOK_ALIKES)), max_size=4),
       st.text(alphabet="abc XYZ,.é", max_size=12))
def test_hidden_emails_map_back_to_exactly_their_characters(insertions, swapped, prefix) -> None:
    value = "".join(LOOK_ALIKES[ch] if ch in swapped else ch for ch in EMAIL)
    for position, mark in sorted(insertions, reverse=True):
        value = value[:position] + mark + value[position:]
    text = f"{prefix} to {value} ok"
    at = text.index(value)
    # The reference: the first and last visible characters of the value in the original text.
    first = at + next(i for i, ch in enumerate(value) if ch not in ZERO_WIDTH)
    last = at + max(i for i, ch in enumerate(value) if ch not in ZERO_WIDTH) + 1
    assert covered(email_rules(), text) == [(first, last)]


def test_normalized_offsets_against_a_character_by_character_reference() -> None:
    text = "ﬁle\u200b Jose\u0301 ｗｏｒｌｄ ok"
    view = normalize_for_detection(text)
    assert view.text == "file José world ok"
    for index, char in enumerate(view.text):
        start, end = view.original_span(index, index + 1)
        # The original characters it maps to produce it when normalized on their own.
        assert char in normalize_for_detection(text[start:end]).text
        assert "\u200b" not in text[start:end]
