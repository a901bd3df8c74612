"""`open_pool(url, config)`: the one way to open a pool, whatever its backend."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from cacheprune.pool.config import PoolConfig
from cacheprune.pool.errors import PoolConfigError
from cacheprune.pool.keys import PoolKey
from cacheprune.pool.store import PoolStore

SCHEMES = ("memory", "file", "redis", "unix")


@dataclass(slots=True, frozen=True)
class PoolURL:
    """A parsed pool URL; `redacted` is safe to log (no password)."""

    scheme: str
    path: str = ""  # file: the folder; unix: the socket
    host: str = ""
    port: int = 6379
    db: int = 0
    password: str | None = None
    redacted: str = ""


def parse_pool_url(url: str) -> PoolURL:
    """Parse and check a pool URL; the error lists the accepted forms."""
    forms = ("memory://, file:///absolute/folder, redis://host:port/db, "
             "unix:///path/to/valkey.sock?db=0")
    parts = urlsplit(url)
    scheme = parts.scheme
    if scheme not in SCHEMES:
        raise PoolConfigError(f"pool URL {_redact(url)!r}: unknown scheme {scheme!r}; use one "
                              f"of {forms}")
    if scheme == "memory":
        if parts.netloc or parts.path not in ("", "/"):
            raise PoolConfigError(f"pool URL {url!r}: memory:// takes no host or path")
        return PoolURL("memory", redacted="memory://")
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise PoolConfigError(f"pool URL {url!r}: use file:///absolute/folder (three "
                                  "slashes, an absolute path)")
        return PoolURL("file", path=parts.path, redacted=f"file://{parts.path}")
    password = parts.password
    if scheme == "unix":
        if not parts.path.startswith("/"):
            raise PoolConfigError(f"pool URL {_redact(url)!r}: use unix:///absolute/socket")
        db = _db_number(url, parse_qs(parts.query).get("db", ["0"])[0])
        return PoolURL("unix", path=parts.path, db=db, password=password,
                       redacted=f"unix://{parts.path}?db={db}")
    if not parts.hostname:
        raise PoolConfigError(f"pool URL {_redact(url)!r}: redis:// needs a host")
    try:
        port = parts.port or 6379
    except ValueError as error:
        raise PoolConfigError(f"pool URL {_redact(url)!r}: bad port") from error
    db = _db_number(url, parts.path.strip("/") or "0")
    return PoolURL("redis", host=parts.hostname, port=port, db=db, password=password,
                   redacted=f"redis://{parts.hostname}:{port}/{db}")


def _db_number(url: str, text: str) -> int:
    if not text.isdigit():
        raise PoolConfigError(f"pool URL {_redact(url)!r}: the database must be a number, "
                              f"got {text!r}")
    return int(text)


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@")


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
    config.check_budget_holds_one_context()
    key = PoolKey.resolve(pool_key, required=parsed.scheme != "memory")
    if parsed.scheme == "memory":
        from cacheprune.pool.memory import MemoryPool

        return MemoryPool(config, key=key, clock=clock or time.monotonic)
    if parsed.scheme == "file":
        from cacheprune.pool.file_backend import FilePool

        return FilePool(parsed, config, key=key, clock=clock or time.time)
    from cacheprune.pool.valkey_backend import ValkeyPool

    return ValkeyPool(parsed, config, key=key, clock=clock or time.time)
