"""A KV pool in a directory: shared by every process that opens the same folder.

vLLM runs its scheduler and its workers in different processes, and several vLLM instances on
one machine should share one pool, so the in-process `KVPool` cannot serve them. This store
keeps the same identity (`segment_hash` over model, policy and token bytes), the same settings
(`PoolConfig`: budget, maximum context, minimum entry length, TTL, audit log) and the same
invariants, with files as the medium:

    <root>/entries/<segment hash>.<num tokens>.safetensors   token ids, K, V, provenance
    <root>/index/<segment hash of a prefix>                  name of an entry holding that prefix
    <root>/leases/<owner>                                    hard link to a leased entry
    <root>/staging/<owner>.safetensors                       KV a running request may publish
    <root>/lock                                              fcntl lock for publish and eviction

Entries hold prefixes: KV computed at positions 0..n-1 of a prompt. A lookup finds the longest
stored prefix of a token sequence at token granularity.

NOTE: every write goes to a temporary name and is `os.rename`d into place (atomic on POSIX), so
a reader sees a whole entry or none. A lease is a hard link: evicting an entry unlinks its name
but the leased inode stays readable until the lease is released, and the eviction pass skips
entries with a link count above one. Publishing and eviction take an exclusive `flock` on
`<root>/lock`; lookups and reads take no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from safetensors.torch import save_file

from cacheprune.pool.audit import AuditLog
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.errors import (
    InvalidEntryError,
    PoolConfigError,
    PrivateTokenError,
)
from cacheprune.pool.file_entry import EntryFile, entry_file_name, parse_entry_file_name
from cacheprune.pool.metrics import PoolMetrics
from cacheprune.retriever.identity import SegmentHash, segment_hash
from cacheprune.tokens import TokenArray, as_mask_array, as_token_array, common_prefix_length

_OWNER = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# A lease or staged file older than this belongs to a process that died without cleaning up.
STALE_AFTER_S = 3600.0


@dataclass(slots=True, frozen=True)
class StoreHit:
    """The longest stored prefix of a lookup: `num_tokens` tokens of entry `entry_name`."""

    entry_name: str
    num_tokens: int


class FileKVStore:
    """One process's handle on a pool directory, for one model and detector policy.

    Any number of handles (in any processes) may open the same directory. `model_id` and
    `policy_version` are part of every entry's identity: a handle never sees entries of
    another model or policy.
    """

    def __init__(self, root: str | os.PathLike[str], config: PoolConfig, model_id: str,
                 policy_version: str) -> None:
        config.check_budget_holds_one_context()
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise PoolConfigError(f"pool location {str(self.root)!r} exists and is not a folder")
        self.config = config
        self.model_id = model_id
        self.policy_version = policy_version
        for sub in ("entries", "index", "leases", "staging"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._audit = AuditLog(config.audit_log_path, PoolMetrics().audit_failures)

    # ---- paths ---------------------------------------------------------------------------

    def _entry_path(self, name: str) -> Path:
        return self.root / "entries" / name

    def _lease_path(self, owner: str) -> Path:
        return self.root / "leases" / _checked_owner(owner)

    def staging_path(self, owner: str) -> Path:
        """Where a request's worker stages the KV it may publish."""
        return self.root / "staging" / f"{_checked_owner(owner)}.safetensors"

    def _prefix_key(self, tokens: TokenArray, length: int) -> SegmentHash:
        return segment_hash(self.model_id, self.policy_version, tokens[:length])

    # ---- lookup and leases (no lock) -----------------------------------------------------

    def lookup(self, token_ids: Sequence[int] | npt.NDArray[np.integer]) -> StoreHit | None:
        """The longest stored prefix of `token_ids`, at token granularity.

        Index keys exist at every multiple of `min_entry_tokens`; the entry found through the
        deepest key is then compared token by token, so the hit may end anywhere.
        """
        tokens = as_token_array(token_ids)
        stride = self.config.min_entry_tokens
        for length in range(tokens.shape[0] // stride * stride, 0, -stride):
            try:
                name = (self.root / "index" / self._prefix_key(tokens, length)).read_text()
                entry = EntryFile.open(self._entry_path(name))
            except FileNotFoundError:
                continue  # never indexed, or evicted since
            if not self._is_usable(entry):
                continue
            matched = common_prefix_length(entry.token_ids, tokens)
            if matched >= stride:
                return StoreHit(name, matched)
        return None

    def _is_usable(self, entry: EntryFile) -> bool:
        if (entry.model_id, entry.policy_version) != (self.model_id, self.policy_version):
            return False
        ttl = self.config.ttl_s
        return ttl is None or time.time() - entry.created_at < ttl

    def lease(self, owner: str, hit: StoreHit) -> Path | None:
        """Pin the hit's entry for `owner` (one lease per owner); None if it was evicted."""
        path = self._lease_path(owner)
        path.unlink(missing_ok=True)
        try:
            os.link(self._entry_path(hit.entry_name), path)
            os.utime(self._entry_path(hit.entry_name))  # LRU: a lease is a use
        except FileNotFoundError:
            return None
        self._audit.record("reuse", request_id=owner, segment_hash=hit.entry_name.split(".")[0],
                           num_tokens=hit.num_tokens)
        return path

    def release(self, owner: str) -> None:
        self._lease_path(owner).unlink(missing_ok=True)

    @staticmethod
    def read(path: Path, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V of tokens [start, stop) of an entry or lease: [layers, kv heads, n, dim]."""
        return EntryFile.open(path).read_kv(start, stop)

    # ---- staging and publishing ----------------------------------------------------------

    def stage(self, owner: str, token_ids: Sequence[int] | npt.NDArray[np.integer],
              keys: torch.Tensor, values: torch.Tensor) -> None:
        """Write what `owner` may publish later; replaces an earlier staged file."""
        tokens = as_token_array(token_ids)
        shape = self.config.kv_shape
        expected = (shape.num_layers, shape.num_kv_heads, tokens.shape[0], shape.head_dim)
        for label, tensor in (("keys", keys), ("values", values)):
            if tuple(tensor.shape) != expected:
                raise InvalidEntryError(f"{label} must have shape {expected}, got "
                                        f"{tuple(tensor.shape)}")
        tensors = {
            "token_ids": torch.from_numpy(tokens.astype(np.int64)),
            "keys": keys.detach().to("cpu", torch.float32).contiguous(),
            "values": values.detach().to("cpu", torch.float32).contiguous(),
        }
        metadata = {"model_id": self.model_id, "policy_version": self.policy_version,
                    "created_at": repr(time.time())}
        target = self.staging_path(owner)
        with _temporary(target) as temporary:
            save_file(tensors, str(temporary), metadata=metadata)
            os.rename(temporary, target)

    def discard(self, owner: str) -> None:
        """Drop what `owner` staged (aborted, failed or preempted for good)."""
        self.staging_path(owner).unlink(missing_ok=True)

    def publish(self, owner: str, token_ids: Sequence[int] | npt.NDArray[np.integer],
                private_mask: Sequence[bool] | npt.NDArray[np.bool_]) -> SegmentHash | None:
        """Make `owner`'s staged KV an entry, if it holds exactly `token_ids`, none private.

        Returns the entry's hash, or None when the budget cannot take it (nothing is
        over-committed). The staged file is consumed either way.
        """
        tokens = as_token_array(token_ids)
        mask = as_mask_array(private_mask, tokens.shape[0])
        staged = self.staging_path(owner)
        try:
            if mask.any():
                raise PrivateTokenError(
                    f"segment holds {int(mask.sum())} private token(s) (first at offset "
                    f"{int(np.argmax(mask))}); the pool never stores a masked token")
            num_tokens = tokens.shape[0]
            if not self.config.min_entry_tokens <= num_tokens <= self.config.max_context_tokens:
                raise InvalidEntryError(
                    f"a segment must have between {self.config.min_entry_tokens} and "
                    f"{self.config.max_context_tokens} tokens, got {num_tokens}")
            entry = EntryFile.open(staged)
            if not np.array_equal(entry.token_ids, tokens):
                raise InvalidEntryError(f"staged KV of {owner!r} is for other tokens")
            if not self._is_usable(entry):
                raise InvalidEntryError(f"staged KV of {owner!r} is for another model/policy")
            entry.check_shape(self.config.kv_shape)
            digest = self._prefix_key(tokens, num_tokens)
            name = entry_file_name(digest, num_tokens)
            with self._locked():
                self._expire()
                if self._entry_path(name).exists():
                    os.utime(self._entry_path(name))
                    return digest
                needed = num_tokens * self.config.kv_shape.entry_bytes_per_token
                if not self._make_room(needed):
                    self._audit.record("skip", request_id=owner, segment_hash=digest,
                                       reason="budget full of leased entries",
                                       num_tokens=num_tokens)
                    return None
                os.rename(staged, self._entry_path(name))
                self._write_index(tokens, name)
            self._audit.record("publish", request_id=owner, segment_hash=digest,
                               num_tokens=num_tokens)
            return digest
        finally:
            staged.unlink(missing_ok=True)

    def _write_index(self, tokens: TokenArray, name: str) -> None:
        stride = self.config.min_entry_tokens
        for length in range(stride, tokens.shape[0] + 1, stride):
            target = self.root / "index" / self._prefix_key(tokens, length)
            with _temporary(target) as temporary:
                temporary.write_text(name)
                os.rename(temporary, target)

    # ---- budget, eviction, expiry (under the lock) ---------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.root / "lock", "a+b") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def _entry_names(self) -> list[str]:
        return [p.name for p in (self.root / "entries").iterdir()
                if parse_entry_file_name(p.name) is not None]

    def bytes_in_use(self) -> int:
        """Budget bytes of every stored entry (of any model or policy in this folder)."""
        per_token = self.config.kv_shape.entry_bytes_per_token
        return sum(_num_tokens(name) * per_token for name in self._entry_names())

    def _make_room(self, needed: int) -> bool:
        """Evict unleased entries, least recently used first, until `needed` bytes fit."""
        budget = self.config.budget_bytes
        in_use = self.bytes_in_use()
        if in_use + needed <= budget:
            return True
        candidates = []
        for name in self._entry_names():
            stat = self._entry_path(name).stat()
            if stat.st_nlink == 1:  # more links = leased by a running request
                candidates.append((stat.st_mtime, name))
        per_token = self.config.kv_shape.entry_bytes_per_token
        for _, name in sorted(candidates):
            if in_use + needed <= budget:
                break
            self._remove(name, "evict")
            in_use -= _num_tokens(name) * per_token
        return in_use + needed <= budget

    def _remove(self, name: str, event: str) -> None:
        path = self._entry_path(name)
        try:
            entry = EntryFile.open(path)
        except FileNotFoundError:
            return
        tokens = as_token_array(entry.token_ids)
        stride = self.config.min_entry_tokens
        for length in range(stride, tokens.shape[0] + 1, stride):
            key_path = self.root / "index" / segment_hash(entry.model_id, entry.policy_version,
                                                          tokens[:length])
            with contextlib.suppress(FileNotFoundError):
                if key_path.read_text() == name:
                    key_path.unlink()
        path.unlink(missing_ok=True)
        self._audit.record("evict" if event == "evict" else "invalidate",
                           segment_hash=name.split(".", 1)[0],
                           reason=event, num_tokens=tokens.shape[0])

    def _expire(self) -> None:
        """Remove expired entries and the leftovers of processes that died."""
        ttl = self.config.ttl_s
        now = time.time()
        if ttl is not None:
            for name in self._entry_names():
                with contextlib.suppress(FileNotFoundError):
                    if now - EntryFile.open(self._entry_path(name)).created_at >= ttl:
                        self._remove(name, "ttl")
        for folder in ("leases", "staging"):
            for path in (self.root / folder).iterdir():
                with contextlib.suppress(FileNotFoundError):
                    if now - path.lstat().st_ctime > STALE_AFTER_S:
                        path.unlink()

    # ---- inspection ----------------------------------------------------------------------

    def stored_token_ids(self) -> list[TokenArray]:
        """Token ids of every entry of this model and policy: for audits and leak tests."""
        stored = []
        for name in self._entry_names():
            with contextlib.suppress(FileNotFoundError):
                entry = EntryFile.open(self._entry_path(name))
                if (entry.model_id, entry.policy_version) == (self.model_id,
                                                              self.policy_version):
                    stored.append(as_token_array(entry.token_ids))
        return stored

    def num_leases(self) -> int:
        return sum(1 for _ in (self.root / "leases").iterdir())

    def num_staged(self) -> int:
        return sum(1 for p in (self.root / "staging").iterdir() if p.suffix == ".safetensors")


def _num_tokens(entry_name: str) -> int:
    parsed = parse_entry_file_name(entry_name)
    assert parsed is not None, entry_name  # _entry_names() lists only parsable names
    return parsed[1]


def _checked_owner(owner: str) -> str:
    if not _OWNER.match(owner):
        raise ValueError(f"owner must be 1-128 characters of [A-Za-z0-9_-], got {owner!r}")
    return owner


@contextlib.contextmanager
def _temporary(target: Path) -> Iterator[Path]:
    """A temporary path beside `target` (same file system, so rename is atomic); removed
    if the caller did not rename it."""
    handle, name = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    os.close(handle)
    path = Path(name)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
