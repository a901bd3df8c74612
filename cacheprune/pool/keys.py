"""The pool key and everything derived from it: entry names, anchor ids, tags, the hash base.

The operator gives one secret (`pool_key=` or the environment variable CACHEPRUNE_POOL_KEY)
to every process of a pool. From it, with HMAC-SHA256 and distinct labels, come:
- entry names: HMAC over (identity digest, sharing domain, token bytes) — nobody without the key
  can compute the name of a guessed prompt, so listing a folder or a server confirms nothing;
- the rolling-hash base: processes agree on window hashes, outsiders cannot predict them;
- anchor ids: AES-128 of (window hash, scope tag) — a pseudo-random function like HMAC, but
  computed for all windows of a prompt in one call (an 8k-token prompt has ~8k windows and one
  HMAC costs microseconds in Python; AES over the whole batch costs less than one of them);
- tags: HMAC-SHA256 over an entry's bytes, checked before any byte of it is used;
- tenant and domain tags: keyed hashes, so entries and audit lines never name a tenant.

NOTE: the key is never logged: `PoolKey.__repr__` hides it and errors never quote it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import struct

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from cacheprune.pool.errors import PoolConfigError
from cacheprune.retriever import MERSENNE_61, DomainTag, EntryName, IdentityDigest
from cacheprune.tokens import TokenArray

POOL_KEY_ENV = "CACHEPRUNE_POOL_KEY"
MIN_KEY_BYTES = 16
TAG_BYTES = 32
_BASE_FLOOR = 1 << 20


class PoolKey:
    """An operator's secret pool key (at least 16 bytes; a hex string of 32+ digits works)."""

    __slots__ = ("_secret",)

    def __init__(self, secret: str | bytes) -> None:
        raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if len(raw) < MIN_KEY_BYTES:
            raise PoolConfigError(
                f"the pool key must be at least {MIN_KEY_BYTES} bytes long, got {len(raw)}; "
                "make one with: python -c 'import secrets; print(secrets.token_hex(32))'")
        self._secret = raw

    @classmethod
    def random(cls) -> PoolKey:
        """A key for one process only (memory://): nothing outside the process needs it."""
        return cls(secrets.token_bytes(32))

    @classmethod
    def resolve(cls, given: str | bytes | PoolKey | None, *, required: bool) -> PoolKey:
        """`given`, else $CACHEPRUNE_POOL_KEY, else a random key unless `required`."""
        if isinstance(given, PoolKey):
            return given
        if given is not None:
            return cls(given)
        from_env = os.environ.get(POOL_KEY_ENV)
        if from_env:
            return cls(from_env)
        if required:
            raise PoolConfigError(
                f"a pool shared between processes needs a secret pool key: pass pool_key= or "
                f"set {POOL_KEY_ENV} to the same secret in every process of the pool (make one "
                "with: python -c 'import secrets; print(secrets.token_hex(32))')")
        return cls.random()

    def derive(self, label: str) -> bytes:
        return hmac.digest(self._secret, b"cacheprune/pool-key/" + label.encode(), "sha256")

    def __repr__(self) -> str:
        return "PoolKey(<secret>)"


