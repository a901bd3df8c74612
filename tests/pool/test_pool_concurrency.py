from __future__ import annotations

import threading

import numpy as np
from pool_helpers import kv_for, make_pool, scope, segment
from prometheus_client.parser import text_string_to_metric_families


class InjectedFailure(RuntimeError):
    pass


def metric_value(pool, name):
    for family in text_string_to_metric_families(pool.metrics_text()):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    raise KeyError(name)


def test_many_threads_publishing_and_reading_keep_exact_accounting():
    pool = make_pool(budget_tokens=80, max_context_tokens=16, backpressure_utilization=1.0)
    segments = [segment(1000 * (k + 1), 6 + k % 8) for k in range(12)]
    hit_tokens = []
    errors = []
    lock = threading.Lock()

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for step in range(25):
                tokens = segments[int(rng.integers(0, len(segments)))]
                should_fail = rng.random() < 0.2
                try:
                    with pool.session(f"t{seed}-{step}", scope()) as session:
                        matches = session.lookup(tokens, np.zeros(len(tokens), dtype=bool))
                        with lock:
                            hit_tokens.append(sum(m.length for m in matches))
                        for match in matches:
                            kv = session.read(match)
                            expected, _, _ = kv_for(tokens[: match.length])
                            assert bool((kv.keys == expected).all())
                        keys, values, positions = kv_for(tokens)
                        flags = np.zeros(len(tokens), dtype=bool)
                        session.stage(tokens, keys, values, positions, flags, flags)
                        if should_fail:
                            raise InjectedFailure
                        session.commit()
                except InjectedFailure:
                    pass
        except BaseException as error:  # surfaced to the main thread below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    infos = pool.entry_infos()
    assert pool.num_leases == 0
    assert pool.leased_bytes == 0
    assert pool.bytes_in_use == sum(info.num_tokens for info in infos) * pool.bytes_per_token
    assert pool.bytes_in_use <= 80 * pool.bytes_per_token
    assert metric_value(pool, "cacheprune_pool_hit_tokens_total") == sum(hit_tokens)
    assert metric_value(pool, "cacheprune_pool_leases_outstanding") == 0
    assert metric_value(pool, "cacheprune_pool_bytes_in_use") == pool.bytes_in_use
