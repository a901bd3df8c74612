"""The attacks against real engines, with their positive controls: the unsafe global prefix
cache loses every value, and a value the detectors miss is recovered from cacheprune too (so the
prober can see a miss), while no fully masked value is."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import yaml

from cacheprune.detectors import load_policy
from cacheprune.detectors.rules import default_rules_path
from cacheprune.serving import Engine, EngineConfig
from eval.attacks import AttackSettings, attack_system
from eval.attacks.dictionary import candidate_list
from eval.attacks.extension import END, TokenStatistics, extension_attack
from eval.attacks.oracles import miss_guesses
from eval.attacks.outcome import AttackOutcome, Budget
from eval.attacks.probe import Prober, SlotTarget, split_value
from eval.attacks.summary import values_recovered
from eval.attacks.timed_dictionary import TimedSlot, timed_dictionary_attack
from eval.workload import Request

NUMBER_KINDS = ("phone", "national_id", "passport", "birth_date", "iban")
HITS_ONLY = AttackSettings(dictionary_oracles=("hits",), extension_oracles=())


def test_dictionary_holds_the_value_once_among_decoys_of_its_kind(victim: Request) -> None:
    target = SlotTarget.of(victim, "name")
    candidates = candidate_list(target, 8, attacker_seed=11)
    assert len(candidates) == len(set(candidates)) == 8
    assert candidates.count(target.value) == 1
    assert candidate_list(target, 8, attacker_seed=11) == candidates  # seeded


def test_token_statistics_propose_the_value_tokens(default_model, victim: Request) -> None:
    _, tokenizer = default_model
    slot = next(s for s, info in victim.slots.items() if info.kind in NUMBER_KINDS)
    target = SlotTarget.of(victim, slot)
    stats = TokenStatistics.sample(tokenizer, target, 300, seed=11)
    _, true_ids = split_value(tokenizer, target.prefix, target.value)
    # Every true token is a candidate at its step (formats are known, values are not) and the
    # end of the value is one too.
    for step in range(len(true_ids)):
        assert true_ids[step] in stats.candidates(true_ids[:step]), (target.value, step)
    assert END in stats.candidates(true_ids)


def test_global_prefix_cache_loses_every_value(default_model, victim: Request) -> None:
    # The positive control: if the prober could not recover these, a 0% elsewhere means nothing.
    model, tokenizer = default_model
    engine = partial(Engine, model, tokenizer, load_policy(), EngineConfig(mode="global_prefix"))
    attacks = attack_system(engine, [victim], HITS_ONLY)
    lost = values_recovered(attacks.outcomes)
    assert lost.num_values == len(victim.private_values)
    assert lost.num_recovered == lost.num_values
    assert attacks.direct.ratio == 1.0


def test_extension_spells_out_a_number_from_the_global_prefix_cache(
    default_model, victim: Request
) -> None:
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, load_policy(), EngineConfig(mode="global_prefix"))
    engine.generate(victim.tenant, victim.messages)
    slot = next(s for s, info in victim.slots.items() if info.kind in NUMBER_KINDS)
    target = SlotTarget.of(victim, slot)
    outcome = AttackOutcome(victim.request_id, slot, target.info.kind, "", "extension", "hits",
                            False)
    stats = TokenStatistics.sample(tokenizer, target, 300, seed=11)
    extension_attack(Prober(engine), target, Budget(600), stats, outcome)
    assert outcome.recovered, target.value
    assert not outcome.budget_ran_out


def _policy_without_names(tmp_path: Path):
    # The planted miss: the operator's rules without the PERSON rule, so names go unmasked.
    rules = yaml.safe_load(default_rules_path().read_text())
    rules["disabled_entities"] = ["PERSON"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump({
        "version": 1, "detectors": [{"detector": "rules",
                                     "options": {"rules_file": "rules.yaml"}}]}))
    return load_policy(tmp_path / "policy.yaml")


def test_cacheprune_gives_up_a_planted_miss_and_nothing_masked(
    default_model, victim: Request, tmp_path: Path
) -> None:
    model, tokenizer = default_model
    engine = partial(Engine, model, tokenizer, _policy_without_names(tmp_path),
                     EngineConfig(publish_threshold=1))
    attacks = attack_system(engine, [victim], HITS_ONLY)
    dictionary = [o for o in attacks.outcomes if o.attack == "dictionary"]
    colleague = next(o for o in dictionary if o.slot == "colleague")
    assert not colleague.fully_masked
    assert colleague.recovered  # the name inside the shared document went out with it
    assert not any(o.recovered for o in dictionary if o.fully_masked)
    assert any(o.fully_masked for o in dictionary)


@pytest.mark.parametrize("mode", ["global_prefix", "cacheprune"])
def test_timing_rounds_see_the_victims_cache_and_none_of_the_attackers_probes(
    default_model, victim: Request, mode: str
) -> None:
    # Every round must be an independent look: a decoy's probe hits exactly as much in the
    # last round as in the first (its earlier probes did not publish anything it could hit),
    # and every probe of a slot has the same number of tokens (a short candidate is not fast
    # for being short). Where the cache is unsafe, the true value hits more than every decoy.
    model, tokenizer = default_model
    config = (EngineConfig(mode="global_prefix") if mode == "global_prefix"
              else EngineConfig(publish_threshold=1))
    make_engine = partial(Engine, model, tokenizer, load_policy(), config)
    target = SlotTarget.of(victim, "name")
    candidates = candidate_list(target, 4, attacker_seed=11)
    outcome = AttackOutcome(victim.request_id, "name", "name", "", "dictionary", "ttft", False)
    slot = TimedSlot(target, candidates, outcome)
    timed_dictionary_attack(make_engine, lambda engine: engine.generate(victim.tenant,
                                                                       victim.messages),
                            [slot], num_rounds=2, false_claim_rate=0.01, seed=11)
    assert slot.rounds is not None and slot.texts is not None
    first, last = slot.rounds
    assert {c: r.hits for c, r in first.items()} == {c: r.hits for c, r in last.items()}
    lengths = {len(tokenizer.encode(text).ids) for text in slot.texts.values()}
    assert len(lengths) == 1, lengths
    assert outcome.num_probes == 2 * (len(candidates) + 2 * len(miss_guesses()))
    if mode == "global_prefix":
        decoys = [r.hits for c, r in first.items() if c != target.value]
        assert first[target.value].hits > max(decoys) + 32