class PoolKeys:
    """Every keyed function the backends use, derived once from a `PoolKey`."""

    __slots__ = ("_name_key", "_tag_key", "_who_key", "_anchor_cipher", "hash_base",
                 "_rest_key", "_rest_ciphers", "_window_cipher", "_sender_cipher")

    def __init__(self, key: PoolKey) -> None:
        self._name_key = key.derive("entry-name")
        self._tag_key = key.derive("entry-tag")
        self._who_key = key.derive("tenant-domain")
        self._anchor_cipher = Cipher(algorithms.AES(key.derive("anchor")[:16]), modes.ECB())
        self._rest_key = key.derive("at-rest")
        self._rest_ciphers: dict[str, AESGCM] = {}
        self._window_cipher = Cipher(algorithms.AES(key.derive("sender-window")[:16]),
                                     modes.ECB())
        self._sender_cipher = Cipher(algorithms.AES(key.derive("sender-mark")[:16]), modes.ECB())
        seed = int.from_bytes(key.derive("rolling-base")[:16], "little")
        self.hash_base = _BASE_FLOOR + seed % (MERSENNE_61 - 1 - _BASE_FLOOR)

    def scope_tag(self, identity_digest: IdentityDigest, domain: str) -> str:
        """Hex tag of (identity, sharing domain): part of every name and anchor of a scope."""
        return self._mac(self._who_key, b"scope", identity_digest.encode(), domain.encode())

    def tenant_tag(self, tenant: str) -> str:
        """What entries and audit lines record instead of a tenant's name."""
        return self._mac(self._who_key, b"tenant", tenant.encode())[:32]

    def counter_tag(self, label: str) -> str:
        """Keyed name of a store counter (quota windows): unpredictable without the key."""
        return self._mac(self._who_key, b"counter", label.encode())[:32]

    def domain_tag(self, domain: str) -> DomainTag:
        """What entries record instead of the name of the sharing domain they are found in."""
        return DomainTag(self._mac(self._who_key, b"domain", domain.encode())[:32])

    def entry_name(self, scope_tag: str, token_ids: TokenArray) -> EntryName:
        """The keyed name of the entry holding exactly `token_ids` in that scope."""
        tokens = np.ascontiguousarray(token_ids, dtype="<u4")
        return EntryName(self._mac(self._name_key, scope_tag.encode(),
                                     struct.pack("<I", tokens.shape[0]), tokens.tobytes()))

    def anchor_ids(self, scope_tag: str, window_hashes: npt.NDArray[np.uint64]
                   ) -> list[bytes]:
        """16-byte anchor id of each window hash in that scope (AES-128 as a PRF)."""
        blocks = np.empty((window_hashes.shape[0], 2), dtype="<u8")
        blocks[:, 0] = window_hashes
        blocks[:, 1] = int(scope_tag[:16], 16)
        encryptor = self._anchor_cipher.encryptor()
        out = encryptor.update(blocks.tobytes()) + encryptor.finalize()
        return [out[i : i + 16] for i in range(0, len(out), 16)]

    def window_ids(self, scope_tag: str, window_hashes: npt.NDArray[np.uint64]
                   ) -> npt.NDArray[np.uint64]:
        """64-bit keyed id of each window hash in that scope, for the publication threshold's
        sender counts (its own key: a window id is never an anchor id)."""
        return _prf64(self._window_cipher, window_hashes, int(scope_tag[:16], 16))

    def sender_marks(self, tenant_tag: str, window_ids: npt.NDArray[np.uint64]) -> list[bytes]:
        """What a tenant leaves on each window it sent: AES-128 of (tenant, window), 16 bytes.
        Marks of one tenant on two windows are unlinkable without the key; `mark_senders`
        recovers the tenant from a mark and checks that the mark belongs to its window."""
        blocks = np.empty((window_ids.shape[0], 2), dtype="<u8")
        blocks[:, 0] = int(tenant_tag[:16], 16)
        blocks[:, 1] = window_ids
        encryptor = self._sender_cipher.encryptor()
        out = encryptor.update(blocks.tobytes()) + encryptor.finalize()
        return [out[i : i + 16] for i in range(0, len(out), 16)]

    def mark_senders(self, marks: list[bytes], window_ids: npt.NDArray[np.uint64]
                     ) -> npt.NDArray[np.uint64]:
        """The 64-bit tenant tag in each mark; 0 where the mark was not made by this key for
        its window `window_ids[i]` (a forgery or a copy from another window)."""
        if not marks:
            return np.zeros(0, dtype=np.uint64)
        decryptor = self._sender_cipher.decryptor()
        clear = decryptor.update(b"".join(marks)) + decryptor.finalize()
        blocks = np.frombuffer(clear, dtype="<u8").reshape(-1, 2)
        senders = blocks[:, 0].astype(np.uint64)
        senders[blocks[:, 1] != window_ids] = 0
        return senders

    def at_rest(self, domain_tag: str) -> AESGCM:
        """AES-256-GCM under the sharing domain's own key (HKDF-SHA256 from the pool key):
        what encrypts the entries of that domain at rest."""
        cipher = self._rest_ciphers.get(domain_tag)
        if cipher is None:
            derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                           info=b"cacheprune/at-rest/" + domain_tag.encode()
                           ).derive(self._rest_key)
            cipher = self._rest_ciphers.setdefault(domain_tag, AESGCM(derived))
        return cipher

    def tag(self, *parts: bytes | memoryview) -> bytes:
        """HMAC-SHA256 over the parts (length-prefixed): an entry's authentication tag."""
        mac = hmac.new(self._tag_key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(struct.pack("<Q", len(part)))
            mac.update(part)
        return mac.digest()

    def check_tag(self, expected: bytes, *parts: bytes | memoryview) -> bool:
        return hmac.compare_digest(self.tag(*parts), expected)

    @staticmethod
    def _mac(key: bytes, *parts: bytes) -> str:
        mac = hmac.new(key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(struct.pack("<I", len(part)))
            mac.update(part)
        return mac.hexdigest()


def _prf64(cipher: Cipher[modes.ECB], values: npt.NDArray[np.uint64], tweak: int
           ) -> npt.NDArray[np.uint64]:
    """AES-128 of (value, tweak), truncated to 64 bits, for a whole array in one call."""
    blocks = np.empty((values.shape[0], 2), dtype="<u8")
    blocks[:, 0] = values
    blocks[:, 1] = tweak
    encryptor = cipher.encryptor()
    out = encryptor.update(blocks.tobytes()) + encryptor.finalize()
    return np.frombuffer(out, dtype="<u8").reshape(-1, 2)[:, 0].astype(np.uint64)
