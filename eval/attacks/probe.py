"""What the attacker sends and sees: a probe is a prompt from its own tenant, answered with one
token; it reads the engine's reported hit count and the time to the first token."""

from __future__ import annotations

from dataclasses import dataclass

from cacheprune.models import ChatTokenizer
from cacheprune.serving import Engine, RequestRecord, SamplingParams
from eval.workload import Request, SlotInfo

ATTACKER_TENANT = "prober"
_ONE_TOKEN = SamplingParams(max_new_tokens=1)
# NOTE: a probe ends with this text so that the guessed tokens are never the prompt's last
# token (which every engine recomputes); no private value or template text contains '§'.
PROBE_END = " §"
# Suffix tokens the attacker appends after a full guess: a right guess then hits them too.
SUFFIX_TOKENS = 4


@dataclass(slots=True, frozen=True)
class ProbeResult:
    hits: int
    ttft_s: float


class Prober:
    """Sends the attacker's probes to one engine and counts them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.num_probes = 0

    @property
    def tokenizer(self) -> ChatTokenizer:
        return self.engine.tokenizer

    def send(self, system: str, user_text: str) -> ProbeResult:
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": user_text + PROBE_END}]
        record = send_probe(self.engine, messages)
        self.num_probes += 1
        return ProbeResult(record.num_hit_tokens, record.stats.ttft_s)


def send_probe(engine: Engine, messages: list[dict[str, str]]) -> RequestRecord:
    """One probe from the attacker's account. Against a publication threshold the attacker
    sends it twice and reads the second answer: the first may be what lifts a count to k and
    publishes the guessed text, the second would then show the hit."""
    repeats = 2 if engine.config.applied_threshold > 1 else 1
    for _ in range(repeats):
        record = engine.generate(ATTACKER_TENANT, messages, _ONE_TOKEN)
    return record


@dataclass(slots=True, frozen=True)
class SlotTarget:
    """One private value of a victim, as the attacker sees it.

    The attacker knows the template, hence `system`, `suffix` and what kind of value fills the
    slot; it is also given the victim's values *before* the slot (`prefix`), the strongest
    position for a prober. `value` is the ground truth, used only to score a claim.
    """

    slot: str
    info: SlotInfo
    system: str
    prefix: str
    suffix: str
    value: str

    @classmethod
    def of(cls, victim: Request, slot: str) -> SlotTarget:
        template = victim.template
        return cls(slot, victim.slots[slot], template.system,
                   template.user_text_before(slot, victim.slot_values),
                   template.public_text_after(slot), victim.slot_values[slot])


def split_value(tokenizer: ChatTokenizer, prefix: str, value: str) -> tuple[str, list[int]]:
    """(fixed text, value tokens): the tokens holding any character of `value` after `prefix`,
    and the text before the first of them (it may take the space before the value too)."""
    encoding = tokenizer.encode(prefix + value)
    covering = [i for i, (start, end) in enumerate(encoding.offsets)
                if end > len(prefix) and start < len(prefix) + len(value)]
    if not covering:
        raise ValueError(f"no token covers the value after {prefix[-20:]!r}")
    fixed = (prefix + value)[: encoding.offsets[covering[0]][0]]
    return fixed, [encoding.ids[i] for i in covering]


def suffix_head(tokenizer: ChatTokenizer, suffix: str) -> tuple[str, int]:
    """The first `SUFFIX_TOKENS` tokens of the template text after a slot: (text, count)."""
    encoding = tokenizer.encode(suffix)
    if not encoding.ids:
        return "", 0
    count = min(SUFFIX_TOKENS, len(encoding.ids))
    return suffix[: encoding.offsets[count - 1][1]], count


def tokens_from(tokenizer: ChatTokenizer, text: str, start: int) -> int:
    """How many tokens of `text` begin at or after character `start`."""
    return sum(1 for begin, _ in tokenizer.encode(text).offsets if begin >= start)
