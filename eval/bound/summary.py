"""The oracle bound in the report: each system's share of it, and how the report explains it."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from eval.bound.oracle import BoundRecord

Bound = Mapping[str, BoundRecord]  # request id -> the bound of that warm request
BOUND_LABEL = "oracle bound (warm requests)"
SHARE_OF_BOUND = "share of bound"
BOUND_EXPLAINED = (
    " share of bound = bound TTFT / the system's TTFT, median over warm requests; the oracle "
    "bound is the TTFT of a prefill that computes only what no sharing scheme could serve from "
    "a cache (private tokens, the question, tokens no earlier request carried, the last token) "
    "and reuses the rest, timed in turn with the systems; its clock counts the same per-request "
    "work (chat template, tokenizing, detection) but no pool lookup and no attention capture."
)


def share_of_bound(bound: Bound, ttft_by_request: Mapping[str, float]) -> float | None:
    """Median over the warm requests of bound TTFT / measured TTFT (None: no warm request)."""
    shares = [record.ttft_s / ttft_by_request[request_id]
              for request_id, record in bound.items() if request_id in ttft_by_request]
    return statistics.median(shares) if shares else None


def share_cell(bound: Bound, requests: Iterable[tuple[str, float]]) -> str:
    """A system's share of the bound for the report's table, from its (request id, TTFT)."""
    share = share_of_bound(bound, dict(requests))
    return "–" if share is None else f"{share:.0%}"


def paired_speedup(bound: Bound, reference_ttft: Mapping[str, float]) -> float | None:
    """Median over the warm requests of the reference's TTFT / the bound's, same request."""
    ratios = [reference_ttft[request_id] / record.ttft_s for request_id, record in bound.items()
              if request_id in reference_ttft and record.ttft_s > 0]
    return statistics.median(ratios) if ratios else None


def median_ttft(bound: Bound) -> float:
    return statistics.median(record.ttft_s for record in bound.values())


def bound_row(bound: Bound, column_keys: Sequence[str | None],
              reference_ttft: Mapping[str, float]) -> str:
    """The bound's own row of the report's table (columns named by their summary keys): its
    paired speed-up and TTFT mean, median and p90 over the warm requests, no other figure,
    100% of itself."""
    ttfts = sorted(record.ttft_s for record in bound.values())
    speedup = paired_speedup(bound, reference_ttft)
    figures = {"ttft_mean_s": f"{statistics.fmean(ttfts):.2f}",
               "ttft_median_s": f"{median_ttft(bound):.2f}",
               "ttft_p90_s": f"{ttfts[min(len(ttfts) - 1, int(0.9 * len(ttfts)))]:.2f}",
               "paired_speedup_warm": "–" if speedup is None else f"{speedup:.2f}x"}
    cells = [figures.get(key, "–") if key is not None else "–" for key in column_keys]
    return f"| {BOUND_LABEL} | " + " | ".join(cells + ["100%"]) + " |"


def bound_as_dict(record: BoundRecord) -> dict[str, object]:
    """The figures of one request's bound for raw.json."""
    return {"request_id": record.request_id, "ttft_s": record.ttft_s,
            "num_prompt_tokens": record.num_prompt_tokens, "num_computed": record.num_computed}
