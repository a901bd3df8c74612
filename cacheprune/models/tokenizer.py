"""Tokenizer with exact character offsets and the model's chat template.

For the default GGUF model the tokenizer is rebuilt from the file's metadata with the
pre-tokenization the model was trained with: each digit is its own pre-token, then GPT-2
byte-level splitting. (A tokenizer that merges digit runs gives different ids for most numbers,
and numbers are exactly the private tokens this project masks.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Template
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from cacheprune.models.config import ModelLoadError
from cacheprune.models.gguf_loader import read_metadata
from cacheprune.models.sources import resolve_source

_CONTROL_TOKEN_TYPE = 3  # GGUF token_type of special/control tokens


@dataclass(slots=True, frozen=True)
class Encoding:
    ids: list[int]
    offsets: list[tuple[int, int]]  # per token, [start, end) character offsets in the text


class ChatTokenizer:
    """Wraps a `tokenizers.Tokenizer`; adds the chat template and the model's stop tokens."""

    def __init__(
        self,
        backend: Tokenizer,
        chat_template: str | None,
        stop_token_ids: frozenset[int],
        bos_token: str | None = None,
        eos_token: str | None = None,
    ) -> None:
        self.backend = backend
        self.chat_template = chat_template
        self.stop_token_ids = stop_token_ids
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._literal: Tokenizer | None = None

    @property
    def vocab_size(self) -> int:
        return int(self.backend.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str) -> Encoding:
        """Tokens of trusted text: a special token's text becomes that control token."""
        encoded = self.backend.encode(text, add_special_tokens=False)
        return Encoding(list(encoded.ids), [tuple(o) for o in encoded.offsets])  # type: ignore[misc]

    def encode_prompt(self, text: str, untrusted_spans: Sequence[tuple[int, int]]) -> Encoding:
        """Tokens of a rendered prompt in which only the template may emit control tokens.

        Text inside `untrusted_spans` (what tenants wrote: each message's content, a whole plain
        prompt) is encoded with special tokens split into ordinary text, so `<|im_start|>` typed
        by a user cannot open a turn. The pieces are encoded apart and joined; for text without
        special tokens this gives the ids of `encode(text)` (the template's pieces end where
        the pre-tokenizer splits anyway; tested on the evaluation's prompts).
        """
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        cursor = 0
        for start, end in [*sorted(untrusted_spans), (len(text), len(text))]:
            if not cursor <= start <= end <= len(text):
                raise ValueError(f"untrusted span ({start}, {end}) overlaps another or lies "
                                 f"outside the {len(text)}-character prompt")
            for piece_start, piece_end, backend in ((cursor, start, self.backend),
                                                    (start, end, self._literal_backend())):
                if piece_end > piece_start:
                    encoded = backend.encode(text[piece_start:piece_end], add_special_tokens=False)
                    ids += encoded.ids
                    offsets += [(a + piece_start, b + piece_start) for a, b in encoded.offsets]
            cursor = end
        return Encoding(ids, offsets)

    def _literal_backend(self) -> Tokenizer:
        # NOTE: a copy with `encode_special_tokens` set, not a toggle on the shared backend,
        # which other threads may be using at the same time.
        if self._literal is None:
            literal = Tokenizer.from_str(self.backend.to_str())
            literal.encode_special_tokens = True
            self._literal = literal
        return self._literal

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return str(self.backend.decode(ids, skip_special_tokens=skip_special_tokens))

    def render_chat(
        self, messages: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """The prompt text the model expects for `messages` (role/content dicts)."""
        if self.chat_template is None:
            raise ValueError("this model has no chat template; pass a plain prompt instead")
        for i, message in enumerate(messages):
            check_message(i, message)
        return _compiled_template(self.chat_template).render(
            messages=messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token or "",
            eos_token=self.eos_token or "",
        )

    def save(self, folder: Path, model_max_length: int) -> None:
        """Write tokenizer.json and tokenizer_config.json as a Hugging Face folder has them."""
        self.backend.save(str(folder / "tokenizer.json"))
        config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "chat_template": self.chat_template,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            "model_max_length": model_max_length,
            "clean_up_tokenization_spaces": False,
        }
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))


