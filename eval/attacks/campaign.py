"""Every private value of every victim attacked, on fresh engines, with both oracles.

Each (victim, oracle) gets its own engine that has served only the victim's request, so one
attack's probes (which the engine caches like any request) cannot help another, and the
victim's request publishes everything it would publish into an empty pool (the worst case).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from cacheprune.serving import Engine, RequestRecord, SamplingParams
from eval.attacks.dictionary import DICTIONARY_KINDS, candidate_list, dictionary_attack
from eval.attacks.direct import DirectLeakage, probe_direct
from eval.attacks.extension import TokenStatistics, extension_attack
from eval.attacks.logprob import attacker_context, logprob_attack
from eval.attacks.oracles import ORACLES, Oracle
from eval.attacks.outcome import AttackOutcome, Budget
from eval.attacks.probe import ATTACKER_TENANT, Prober, SlotTarget
from eval.attacks.timed_dictionary import TimedSlot, timed_dictionary_attack
from eval.masked import fully_masked_slots
from eval.workload import Request

_ONE_TOKEN = SamplingParams(max_new_tokens=1)


@dataclass(slots=True, frozen=True)
class AttackSettings:
    """What the attacker may spend. The defaults keep `make demo` affordable on 2 cores; the
    documented privacy runs raise them (see docs/evaluation.md)."""

    dictionary_oracles: tuple[str, ...] = ORACLES
    extension_oracles: tuple[str, ...] = ("hits",)  # the TTFT oracle needs rounds: dictionary only
    budget_per_value: int = 24  # extension probes per value
    num_candidates: int = 8  # dictionary size, the true value included
    num_samples: int = 300  # the attacker's own samples per kind, for token statistics
    attacker_seed: int = 1_000_003  # not the workload's: the attacker knows formats, not values
    logprob_margin: float = 1.0  # nats the logprob attack's winner must lead by to be claimed
    timing_rounds: int = 5  # fresh engines the TTFT dictionary attack times every candidate on
    false_claim_rate: float = 0.01  # the TTFT rank test's bound on a claim by chance

    def __post_init__(self) -> None:
        unknown = sorted(set(self.dictionary_oracles) - set(ORACLES))
        if unknown:
            raise ValueError(f"dictionary_oracles: unknown oracles {unknown}; oracles: {ORACLES}")
        if set(self.extension_oracles) - {"hits"}:
            raise ValueError(f"extension_oracles: only 'hits', got {list(self.extension_oracles)}"
                             f" (a timing verdict needs rounds on fresh caches: the dictionary "
                             f"attack reads the TTFT)")
        if self.budget_per_value < 1 or self.num_candidates < 2 or self.num_samples < 1:
            raise ValueError("budget_per_value and num_samples must be >= 1 and "
                             "num_candidates >= 2")
        if self.timing_rounds < 1 or not 0.0 < self.false_claim_rate < 1.0:
            raise ValueError(f"timing_rounds must be >= 1 and false_claim_rate in (0, 1), got "
                             f"{self.timing_rounds} and {self.false_claim_rate}")


@dataclass(slots=True)
class SystemAttacks:
    outcomes: list[AttackOutcome] = field(default_factory=list)
    direct: DirectLeakage = field(default_factory=DirectLeakage)
    # per attacked engine (the hit-count attacks' and the logprob attack's): whether the
    # engine's probe monitor flagged the attacker
    prober_flagged: list[bool] = field(default_factory=list)


def attack_system(make_engine: Callable[[], Engine], victims: list[Request],
                  settings: AttackSettings, logprob: bool = False,
                  companions: dict[str, list[Request]] | None = None) -> SystemAttacks:
    """Attack every slot of every victim with each oracle, plus the first-generation prober.

    Every value gets the dictionary attack (for names, addresses and e-mails a realistic
    directory; for numbers, ids and secrets it is the attacker who holds a short list, e.g.
    from another leak, and confirms which one the victim used). Values without a realistic
    dictionary also get the token-by-token extension, which runs first so that the prober's
    own cached probes of the true value (sent by the dictionary attack) cannot help it. The
    hit-count attacks share one engine; the TTFT dictionary attack times every candidate over
    `settings.timing_rounds` engines of its own (`timed_dictionary`).

    `companions[victim.request_id]`: other tenants' requests each engine serves after the
    victim's, e.g. k tenants' requests about the same document under a publication threshold
    of k, so that what they share with the victim is common and the victim's values are the
    only text the attacker cannot reach otherwise (the hardest case for the threshold).
    """
    attacks = SystemAttacks()
    for victim in victims:
        serve = partial(_serve_victim, victim=victim,
                        companions=(companions or {}).get(victim.request_id, []))
        engine = make_engine()
        record = serve(engine)
        masked = fully_masked_slots(engine.tokenizer, victim, record.private_mask)
        if logprob:
            _logprob_attacks(engine, victim, masked, settings, attacks)
        attacks.direct.add(probe_direct(engine, [victim]))
        if logprob:
            attacks.prober_flagged.append(_flagged(engine))
        if "hits" in settings.dictionary_oracles or settings.extension_oracles:
            hits_engine = make_engine()
            serve(hits_engine)
            _hit_count_attacks(hits_engine, victim, masked, settings, attacks)
            attacks.prober_flagged.append(_flagged(hits_engine))
        if "ttft" in settings.dictionary_oracles:
            slots = [TimedSlot(target, candidate_list(target, settings.num_candidates,
                                                      settings.attacker_seed),
                               _outcome(victim, target, "dictionary", "ttft", masked[target.slot]))
                     for target in (SlotTarget.of(victim, slot)
                                    for slot in victim.template.slot_names)]
            timed_dictionary_attack(make_engine, serve, slots,
                                    settings.timing_rounds, settings.false_claim_rate,
                                    settings.attacker_seed)
            attacks.outcomes.extend(slot.outcome for slot in slots)
    return attacks


def _hit_count_attacks(engine: Engine, victim: Request, masked: dict[str, bool],
                       settings: AttackSettings, attacks: SystemAttacks) -> None:
    """Extension, then dictionary, on one engine that has served only the victim (and its
    companions)."""
    prober = Prober(engine)
    if settings.extension_oracles:
        for slot in victim.template.slot_names:
            target = SlotTarget.of(victim, slot)
            if target.info.kind in DICTIONARY_KINDS:
                continue
            outcome = _outcome(victim, target, "extension", "hits", masked[slot])
            stats = TokenStatistics.sample(prober.tokenizer, target, settings.num_samples,
                                           settings.attacker_seed)
            extension_attack(prober, target, Budget(settings.budget_per_value), stats, outcome)
            attacks.outcomes.append(outcome)
    if "hits" in settings.dictionary_oracles:
        for slot in victim.template.slot_names:
            target = SlotTarget.of(victim, slot)
            outcome = _outcome(victim, target, "dictionary", "hits", masked[slot])
            candidates = candidate_list(target, settings.num_candidates, settings.attacker_seed)
            # The list is the budget: every candidate plus the reference fits.
            dictionary_attack(prober, target, Oracle("hits"),
                              Budget(settings.num_candidates + 1), candidates, outcome)
            attacks.outcomes.append(outcome)


def _serve_victim(engine: Engine, victim: Request, companions: list[Request]) -> RequestRecord:
    """The victim's request, served as the workload serves it (its public ranges too), first
    (it publishes into an empty pool, the worst case), then its companions'."""
    record = engine.generate(victim.tenant, victim.messages, _ONE_TOKEN,
                             victim.public_char_ranges)
    for companion in companions:
        engine.generate(companion.tenant, companion.messages, _ONE_TOKEN,
                        companion.public_char_ranges)
    return record


def _flagged(engine: Engine) -> bool:
    monitor = engine.probe_monitor
    return monitor is not None and ATTACKER_TENANT in monitor.flagged_tenants()


def _logprob_attacks(engine: Engine, victim: Request, masked: dict[str, bool],
                     settings: AttackSettings, attacks: SystemAttacks) -> None:
    for slot, info in victim.slots.items():
        if info.kind not in DICTIONARY_KINDS or info.placement == "after":
            continue
        target = SlotTarget.of(victim, slot)
        outcome = _outcome(victim, target, "logprob", "logprob", masked[slot])
        candidates = candidate_list(target, settings.num_candidates, settings.attacker_seed)
        context = attacker_context(victim, slot, settings.attacker_seed)
        logprob_attack(engine, target, context, candidates, settings.logprob_margin, outcome)
        attacks.outcomes.append(outcome)


def _outcome(victim: Request, target: SlotTarget, attack: str, oracle: str,
             fully_masked: bool) -> AttackOutcome:
    return AttackOutcome(victim.request_id, target.slot, target.info.kind,
                         target.info.placement, attack, oracle, fully_masked)
