"""Bad rule and policy files give errors naming file, rule and field; policy versions."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cacheprune.detectors import DetectorConfigError, RuleDetector, load_policy, load_rule_file

GOOD_RULES = """\
version: 1
rules:
  - name: ticket
    entity: TICKET
    patterns:
      - regex: 'TCK-\\d{6}'
        score: 0.9
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def policy_text(rules_file: str = "rules.yaml", widen: int = 0) -> str:
    return (f"version: 1\nwiden: {widen}\ndetectors:\n  - detector: rules\n"
            f"    options: {{rules_file: {rules_file}}}\n")


def test_a_good_rule_file_loads_and_detects(tmp_path: Path) -> None:
    detector = RuleDetector(rules_file=write(tmp_path, "rules.yaml", GOOD_RULES))
    text = "see TCK-123456 and TCK-12"
    assert [(s.entity, text[s.start:s.end]) for s in detector.detect(text)] == [
        ("TICKET", "TCK-123456")]


@pytest.mark.parametrize(("body", "expected"), [
    ("rules: [\n  - name: x\n", r"malformed YAML \(line \d+, column \d+\)"),
    (GOOD_RULES.replace("    entity: TICKET", "    entity: TICKET\n    colour: red"),
     r"rules\[0\] \('ticket'\) -> colour: Extra inputs are not permitted"),
    (GOOD_RULES.replace("TCK-\\d{6}", "TCK-(\\d{6}"),
     r"rules\[0\] \('ticket'\) -> patterns\[0\] -> regex: .*invalid regular expression"),
    (GOOD_RULES.replace("TCK-\\d{6}", "(a|aa)+$"),
     r"rules\[0\] \('ticket'\) -> patterns\[0\] -> regex: .*backtracks catastrophically"),
    (GOOD_RULES.replace("TCK-\\d{6}", "x*"), "matches the empty string"),
    (GOOD_RULES.replace("score: 0.9", "score: 1.5"),
     r"patterns\[0\] -> score: Input should be less than or equal to 1"),
    (GOOD_RULES.replace("        score: 0.9", "        score: 0.9\n        group: 2"),
     "group 2 does not exist"),
    (GOOD_RULES + "    deny_list: [foo]\n", "exactly one of 'patterns' or 'deny_list'"),
    (GOOD_RULES + "    validator: crc32\n", r"validator: Input should be 'luhn'"),
    ("version: 1\nrules: []\n", "rules: List should have at least 1 item"),
    ("- just a list\n", "expected a mapping at the top level"),
])
def test_bad_rule_files_name_file_rule_and_field(tmp_path: Path, body: str, expected: str) -> None:
    path = write(tmp_path, "bad.yaml", body)
    with pytest.raises(DetectorConfigError, match=expected) as info:
        load_rule_file(path)
    assert str(path) in str(info.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DetectorConfigError, match=r"nothere\.yaml: cannot read the file"):
        load_policy(tmp_path / "nothere.yaml")


def test_policy_errors_name_the_detector_entry(tmp_path: Path) -> None:
    write(tmp_path, "bad.yaml", GOOD_RULES.replace("score: 0.9", "score: high"))
    path = write(tmp_path, "policy.yaml", policy_text("bad.yaml"))
    with pytest.raises(DetectorConfigError, match=r"detectors\[0\] \('rules'\): .*bad\.yaml"):
        load_policy(path)
    path = write(tmp_path, "p2.yaml", "version: 1\ndetectors:\n  - detector: nosuch\n")
    with pytest.raises(DetectorConfigError, match=r"unknown detector 'nosuch'.*available"):
        load_policy(path)
    path = write(tmp_path, "p3.yaml", "version: 1\nwiden: -2\ndetectors:\n  - detector: rules\n")
    with pytest.raises(DetectorConfigError, match="widen: Input should be greater than"):
        load_policy(path)


def test_a_failed_load_leaves_other_policies_working(tmp_path: Path) -> None:
    before = load_policy()
    write(tmp_path, "rules.yaml", GOOD_RULES.replace("TCK-\\d{6}", "((("))
    with pytest.raises(DetectorConfigError):
        load_policy(write(tmp_path, "policy.yaml", policy_text()))
    after = load_policy()
    text = "mail a.b@example.com"
    assert before.policy_version == after.policy_version
    assert before.chain.run(text).spans == after.chain.run(text).spans != []


def test_policy_version_follows_content_not_location(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    for folder in (one, two):
        write(folder, "rules.yaml", GOOD_RULES)
        write(folder, "policy.yaml", policy_text())
    v_one = load_policy(one / "policy.yaml").policy_version
    assert v_one == load_policy(two / "policy.yaml").policy_version
    assert len(v_one) == 64 and int(v_one, 16) >= 0
    # Changing only the referenced rule file changes the version.
    write(two, "rules.yaml", GOOD_RULES.replace("0.9", "0.8"))
    assert load_policy(two / "policy.yaml").policy_version != v_one
    # So does any policy setting.
    write(one, "policy.yaml", policy_text(widen=1))
    assert load_policy(one / "policy.yaml").policy_version != v_one


def test_the_detectors_code_is_part_of_the_version(tmp_path: Path) -> None:
    import shutil

    from cacheprune.detectors.policy import _DETECTORS_DIR, detectors_code_digest

    copy = tmp_path / "detectors"
    shutil.copytree(_DETECTORS_DIR, copy, ignore=shutil.ignore_patterns("*.pyc", "model"))
    shipped = detectors_code_digest(_DETECTORS_DIR)
    assert detectors_code_digest(copy) == shipped  # contents, not the folder
    (copy / "train" / "__init__.py").write_text("# training code is not detection\n")
    detectors_code_digest.cache_clear()
    assert detectors_code_digest(copy) == shipped
    names = copy / "names.py"
    names.write_text(names.read_text() + "\n# one more line\n")
    detectors_code_digest.cache_clear()
    assert detectors_code_digest(copy) != shipped


def test_importing_the_package_does_not_import_presidio_or_spacy() -> None:
    import subprocess
    import sys

    # The rules-only policy needs neither; the default one loads both when it is built.
    code = ("import sys, cacheprune.detectors as d, cacheprune.detectors.policy as p; "
            "d.load_policy(p.default_policy_path().with_name('policy_rules.yaml'))"
            ".chain.run('x@y.com, Jane Doe'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('presidio_analyzer', "
            "'spacy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_presidio_extra_names_the_extra(monkeypatch) -> None:
    from cacheprune.detectors import DetectorUnavailableError, build_detector, presidio_detector

    real_find_spec = presidio_detector.find_spec

    def without_presidio(name: str):  # the missing dependency is a fault injected on purpose
        return None if name == "presidio_analyzer" else real_find_spec(name)

    monkeypatch.setattr(presidio_detector, "find_spec", without_presidio)
    with pytest.raises(DetectorUnavailableError, match=r"pip install 'cacheprune\[presidio\]'"):
        build_detector("presidio", model="a_model_nobody_loaded_before")
