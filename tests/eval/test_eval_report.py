"""Report figures equal hand-computed values; the report files are written."""

from __future__ import annotations

import json

import pytest

from eval.report import markdown_table, write_report
from eval.runner import RequestResult, SystemResult


def _request(ttft, prompt, private, hits, recomputed, f1):
    return RequestResult(request_id=f"r{ttft}", tenant="t", answer="x", ttft_s=ttft,
                         num_prompt_tokens=prompt, num_private=private, num_hit_tokens=hits,
                         num_reused=hits - recomputed, num_recomputed=recomputed,
                         num_published_tokens=0, f1=f1, rouge_l=f1 / 2)


def _systems():
    reference = SystemResult("no_sharing", [_request(4.0, 100, 10, 0, 0, 0.5),
                                            _request(6.0, 100, 10, 0, 0, 0.5)])
    shared = SystemResult("cacheprune_isolated", [_request(1.0, 100, 10, 0, 0, 0.5),
                                                  _request(2.0, 100, 20, 80, 8, 0.25),
                                                  _request(3.0, 100, 10, 90, 9, 0.0)])
    shared.direct_leakage = 0.0
    return [reference, shared]


def test_summary_figures_by_hand():
    summary = _systems()[1].summary()
    assert summary["ttft_median_s"] == 2.0
    assert summary["ttft_p90_s"] == 3.0  # int(0.9 * 3) = 2 -> the third smallest
    assert summary["hit_rate"] == pytest.approx(170 / 260)  # hits / non-private tokens
    assert summary["recompute_ratio"] == pytest.approx(17 / 170)
    assert summary["f1"] == pytest.approx(0.25)
    assert summary["rouge_l"] == pytest.approx(0.125)


def test_table_and_files(tmp_path):
    systems = _systems()
    table = markdown_table(systems)
    rows = table.splitlines()
    assert len(rows) == 4 and rows[2].startswith("| no_sharing |")
    assert "| 2.50x |" in rows[3]  # median 5.0 s / median 2.0 s
    meta = {"dataset": "unit", "num_requests": 3, "num_tenants": 1, "num_documents": 1,
            "model_id": "m", "private_fraction": 0.025}
    report = write_report(systems, tmp_path, meta)
    assert "| cacheprune_isolated |" in report.read_text()
    raw = json.loads((tmp_path / "raw.json").read_text())
    assert [s["name"] for s in raw["systems"]] == ["no_sharing", "cacheprune_isolated"]
    assert (tmp_path / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
