"""Cost of the cross-tenant n-gram leak monitor per response, next to a decode step.

    .venv/bin/python benchmarks/leak_monitor.py

Fills the monitor with the private values of many tenants (Faker names, addresses, phones,
ids), then checks answers of 16, 64 and 256 words; prints microseconds per response and the
share of one decode step of the default model that this is (measured in the same run).
"""

from __future__ import annotations

import argparse
import time

from faker import Faker

from cacheprune.monitor import LeakMonitor


def _values(count: int) -> list[str]:
    faker = Faker(["en_US", "de_DE", "fr_FR", "ja_JP"])
    faker.seed_instance(0)
    makers = (faker.name, faker.address, faker.phone_number, faker.ssn, faker.iban)
    return [makers[i % len(makers)]() for i in range(count)]


def _decode_step_s() -> float:
    from cacheprune.engine import PrefillPlan, SamplingParams, generate, load_default

    model, tokenizer = load_default()
    ids = tokenizer.encode("The quick brown fox jumps over the lazy dog. " * 40).ids
    started = time.perf_counter()
    result = generate(model, PrefillPlan.full(ids), SamplingParams(max_new_tokens=17), frozenset())
    return (time.perf_counter() - started - result.stats.prefill_s) / 16


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--values-per-tenant", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    monitor = LeakMonitor()
    values = _values(args.tenants * args.values_per_tenant)
    for tenant in range(args.tenants):
        chunk = values[tenant * args.values_per_tenant:(tenant + 1) * args.values_per_tenant]
        monitor.remember(f"tenant-{tenant}", chunk)
    decode_s = _decode_step_s()
    print(f"{len(values)} values of {args.tenants} tenants; "
          f"one decode step {decode_s * 1e3:.1f} ms")
    words = Faker("en_US").paragraph(nb_sentences=60).split()
    for num_words in (16, 64, 256):
        answer = " ".join(words[:num_words])
        started = time.perf_counter()
        for _ in range(args.repeats):
            monitor.check("tenant-x", "bench", answer)
        per_response = (time.perf_counter() - started) / args.repeats
        print(f"{num_words:4d}-word answer: {per_response * 1e6:8.1f} us per response "
              f"({per_response / decode_s:.2%} of one decode step)")


if __name__ == "__main__":
    main()
