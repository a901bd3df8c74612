"""Who speaks in a chat log: the nickname that starts each line is a username.

Chat exports and IRC logs start a line with its writer ('[09:02] <amber_k> morning all',
'[03.03.26, 18:52] Lukas: ja', 'meli: o el alias...'). The nickname is the writer's account
(a `USERNAME`, as the labelling conventions of datasets/pii_blind say); the same person named
in a message is a `PERSON`, which the name detector finds.

A line counts as a chat line when an optional time stamp is followed by `<nick>` or `nick:` and
a message. A `nick:` is a speaker only when it looks like an account, not a form's or a
header's label ('Subject:', 'Betreff:', 'Agent:', 'Note:'): lower-case or holding a digit, `_`
or `.`, or a popular given name that is no ordinary English word ('Lukas', 'Gonzalo'). A text
needs two chat lines with messages of two words or more, by two speakers or more, most lines by
someone who writes more than once: a lone 'mike: ok', a record's keys ('legal_name:', 'uid:')
and a YAML file's are left alone.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import regex

from cacheprune.detectors.base import Detector, Span
from cacheprune.detectors.name_gazetteer import COMMON_RANK
from cacheprune.detectors.name_tokens import WordReader
from cacheprune.detectors.name_words import DEFAULT_VOCABULARY_MODEL, load_name_words
from cacheprune.detectors.repeated_values import SPACELESS_LETTER

ENTITY = "USERNAME"
_STAMP = (r"(?:[\[(]?(?:\d{1,4}[./-]\d{1,2}[./-]\d{1,4},?[ \t]*)?\d{1,2}[:.]\d{2}(?::\d{2})?"
          r"(?:[ \t]?[AaPp]\.?[Mm]\.?)?[\])]?[ \t]*(?:[-–][ \t]*)?)")
# NOTE: emoji are part of a display name ('みお🍙'); ZWJ joins emoji sequences.
_NICK = r"[@+%~&]?[\p{L}\p{M}\d_.\-|^`\[\]{}\p{So}\u200d]{1,32}"
# NOTE: a 'nick:' line is not indented (a YAML record's keys are) unless a time stamp leads it.
_LINE = regex.compile(
    rf"(?m:^(?:[ \t]*(?P<stamp>{_STAMP})(?:<(?P<bracketed>{_NICK})>[ \t]+|(?P<colon>{_NICK})"
    rf"[ \t]*:[ \t]+)|[ \t]*<(?P<bracketed2>{_NICK})>[ \t]+|(?P<colon2>{_NICK})[ \t]*:[ \t]+)"
    r"(?P<message>\S[^\n]*))"
)
# Seconds in the stamp before a 'name:' make a log line ('[2024-02-14 08:00:03] cron: ...').
_SECONDS = regex.compile(r"\d:\d{2}:\d{2}")
# A nickname alone on its line before a message, then when it was written (Discord, comment
# threads): 'ShadowMonarch_ — Today at 8:41 PM', 'sergei_lvov  12 мар в 10:40'.
_HEADER = regex.compile(
    rf"(?m:^[ \t]*(?P<nick>{_NICK})(?:[ \t]+[—–-][ \t]+|[ \t]{{2,}})[^\n\d]{{0,24}}"
    r"(?:\d{1,4}[^\n\d]{1,8})?\d{1,2}[:.]\d{2}(?:[ \t]?[AaPp]\.?[Mm]\.?)?[ \t]*$\n[ \t]*\S)"
)
_MIN_LINES = 2
# Bots and network services are no one's account ('ChanServ', 'gitbot', 'dependabot').
_SERVICE = regex.compile(r"(?i:(?:bot|serv|\[bot\])$)")


class ChatSpeakerDetector(Detector):
    """Nicknames at the start of a chat log's lines."""

    def __init__(self, vocabulary_model: str = DEFAULT_VOCABULARY_MODEL,
                 name: str = "chat_speakers") -> None:
        self.name = name
        self.vocabulary_model = vocabulary_model
        words = load_name_words()
        self._reader = WordReader(words, vocabulary_model)
        self._roles = frozenset(w.casefold() for w in words.chat_roles)

    def describe(self) -> dict[str, Any]:
        return {"vocabulary_model": self.vocabulary_model, "min_lines": _MIN_LINES}

    def detect(self, text: str) -> list[Span]:
        turns: list[str] = []  # every line's speaker, roles included: the conversation's shape
        accounts: list[tuple[int, int]] = []
        num_messages = 0
        marked = 0  # lines a chat marks as its own: '<nick>', 'nick — Today at 8:41 PM'
        for line in _LINE.finditer(text):
            group = next(g for g in ("bracketed", "bracketed2", "colon", "colon2")
                         if line.group(g) is not None)
            if group == "colon" and _SECONDS.search(line.group("stamp")):
                continue  # a log line
            start, end = line.span(group)
            nick = text[start:end].lstrip("@+%~&")
            start = end - len(nick)
            if group.startswith("colon") and not self._may_speak(nick):
                continue
            turns.append(nick)
            marked += group.startswith("bracketed")
            if _several_words(line.group("message")):
                num_messages += 1
            if self._looks_like_account(nick) or (group.startswith("bracketed")
                                                  and not _SERVICE.search(nick)):
                accounts.append((start, end))
        for header in _HEADER.finditer(text):
            nick = header.group("nick")
            if self._looks_like_account(nick) and not nick[0].isdigit():
                turns.append(nick)
                num_messages += 1
                marked += 1
                accounts.append(header.span("nick"))
        if (num_messages < _MIN_LINES or 2 * num_messages < len(turns)
                or not (marked >= _MIN_LINES or _a_conversation(turns))):
            return []  # a record's keys with one-word values ('dn:', 'objectClass: account')
        return [Span(ENTITY, start, end, 0.7, self.name) for start, end in accounts]

    def _may_speak(self, nick: str) -> bool:
        """A nickname or a role, not a number, an acronym or a log level ('14:', 'INFO:')."""
        return len(nick) >= 2 and not nick.isdigit() and not nick.isupper()

    def _looks_like_account(self, nick: str) -> bool:
        if not self._may_speak(nick) or nick.casefold() in self._roles:
            return False  # 'operatore:', 'müşteri:', 'Agent:'
        if _SERVICE.search(nick) or nick.count(".") >= 2:
            return False  # 'ChanServ', 'gitbot', 'web-03.stg.example.internal'
        word = self._reader.word(nick, 0, len(nick))
        popular_given = word.first is not None and word.first <= COMMON_RANK
        # A nickname in a script without letter case ('राहुल') reads like a lower-case one.
        uncased = not any(ch.isupper() or ch.islower() for ch in nick)
        if nick[0].islower() or uncased or any(ch.isdigit() or ch in "_." for ch in nick):
            return popular_given or not word.ordinary  # 'meli', 'amber_k'; not 'note'
        return popular_given and not word.ordinary  # 'Lukas'; not 'Betreff', 'Agent'


def _several_words(message: str) -> bool:
    """Two words, or four letters of a script written without spaces (no one-word reply)."""
    return len(message.split()) >= 2 or len(SPACELESS_LETTER.findall(message)) >= 4


def _a_conversation(nicks: list[str]) -> bool:
    """A few people taking turns: most lines are by someone who writes more than once. A record's
    keys ('legal_name:', 'dob:', 'uid:') each stand once."""
    counts = Counter(nicks)
    repeated = sum(n for n in counts.values() if n >= 2)
    return len(counts) >= 2 and 2 * repeated >= len(nicks)
