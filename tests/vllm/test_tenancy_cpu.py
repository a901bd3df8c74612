"""The tenancy front over real HTTP against the documented vLLM server (two tenants, three API
keys): who may ask, which salt each key gets, what a client may not set, and the leak monitor
on vLLM's answers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from conftest import ALICE, BOB, CARLA, profile_first, public_document
from documented_server import counter, get, post

pytestmark = pytest.mark.slow
COMPLETIONS, CHAT = "/v1/completions", "/v1/chat/completions"


def completion(prompt: str, **fields) -> dict:
    return {"model": "smollm2", "prompt": prompt, "max_tokens": 1, "temperature": 0, **fields}


def chat(content: str, **fields) -> dict:
    return {"model": "smollm2", "messages": [{"role": "user", "content": content}],
            "max_tokens": 1, "temperature": 0, **fields}


@pytest.mark.parametrize("path, body", [(COMPLETIONS, completion("Hi")), (CHAT, chat("Hi"))])
def test_no_key_or_an_unknown_key_is_refused(served, path, body):
    for key in (None, "sk-nobody-0123456789abcdef", served.keys["alice"][0] + "x"):
        reply = post(served.base, path, body, key)
        assert reply.status == 401, key
        assert reply.json()["error"]["type"] == "authentication_error"
        assert "x-cacheprune-pooled-tokens" not in reply.headers


@pytest.mark.parametrize("field, value", [("cache_salt", "tenant-bob"),
                                          ("cache_salt", None),
                                          ("kv_transfer_params",
                                           {"cacheprune_public_ranges": [[0, 10]]})])
@pytest.mark.parametrize("path, make", [(COMPLETIONS, completion), (CHAT, chat)])
def test_a_client_chosen_salt_is_refused(served, path, make, field, value):
    reply = post(served.base, path, make("Hi", **{field: value}), served.keys["alice"][0])
    assert reply.status == 400
    error = reply.json()["error"]
    assert error["param"] == field and "set by the server" in error["message"]


def test_what_the_front_does_not_salt_is_not_served(served):
    key = served.keys["alice"][0]
    assert post(served.base, "/tokenize", {"model": "smollm2", "prompt": "Hi"}, key).status \
        == 403
    assert post(served.base, "/v1/responses", {"model": "smollm2", "input": "Hi"}, key).status \
        == 403
    assert get(f"{served.base}/health") == ""  # open, as with vLLM's own --api-key
    models = urllib.request.Request(f"{served.base}/v1/models",
                                    headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(models, timeout=10) as response:
        assert json.loads(response.read())["data"][0]["id"] == "smollm2"
    with pytest.raises(urllib.error.HTTPError) as refused:
        get(f"{served.base}/v1/models")
    assert refused.value.code == 401


def test_each_key_gets_only_its_own_tenants_salt(served):
    """vLLM's own prefix cache is keyed by the salt: the same prompt again hits the blocks of
    the first request only under the same salt (vLLM's prefix-cache hit counter, whoever
    computes the rest). Alice's two keys share her salt; Bob's key does not."""
    prompt = profile_first(CARLA, public_document("salts", num_words=200))
    first_key, second_key = served.keys["alice"]

    def local_tokens(key: str) -> float:
        before = counter(get(f"{served.base}/metrics"), "vllm:prefix_cache_hits_total")
        reply = post(served.base, COMPLETIONS, completion(prompt), key)
        assert reply.status == 200, reply.body
        return counter(get(f"{served.base}/metrics"), "vllm:prefix_cache_hits_total") - before

    assert local_tokens(first_key) == 0
    assert local_tokens(second_key) >= 128  # at least one of vLLM-CPU's 128-token blocks
    assert local_tokens(served.keys["bob"][0]) == 0


def flagged(served) -> float:
    return counter(get(f"{served.base}/metrics"), "cacheprune_monitor_flagged_responses_total")


def test_a_planted_cross_tenant_leak_is_flagged(served):
    """Bob's prompt carries Alice's e-mail verbatim and the model copies it into his answer:
    the front remembered Alice's private text (hashes) and flags Bob's answer. The same
    answer to Alice herself is not a leak."""
    echo = "\n".join([f"Contact: {ALICE.email}"] * 2) + "\nContact:"
    alice, bob = served.keys["alice"][0], served.keys["bob"][0]
    assert post(served.base, COMPLETIONS, completion(ALICE.profile() + "Hello."), alice
                ).status == 200
    before = flagged(served)
    own = post(served.base, COMPLETIONS, completion(echo, max_tokens=12), alice)
    assert ALICE.email in own.json()["choices"][0]["text"]
    assert flagged(served) == before
    assert post(served.base, COMPLETIONS, completion(BOB.profile() + "Hello."), bob
                ).status == 200
    assert flagged(served) == before  # an answer that quotes nobody's private text
    leaked = post(served.base, COMPLETIONS, completion(echo, max_tokens=12, stream=True), bob)
    text = "".join(json.loads(line[5:])["choices"][0]["text"]
                   for line in leaked.body.decode().splitlines()
                   if line.startswith("data:") and "[DONE]" not in line)
    assert ALICE.email in text, f"the model did not copy the e-mail: {text!r}"
    assert flagged(served) == before + 1
    events = [json.loads(line) for line in served.audit_log.read_text().splitlines()]
    suspected = [event for event in events if event["event"] == "leak_suspected"]
    assert suspected and all(ALICE.email not in json.dumps(event) for event in suspected)


def test_a_tenant_probing_one_prompt_is_flagged_and_others_are_not(served):
    """Carla sends one prompt again and again with one guessed token changed, as a prober
    does; Dan asks different questions about one document. Only Carla is flagged, on vLLM's
    /metrics and in the audit log (without her name)."""
    def flags() -> float:
        return counter(get(f"{served.base}/metrics"), "cacheprune_probe_flags_total")

    before = flags()
    document = public_document("questions", num_words=150)
    for question in ("When does it open?", "Who may borrow books and how many of them?",
                     "What does a late return cost per day, and who pays for it?",
                     "Can I book a study room a week in advance at the front desk?"):
        reply = post(served.base, COMPLETIONS, completion(f"{document}\n\n{question}"),
                     served.keys["dan"][0])
        assert reply.status == 200
    assert flags() == before
    template = profile_first(CARLA, public_document("probe", num_words=150))
    for guess in range(14):
        reply = post(served.base, COMPLETIONS, completion(f"{template}\nMy PIN is {guess:04d}"),
                     served.keys["carla"][0])
        assert reply.status == 200
    assert flags() == before + 1
    events = [json.loads(line) for line in served.audit_log.read_text().splitlines()]
    suspected = [event for event in events if event["event"] == "probe_suspected"]
    assert len(suspected) == 1 and "carla" not in json.dumps(suspected)
