"""Direct leakage on vLLM, from what a client sees: the cached-token count of a response.

vLLM's prefix cache hits whole blocks (128 tokens on CPU) and never the last prompt token, so
a prober that stops at its guess learns nothing; the attack that works sends the rest of the
prompt after the guess. This prober knows the template and every value of the victim's prompt
but the attacked one (the name), and the tokens of that name before the one it guesses; it
sends the victim's messages with the name replaced by `known tokens + guess`, for the true next
token and a wrong one, and counts a token as recovered when the true guess is
reported more cached tokens. The last token of the name is found whenever a block boundary
follows it; other tokens when they end a block.
"""

from __future__ import annotations

from collections.abc import Callable

from cacheprune.models import ChatTokenizer
from cacheprune.serving import Messages
from eval.attacks.direct import NAME_SLOT, DirectLeakage, wrong_token
from eval.workload import Request


def probe_cached_counts(cached_tokens: Callable[[Messages], int], tokenizer: ChatTokenizer,
                        victims: list[Request]) -> DirectLeakage:
    """Attack each victim's name slot; the victims' requests must already have been served.
    A probe is chat messages, tokenized as the victim's were (content with special tokens
    split)."""
    score = DirectLeakage()
    for victim in victims:
        slot = victim.template.slot_names.index(NAME_SLOT)
        index, start, end = victim.private_char_spans[slot]
        secret_tokens = tokenizer.encode(victim.messages[index]["content"][start:end]).ids
        score.num_private_tokens += len(secret_tokens)
        for i, true_token in enumerate(secret_tokens):
            known = secret_tokens[:i]
            wrong = wrong_token(true_token, tokenizer.vocab_size)
            hits_wrong = cached_tokens(_with_guess(victim, slot, tokenizer.decode(known + [wrong])))
            hits_true = cached_tokens(_with_guess(victim, slot,
                                                  tokenizer.decode(known + [true_token])))
            if hits_true > hits_wrong:
                score.num_recovered += 1
    return score


def _with_guess(victim: Request, slot: int, guess: str) -> Messages:
    """The victim's messages with the private value of `slot` replaced by `guess`."""
    index, start, end = victim.private_char_spans[slot]
    messages = [dict(message) for message in victim.messages]
    content = messages[index]["content"]
    messages[index]["content"] = content[:start] + guess + content[end:]
    return messages
