"""Realistic private values: seeded, in every locale and kind, unique, absent from documents,
and made without the detectors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from eval.data import load_documents, project_data_dir
from eval.workload import WorkloadConfig, build_requests
from eval.workload.private_values import KINDS, LOCALES, UniqueValues, ValueSource

WORKLOAD_DIR = Path(__file__).resolve().parents[2] / "eval" / "workload"


def test_same_seed_same_values_other_seed_other_values() -> None:
    def draws(seed: int) -> list[str]:
        source = ValueSource(seed)
        return [source.draw(kind, locale).text for locale in LOCALES for kind in KINDS]

    assert draws(3) == draws(3)
    other = draws(4)
    assert sum(a != b for a, b in zip(draws(3), other, strict=True)) > len(other) // 2


@pytest.mark.parametrize("locale", LOCALES)
def test_every_kind_in_every_locale_is_one_clean_line(locale: str) -> None:
    source = ValueSource(1, [locale])
    for kind in KINDS:
        value = source.draw(kind, locale)
        assert value.text and value.text == " ".join(value.text.split()), (kind, value)
        lowered = source.draw(kind, locale, lower=True).text
        assert lowered == lowered.lower(), (kind, lowered)


def test_ibans_carry_valid_check_digits() -> None:
    # ISO 13616: move the first four characters to the end, letters as 10..35, mod 97 == 1.
    source = ValueSource(5)
    for locale in LOCALES:
        compact = source.draw("iban", locale).text.replace(" ", "")
        rearranged = compact[4:] + compact[:4]
        assert int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1, compact


def test_values_are_unique_and_never_in_a_public_text() -> None:
    taken = ValueSource(9).draw("name", "en_US").text
    # The same seed draws `taken` first; a document holding it (in another case) forces a new one.
    unique = UniqueValues(ValueSource(9), [f"a report about {taken.upper()}"])
    drawn = [unique.draw("name", "en_US").text for _ in range(200)]
    assert taken not in drawn
    assert len({value.casefold() for value in drawn}) == len(drawn)


def test_unknown_kind_or_locale_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown private value kind 'pin'"):
        ValueSource(0).draw("pin", "en_US")
    with pytest.raises(ValueError, match="unknown locales"):
        ValueSource(0, ["xx_XX"])


def test_workload_spans_kinds_locales_cases_and_placements() -> None:
    documents = load_documents("default", project_data_dir())
    requests = build_requests(documents, WorkloadConfig(num_tenants=6, seed=2))
    slots = [(info, request.slot_values[name])
             for request in requests for name, info in request.slots.items()]
    assert {info.kind for info, _ in slots} == set(KINDS)
    assert {info.placement for info, _ in slots} == {"before", "inside", "after"}
    assert len({info.locale for info, _ in slots}) >= 6
    assert any(value.islower() and info.kind == "name" for info, value in slots)
    everything = [value for request in requests for value in request.private_values]
    for document in documents:
        assert not any(value.casefold() in document.context.casefold() for value in everything)


def test_the_generator_never_consults_a_detector() -> None:
    # Values picked by whether a detector finds them would measure the detectors' reflection.
    for path in WORKLOAD_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                    alias.name for alias in node.names]
                assert not any(name.startswith("cacheprune") for name in names), path.name
