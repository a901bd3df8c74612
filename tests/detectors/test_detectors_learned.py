"""The learned detector: loads offline from the package, finds values in sentences it never
saw, fails closed, and its weights enter the policy version."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from detectors_faults import AlwaysRaises

import cacheprune
from cacheprune.detectors import DetectorChain, DetectorConfigError, build_detector, load_policy
from cacheprune.detectors.learned import SHIPPED_MODEL_DIR, LearnedDetector
from cacheprune.detectors.yaml_io import shipped_file

# Written for this test, in none of the generator's templates (train or held-out).
UNSEEN = [
    ("Cheers for sorting that out.\n\nBest,\nGareth Llewellyn", "Gareth Llewellyn"),
    ("booking ref 4QZ7 passenger NAKAMURA/HARUKI seat 14C", "NAKAMURA/HARUKI"),
    ("the new flat is at 27 birchwood close, didsbury, m20 6rt if you want to visit",
     "27 birchwood close, didsbury, m20 6rt"),
    ("Geburtsdatum des Antragstellers: 03-Sep-1979, bitte prüfen", "03-Sep-1979"),
    ("pushed by @quentin-morel to the release branch, ask him", "@quentin-morel"),
]
# The chain covers only part of these with the shipped weights (the model reaches them).
# (A hyphenated handle in prose was one with the first three rounds' weights; since the fourth
# round, a mention is private by the rules.)
_PARTLY_MASKED: dict[str, str] = {}
UNSEEN_IN_CHAIN = [
    pytest.param(text, value, marks=pytest.mark.xfail(
        reason=f"a known miss of the shipped weights: {_PARTLY_MASKED[value]}"))
    if value in _PARTLY_MASKED else (text, value) for text, value in UNSEEN]
# The model alone misses these with the shipped weights (the chain's rules mask them).
_MODEL_MISSES = {
    "27 birchwood close, didsbury, m20 6rt": "a lower-case UK address in a sentence "
                                             "(third-round weights; the address rules mask it)",
    "03-Sep-1979": "a date of birth after a German label (fourth-round weights; the date rules "
                   "mask it)",
}
UNSEEN_FOR_MODEL = [
    pytest.param(text, value, marks=pytest.mark.xfail(
        reason=f"a known miss of the shipped weights: {_MODEL_MISSES[value]}"))
    if value in _MODEL_MISSES else (text, value) for text, value in UNSEEN]


def test_shipped_model_lies_in_the_package_and_loads_offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    detector = build_detector("learned")
    package_dir = Path(cacheprune.__file__).parent
    assert SHIPPED_MODEL_DIR.is_relative_to(package_dir)
    assert detector.model_dir == SHIPPED_MODEL_DIR
    assert isinstance(detector, LearnedDetector)
    found = detector.detect("Kind regards,\nMargaret Oyelaran-Smith")
    assert found, "the shipped model found nothing in a signature"


@pytest.fixture(scope="module")
def learned_policy():
    """The shipped policy with the learned detector (rules/policy_learned.yaml)."""
    return load_policy(shipped_file("policy_learned.yaml"))


@pytest.mark.parametrize(("text", "value"), UNSEEN_IN_CHAIN)
def test_learned_policy_masks_values_of_unseen_sentences(learned_policy, text, value) -> None:
    result = learned_policy.chain.run(text)
    assert not result.failed_closed
    start = text.index(value)
    covered = set()
    for span in result.spans:
        covered.update(range(span.start, span.end))
    missing = [text[i] for i in range(start, start + len(value)) if i not in covered
               and not text[i].isspace()]
    assert not missing, f"{value!r} not fully masked; spans {result.spans}"


@pytest.mark.parametrize(("text", "value"), UNSEEN_FOR_MODEL)
def test_learned_detector_alone_reaches_each_unseen_value(text, value) -> None:
    start = text.index(value)
    spans = LearnedDetector().detect(text)
    assert any(s.start < start + len(value) and s.end > start for s in spans), spans


@pytest.mark.parametrize("text", ["我叫王伟，电话号码在表格里", "김민준입니다",
                                  "STN-0042,Harbour;x|y=1"])
def test_shipped_model_tokenizes_as_it_was_trained(text: str) -> None:
    # The tokenizer saved with the weights splits as the training pipeline does: CJK
    # characters one by one, field separators between characters (a reference: the pipeline
    # `fit` builds, and the characters themselves for the CJK text).
    from cacheprune.detectors.train.fit import blank_pipeline

    shipped = [token.text for token in build_detector("learned").nlp.make_doc(text)]
    assert shipped == [token.text for token in blank_pipeline()(text)]
    if not text.isascii():
        assert all(len(token) == 1 for token in shipped if token.isalpha())


def test_a_fault_in_the_chain_with_the_model_fails_closed() -> None:
    chain = DetectorChain([LearnedDetector(), AlwaysRaises()], timeout_s=None)
    result = chain.run("Regards, Tom Price")
    assert result.failed_closed and result.spans == []
    assert "always-raises" in (result.reason or "")


def test_bad_options_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(DetectorConfigError, match="not a spaCy pipeline folder"):
        LearnedDetector(model_dir=str(tmp_path))
    with pytest.raises(DetectorConfigError, match="not labels of the model"):
        LearnedDetector(entities=["PERSON", "SHOE_SIZE"])


def test_policy_version_follows_the_weights(tmp_path: Path, model_policy) -> None:
    copy = tmp_path / "model"
    shutil.copytree(SHIPPED_MODEL_DIR, copy)
    shipped = load_policy(model_policy("learned", SHIPPED_MODEL_DIR))
    copied = load_policy(model_policy("learned", copy))
    assert shipped.policy_version == copied.policy_version  # contents, not the path
    meta = copy / "meta.json"
    meta.write_text(meta.read_text(encoding="utf-8").replace("seed", "seed ", 1),
                    encoding="utf-8")
    changed = load_policy(model_policy("learned", copy))
    assert changed.policy_version != shipped.policy_version
    digest = LearnedDetector(model_dir=str(copy)).describe()["model_sha256"]
    assert digest != hashlib.sha256(b"").hexdigest()
