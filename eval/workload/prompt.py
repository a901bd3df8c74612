"""The evaluation's prompt layout: a private profile, the shared document with a private note
inside, and the question with a private reply address.

Layout of the user message (slots in braces):

    Hello, my name is {name}. Here are my details for your records.
    Email: {email}                                   <- optional profile lines, see PROFILE_LINES
    ...
    Please read the following document and answer my question.

    <document text up to a line or sentence boundary>
    [Note to self: ask Dr. {colleague} at {colleague_phone} about this part.]
    <rest of the document>

    My question (please reply to {reply_email}): <question>
    Answer briefly, using only the document.

The document text is byte-identical for every tenant and is always preceded by the same
template line and a newline, so its tokens (and those of each piece around the note) can be
shared token for token.
"""

from __future__ import annotations

from dataclasses import dataclass

from eval.workload.template import PromptTemplate, Slot, Text

SYSTEM_PROMPT = (
    "You are a helpful assistant. Answer the user's question using only the document they "
    "provide. Keep the answer short."
)


@dataclass(slots=True, frozen=True)
class SlotSpec:
    """A slot and the kind of synthetic value that fills it (a key of `GENERATORS`)."""

    name: str
    kind: str


@dataclass(slots=True, frozen=True)
class ProfileLine:
    """One optional line of the profile: literal text and slots, ending in a newline."""

    pieces: tuple[str | SlotSpec, ...]

    @property
    def slots(self) -> tuple[SlotSpec, ...]:
        return tuple(piece for piece in self.pieces if isinstance(piece, SlotSpec))


# In the order they are added when a prompt needs more private text to reach its target share.
PROFILE_LINES = (
    ProfileLine(("Email: ", SlotSpec("email", "email"))),
    ProfileLine(("Phone: ", SlotSpec("phone", "phone"))),
    ProfileLine(("Account (IBAN): ", SlotSpec("account", "account"))),
    ProfileLine(("Home address: ", SlotSpec("address", "address"))),
    ProfileLine(("Date of birth: ", SlotSpec("birth_date", "birth_date"))),
    ProfileLine(
        (
            "Emergency contact: Dr. ",
            SlotSpec("contact_name", "name"),
            ", phone ",
            SlotSpec("contact_phone", "phone"),
        )
    ),
    ProfileLine(("Work email: ", SlotSpec("work_email", "email"))),
    ProfileLine(("Mailing address: ", SlotSpec("mailing_address", "address"))),
)
# Slots every prompt has, one per placement: before, inside and after the document.
REQUIRED_SLOTS = (
    SlotSpec("name", "name"),
    SlotSpec("colleague", "name"),
    SlotSpec("colleague_phone", "phone"),
    SlotSpec("reply_email", "email"),
)


def build_template(
    document_head: str,
    document_tail: str,
    boundary_separator: str,
    question: str,
    profile_lines: tuple[ProfileLine, ...],
) -> PromptTemplate:
    """The template of one request; `boundary_separator` follows the note ('\\n' or ' ')."""
    parts: list[Text | Slot] = [Text("Hello, my name is "), Slot("name")]
    parts.append(Text(". Here are my details for your records.\n"))
    for line in profile_lines:
        for piece in line.pieces:
            parts.append(Slot(piece.name) if isinstance(piece, SlotSpec) else Text(piece))
        parts.append(Text("\n"))
    parts += [
        Text("Please read the following document and answer my question.\n\n"),
        Text(document_head, is_document=True),
        Text("[Note to self: ask Dr. "),
        Slot("colleague"),
        Text(" at "),
        Slot("colleague_phone"),
        Text(f" about this part.]{boundary_separator}"),
        Text(document_tail, is_document=True),
        Text("\n\nMy question (please reply to "),
        Slot("reply_email"),
        Text(f"): {question}\nAnswer briefly, using only the document."),
    ]
    return PromptTemplate(system=SYSTEM_PROMPT, user_parts=tuple(parts))
