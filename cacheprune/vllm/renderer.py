"""vLLM's chat renderer, tokenizing what tenants wrote with special tokens split.

vLLM renders chat messages to text with the chat template and then tokenizes that text as a
whole, so `<|im_start|>` typed inside a message becomes the control token and a tenant can open
a system turn. With `tokenizer_mode="cacheprune"` (registered by the plugin, `register()`),
vLLM's Hugging Face renderer still renders the template, and this subclass tokenizes the result
as the own engine does (`ChatTokenizer.encode_prompt`): the template's text may hold control
tokens, each message's content is tokenized with special tokens split into ordinary text. A
plain completion prompt is all tenant text: it is tokenized with special tokens split too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tokenizers import Tokenizer
from vllm.renderers.hf import HfRenderer
from vllm.renderers.params import ChatParams

from cacheprune.models import ChatTokenizer
from cacheprune.vllm import TOKENIZER_MODE


def _as_text(params: ChatParams) -> ChatParams:
    # NOTE: vLLM's renderer has the template tokenize its own output by default (the whole
    # text, control tokens recognized everywhere); ask it for text and tokenize it here.
    return replace(params, chat_template_kwargs={**params.chat_template_kwargs,
                                                 "tokenize": False})


class CachePruneRenderer(HfRenderer):
    """HfRenderer whose token ids never hold a control token spelled inside a message."""

    def __init__(self, config: Any, tokenizer: Any) -> None:
        super().__init__(config, tokenizer)
        backend = getattr(self.get_tokenizer(), "backend_tokenizer", None)
        if not isinstance(backend, Tokenizer):
            raise ValueError(f"tokenizer_mode={TOKENIZER_MODE!r} needs a fast Hugging Face "
                             f"tokenizer (tokenizer.json); got {type(tokenizer).__name__}")
        self._splitting = ChatTokenizer(backend, None, frozenset())

    def render_messages(self, messages: Any, params: Any) -> tuple[Any, Any]:
        conversation, prompt = super().render_messages(messages, _as_text(params))
        return conversation, self._tokenized(conversation, prompt)

    async def render_messages_async(self, messages: Any, params: Any) -> tuple[Any, Any]:
        conversation, prompt = await super().render_messages_async(messages, _as_text(params))
        return conversation, self._tokenized(conversation, prompt)

    def _tokenized(self, conversation: list[Any], prompt: Any) -> dict[str, Any]:
        """The rendered text's token ids, each message's content with special tokens split."""
        text = prompt.get("prompt")
        if "prompt_token_ids" in prompt or not isinstance(text, str):
            raise ValueError("the cacheprune renderer tokenizes rendered chat text; this request "
                             "rendered to tokens or embeddings (tokenize=True, prompt embeds "
                             "or multimodal input are not supported with "
                             f"tokenizer_mode={TOKENIZER_MODE!r})")
        spans: list[tuple[int, int]] = []
        cursor = 0
        for index, message in enumerate(conversation):
            content = message.get("content")
            if content is None or content == "":
                continue
            if not isinstance(content, str):
                raise ValueError(f"message {index}: the cacheprune renderer needs text content "
                                 f"(got {type(content).__name__})")
            start = text.find(content, cursor)
            if start < 0:
                raise ValueError(f"message {index}'s content does not appear verbatim in the "
                                 "rendered prompt; its control tokens cannot be told from the "
                                 "template's")
            spans.append((start, start + len(content)))
            cursor = start + len(content)
        ids = self._splitting.encode_prompt(text, spans).ids
        return {**prompt, "prompt_token_ids": ids}

    def _tokenize_prompt(self, prompt: Any, params: Any) -> Any:
        """A completion prompt: all of it is the tenant's text, special tokens split."""
        kwargs = params.get_encode_kwargs()
        want_offsets = self._wants_offsets(prompt, params)
        if want_offsets:
            kwargs = {**kwargs, "return_offsets_mapping": True}
        encoding = self.get_tokenizer()(prompt["prompt"], **kwargs, split_special_tokens=True)
        return self._build_tokens_prompt(
            encoding["input_ids"], prompt,
            offset_mapping=encoding["offset_mapping"] if want_offsets else None)
