"""Train the token tagger (`tagger_model.TokenTagger`) on generated examples.

Labels are aligned to the SmolLM2 tokens whose non-space characters overlap a value (the first
such token gets B-, the rest I-); examples are cut into windows of `TRAIN_WINDOW` tokens and
batched by length. AdamW with a learning rate falling linearly over the planned steps; the
embedding table stays frozen, so the saved weights are the small layers over it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from cacheprune.detectors.tagger_model import (
    TaggerConfig,
    TokenTagger,
    bio_tags,
    embedding_digest,
    save_tagger,
    token_shape,
)
from cacheprune.detectors.train.examples import Example
from cacheprune.detectors.train.values import LABELS

TRAIN_WINDOW = 384
BATCH_SIZE = 32
LEARNING_RATE = 2e-3
_IGNORED = -100

Window = tuple[list[int], list[int], list[int]]  # token ids, shapes, tag ids


def aligned_tags(text: str, offsets: Sequence[tuple[int, int]],
                 spans: Sequence[tuple[int, int, str]], tag_index: dict[str, int]) -> list[int]:
    """One tag id per token: B-/I- of a value its non-space characters overlap, else O."""
    tags = [tag_index["O"]] * len(offsets)
    for start, end, label in sorted(spans):
        first = True
        for i, (token_start, token_end) in enumerate(offsets):
            while token_start < token_end and text[token_start].isspace():
                token_start += 1
            if token_start < min(end, token_end) and token_end > start:
                tags[i] = tag_index[("B-" if first else "I-") + label]
                first = False
    return tags


def training_windows(examples: Sequence[Example], tokenizer, tag_index: dict[str, int]
                     ) -> list[Window]:
    windows: list[Window] = []
    for example in examples:
        encoding = tokenizer.encode_prompt(example.text, [(0, len(example.text))])
        shapes = [token_shape(example.text[a:b]) for a, b in encoding.offsets]
        tags = aligned_tags(example.text, encoding.offsets, example.spans, tag_index)
        for start in range(0, len(encoding.ids), TRAIN_WINDOW):
            end = start + TRAIN_WINDOW
            windows.append((encoding.ids[start:end], shapes[start:end], tags[start:end]))
    return windows


def _batches(windows: list[Window], rng: random.Random
             ) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Batches of windows of similar length (padding ignored by the loss), in random order."""
    ordered = sorted(windows, key=lambda w: len(w[0]) + rng.random() * 40)
    batches = []
    for i in range(0, len(ordered), BATCH_SIZE):
        chunk = ordered[i:i + BATCH_SIZE]
        length = max(len(ids) for ids, _, _ in chunk)
        ids = torch.zeros(len(chunk), length, dtype=torch.long)
        shapes = torch.zeros_like(ids)
        tags = torch.full_like(ids, _IGNORED)
        for row, (window_ids, window_shapes, window_tags) in enumerate(chunk):
            ids[row, :len(window_ids)] = torch.tensor(window_ids)
            shapes[row, :len(window_shapes)] = torch.tensor(window_shapes)
            tags[row, :len(window_tags)] = torch.tensor(window_tags)
        batches.append((ids, shapes, tags))
    rng.shuffle(batches)
    return batches


def fit_tagger(examples: Sequence[Example], seed: int, out_dir: Path, epochs: int = 6,
               max_minutes: float = 40.0, log: Callable[[str], None] | None = None) -> Path:
    from cacheprune.models.gguf_loader import read_token_embeddings
    from cacheprune.models.sources import default_model_path
    from cacheprune.models.tokenizer import load_tokenizer

    if log is None:
        def log(message: str) -> None:
            print(message, flush=True)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    source = default_model_path()
    embeddings = read_token_embeddings(source)
    tokenizer = load_tokenizer(source)
    config = TaggerConfig(labels=list(LABELS), embedding_sha256=embedding_digest(embeddings),
                          embedding_rows=embeddings.shape[0], embedding_dim=embeddings.shape[1])
    tag_index = {tag: i for i, tag in enumerate(bio_tags(config.labels))}
    windows = training_windows(examples, tokenizer, tag_index)
    log(f"{len(windows)} windows, {sum(len(w[0]) for w in windows)} tokens")
    model = TokenTagger(config, torch.from_numpy(np.asarray(embeddings)))
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=LEARNING_RATE, weight_decay=0.01)
    loss_of = nn.CrossEntropyLoss(ignore_index=_IGNORED)
    planned = epochs * -(-len(windows) // BATCH_SIZE)
    step = 0
    started = time.perf_counter()
    model.train()
    for epoch in range(epochs):
        total = 0.0
        batches = _batches(windows, rng)
        for ids, shapes, tags in batches:
            for group in optimizer.param_groups:
                group["lr"] = LEARNING_RATE * max(0.05, 1.0 - step / planned)
            loss = loss_of(model(ids, shapes).reshape(-1, len(config.tags)), tags.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            total += loss.item()
            step += 1
        minutes = (time.perf_counter() - started) / 60
        log(f"epoch {epoch + 1}/{epochs}: loss {total / len(batches):.4f}, {minutes:.1f} min")
        if minutes > max_minutes:
            log(f"stopping after {max_minutes} min")
            break
    return save_tagger(model.eval(), out_dir)
