"""`open_pool(url, config)`: the one way to open a pool, whatever its backend."""

from __future__ import annotations

import time
from collections.abc import Callable

from cacheprune.pool.config import PoolConfig
from cacheprune.pool.file_backend import FilePool
from cacheprune.pool.keys import PoolKey
from cacheprune.pool.memory import MemoryPool
from cacheprune.pool.store import PoolStore
from cacheprune.pool.url import parse_pool_url


def open_pool(url: str, config: PoolConfig, *, pool_key: str | bytes | PoolKey | None = None,
              clock: Callable[[], float] | None = None) -> PoolStore:
    """Open the pool at `url` for KV of `config.kv_shape`.

    `pool_key`: the operator's secret (else $CACHEPRUNE_POOL_KEY). Required by every backend
    that crosses a process; memory:// draws a random one when none is given. `clock`: seconds
    (wall clock for shared backends, whose entries outlive the process) — tests inject one.
    Raises `PoolConfigError` / `PoolCapacityError` with what to fix; nothing is created on
    failure except what the error names.
    """
    parsed = parse_pool_url(url)
    key = PoolKey.resolve(pool_key, required=parsed.scheme != "memory")
    if parsed.scheme == "memory":
        return MemoryPool(config, key=key, clock=clock or time.monotonic)
    if parsed.scheme == "file":
        return FilePool(parsed, config, key=key, clock=clock or time.time)
    # NOTE: imported here so that a process that never opens a Valkey pool never imports redis.
    from cacheprune.pool.valkey_backend import ValkeyPool

    return ValkeyPool(parsed, config, key=key, clock=clock or time.time)
