"""A request's prompt (text or chat messages) rendered to text, with the operator's public
ranges mapped onto that text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cacheprune.models.tokenizer import ChatTokenizer, check_text
from cacheprune.tokens import MaskArray

Messages = list[dict[str, str]]
Prompt = str | Messages
# (start, end) in a plain prompt's text, or (message_index, start, end) within one message's
# content for chat messages.
PublicRange = tuple[int, int] | tuple[int, int, int]


@dataclass(slots=True, frozen=True)
class RenderedPrompt:
    """A prompt as the model reads it: its text, the operator's public ranges and the ranges
    tenants wrote (each message's content, or the whole of a plain prompt), all as [start, end)
    offsets into `text`. Only text outside `untrusted` may become control tokens."""

    text: str
    public: list[tuple[int, int]]
    untrusted: list[tuple[int, int]]


def render_prompt(
    tokenizer: ChatTokenizer, prompt: Prompt, public_ranges: Sequence[PublicRange]
) -> tuple[str, list[tuple[int, int]]]:
    """The prompt's text and its public ranges as [start, end) offsets into that text."""
    rendered = render(tokenizer, prompt, public_ranges)
    return rendered.text, rendered.public


def render(tokenizer: ChatTokenizer, prompt: Prompt,
           public_ranges: Sequence[PublicRange]) -> RenderedPrompt:
    """Render `prompt`; bad input (an empty prompt, a message that is not a dict of strings, a
    lone surrogate, a public range outside its text) raises a ValueError that names it."""
    if isinstance(prompt, str):
        if not prompt:
            raise ValueError("the prompt is empty")
        check_text(prompt, "the prompt")
        ranges = []
        for item in public_ranges:
            if len(item) != 2:
                raise ValueError(f"public range {item} of a text prompt must be (start, end)")
            ranges.append(_checked(item[0], item[1], len(prompt), "the prompt"))
        return RenderedPrompt(prompt, ranges, [(0, len(prompt))])
    if not isinstance(prompt, list) or not prompt:
        raise ValueError("the prompt must be a non-empty string or list of chat messages")
    text = tokenizer.render_chat(prompt)  # checks every message first
    # Each message's content appears verbatim in the rendered text, in order.
    content_starts = []
    cursor = 0
    for i, message in enumerate(prompt):
        found = text.find(message["content"], cursor)
        if found < 0:
            raise ValueError(f"message {i}'s content does not appear in the rendered prompt")
        content_starts.append(found)
        cursor = found + len(message["content"])
    ranges = []
    for item in public_ranges:
        if len(item) != 3:
            raise ValueError(f"public range {item} of chat messages must be "
                             "(message_index, start, end)")
        index, start, end = item
        if not 0 <= index < len(prompt):
            raise ValueError(f"public range {item}: no message {index}")
        start, end = _checked(start, end, len(prompt[index]["content"]), f"message {index}")
        ranges.append((content_starts[index] + start, content_starts[index] + end))
    untrusted = [(start, start + len(message["content"]))
                 for start, message in zip(content_starts, prompt, strict=True)]
    return RenderedPrompt(text, ranges, untrusted)


def _checked(start: int, end: int, length: int, where: str) -> tuple[int, int]:
    if not 0 <= start <= end <= length:
        raise ValueError(f"public range ({start}, {end}) lies outside {where} "
                         f"of {length} characters")
    return start, end


def inside_ranges(offsets: Sequence[tuple[int, int]],
                  ranges: Sequence[tuple[int, int]]) -> MaskArray:
    """One flag per token: True where the token's characters lie wholly inside one of the
    [start, end) character `ranges` (a token without characters is never inside)."""
    bounds = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    inside = np.zeros(bounds.shape[0], dtype=np.bool_)
    for start, end in ranges:
        inside |= (bounds[:, 0] >= start) & (bounds[:, 1] <= end) & (bounds[:, 1] > bounds[:, 0])
    return inside
