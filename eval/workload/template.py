"""Prompt templates with private slots: render a request exactly, or re-render it with guesses.

A template is public: the attacker of the evaluation (a PromptPeek-style prober) knows it and
re-renders the prompt with a guessed value in a slot, so rendering must be a pure function of
(template, slot values). Document text lives in the template as literal parts, never as a
format string, so braces in a paper cannot break rendering.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# A character range inside one chat message: (message index, start, end), end exclusive.
CharSpan = tuple[int, int, int]

SYSTEM_MESSAGE_INDEX = 0
USER_MESSAGE_INDEX = 1


@dataclass(slots=True, frozen=True)
class Text:
    """Literal template text; `is_document` marks the shared document's own text."""

    text: str
    is_document: bool = False


@dataclass(slots=True, frozen=True)
class Slot:
    """A place for one private value, named so a prober can put its guess there."""

    name: str


@dataclass(slots=True, frozen=True)
class RenderedPrompt:
    """Chat messages plus where each slot value and each piece of document text landed."""

    messages: list[dict[str, str]]
    slot_spans: dict[str, CharSpan]
    document_ranges: list[CharSpan]


@dataclass(slots=True, frozen=True)
class PromptTemplate:
    """A system message and a user message made of literal text and private slots."""

    system: str
    user_parts: tuple[Text | Slot, ...]

    def __post_init__(self) -> None:
        names = self.slot_names
        if len(set(names)) != len(names):
            raise ValueError(f"slot names must be unique, got {names}")

    @property
    def slot_names(self) -> tuple[str, ...]:
        """The slots in the order they appear in the user message."""
        return tuple(part.name for part in self.user_parts if isinstance(part, Slot))

    def render(self, values: Mapping[str, str]) -> RenderedPrompt:
        """The messages with `values` in the slots; every slot needs a non-empty value."""
        missing = [name for name in self.slot_names if name not in values]
        unknown = sorted(set(values) - set(self.slot_names))
        if missing or unknown:
            raise ValueError(f"slot values: missing {missing}, unknown {unknown}")
        pieces: list[str] = []
        slot_spans: dict[str, CharSpan] = {}
        document_ranges: list[CharSpan] = []
        offset = 0
        for part in self.user_parts:
            if isinstance(part, Slot):
                text = values[part.name]
                if not text:
                    raise ValueError(f"slot {part.name!r} needs a non-empty value")
                slot_spans[part.name] = (USER_MESSAGE_INDEX, offset, offset + len(text))
            else:
                text = part.text
                if part.is_document and text:
                    document_ranges.append((USER_MESSAGE_INDEX, offset, offset + len(text)))
            pieces.append(text)
            offset += len(text)
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": "".join(pieces)},
        ]
        return RenderedPrompt(messages, slot_spans, document_ranges)

    def user_text_before(self, slot: str, values: Mapping[str, str]) -> str:
        """The user message up to where `slot` starts, given the values of the slots before it.

        What a prober sends, followed by its guess, when it attacks `slot`.
        """
        if slot not in self.slot_names:
            raise ValueError(f"unknown slot {slot!r}; slots: {list(self.slot_names)}")
        pieces: list[str] = []
        for part in self.user_parts:
            if isinstance(part, Slot):
                if part.name == slot:
                    return "".join(pieces)
                if part.name not in values:
                    raise ValueError(f"slot {part.name!r} comes before {slot!r} and needs a value")
                pieces.append(values[part.name])
            else:
                pieces.append(part.text)
        raise AssertionError("unreachable: the slot was found in slot_names")

    def public_text_after(self, slot: str) -> str:
        """The literal text that follows `slot` up to the next slot: public, so a prober sends
        it after its guess (a probe must be long enough to reach the pool's index windows)."""
        if slot not in self.slot_names:
            raise ValueError(f"unknown slot {slot!r}; slots: {list(self.slot_names)}")
        index = next(i for i, part in enumerate(self.user_parts)
                     if isinstance(part, Slot) and part.name == slot)
        pieces: list[str] = []
        for part in self.user_parts[index + 1:]:
            if isinstance(part, Slot):
                break
            pieces.append(part.text)
        return "".join(pieces)