def check_message(index: int, message: object) -> None:
    """Refuse a chat message the template would render wrongly or the tokenizer choke on, with
    a message that names the message and the field."""
    if not isinstance(message, dict) or {"role", "content"} - message.keys():
        raise ValueError(f"message {index} must be a dict with 'role' and 'content'")
    for field in ("role", "content"):
        value = message[field]
        if not isinstance(value, str):
            raise ValueError(f"message {index}: '{field}' must be a string, got "
                             f"{type(value).__name__}")
        check_text(value, f"message {index} '{field}'")
    if not message["role"]:
        raise ValueError(f"message {index}: 'role' is empty")


def check_text(text: str, where: str) -> None:
    """Refuse text that is not valid Unicode to encode (a lone surrogate, say)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"{where} holds a character that is not valid Unicode text "
                         f"({error.reason}) at position {error.start}") from None


def _raise_template_error(message: str) -> None:
    raise ValueError(f"chat template error: {message}")


@lru_cache(maxsize=8)
def _compiled_template(source: str) -> Template:
    """A chat template compiled once per process: compiling it took 30 ms, on every request's
    TTFT path. (Rendering a compiled template is safe from several threads.)"""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise_template_error
    return env.from_string(source)


def tokenizer_from_gguf_metadata(meta: dict[str, Any]) -> ChatTokenizer:
    if meta.get("tokenizer.ggml.model") != "gpt2":
        raise ModelLoadError(
            f"tokenizer model {meta.get('tokenizer.ggml.model')!r} is not supported "
            "(only byte-level BPE, 'gpt2')"
        )
    tokens: list[str] = list(meta["tokenizer.ggml.tokens"])
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)
    backend = Tokenizer(bpe)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    types = meta.get("tokenizer.ggml.token_type", [])
    control = [tokens[i] for i, kind in enumerate(types) if kind == _CONTROL_TOKEN_TYPE]
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])

    def token(key: str) -> str | None:
        index = meta.get(key)
        return None if index is None else tokens[int(index)]

    stop = {int(meta[k]) for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id")
            if k in meta}
    return ChatTokenizer(
        backend,
        meta.get("tokenizer.chat_template"),
        frozenset(stop),
        bos_token=token("tokenizer.ggml.bos_token_id"),
        eos_token=token("tokenizer.ggml.eos_token_id"),
    )


def tokenizer_from_hf_folder(folder: Path) -> ChatTokenizer:
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ModelLoadError(f"{folder} has no tokenizer.json")
    backend = Tokenizer.from_file(str(path))
    config = _read_json(folder / "tokenizer_config.json")
    template = config.get("chat_template")
    jinja_file = folder / "chat_template.jinja"
    if template is None and jinja_file.is_file():
        template = jinja_file.read_text()
    bos, eos = _token_text(config.get("bos_token")), _token_text(config.get("eos_token"))
    stop: set[int] = set()
    eos_ids = _read_json(folder / "generation_config.json").get("eos_token_id")
    if isinstance(eos_ids, int):
        stop.add(eos_ids)
    elif isinstance(eos_ids, list):
        stop.update(int(i) for i in eos_ids)
    eos_id = None if eos is None else backend.token_to_id(eos)
    if eos_id is not None:
        stop.add(int(eos_id))
    return ChatTokenizer(backend, template, frozenset(stop), bos_token=bos, eos_token=eos)


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):  # older configs store AddedToken dicts
        return str(value.get("content"))
    return None if value is None else str(value)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ModelLoadError(f"{path} is not valid JSON: {exc}") from exc
    return data if isinstance(data, dict) else {}


def load_tokenizer(source: str | os.PathLike[str] | None = None) -> ChatTokenizer:
    """The tokenizer alone (no weights): for detectors and tools that only need offsets."""
    path = resolve_source(source)
    if path.is_dir():
        return tokenizer_from_hf_folder(path)
    return _gguf_tokenizer(str(path), path.stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _gguf_tokenizer(path: str, mtime_ns: int) -> ChatTokenizer:
    return tokenizer_from_gguf_metadata(read_metadata(Path(path)))
