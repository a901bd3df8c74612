"""Values a text gives as examples of a format: spans the chain drops before masking.

Documentation, forms and how-tos show what a plate, an ID or a login looks like ('Beispiel:
HH-AB 123', '例如"京A·12345"', 'format AA123AA', 'e.g. jdoe'): the value right after such a word
is a sample of the format, not a tenant's value.

NOTE: only right after the word (a colon, a quote or a bracket between), on its line; a private
value a tenant introduces this way is still behind the pool's publication threshold.
"""

from __future__ import annotations

import regex

from cacheprune.detectors.base import Span

# 'e.g.', 'for example', 'z. B.', 'p. ej.', 'np.', 'ör.', 'например', '例如', '例えば', '예:'...
_EXAMPLE_BEFORE = regex.compile(
    r"(?:(?<![\p{L}\p{N}])(?i:e\.[ ]?g\.?|eg\.|for example|for instance|example|examples|format|"
    r"beispiel|beispiele|z\.[ ]?b\.|zb\.|bspw\.|par exemple|p\.[ ]?ex\.|exemple|por ejemplo|"
    r"p\.[ ]?ej\.|ej\.|ejemplo|formato|ad esempio|esempio|es\.|por exemplo|exemplo|"
    r"bijvoorbeeld|bijv\.|bv\.|np\.|na przykład|przykład|örneğin|ör\.|mesela|biçim|например|"
    r"напр\.|пример|формат|μορφή|π\.χ\.|ví dụ|contoh|misalnya|उदाहरण|مثال|مثلا|לדוגמה)"
    r"|例如|比如|例えば|예를 들어|예시|格式|形式|(?:例|예)(?=[ \t]*[:：]))"
    r"[ \t]*[:：]?[ \t]*[\"'“„«(（「]?[ \t]*$"
)
_LOOK_BACK = 24


def drop_examples(text: str, spans: list[Span]) -> list[Span]:
    """`spans` without the values given as examples."""
    return [s for s in spans if not _is_example(text, s.start)]


def _is_example(text: str, start: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    return _EXAMPLE_BEFORE.search(text, max(line_start, start - _LOOK_BACK), start) is not None
