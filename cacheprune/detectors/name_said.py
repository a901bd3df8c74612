"""Lower-case names before a word that says a person spoke: 'norma fisher says', 'bartholomäus
caspar says', 'frau aline mentzel says', 'cevale permun zorlu aslan says'.

Such a word ('says', 'here', 'sagt', 'dijo'...) is strong evidence that the words right before
it are a person, so they need less from the gazetteer than lower-case words elsewhere: two to
four lower-case words, no stop word among them; a known name or a word in no list and no
English word first; then names, particles or such words (or, after a given name or a
particle, a noun in no list: 'brunelleschi'); and at least one word that is a name and no
English word ('norma', 'baxter'), a word in no list and no English word ('bartholomäus'), or
a title before them ('miss dawn hill says').
"""

from __future__ import annotations

from collections.abc import Callable

from cacheprune.detectors.name_tokens import NameWord

_MAX_WORDS = 4


def _unlisted(word: NameWord) -> bool:
    """In no list and no English word ('bartholomäus', 'misicher')."""
    return not word.known and not word.ordinary and not word.noun and word.end - word.start >= 3


def _fits(run: list[NameWord], titled: bool) -> bool:
    first, last = run[0], run[-1]
    if first.particle or last.particle or not (first.known or _unlisted(first)):
        return False
    # A noun in no list may be the family name after a known given name or a particle
    # ('piero brunelleschi', 'van wessex'), not a word further on ('john smith keeps parking
    # here').
    if not all(w.known or w.particle or _unlisted(w) or (w.noun and (
            (len(run) == 2 and first.strong) or (w is last and run[-2].particle)))
            for w in run[1:]):
        return False
    return titled or any(w.strong or _unlisted(w) for w in run)


def names_before_said(text: str, words: list[NameWord], is_said: Callable[[int], bool],
                      is_stop: Callable[[str], bool],
                      is_title: Callable[[str], bool]) -> list[tuple[int, int]]:
    """[start, end) of each lower-case name right before a word for which `is_said(start)`."""
    found = []
    for index, cue in enumerate(words):
        if index < 2 or not is_said(cue.start) or text[words[index - 1].end:cue.start] != " ":
            continue
        run: list[NameWord] = []
        titled = False
        position = index - 1
        while position >= 0 and len(run) < _MAX_WORDS:
            word = words[position]
            key = text[word.start:word.end].casefold()
            if not word.lower:
                break
            if is_title(key):
                titled = True
                break
            if is_stop(key) and not word.particle:
                break
            run.insert(0, word)
            if position == 0 or text[words[position - 1].end:word.start] != " ":
                titled = position > 0 and is_title(
                    text[words[position - 1].start:words[position - 1].end].casefold())
                break
            position -= 1
        for size in range(len(run), 1, -1):
            if _fits(run[-size:], titled and size == len(run)):
                found.append((run[-size].start, run[-1].end))
                break
    return found
