"""The evaluation's report: a markdown table, one PNG of plots, and the raw figures as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval.agreement import MAX_SCORED_TOKENS
from eval.bound import Bound
from eval.bound import summary as bound_summary
from eval.privacy_report import attack_tables, detector_coverage, threshold_and_monitor
from eval.runner import REFERENCE, SystemResult
from eval.targets import targets_table
from eval.timing import RunClock

COLUMNS = [
    ("speed-up (warm, paired)", "paired_speedup_warm", "{:.2f}x"),
    ("TTFT mean s", "ttft_mean_s", "{:.2f}"),
    ("TTFT med s", "ttft_median_s", "{:.2f}"),
    ("TTFT p90 s", "ttft_p90_s", "{:.2f}"),
    ("speed-up (medians)", None, "{:.2f}x"),
    ("hit rate", "hit_rate", "{:.1%}"),
    ("doc hits (warm)", "document_hit_rate_warm", "{:.1%}"),
    ("recompute", "recompute_ratio", "{:.1%}"),
    ("F1", "f1", "{:.3f}"),
    ("ROUGE-L", "rouge_l", "{:.3f}"),
    ("F1 vs full", "f1_vs_full", "{:.3f}"),
    ("ROUGE-L vs full", "rouge_l_vs_full", "{:.3f}"),
    ("top-1 vs full", "top1_vs_full", "{:.1%}"),
    ("KL vs full", "kl_vs_full", "{:.4f}"),
    ("loglik gap", "loglik_gap_vs_full", "{:.4f}"),
    ("values lost", "values_recovered", "{:.1%}"),
    ("direct leak", "direct_leakage", "{:.1%}"),
    ("ctx leak exact", "contextual_exact", "{:.1%}"),
    ("ctx leak fuzzy", "contextual_fuzzy", "{:.1%}"),
]


def markdown_table(results: list[SystemResult], bound: Bound | None = None) -> str:
    """One row per system; with the oracle bound, a column of each system's share of it and a
    row for the bound itself (its TTFT over the warm requests only)."""
    summaries = {r.name: r.summary() for r in results}
    base = summaries[REFERENCE]["ttft_median_s"]
    labels = [c[0] for c in COLUMNS] + ([bound_summary.SHARE_OF_BOUND] if bound is not None
                                        else [])
    lines = ["| system | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for result in results:
        if not result.served:
            continue  # attacked only: in the privacy section
        summary = summaries[result.name]
        cells = []
        for _, key, fmt in COLUMNS:
            if key is not None and key not in summary:
                cells.append("n/a")  # e.g. a system that is not attacked
                continue
            value = base / summary["ttft_median_s"] if key is None else summary[key]
            cells.append(fmt.format(value))
        if bound is not None:
            cells.append(bound_summary.share_cell(
                bound, ((r.request_id, r.ttft_s) for r in result.requests)))
        lines.append(f"| {result.name} | " + " | ".join(cells) + " |")
    if bound:
        reference_ttft = {q.request_id: q.ttft_s for r in results if r.name == REFERENCE
                          for q in r.requests}
        lines.append(bound_summary.bound_row(bound, [key for _, key, _ in COLUMNS],
                                             reference_ttft))
    return "\n".join(lines)


def write_report(results: list[SystemResult], out_dir: Path, meta: dict[str, Any],
                 bound: Bound | None = None) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    table = markdown_table(results, bound)
    report = out_dir / "report.md"
    report.write_text(
        f"# cacheprune evaluation: {meta['dataset']}\n\n"
        f"{meta['num_requests']} requests from {meta['num_tenants']} tenants over "
        f"{meta['num_documents']} documents; model {meta['model_id']}; "
        f"private share of user input {meta['private_fraction']:.1%}."
        f"{' ' + meta['length_note'] if meta.get('length_note') else ''} "
        f"{_cold_note(results)}\n\n{table}\n\n"
        f"speed-up (warm, paired) = {REFERENCE}'s TTFT / the system's TTFT on the same request, "
        "median over the warm requests (the headline: a cold request has nothing to reuse in "
        "any system); speed-up (medians) = median TTFT of "
        f"{REFERENCE} / median TTFT over all requests, cold ones included; "
        "hit rate = tokens served from a cache / non-private prompt tokens; doc hits (warm) = "
        "the same over the non-private document tokens of requests whose document an earlier "
        "request carried (the first request for a document has nothing to reuse); top-1 / KL / "
        f"loglik gap vs full = {REFERENCE}'s answer (first {MAX_SCORED_TOKENS} tokens) "
        "teacher-forced under the system's KV: the share of tokens whose most likely next token "
        "is the same, KL(full || system) and log p_full - log p_system per token (eval.agreement);"
        " values lost = private values of the victims "
        "recovered by any attack (n/a: a system that shares nothing across tenants); direct "
        "leak = name tokens the first-generation prober recovered from the hit count; ctx leak "
        "= private values readable in the caches."
        f"{bound_summary.BOUND_EXPLAINED if bound is not None else ''}\n\n"
        f"## Targets\n\n{targets_table(results, bound)}\n\n"
        "## Privacy\n\nValues the detectors fully masked (every token holding a character of "
        f"the value private), over the whole workload:\n\n{detector_coverage(results)}\n\n"
        "Attacks on the victims' values (attack/oracle: recovered/attacked, probes spent; see "
        f"docs/evaluation.md):\n\n{attack_tables(results)}\n\n"
        "Publication threshold (a stretch of text is shared once k distinct tenants sent it; "
        "a request is warm for a system once k tenants sent its document before it) and probe "
        "monitor (a tenant flagged for sending near-identical prompts; docs/privacy.md):\n\n"
        f"{threshold_and_monitor(results)}\n\n"
        f"{_timings_section(meta)}"
        "![summary](summary.png)\n"
    )
    raw: dict[str, Any] = {"meta": meta, "systems": [r.as_dict() for r in results]}
    if bound is not None:
        raw["oracle_bound"] = [bound_summary.bound_as_dict(record) for record in bound.values()]
    (out_dir / "raw.json").write_text(json.dumps(raw, indent=2))
    _plot(results, out_dir / "summary.png", bound)
    return report


def _cold_note(results: list[SystemResult]) -> str:
    requests = results[0].requests if results else []
    cold = sum(not r.document_seen_before for r in requests)
    return (f"{cold} of {len(requests)} requests are cold (the first for their document)."
            if requests else "")


def _timings_section(meta: dict[str, Any]) -> str:
    if not meta.get("timings_s"):
        return ""
    return ("## Where the time went\n\nWall seconds of the run per part and phase (serving: "
            "before the prefill = chat template, tokenizing, detection, pool lookup and reads; "
            "publish = what runs after the answer; the bound's reference prefill is off its "
            f"clock):\n\n{RunClock(meta['timings_s']).table()}\n\n")


def _plot(results: list[SystemResult], path: Path, bound: Bound | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    served = [r for r in results if r.served]
    names = [r.name for r in served]
    summaries = [r.summary() for r in served]
    speedups: list[float | None] = [s.get("paired_speedup_warm") for s in summaries]
    speedup_names = list(names)
    reference = next((r for r in results if r.name == REFERENCE), None)
    if bound and reference is not None:
        reference_ttft = {q.request_id: q.ttft_s for q in reference.requests}
        speedup_names.append(bound_summary.BOUND_LABEL)
        speedups.append(bound_summary.paired_speedup(bound, reference_ttft))
    quality_key = "top1_vs_full" if any("top1_vs_full" in s for s in summaries) else "f1_vs_full"
    fig, axes = plt.subplots(2, 2, figsize=(13, 8))
    panels: list[tuple[Any, str, list[str], list[float | None], str, str]] = [
        (axes[0, 0], f"TTFT speed-up over {REFERENCE}\n(same request, median of warm requests)",
         speedup_names, speedups, "{:.2f}x", "n/a"),
        (axes[0, 1], "document hit rate (warm requests)", names,
         [s["document_hit_rate_warm"] for s in summaries], "{:.0%}", "n/a"),
        (axes[1, 0], ("top-1 agreement with full recompute\n(its answer teacher-forced)"
                      if quality_key == "top1_vs_full" else "F1 vs full recompute"), names,
         [s.get(quality_key) for s in summaries], "{:.1%}", "n/a"),
        (axes[1, 1], "private values recovered by any attack", [r.name for r in results],
         [r.summary().get("values_recovered") for r in results], "{:.0%}", "not attacked"),
    ]
    for ax, title, labels, values, fmt, missing in panels:
        ax.set_title(title, fontsize=10)
        if all(value is None for value in values):
            ax.set_axis_off()
            ax.text(0.5, 0.5, f"{missing}: no system in this run", ha="center", va="center",
                    transform=ax.transAxes)
            continue
        bars = ax.barh(labels, [value or 0.0 for value in values],
                       color=[_color(label) for label in labels])
        ax.invert_yaxis()
        for bar, value in zip(bars, values, strict=True):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                    " " + (missing if value is None else fmt.format(value)),
                    va="center", fontsize=8)
        ax.margins(x=0.25)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


_COLORS = (("cacheprune_isolated", "#2ca02c"), ("cacheprune", "#1f77b4"),
           ("global_prefix", "#d62728"), ("fixed_chunks", "#ff7f0e"),
           (bound_summary.BOUND_LABEL, "#000000"))


def _color(name: str) -> str:
    return next((color for prefix, color in _COLORS if name.startswith(prefix)), "#9e9e9e")
