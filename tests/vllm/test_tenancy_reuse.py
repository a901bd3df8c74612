"""The tenancy front's reading of the connector's request log (a real file, written the way the
worker writes it: appended line by line, possibly caught mid-line, truncated by an operator),
and its reading of prompts and answers in the OpenAI API's shapes."""

from __future__ import annotations

import json

from cacheprune.vllm.tenancy_reuse import PooledTokens, new_front_id
from cacheprune.vllm.tenancy_watch import answer_texts, prompt_texts


def prefill(request_id: str, num_pooled: int) -> str:
    return json.dumps({"event": "prefill", "request_id": request_id, "num_tokens": 900,
                       "num_local_tokens": 0, "reused_spans": [], "num_pooled": num_pooled,
                       "num_recomputed": 0, "num_computed": 900 - num_pooled}) + "\n"


def test_pooled_tokens_follow_the_front_id_through_vllms_request_ids(tmp_path):
    log = tmp_path / "requests.jsonl"
    one, two, other = new_front_id(), new_front_id(), new_front_id()
    pooled = PooledTokens(str(log))
    assert pooled.take(one) == 0  # no log yet
    line = prefill(f"cmpl-{one}-0-1a2b3c4d", 700)
    with log.open("a") as file:
        file.write(prefill(f"cmpl-{one}-1-5e6f7a8b", 40))  # a second choice
        file.write(json.dumps({"event": "settled", "request_id": f"cmpl-{one}-1-5e6f7a8b",
                               "num_published_tokens": 12}) + "\n")
        file.write(prefill("cmpl-not-from-the-front-0-1a2b", 300))
        file.write(line[:25])  # the worker is mid-line
    assert pooled.take(one) == 40
    with log.open("a") as file:
        file.write(line[25:])
        file.write(prefill(f"chatcmpl-{two}-9c8d7e6f", 512))
    assert pooled.take(one) == 700 and pooled.take(one) == 0  # taken once
    assert pooled.take(two) == 512
    log.write_text("")  # the operator truncates the log
    with log.open("a") as file:
        file.write(prefill(f"cmpl-{other}-0-00ff00ff", 9))
    assert pooled.take(other) == 9


def test_prompts_and_answers_in_the_api_shapes():
    assert prompt_texts({"prompt": "I am Ann."}) == ["I am Ann."]
    assert prompt_texts({"prompt": ["a", [1, 2], "b"]}) == ["a", "b"]
    assert prompt_texts({"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "I am Ann."},
                                     {"type": "image_url", "image_url": {"url": "x"}}]}]}) \
        == ["Be brief.", "I am Ann."]
    completion = {"id": "cmpl-1", "choices": [{"index": 0, "text": "ann@example.com"},
                                              {"index": 1, "text": "no"}]}
    assert answer_texts(json.dumps(completion).encode(), streamed=False) == \
        ["ann@example.com", "no"]
    chat = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi Ann"}}]}
    assert answer_texts(json.dumps(chat).encode(), streamed=False) == ["Hi Ann"]
    events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
              {"choices": [{"index": 0, "delta": {"content": "ann@"}}]},
              {"choices": [{"index": 0, "delta": {"content": "example.com"}}]},
              {"choices": [], "usage": {"prompt_tokens": 3}}]
    streamed = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + \
        "data: [DONE]\n\n"
    assert answer_texts(streamed.encode(), streamed=True) == ["ann@example.com"]
