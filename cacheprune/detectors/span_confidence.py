"""How sure the learned detector's NER model is of each span it found, from a beam's parses.

spaCy's greedy transition-based NER gives no probability per span. The same weights can decode
with a beam, though: the beam keeps the `beam_width` best parses with their probabilities. A
span's confidence is, for its least sure token, the summed probability of the parses that put
that token inside some entity, whatever its label or extent: a span read as a staff number by
one parse and as a medical id by another, or one token longer, is still a value. (The marginal
of the exact extent and label was tried first: the beam and the greedy decoder disagree on
boundaries so often that it dropped a quarter of the spans on held-out values at 0.5.) A beam
over a long document keeps alternatives only for its last decisions, so each span is scored in
a window of `_CONTEXT_TOKENS` tokens either side of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# NOTE: the CNN reads 4 tokens either side and the parser's state features a few more; 24 tokens
# of context keep a span's features as in the whole document while the window stays short.
_CONTEXT_TOKENS = 24


def span_confidences(nlp: Any, doc: Any, spans: Sequence[Any], beam_width: int) -> list[float]:
    """The confidence of each of `spans` (entities of `doc`), each scored in its own window."""
    if not spans:
        return []
    ner = nlp.get_pipe("ner")
    windows = []
    for span in spans:
        start = max(0, span.start - _CONTEXT_TOKENS)
        end = min(len(doc), span.end + _CONTEXT_TOKENS)
        windows.append((start, nlp.make_doc(doc[start:end].text)))
    beams = ner.beam_parse([window for _, window in windows], beam_width=beam_width)
    confidences = []
    for span, (start, window), beam in zip(spans, windows, beams, strict=True):
        # The window is re-tokenized from its text: find the span's tokens by character offset.
        offset = doc[start].idx
        tokens = window.char_span(span.start_char - offset, span.end_char - offset,
                                  alignment_mode="expand")
        parses = ner.moves.get_beam_parses(beam)
        total = sum(probability for probability, _ in parses)
        if tokens is None or total <= 0.0:
            confidences.append(0.0)
            continue
        confidences.append(min(1.0, min(
            sum(probability for probability, entities in parses
                if any(s <= token < e for s, e, _ in entities))
            for token in range(tokens.start, tokens.end)) / total))
    return confidences
