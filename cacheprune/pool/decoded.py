"""The shared backends' cache of decoded entries: an entry's KV decrypted and converted to
float32 once per process, kept for later reads of the same bytes.

A read of a shared entry costs its transfer, its decryption and its conversion (about 0.1 s
for a 1,800-token float16 entry on one core), and a popular document is read by every tenant
that asks about it. The key is what the first read authenticated: the entry's name, its
head's MAC, and its KV section's nonce and GCM tag. A later read authenticates the head
again (and checks tombstones) but finds the KV by that key without decrypting: equal keys
mean the very bytes the first read verified (a different KV section under the same nonce,
tag and head would be a forgery of the pool key's MAC and AEAD). Bounded in bytes, least
recently used out first; emptied whenever anything is invalidated or erased, so that no KV of
an erased entry outlives the erasure in this process either.

Cached tensors are shared by every read that hits them: readers take views and copy what
they keep (the prefill rotates keys into its own buffer), never write into them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import torch

DecodedKey = tuple[str, bytes, bytes, bytes]  # name, head MAC, KV nonce, KV GCM tag


class DecodedEntries:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[DecodedKey, torch.Tensor] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: DecodedKey) -> torch.Tensor | None:
        with self._lock:
            both = self._entries.get(key)
            if both is not None:
                self._entries.move_to_end(key)
            return both

    def put(self, key: DecodedKey, both: torch.Tensor) -> None:
        size = both.numel() * both.element_size()
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._entries:
                return
            while self._entries and self._bytes + size > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= dropped.numel() * dropped.element_size()
            self._entries[key] = both
            self._bytes += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def num_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
