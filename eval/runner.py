"""Run every system over one workload in one process and collect the raw figures."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Literal

from tqdm import tqdm

from cacheprune.detectors import DetectionPolicy
from cacheprune.engine import Transformer
from cacheprune.models import ChatTokenizer
from cacheprune.serving import (
    Engine,
    EngineConfig,
    RequestRecord,
    SamplingParams,
    ScoredContinuation,
)
from eval.agreement import MAX_SCORED_TOKENS, Agreement, agreement, pooled
from eval.attacks import AttackSettings, SystemAttacks, attack_system
from eval.attacks.summary import values_recovered
from eval.bound import KeepReferenceKV, OracleBound
from eval.hits import count_document_hits
from eval.leakage import contextual_recovery
from eval.masked import fully_masked_slots
from eval.metrics import rouge_l, token_f1
from eval.timing import RunClock
from eval.workload import SYSTEM_PROMPT, Request

PAPER_BASELINE = "cacheprune_paper_baseline (research)"
ISOLATED_K1 = "cacheprune_isolated (k=1)"
# (label, engine settings); "no_sharing" is also the full-recompute reference for quality.
# cacheprune's systems run at the product's publication threshold (`with_threshold` sets
# another); the k=1 row is the control that shows what the threshold holds back.
SYSTEMS: dict[str, EngineConfig] = {
    "no_sharing": EngineConfig(mode="no_sharing"),
    "tenant_prefix": EngineConfig(mode="tenant_prefix"),
    "global_prefix (unsafe)": EngineConfig(mode="global_prefix"),
    # CacheBlend-style chunks: a baseline of other systems, which count no senders.
    "fixed_chunks_512": EngineConfig(mode="fixed_chunks", publish_threshold=1),
    # The CachePrune paper's in-context KV: a research baseline, not a product option.
    PAPER_BASELINE: EngineConfig(mode="cacheprune", publish_mode="paper_baseline"),
    "cacheprune_isolated": EngineConfig(mode="cacheprune", publish_mode="isolated"),
    ISOLATED_K1: EngineConfig(mode="cacheprune", publish_mode="isolated", publish_threshold=1),
    "cacheprune_segment": EngineConfig(mode="cacheprune", publish_mode="segment",
                                       public_system_prompt=SYSTEM_PROMPT),
}
THRESHOLD_PINNED = (ISOLATED_K1, "fixed_chunks_512")  # `with_threshold` leaves these as they are
REFERENCE = "no_sharing"
BOUND_PART = "oracle bound"  # the bound's row in the run's timings
# Systems attacked by default: the unsafe global prefix cache (the positive control) and
# cacheprune's modes. No sharing and a prefix cache per tenant give another tenant nothing to
# probe; fixed chunks can be added (--attack-systems), but each of its probes is a full prefill.
ATTACKED = ("global_prefix (unsafe)", PAPER_BASELINE, "cacheprune_isolated", "cacheprune_segment")


@dataclass(slots=True)
class RequestResult:
    request_id: str
    tenant: str
    answer: str
    ttft_s: float
    num_prompt_tokens: int
    num_private: int
    num_hit_tokens: int
    num_reused: int
    num_recomputed: int
    num_published_tokens: int
    num_document_tokens: int  # non-private tokens of the document
    num_document_hits: int  # of those, tokens whose KV came from a cache
    # warm: enough earlier requests carried the document for it to be shared: one, or as many
    # distinct tenants as the system's publication threshold
    document_seen_before: bool
    f1: float
    rouge_l: float
    # (kind, fully masked) per private value: every token holding it was made private
    masked_values: list[tuple[str, bool]] = field(default_factory=list)
    # the full-recomputation answer teacher-forced under this system's KV (eval.agreement);
    # None where the backend cannot score (vLLM) or no reference ran
    agreement: Agreement | None = None
    doc_id: str = ""


@dataclass(slots=True)
class SystemResult:
    name: str
    requests: list[RequestResult] = field(default_factory=list)
    direct_leakage: float = 0.0
    direct_private_tokens: int = 0
    attacks: SystemAttacks | None = None  # None: not attacked (shares nothing across tenants)
    contextual_exact: float = 0.0
    contextual_fuzzy: float = 0.0
    f1_vs_reference: float = 0.0
    rouge_l_vs_reference: float = 0.0
    # median over warm requests of the reference's TTFT / this system's, same request
    paired_speedup_warm: float | None = None
    publish_threshold: int = 1
    # tenants of the (benign) workload that the engine's probe monitor flagged while serving it
    benign_flagged: list[str] = field(default_factory=list)
    served: bool = True  # False: attacked only, the workload not served (no requests)

    def summary(self) -> dict[str, float]:
        if not self.served:
            return self._attack_summary()
        ttfts = sorted(r.ttft_s for r in self.requests)
        public = sum(r.num_prompt_tokens - r.num_private for r in self.requests)
        hits = sum(r.num_hit_tokens for r in self.requests)
        warm = [r for r in self.requests if r.document_seen_before]
        paired = ({} if self.paired_speedup_warm is None
                  else {"paired_speedup_warm": self.paired_speedup_warm})
        return {
            **paired,
            "ttft_median_s": statistics.median(ttfts),
            "ttft_mean_s": statistics.fmean(ttfts),
            "ttft_p90_s": ttfts[min(len(ttfts) - 1, int(0.9 * len(ttfts)))],
            "cold_share": 1 - len(warm) / len(self.requests),
            "hit_rate": hits / public if public else 0.0,
            # The first request for each document finds nothing to share in any system.
            "document_hit_rate_warm": _ratio(sum(r.num_document_hits for r in warm),
                                             sum(r.num_document_tokens for r in warm)),
            "recompute_ratio": (sum(r.num_recomputed for r in self.requests) / hits
                                if hits else 0.0),
            "f1": statistics.fmean(r.f1 for r in self.requests),
            "rouge_l": statistics.fmean(r.rouge_l for r in self.requests),
            "f1_vs_full": self.f1_vs_reference,
            "rouge_l_vs_full": self.rouge_l_vs_reference,
            **pooled(r.agreement for r in self.requests if r.agreement is not None),
            **self._attack_summary(),
            "contextual_exact": self.contextual_exact,
            "contextual_fuzzy": self.contextual_fuzzy,
            "benign_tenants_flagged": len(self.benign_flagged),
        }

    def requests_before_reuse(self) -> dict[str, int | None]:
        """Per document: how many of its requests ran before the first that reused any of its
        tokens (None: none did)."""
        seen: dict[str, int] = {}
        first: dict[str, int | None] = {}
        for request in self.requests:
            doc = request.doc_id
            count = seen.get(doc, 0)
            if doc not in first or first[doc] is None:
                first[doc] = count if request.num_document_hits > 0 else None
            seen[doc] = count + 1
        return first

    def _attack_summary(self) -> dict[str, float]:
        if self.attacks is None:
            # A system faced with the first-generation prober only (the vLLM backend).
            return {"direct_leakage": self.direct_leakage} if self.direct_private_tokens else {}
        lost = values_recovered(self.attacks.outcomes)
        flagged = self.attacks.prober_flagged
        return {"direct_leakage": self.direct_leakage, "values_recovered": lost.share,
                "masked_values_recovered": lost.num_masked, "values_attacked": lost.num_values,
                "wrong_claims": lost.num_wrong_claims,
                **({"attacks_flagged": sum(flagged) / len(flagged)} if flagged else {})}

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "summary": self.summary(),
                "publish_threshold": self.publish_threshold,
                "requests_before_reuse": self.requests_before_reuse(),
                "benign_flagged": self.benign_flagged,
                "requests": [asdict(r) for r in self.requests],
                "direct_private_tokens": self.direct_private_tokens,
                "attacks": ([asdict(o) for o in self.attacks.outcomes]
                            if self.attacks is not None else None)}


def run_systems(systems: dict[str, EngineConfig], model: Transformer,
                tokenizer: ChatTokenizer, policy: DetectionPolicy, requests: list[Request],
                sampling: SamplingParams, num_victims: int,
                attack_settings: AttackSettings | None = None,
                attacked: tuple[str, ...] = ATTACKED,
                bound: OracleBound | None = None,
                clock: RunClock | None = None,
                attack_only: dict[str, EngineConfig] | None = None) -> list[SystemResult]:
    """Serve the workload in order on a fresh engine per system, then attack the systems in
    `attacked` and those of `attack_only`, which are attacked without serving the workload
    (each attack on fresh engines that served only its victim, see eval.attacks).

    The systems take turns request by request (each engine still sees the whole workload in
    order), so a slow spell of the machine lands on all of them rather than on one. `bound`,
    if given, takes its turn after them (it times warm requests only). `clock`, if given,
    gets the wall time of each system's serving (split as the requests' figures allow), its
    attacks and leakage check, and the bound's.
    """
    clock = clock or RunClock()
    # The reference serves each request first: the others score its answer under their KV.
    order = sorted(systems, key=lambda name: name != REFERENCE)
    reference_kv = None
    if bound is not None and REFERENCE in systems:
        # NOTE: the bound reuses the no-sharing system's full prefill of each prompt rather
        # than computing it again (see eval.bound.reference); no sharing behaves the same.
        reference_kv = KeepReferenceKV()
    engines = {name: Engine(model, tokenizer, policy, systems[name],
                            strategy=reference_kv if name == REFERENCE else None)
               for name in order}
    results = {name: SystemResult(name, publish_threshold=systems[name].applied_threshold)
               for name in systems}
    senders = DocumentSenders()
    for request in tqdm(requests, desc="requests (every system)", unit="req"):
        reference: ScoredContinuation | None = None
        earlier = senders.before(request)
        for name, engine in engines.items():
            scoring: list[int] | Literal["answer"] | None = "answer" if name == REFERENCE else (
                None if reference is None else reference.token_ids)
            warm = earlier >= needed_senders(request, results[name].publish_threshold)
            served, scored = _serve(engine, tokenizer, request, sampling, warm, clock, name,
                                    scoring)
            if name == REFERENCE and scored is not None:
                # its own row compares it with itself: full agreement by construction
                reference = scored = ScoredContinuation(scored.token_ids[:MAX_SCORED_TOKENS],
                                                        scored.logprobs[:MAX_SCORED_TOKENS],
                                                        scored.seconds)
            if reference is not None and scored is not None:
                served.agreement = agreement(reference.logprobs, scored.logprobs,
                                             reference.token_ids)
            results[name].requests.append(served)
        if bound is not None:
            started = time.perf_counter()
            record = bound.serve(request,
                                 warm=earlier >= needed_senders(request, bound.threshold),
                                 reference=reference_kv.take() if reference_kv else None)
            spent = time.perf_counter() - started
            timed = 0.0 if record is None else record.ttft_s
            clock.add(BOUND_PART, "bound: timed", timed)
            clock.add(BOUND_PART, "bound: off the clock", spent - timed)
        senders.add(request)
    victims = first_request_per_tenant(requests)[:num_victims]
    settings = attack_settings or AttackSettings()
    for name, engine in engines.items():
        result = results[name]
        if engine.probe_monitor is not None:
            result.benign_flagged = engine.probe_monitor.flagged_tenants()
        with clock.time(name, "ctx leakage"):
            result.contextual_exact, result.contextual_fuzzy = contextual_recovery(engine,
                                                                                   requests)
    attack_only = attack_only or {}
    for name, config in attack_only.items():
        results[name] = SystemResult(name, publish_threshold=config.applied_threshold, served=False)
    to_attack = {**{n: c for n, c in systems.items() if n in attacked}, **attack_only}
    for name, config in tqdm(to_attack.items(), desc="attacks", unit="system"):
        with clock.time(name, "attacks"):
            attacks = attack_system(partial(Engine, model, tokenizer, policy, config), victims,
                                    settings, logprob=config.mode == "cacheprune",
                                    companions=companions_of(victims, requests,
                                                             config.applied_threshold))
        results[name].attacks = attacks
        results[name].direct_leakage = attacks.direct.ratio
        results[name].direct_private_tokens = attacks.direct.num_private_tokens
    return list(results.values())


def _serve(engine: Engine, tokenizer: ChatTokenizer, request: Request, sampling: SamplingParams,
           document_seen_before: bool, clock: RunClock, name: str,
           scoring: list[int] | Literal["answer"] | None
           ) -> tuple[RequestResult, ScoredContinuation | None]:
    started = time.perf_counter()
    record = engine.generate(request.tenant, request.messages, sampling,
                             request.public_char_ranges,
                             score_tokens=scoring)
    scoring_s = 0.0 if record.scored is None else record.scored.seconds
    served = time.perf_counter() - scoring_s
    stats = record.stats
    # Before the prefill: chat template, tokenizing, detection, pool lookup and reads.
    clock.add(name, "before prefill", stats.ttft_s - stats.prefill_s)
    clock.add(name, "prefill", stats.prefill_s)
    clock.add(name, "decode", stats.decode_s)
    # After the answer: publishing (the annotator, isolated mode's private-free pass, staging).
    clock.add(name, "publish", served - started - stats.ttft_s - stats.decode_s)
    result = request_result(tokenizer, request, record, document_seen_before)
    clock.add(name, "scoring", time.perf_counter() - served)  # the teacher-forced pass too
    return result, record.scored


def request_result(tokenizer: ChatTokenizer, request: Request, record: RequestRecord,
                   document_seen_before: bool) -> RequestResult:
    """The figures of one served request, from its record (any backend)."""
    document_hits, document_tokens = count_document_hits(tokenizer, request, record)
    masked = fully_masked_slots(tokenizer, request, record.private_mask)
    return RequestResult(
        request_id=request.request_id,
        doc_id=request.doc_id,
        tenant=request.tenant,
        answer=record.text,
        ttft_s=record.stats.ttft_s,
        num_prompt_tokens=record.stats.num_prompt_tokens,
        num_private=record.num_private,
        num_hit_tokens=record.num_hit_tokens,
        num_reused=record.stats.num_reused,
        num_recomputed=record.stats.num_recomputed,
        num_published_tokens=record.num_published_tokens,
        num_document_tokens=document_tokens,
        num_document_hits=document_hits,
        document_seen_before=document_seen_before,
        f1=token_f1(record.text, request.answers),
        rouge_l=rouge_l(record.text, request.answers),
        masked_values=[(request.slots[slot].kind, masked[slot]) for slot in masked],
    )


def compare_with_reference(results: list[SystemResult]) -> None:
    """Quality against full recomputation (each answer scored against the reference system's
    answer to the same request) and the paired speed-up over warm requests."""
    reference_requests = next(s for s in results if s.name == REFERENCE).requests
    reference = {r.request_id: r.answer for r in reference_requests}
    reference_ttft = {r.request_id: r.ttft_s for r in reference_requests}
    for system in results:
        if not system.served:
            continue
        system.paired_speedup_warm = paired_speedup(system.requests, reference_ttft)
        pairs = [(r.answer, reference[r.request_id]) for r in system.requests]
        system.f1_vs_reference = statistics.fmean(
            token_f1(answer, [ref]) if ref.strip() else float(answer == ref)
            for answer, ref in pairs)
        system.rouge_l_vs_reference = statistics.fmean(
            rouge_l(answer, [ref]) if ref.strip() else float(answer == ref)
            for answer, ref in pairs)


def paired_speedup(requests: list[RequestResult],
                   reference_ttft: dict[str, float]) -> float | None:
    """Median over warm requests of the reference's TTFT / the system's on the same request
    (None: no warm request). Cold requests find nothing to reuse in any system: their ratio
    is about 1 and says nothing of sharing, so the headline leaves them out."""
    ratios = [reference_ttft[r.request_id] / r.ttft_s for r in requests
              if r.document_seen_before and r.request_id in reference_ttft and r.ttft_s > 0]
    return statistics.median(ratios) if ratios else None


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def needed_senders(request: Request, threshold: int) -> int:
    """How many distinct tenants must have sent a request's document before it for the request
    to be warm: the threshold's number, or one when the operator declared the document public
    (declared-public text is exempt from the threshold)."""
    return 1 if request.public_char_ranges else threshold


class DocumentSenders:
    """The distinct tenants that sent each document so far in a run: a request is warm for a
    system once its threshold's number of them did (threshold 1: any earlier request)."""

    def __init__(self) -> None:
        self._tenants: dict[str, set[str]] = {}

    def before(self, request: Request) -> int:
        return len(self._tenants.get(request.doc_id, ()))

    def add(self, request: Request) -> None:
        self._tenants.setdefault(request.doc_id, set()).add(request.tenant)


def with_threshold(systems: dict[str, EngineConfig], k: int) -> dict[str, EngineConfig]:
    """The systems with cacheprune's publication threshold set to `k` (the pinned ones
    excepted)."""
    return {name: (replace(config, publish_threshold=k)
                   if config.mode == "cacheprune" and name not in THRESHOLD_PINNED else config)
            for name, config in systems.items()}


def companions_of(victims: list[Request], requests: list[Request], threshold: int
                  ) -> dict[str, list[Request]]:
    """Under a threshold of k > 1, for each victim the first requests of k other tenants about
    its document: served after the victim before an attack, they make the text the victim
    shares with others common, so that only the victim's own values stay out of reach."""
    if threshold <= 1:
        return {}
    found: dict[str, list[Request]] = {}
    for victim in victims:
        tenants: dict[str, Request] = {}
        for request in requests:
            if request.doc_id == victim.doc_id and request.tenant != victim.tenant:
                tenants.setdefault(request.tenant, request)
        found[victim.request_id] = list(tenants.values())[:threshold]
    return found


def first_request_per_tenant(requests: list[Request]) -> list[Request]:
    seen: dict[str, Request] = {}
    for request in requests:
        seen.setdefault(request.tenant, request)
    return list(seen.values())
