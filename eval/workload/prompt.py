"""The evaluation's prompt layout: a private profile, the shared document with a private note
inside, and a question with a private detail after it.

Layout of the user message (one phrasing of each part is drawn per tenant or request):

    <greeting with the tenant's name, e.g. "Hi, I am {name} and ...">
    <profile lines: labelled ("Phone: {phone}") or running text ("I live at {address}.")>
    Please read the following document and answer my question.

    <document text up to a line or sentence boundary>
    <a note with a colleague's name and a number, id or secret>
    <rest of the document>

    <a private detail and the question, e.g. "My passport number is {passport} ...">
    Answer briefly, using only the document.

Values appear capitalised as generated or in lower case, labelled or inside running text,
before, inside and after the document. The document text is byte-identical for every tenant and
is always preceded by the same template line, so its tokens can be shared token for token.
"""

from __future__ import annotations

from dataclasses import dataclass

from eval.workload.template import PromptTemplate, Slot, Text

SYSTEM_PROMPT = (
    "You are a helpful assistant. Answer the user's question using only the document they "
    "provide. Keep the answer short."
)
DOCUMENT_INTRO = "Please read the following document and answer my question.\n\n"
QUESTION_MARK = "{question}"  # where a closing phrase puts the question


@dataclass(slots=True, frozen=True)
class SlotSpec:
    """A slot, the kind of value that fills it, and whether the value is written lower-case."""

    name: str
    kind: str
    lower: bool = False


@dataclass(slots=True, frozen=True)
class Phrase:
    """Literal text and slots; a closing phrase holds `QUESTION_MARK` once."""

    pieces: tuple[str | SlotSpec, ...]

    @property
    def slots(self) -> tuple[SlotSpec, ...]:
        return tuple(piece for piece in self.pieces if isinstance(piece, SlotSpec))


def _s(name: str, kind: str, lower: bool = False) -> SlotSpec:
    return SlotSpec(name, kind, lower)


GREETINGS = (
    Phrase(("Hello, my name is ", _s("name", "name"), ". Here are my details for your records.")),
    Phrase(("Hi, I am ", _s("name", "name"), " and I need help with a document.")),
    Phrase(("hey, ", _s("name", "name", lower=True), " here. some details first.")),
    Phrase(("This is ", _s("name", "name"), " writing; my details are below.")),
)
# Optional profile lines, by topic; a tenant's profile takes one phrasing of each, in a seeded
# order, and a prompt takes as many of them as bring its private share nearest the target.
PROFILE_TOPICS: tuple[tuple[Phrase, ...], ...] = (
    (Phrase(("Phone: ", _s("phone", "phone"))),
     Phrase(("You can call me on ", _s("phone", "phone"), " most evenings."))),
    (Phrase(("Home address: ", _s("address", "address"))),
     Phrase(("I live at ", _s("address", "address"), ".")),
     Phrase(("send letters to ", _s("address", "address", lower=True)))),
    (Phrase(("Account (IBAN): ", _s("iban", "iban"))),
     Phrase(("Please pay refunds into ", _s("iban", "iban"), "."))),
    (Phrase(("National ID: ", _s("national_id", "national_id"))),
     Phrase(("my id number is ", _s("national_id", "national_id")))),
    (Phrase(("Date of birth: ", _s("birth_date", "birth_date"))),
     Phrase(("I was born on ", _s("birth_date", "birth_date"), "."))),
    (Phrase(("Email: ", _s("email", "email"))),
     Phrase(("You can also write to ", _s("email", "email"), "."))),
    (Phrase(("Our staging API key is ", _s("api_key", "api_key"), " if the tools need it.")),
     Phrase(("API key: ", _s("api_key", "api_key")))),
    (Phrase(("The portal password is ", _s("password", "password"), ".")),
     Phrase(("password: ", _s("password", "password")))),
    (Phrase(("Emergency contact: ", _s("contact_name", "name"), ", phone ",
             _s("contact_phone", "phone"))),),
)
NOTES = (
    Phrase(("[Note to self: ask Dr. ", _s("colleague", "name"), " at ",
            _s("colleague_phone", "phone"), " about this part.]")),
    Phrase(("[note: ", _s("colleague", "name", lower=True),
            " says the shared folder password is ", _s("note_password", "password"), "]")),
    Phrase(("[Reminder: ", _s("colleague", "name"), " (id ", _s("note_id", "national_id"),
            ") disagrees with this section.]")),
    Phrase(("[Note: the deploy key for this is ", _s("note_key", "api_key"), "; ask ",
            _s("colleague", "name"), ".]")),
)
CLOSINGS = (
    Phrase(("My question (please reply to ", _s("reply_email", "email"), "): ", QUESTION_MARK)),
    Phrase(("My passport number is ", _s("passport", "passport"),
            " in case you need it. My question: ", QUESTION_MARK)),
    Phrase(("I moved to ", _s("new_address", "address"), " last week. My question: ",
            QUESTION_MARK)),
    Phrase(("Call me back on ", _s("callback_phone", "phone"), " if unclear. My question: ",
            QUESTION_MARK)),
    Phrase(("i was born ", _s("reply_birth_date", "birth_date"), ", so keep it simple: ",
            QUESTION_MARK)),
)


def build_template(
    greeting: Phrase,
    profile: tuple[Phrase, ...],
    document_head: str,
    note: Phrase,
    boundary_separator: str,
    document_tail: str,
    closing: Phrase,
    question: str,
) -> PromptTemplate:
    """The template of one request; `boundary_separator` follows the note ('\\n' or ' ')."""
    parts: list[Text | Slot] = []
    for phrase in (greeting, *profile):
        parts += _pieces(phrase, question)
        parts.append(Text("\n"))
    parts += [Text(DOCUMENT_INTRO), Text(document_head, is_document=True)]
    parts += _pieces(note, question)
    parts += [Text(boundary_separator), Text(document_tail, is_document=True), Text("\n\n")]
    parts += _pieces(closing, question)
    parts.append(Text("\nAnswer briefly, using only the document."))
    return PromptTemplate(system=SYSTEM_PROMPT, user_parts=tuple(_merged(parts)))


def _pieces(phrase: Phrase, question: str) -> list[Text | Slot]:
    return [Slot(piece.name) if isinstance(piece, SlotSpec)
            else Text(question if piece == QUESTION_MARK else piece)
            for piece in phrase.pieces]


def _merged(parts: list[Text | Slot]) -> list[Text | Slot]:
    """Adjacent literal texts of the same kind joined, so a template reads as one string."""
    merged: list[Text | Slot] = []
    for part in parts:
        last = merged[-1] if merged else None
        if (isinstance(part, Text) and isinstance(last, Text)
                and part.is_document == last.is_document):
            merged[-1] = Text(last.text + part.text, last.is_document)
        else:
            merged.append(part)
    return merged
