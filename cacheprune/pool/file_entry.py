"""One entry file of the directory pool: its name, its header and slices of its KV."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from safetensors import safe_open

from cacheprune.pool.config import KVShape
from cacheprune.pool.errors import InvalidEntryError
from cacheprune.retriever.identity import SegmentHash

_ENTRY_NAME = re.compile(r"^([0-9a-f]{64})\.([0-9]+)\.safetensors$")


def entry_file_name(digest: SegmentHash, num_tokens: int) -> str:
    """The token count is in the name so that the budget needs no file reads."""
    return f"{digest}.{num_tokens}.safetensors"


def parse_entry_file_name(name: str) -> tuple[SegmentHash, int] | None:
    found = _ENTRY_NAME.match(name)
    if found is None:
        return None
    return SegmentHash(found.group(1)), int(found.group(2))


@dataclass(slots=True, frozen=True)
class EntryFile:
    """The header of an entry (or staged) file; KV stays on disk until `read_kv`."""

    path: Path
    token_ids: npt.NDArray[np.int64]
    model_id: str
    policy_version: str
    created_at: float
    kv_shape: tuple[int, ...]  # [num_layers, num_kv_heads, num_tokens, head_dim]

    @classmethod
    def open(cls, path: Path) -> EntryFile:
        """Raises FileNotFoundError if the file is gone, InvalidEntryError if it is malformed."""
        try:
            with safe_open(str(path), framework="pt") as handle:
                metadata = handle.metadata() or {}
                token_ids = handle.get_tensor("token_ids").numpy()
                keys_shape = tuple(handle.get_slice("keys").get_shape())
                values_shape = tuple(handle.get_slice("values").get_shape())
        except FileNotFoundError:
            raise
        except Exception as error:  # safetensors raises its own error types for bad files
            if not path.exists():
                raise FileNotFoundError(str(path)) from error
            raise InvalidEntryError(f"{path.name} is not a valid pool entry: {error}") from error
        missing = {"model_id", "policy_version", "created_at"} - metadata.keys()
        if missing:
            raise InvalidEntryError(f"{path.name} lacks metadata {sorted(missing)}")
        if keys_shape != values_shape or len(keys_shape) != 4 \
                or keys_shape[2] != token_ids.shape[0]:
            raise InvalidEntryError(
                f"{path.name}: keys {keys_shape} / values {values_shape} do not hold "
                f"{token_ids.shape[0]} tokens")
        return cls(path, token_ids, metadata["model_id"], metadata["policy_version"],
                   float(metadata["created_at"]), keys_shape)

    def check_shape(self, shape: KVShape) -> None:
        expected = (shape.num_layers, shape.num_kv_heads, self.token_ids.shape[0],
                    shape.head_dim)
        if self.kv_shape != expected:
            raise InvalidEntryError(
                f"{self.path.name}: KV shape {self.kv_shape}, the pool stores {expected}")

    def read_kv(self, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V of tokens [start, stop), read from the file without loading the rest."""
        if not 0 <= start <= stop <= self.token_ids.shape[0]:
            raise ValueError(f"token range [{start}, {stop}) outside an entry of "
                             f"{self.token_ids.shape[0]} tokens")
        with safe_open(str(self.path), framework="pt") as handle:
            keys = handle.get_slice("keys")[:, :, start:stop, :]
            values = handle.get_slice("values")[:, :, start:stop, :]
        return keys, values
