"""The OpenAI-compatible server started with the command docs/vllm.md documents, as pasted,
serving two tenants through its tenancy front: the second reuses the first's document behind
its own private profile, the response header and `/metrics` show it, and the `openai` client
works as the docs show. The README shows the same command."""

from __future__ import annotations

import time

import pytest
from conftest import (
    ALICE,
    BOB,
    CARLA,
    DAN,
    REPO,
    profile_first,
    public_document,
    shareable_document_tokens,
)
from documented_server import counter, documented_command, get, prefill_lines

pytestmark = pytest.mark.slow
README = REPO / "README.md"
README_MARKER = ("<!-- the server command of docs/vllm.md, the same as pasted "
                 "(tests/vllm/test_openai_server_cpu.py) -->")


def test_the_readme_shows_the_tested_server_command():
    readme = documented_command(README, README_MARKER)
    assert readme == documented_command()
    assert "--tokenizer-mode cacheprune" in readme
    assert "--middleware cacheprune.vllm.tenancy.TenancyMiddleware" in readme
    assert "--host 127.0.0.1" in readme


def test_the_fourth_tenant_reuses_what_three_sent(served, tokenizer):
    from openai import OpenAI

    def client(tenant: str) -> OpenAI:
        return OpenAI(base_url=f"{served.base}/v1", api_key=served.keys[tenant][0])

    document = public_document("server")
    replies = [client(name).completions.with_raw_response.create(
        model="smollm2", prompt=profile_first(tenant, document), max_tokens=1, temperature=0)
        for name, tenant in (("alice", ALICE), ("carla", CARLA), ("dan", DAN))]
    first = replies[0]
    # Below the publication threshold (3 tenants), nothing was reused nor published.
    assert [int(r.headers["x-cacheprune-pooled-tokens"]) for r in replies[:2]] == [0, 0]
    deadline = time.monotonic() + 120  # the publication runs after the first token
    while counter(get(f"{served.base}/metrics"), "cacheprune:published_tokens_total") == 0:
        assert time.monotonic() < deadline, "the third tenant's segments were never published"
        time.sleep(0.5)
    bob = client("bob")
    prompt = profile_first(BOB, document)
    second = bob.completions.with_raw_response.create(
        model="smollm2", prompt=prompt, max_tokens=1, temperature=0)
    shareable = shareable_document_tokens(tokenizer, prompt, document)
    # What the client sees: the tokens the pool served, in a header of its own response.
    pooled = int(second.headers["x-cacheprune-pooled-tokens"])
    assert pooled >= 0.95 * len(shareable)
    assert int(first.headers["x-cacheprune-pooled-tokens"]) < pooled
    (line,) = prefill_lines(served.request_log, second.parse().id)
    assert line["num_pooled"] == pooled  # the header is the connector's own count
    metrics = get(f"{served.base}/metrics")
    assert counter(metrics, 'cacheprune:prompt_tokens_total') > 0
    assert counter(metrics, "vllm:external_prefix_cache_hits_total") >= \
        second.parse().usage.prompt_tokens - 1


def test_the_openai_client_streams_chat_with_its_api_key(served):
    from openai import OpenAI

    client = OpenAI(base_url=f"{served.base}/v1", api_key=served.keys["bob"][0])
    with client.chat.completions.with_streaming_response.create(
            model="smollm2", messages=[{"role": "user", "content": "Say hello."}],
            max_tokens=8, temperature=0, stream=True) as response:
        assert int(response.headers["x-cacheprune-pooled-tokens"]) == 0  # nothing to reuse
        text = "".join(chunk.choices[0].delta.content or "" for chunk in response.parse()
                       if chunk.choices)
    assert text.strip()
