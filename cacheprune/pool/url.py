"""Pool URLs: `parse_pool_url` checks one and names its parts (`PoolURL`) for the backends."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from cacheprune.pool.errors import PoolConfigError

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
