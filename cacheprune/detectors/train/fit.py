"""Train the learned detector's spaCy NER pipeline on generated examples, on one CPU thread.

`fit(examples, seed, out_dir, epochs, max_minutes)` writes a spaCy pipeline folder (blank
multi-language tokenizer that splits CJK characters and field separators, + the default CNN
NER, hash embeddings) that `spacy.load` reads.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cacheprune.detectors.train.examples import Example
from cacheprune.detectors.train.values import LABELS

# NOTE: spaCy's default NER architecture (a 4-layer CNN over hash embeddings, width 96) with
# more embedding rows, since 18+ languages share them; it stays a few MB on disk.
_NER_MODEL = {
    "@architectures": "spacy.TransitionBasedParser.v2",
    "state_type": "ner",
    "extra_state_tokens": False,
    "hidden_width": 64,
    "maxout_pieces": 2,
    "use_upper": True,
    "nO": None,
    "tok2vec": {
        "@architectures": "spacy.HashEmbedCNN.v2",
        "pretrained_vectors": None,
        "width": 96,
        "depth": 4,
        "embed_size": 4000,
        "window_size": 1,
        "maxout_pieces": 3,
        "subword_features": True,
    },
}


# NOTE: fourth round: the blank tokenizer kept a Chinese or Japanese sentence, a Korean word
# with its particles ('김민준입니다') and a CSV row ('STN-0042,Harbour') as one token, so the
# model could only tag all of it or none. Each Han, kana and Hangul character is a token of its
# own, and ',', ';', '|' and '=' between two characters split them. The patterns are saved with
# the weights (`nlp.to_disk`), so `spacy.load` tokenizes the same way.
_CJK_CHARACTER = r"[\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
_FIELD_SEPARATOR = r"(?<=\S)[,;|=](?=\S)"


def blank_pipeline() -> Any:
    """spaCy's blank multi-language pipeline with the tokenizer the learned detector uses."""
    import spacy
    from spacy.util import compile_infix_regex

    nlp = spacy.blank("xx")
    infixes = [*(nlp.Defaults.infixes or ()), _CJK_CHARACTER, _FIELD_SEPARATOR]
    tokenizer: Any = nlp.tokenizer
    tokenizer.infix_finditer = compile_infix_regex(infixes).finditer
    return nlp


def _to_spacy(nlp, examples: Sequence[Example]) -> list:
    from spacy.training import Example as SpacyExample

    converted = []
    for example in examples:
        doc = nlp.make_doc(example.text)
        entities: list[tuple[int, int, str]] = []
        taken: set[int] = set()
        for start, end, label in sorted(example.spans):
            span = doc.char_span(start, end, label=label, alignment_mode="expand")
            if span is None or taken.intersection(range(span.start, span.end)):
                continue
            taken.update(range(span.start, span.end))
            entities.append((span.start_char, span.end_char, label))
        converted.append(SpacyExample.from_dict(doc, {"entities": entities}))
    return converted


def fit(examples: Sequence[Example], seed: int, out_dir: Path, epochs: int = 12,
        max_minutes: float = 20.0, log: Callable[[str], None] | None = None) -> Path:
    from spacy.util import compounding, fix_random_seed, minibatch

    if log is None:
        def log(message: str) -> None:
            print(message, flush=True)
    fix_random_seed(seed)
    nlp = blank_pipeline()
    ner: Any = nlp.add_pipe("ner", config={"model": _NER_MODEL})
    for label in LABELS:
        ner.add_label(label)
    train = _to_spacy(nlp, examples)
    optimizer = nlp.initialize(lambda: train)
    rng = random.Random(seed)
    started = time.perf_counter()
    for epoch in range(epochs):
        rng.shuffle(train)
        losses: dict[str, float] = {}
        for batch in minibatch(train, size=compounding(8.0, 64.0, 1.001)):
            nlp.update(batch, drop=0.2, sgd=optimizer, losses=losses)
        minutes = (time.perf_counter() - started) / 60
        log(f"epoch {epoch + 1}/{epochs}: loss {losses.get('ner', 0.0):.1f}, {minutes:.1f} min")
        if minutes > max_minutes:
            log(f"stopping after {max_minutes} min")
            break
    nlp.meta.update({"name": "cacheprune_pii", "version": "1.0.0",
                     "description": f"cacheprune's learned PII detector (seed {seed})"})
    out_dir.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(out_dir)
    return out_dir
