"""Direct leakage on vLLM, from what a client sees: the cached-token count of a response.

vLLM's prefix cache hits whole blocks (128 tokens on CPU) and never the last prompt token, so
a prober that stops at its guess learns nothing; the attack that works sends the rest of the
prompt after the guess. This prober knows the template and every value of the victim's prompt
but the attacked one (the name), and the tokens of that name before the one it guesses; it
sends `text before the name + known tokens + guess + the victim's text after the name`, for
the true next token and a wrong one, and counts a token as recovered when the true guess is
reported more cached tokens. The last token of the name is found whenever a block boundary
follows it; other tokens when they end a block.
"""

from __future__ import annotations

from collections.abc import Callable

from cacheprune.models import ChatTokenizer
from cacheprune.serving.prompt import render_prompt
from eval.attacks.direct import NAME_SLOT, DirectLeakage, wrong_token
from eval.workload import Request


def probe_cached_counts(cached_tokens: Callable[[str], int], tokenizer: ChatTokenizer,
                        victims: list[Request]) -> DirectLeakage:
    """Attack each victim's name slot; the victims' requests must already have been served."""
    score = DirectLeakage()
    for victim in victims:
        slot = victim.template.slot_names.index(NAME_SLOT)
        text, (span,) = render_prompt(tokenizer, victim.messages,
                                      [victim.private_char_spans[slot]])
        before, after = text[:span[0]], text[span[1]:]
        secret_tokens = tokenizer.encode(text[span[0]:span[1]]).ids
        score.num_private_tokens += len(secret_tokens)
        for i, true_token in enumerate(secret_tokens):
            known = secret_tokens[:i]
            wrong = wrong_token(true_token, tokenizer.vocab_size)
            hits_wrong = cached_tokens(before + tokenizer.decode(known + [wrong]) + after)
            hits_true = cached_tokens(before + tokenizer.decode(known + [true_token]) + after)
            if hits_true > hits_wrong:
                score.num_recovered += 1
    return score
