"""Small pools and synthetic KV for the pool tests (tiny shapes keep them fast)."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import redis
import torch

from cacheprune.pool import (
    DEFAULT_DOMAIN,
    EntryIdentity,
    KVShape,
    PoolConfig,
    PoolStore,
    Scope,
    open_pool,
)
from cacheprune.pool.config import STORED_DTYPE_BYTES
from cacheprune.tokens import as_token_array

SHAPE = KVShape(num_layers=2, num_kv_heads=1, head_dim=4)
BYTES_PER_TOKEN = SHAPE.entry_bytes_per_token
MODEL = "model-a"
POLICY = "policy-1"
WINDOW = 4
TEST_POOL_KEY = "test-pool-key-0123456789abcdef"


class ManualClock:
    """A time source the test advances by hand (TTL and deadlines without sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scope(model_id: str = MODEL, policy_version: str = POLICY, tenant: str = "tenant-a",
          domain: str = DEFAULT_DOMAIN) -> Scope:
    return Scope(EntryIdentity.for_shape(model_id, policy_version, SHAPE), tenant, domain)


def token_bytes(url: str = "memory://", kv_storage_dtype: str = "float16") -> int:
    """What one token counts against the budget on the backend at `url` (the pool's own
    `bytes_per_token`, computed here from the shapes)."""
    if url == "memory://":
        return BYTES_PER_TOKEN
    return SHAPE.stored_bytes_per_token(STORED_DTYPE_BYTES[kv_storage_dtype])


def make_config(budget_tokens: int, max_context_tokens: int = 16, *,
                per_token: int = BYTES_PER_TOKEN, **overrides) -> PoolConfig:
    return PoolConfig(
        kv_shape=SHAPE,
        budget_bytes=budget_tokens * per_token,
        max_context_tokens=max_context_tokens,
        min_entry_tokens=overrides.pop("min_entry_tokens", WINDOW),
        # NOTE: the tests' entries are found from their first tokens only unless a test sets a
        # stride (test_pool_anchors.py); their expected matches are written for that index.
        anchor_stride=overrides.pop("anchor_stride", None),
        **overrides,
    )


def make_pool(budget_tokens: int, max_context_tokens: int = 16, url: str = "memory://",
              **overrides) -> PoolStore:
    clock = overrides.pop("clock", None)
    per_token = token_bytes(url, overrides.get("kv_storage_dtype", "float16"))
    config = make_config(budget_tokens, max_context_tokens, per_token=per_token, **overrides)
    return open_pool(url, config, pool_key=TEST_POOL_KEY, clock=clock)


def name_of(pool: PoolStore, token_ids, in_scope: Scope | None = None) -> str:
    """The keyed name an entry of exactly these tokens has (through the public interface)."""
    handle = pool.staged_segment(in_scope or scope(), "probe", as_token_array(token_ids))
    return handle.entry


def names(pool: PoolStore) -> set[str]:
    return {info.name for info in pool.entry_infos()}


def kv_for(token_ids, start_position: int = 0):
    """Deterministic KV whose values encode (layer, token id, position, dim)."""
    num_tokens = len(token_ids)
    layer = torch.arange(SHAPE.num_layers, dtype=torch.float32).view(-1, 1, 1, 1)
    token = torch.as_tensor(np.asarray(token_ids, dtype=np.float32)).view(1, 1, -1, 1)
    dim = torch.arange(SHAPE.head_dim, dtype=torch.float32).view(1, 1, 1, -1)
    keys = (layer * 1000 + token + dim * 0.01).expand(
        SHAPE.num_layers, SHAPE.num_kv_heads, num_tokens, SHAPE.head_dim
    ).contiguous()
    values = -keys
    positions = np.arange(start_position, start_position + num_tokens, dtype=np.int64)
    return keys, values, positions


def publish(pool: PoolStore, token_ids, request_id: str = "producer",
            in_scope: Scope | None = None):
    """Publish one segment through a committed session; returns the session."""
    keys, values, positions = kv_for(token_ids)
    with pool.session(request_id, in_scope or scope()) as session:
        session.stage(
            token_ids, keys, values, positions, np.zeros(len(token_ids), dtype=bool),
            np.zeros(len(token_ids), dtype=bool),
        )
        session.commit()
    return session


def segment(first_token: int, num_tokens: int) -> list[int]:
    return list(range(first_token, first_token + num_tokens))


def stored_values(url: str) -> dict[str, bytes]:
    """Every stored entry's name and bytes, the way another user with access would see them."""
    if url.startswith("file://"):
        folder = os.path.join(url[len("file://"):], "entries")
        return {name: open(os.path.join(folder, name), "rb").read()
                for name in os.listdir(folder) if not name.startswith(".")}
    client = server_client(url)
    return {key.decode()[5:]: client.get(key) for key in client.scan_iter(match=b"cp:e:*")}


def overwrite(url: str, name: str, value: bytes) -> None:
    if url.startswith("file://"):
        path = os.path.join(url[len("file://"):], "entries", name)
        with open(path, "wb") as file:
            file.write(value)
        return
    server_client(url).set(f"cp:e:{name}", value)


def server_client(url: str) -> redis.Redis:
    """A plain client of the test's Valkey server: what an attacker with write access has."""
    return redis.Redis(unix_socket_path=url[len("unix://"):].split("?")[0])


def counter(pool: PoolStore, name: str, **labels: str) -> float:
    """The sum of a metric's samples (those with these labels) in the pool's metrics text."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(sample.value for family in text_string_to_metric_families(pool.metrics_text())
               for sample in family.samples if sample.name == name
               and all(sample.labels.get(k) == v for k, v in labels.items()))


def publish_at_once(url: str, pools: list[PoolStore], rounds: int,
                    segment_of: Callable[[int, int], list[int]],
                    scope_of: Callable[[int], Scope] | None = None) -> list[tuple[str, str]]:
    """Each pool publishes `segment_of(index, round)` in a thread of its own, all at the same
    moments (a barrier per round). Returns the server's own record of every write and delete
    of an entry (keyspace notifications, in the order the server ran them): ("set" or "del",
    entry name)."""
    import threading

    client = server_client(url)
    client.config_set("notify-keyspace-events", "Eg$xe")  # set, del, expired, evicted
    events = client.pubsub()
    events.psubscribe("__keyevent@0__:*")
    events.subscribe("test:done")
    barrier = threading.Barrier(len(pools))
    errors: list[BaseException] = []

    def publisher(index: int) -> None:
        try:
            for step in range(rounds):
                barrier.wait()
                publish(pools[index], segment_of(index, step), request_id=f"p{index}-{step}",
                        in_scope=None if scope_of is None else scope_of(index))
        except BaseException as error:  # surfaced to the caller below
            errors.append(error)
            barrier.abort()

    record = []
    try:
        threads = [threading.Thread(target=publisher, args=(i,)) for i in range(len(pools))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        client.publish("test:done", b"1")
        while (message := events.get_message(timeout=10)) is not None:
            if message["type"] == "message":  # test:done, sent after the last publish
                return record
            if message["type"] != "pmessage" or not message["data"].startswith(b"cp:e:"):
                continue
            event = message["channel"].rsplit(b":", 1)[1]
            name = message["data"][5:].decode()
            if event == b"set":
                record.append(("set", name))
            elif event in (b"del", b"expired", b"evicted"):
                record.append(("del", name))
        raise AssertionError("the server's notifications stopped before the end")
    finally:
        client.config_set("notify-keyspace-events", "")
        events.close()


def most_stored(record: list[tuple[str, str]], counted: Callable[[str], bool] = lambda _: True
                ) -> tuple[int, int, int]:
    """(most entries stored at once, entries stored at the end, writes) of those `counted`."""
    stored, most, writes = 0, 0, 0
    for event, name in record:
        if not counted(name):
            continue
        stored += 1 if event == "set" else -1
        writes += event == "set"
        most = max(most, stored)
    return most, stored, writes
