"""The tenancy front's tenants: which API key belongs to which tenant, and each tenant's salt.

The operator writes a JSON file (readable by its owner only) and points the environment
variable CACHEPRUNE_TENANTS_FILE at it. It maps each tenant's name to its API keys (several
while a key is rotated):

    {"acme": ["sk-acme-7f3c9e1b2d4a6f80"], "globex": ["sk-globex-51d2a8c4e9b7f036"]}

A tenant's `cache_salt` is a keyed hash of its name (HMAC-SHA256 under a key derived from the
pool key, CACHEPRUNE_POOL_KEY): unpredictable to tenants, stable across restarts while the pool
key is, and never the name in clear.

vLLM-free: the front's checks run, and fail the same way, with or without vLLM.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cacheprune.pool import POOL_KEY_ENV, PoolConfigError, PoolKey
from cacheprune.vllm.salts import MAX_SALT_CHARS

TENANTS_FILE_ENV = "CACHEPRUNE_TENANTS_FILE"
MIN_API_KEY_CHARS = 16
SALT_PREFIX = "cacheprune-"
_SALT_LABEL = "tenant-salt"
_EXAMPLE = '{"acme": ["sk-acme-7f3c9e1b2d4a6f80"], "globex": ["sk-globex-51d2a8c4e9b7f036"]}'


class TenancyConfigError(ValueError):
    """The tenants file or the pool key is missing or malformed; the message says which."""


@dataclass(frozen=True, slots=True)
class Tenancy:
    """API key -> tenant, and tenant -> salt. Keys are held as SHA-256 digests only."""

    tenants_by_key_digest: Mapping[bytes, str]
    salt_key: bytes

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Tenancy:
        path = environ.get(TENANTS_FILE_ENV)
        if not path:
            raise TenancyConfigError(
                f"{TENANTS_FILE_ENV} is not set: point it at a JSON file (mode 600) that maps "
                f"each tenant to its API keys, e.g. {_EXAMPLE}")
        secret = environ.get(POOL_KEY_ENV)
        try:
            if not secret:
                raise PoolConfigError(f"set {POOL_KEY_ENV} (the same in every process of "
                                      "the pool)")
            pool_key = PoolKey(secret)
        except PoolConfigError as error:
            raise TenancyConfigError(f"the tenants' salts are keyed with the pool key: {error}"
                                     ) from None
        return cls.from_file(Path(path), pool_key)

    @classmethod
    def from_file(cls, path: Path, pool_key: PoolKey) -> Tenancy:
        data = _read(path)
        by_digest: dict[bytes, str] = {}
        for tenant, keys in data.items():
            _check_tenant(path, tenant, keys)
            for index, key in enumerate(keys):
                problem = _key_problem(key)
                if problem:
                    raise TenancyConfigError(f"{path}: tenant {tenant!r}, key #{index + 1}: "
                                             f"{problem}")
                digest = _digest(key)
                if digest in by_digest:
                    raise TenancyConfigError(
                        f"{path}: tenant {tenant!r}, key #{index + 1} is also a key of "
                        f"tenant {by_digest[digest]!r}: a key must name one tenant")
                by_digest[digest] = tenant
        return cls(by_digest, pool_key.derive(_SALT_LABEL))

    def tenant(self, api_key: str) -> str | None:
        """The tenant whose key this is, or None."""
        return self.tenants_by_key_digest.get(_digest(api_key))

    def salt(self, tenant: str) -> str:
        digest = hmac.new(self.salt_key, tenant.encode("utf-8"), hashlib.sha256).hexdigest()
        salt = SALT_PREFIX + digest[:32]
        assert len(salt) <= MAX_SALT_CHARS
        return salt


def _read(path: Path) -> dict[str, list[str]]:
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TenancyConfigError(f"cannot read the tenants file ({TENANTS_FILE_ENV}): "
                                 f"{error}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        # NOTE: the file holds every tenant's API key, like an SSH private key.
        raise TenancyConfigError(f"{path} is readable by other users (mode "
                                 f"{stat.S_IMODE(mode):o}); run: chmod 600 {path}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise TenancyConfigError(f"{path} is not valid JSON: {error}; expected e.g. {_EXAMPLE}"
                                 ) from None
    if not isinstance(data, dict) or not data:
        raise TenancyConfigError(f"{path} must be a JSON object mapping each tenant to its "
                                 f"API keys, e.g. {_EXAMPLE}")
    return data


def _check_tenant(path: Path, tenant: str, keys: object) -> None:
    if not tenant or len(tenant) > MAX_SALT_CHARS or not tenant.isprintable():
        raise TenancyConfigError(f"{path}: tenant names must be 1 to {MAX_SALT_CHARS} printable "
                                 f"characters, got {tenant!r}")
    if not isinstance(keys, list) or not keys:
        raise TenancyConfigError(f"{path}: tenant {tenant!r} must map to a non-empty list of "
                                 f"API keys, got {type(keys).__name__}")


def _key_problem(key: object) -> str | None:
    """Why `key` cannot be an API key (never quoting it), or None."""
    if not isinstance(key, str):
        return f"must be a string, got {type(key).__name__}"
    if len(key) < MIN_API_KEY_CHARS:
        return (f"too short ({len(key)} characters, at least {MIN_API_KEY_CHARS}); make one "
                "with: python -c 'import secrets; print(secrets.token_urlsafe(24))'")
    if not key.isascii() or not all(33 <= ord(c) < 127 for c in key):
        return "must be printable ASCII without spaces (it travels in an HTTP header)"
    return None


def _digest(api_key: str) -> bytes:
    return hashlib.sha256(api_key.encode("utf-8", "surrogatepass")).digest()
