"""Cold prompts go to vLLM (`cold_probe`): the scheduler half looks each prompt up in a real
file pool and answers vLLM 0 for one the pool has little of; the k-th tenant's cold prompt is
cacheprune's: the worker publishes it from its tokens alone, then prefills it from what it
published, in one step, and the next tenant's prompt is warm. Real model, real detectors, a
paged cache in memory, no vLLM engine."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from cacheprune.detectors import load_policy
from cacheprune.engine import Transformer
from cacheprune.serving import Engine, EngineConfig
from cacheprune.vllm import kv_layout
from cacheprune.vllm.blend import Blender
from cacheprune.vllm.cheap_first import MAX_DEFERRALS
from cacheprune.vllm.cold_probe import ColdProbe, Route, new_text_after
from cacheprune.vllm.detection_thread import PENDING
from cacheprune.vllm.orders import StepOrders
from cacheprune.vllm.request_log import RequestLog
from cacheprune.vllm.scheduler_side import SchedulerSide
from cacheprune.vllm.settings import parse_settings
from cacheprune.vllm.worker_side import WorkerSide

POOL_KEY = "cacheprune-tests-pool-key-0123456789abcdef"
BLOCK_SIZE = 16
NUM_BLOCKS = 64
DOCUMENT = ("The estuary's tide tables are printed each spring by the harbour office; the "
            "ferry timetable follows them closely through the summer months, and the pilots "
            "keep a copy on the bridge of every boat that crosses the bar at low water. ") * 4


def prompt(name: str, email: str) -> str:
    return (f"You answer questions for {name}, e-mail {email}.\n\nDocument:\n{DOCUMENT}\n\n"
            "Question: who keeps a copy of the tables? Answer:")


def vllm_request(tokenizer, request_id: str, tenant: str, text: str) -> SimpleNamespace:
    """What the scheduler half reads of vLLM's request."""
    ids = tokenizer.encode(text).ids
    return SimpleNamespace(request_id=request_id, prompt_token_ids=ids, all_token_ids=list(ids),
                           num_tokens=len(ids), cache_salt=tenant, mm_features=[],
                           prompt_embeds=None, pooling_params=None,
                           status=SimpleNamespace(name="FINISHED_LENGTH_CAPPED"))


@pytest.fixture
def deployment(default_model, tmp_path):
    """The two halves over one file pool, as in two processes: the scheduler's probe through
    an engine whose model is on the meta device, the worker's blender over the real model.
    Detection inline: each answer comes at the first call."""
    yield from two_halves(default_model, tmp_path, detection_thread=False)


@pytest.fixture
def threaded(default_model, tmp_path):
    """The same with detection (and lookups) in the scheduler's detection thread, started
    when a request arrives, as the connector runs by default."""
    yield from two_halves(default_model, tmp_path, detection_thread=True)


@pytest.fixture
def fifo(default_model, tmp_path):
    """The same, with `cheap_first` off: vLLM's own order."""
    yield from two_halves(default_model, tmp_path, detection_thread=True, cheap_first=False)


def two_halves(default_model, tmp_path, **settings):
    model, tokenizer = default_model
    config = EngineConfig(pool_url=f"file://{tmp_path / 'pool'}", pool_key=POOL_KEY,
                          publish_threshold=2)
    policy = load_policy()
    with torch.device("meta"):
        shape_only = Transformer(model.config, model.model_id)
    probe = ColdProbe(Engine(shape_only, tokenizer, policy, config))
    scheduler = SchedulerSide(parse_settings({"pool_url": config.pool_url,
                                              "publish_threshold": 2, **settings}),
                              tokenizer, policy, min_tokens=64, probe=probe)
    worker_engine = Engine(model, tokenizer, policy, config)
    worker = WorkerSide(Blender(worker_engine), BLOCK_SIZE,
                        kv_layout.token_major_layout(BLOCK_SIZE, model.config.head_dim),
                        model.config.num_layers, RequestLog(str(tmp_path / "requests.jsonl")))
    worker.register({f"model.layers.{i}.self_attn.attn": torch.zeros(
        NUM_BLOCKS, model.config.num_kv_heads, BLOCK_SIZE, 2 * model.config.head_dim)
        for i in range(model.config.num_layers)})
    yield SimpleNamespace(scheduler=scheduler, worker=worker, engine=worker_engine,
                          tokenizer=tokenizer, probe=probe, log=tmp_path / "requests.jsonl")
    scheduler.close()
    worker.close()


def blocks(request, first: int = 0) -> list[int]:
    """Block ids for `request`'s tokens, from `first` on (each request of a test its own)."""
    return list(range(first, first + -(-request.num_tokens // BLOCK_SIZE)))


def step(deployment, request, num_external: int, first_block: int = 0) -> StepOrders:
    """vLLM schedules `request` with `num_external` tokens from the connector; the worker gets
    the step's orders, and its report goes back to the scheduler."""
    deployment.scheduler.after_alloc(request, blocks(request, first_block), num_external)
    orders = deployment.scheduler.build_orders(admits=True)
    deployment.worker.start_step(orders)
    deployment.worker.end_step()
    report = deployment.worker.take_report()
    if report is not None:
        deployment.scheduler.worker_reported(report)
    return orders


def log_lines(deployment, event: str) -> dict[str, dict]:
    lines = [json.loads(line) for line in deployment.log.read_text().splitlines()]
    return {line["request_id"]: line for line in lines if line["event"] == event}


def test_cold_prompts_go_to_vllm_and_the_kth_tenant_publishes_first(deployment):
    tokenizer = deployment.tokenizer
    first = vllm_request(tokenizer, "a", "tenant-a", prompt("Ada Lovegood", "ada@example.com"))
    # First tenant, k = 2: nothing common yet, nothing to publish: vLLM computes it alone.
    assert deployment.scheduler.matched_tokens(first, 0) == 0
    orders = step(deployment, first, 0)
    assert orders.prefills == []
    (logged,) = [json.loads(line) for line in deployment.log.read_text().splitlines()]
    assert logged == {"event": "prefill", "request_id": "a", "num_tokens": first.num_tokens,
                      "num_local_tokens": 0, "reused_spans": [], "num_pooled": 0,
                      "num_recomputed": 0, "num_computed": first.num_tokens,
                      "num_published_first": 0, "computed_by": "vllm"}
    assert step(deployment, first, 0).vllm_prefills == []  # once, a preemption aside
    deployment.scheduler.finished(first)

    second = vllm_request(tokenizer, "b", "tenant-b", prompt("Bo Quint", "bo@example.com"))
    # Second tenant: the document is common now and the pool has none of it, and the prompt
    # holds a private value (the private-free pass computes all it stages): cacheprune
    # publishes the prompt's new text first, then prefills the prompt from the pool, in the
    # step that admits it.
    assert deployment.scheduler.matched_tokens(second, 16) == second.num_tokens - 1 - 16
    (order,) = step(deployment, second, second.num_tokens - 1 - 16).prefills
    assert order.publish_first and order.num_local_tokens == 16
    assert order.request.num_private > 0
    assert order.request.status.name == "PREFILLED"
    document_tokens = len(tokenizer.encode(DOCUMENT).ids)
    published = log_lines(deployment, "settled")["b"]["num_published_tokens"]
    assert published > 0.8 * document_tokens
    prefill = log_lines(deployment, "prefill")["b"]
    # What it reused it published itself: no other tenant's tokens.
    assert prefill["num_pooled"] == 0
    assert 0.8 * document_tokens < prefill["num_published_first"] <= published
    assert prefill["num_computed"] < 0.2 * second.num_tokens
    figures = deployment.worker.take_figures()  # the metrics: its own tokens are computed
    assert figures["pool"] == 0
    assert figures["computed"] == prefill["num_computed"] + prefill["num_published_first"]
    deployment.scheduler.finished(second)

    # Third tenant: the pool serves the document: cacheprune computes the prompt, warm.
    third = vllm_request(tokenizer, "c", "tenant-c", prompt("Cy Rowe", "cy@example.com"))
    assert deployment.scheduler.matched_tokens(third, 0) == third.num_tokens - 1
    (order,) = step(deployment, third, third.num_tokens - 1, first_block=32).prefills
    assert not order.publish_first
    assert log_lines(deployment, "prefill")["c"]["num_pooled"] > 0.8 * document_tokens
    deployment.scheduler.finished(third)
    assert deployment.scheduler.num_tracked_requests == 0


def test_kth_tenants_in_one_step_publish_the_text_once(deployment, monkeypatch):
    from cacheprune.serving import public_sharing

    passes = []
    real_pass = public_sharing.PrivateFreePass.compute
    monkeypatch.setattr(public_sharing.PrivateFreePass, "compute", classmethod(
        lambda cls, *args: passes.append(args[1].num_tokens) or real_pass(*args)))
    tokenizer, scheduler = deployment.tokenizer, deployment.scheduler
    first = vllm_request(tokenizer, "a", "tenant-a", prompt("Ada Lovegood", "ada@example.com"))
    assert scheduler.matched_tokens(first, 0) == 0
    scheduler.finished(first)
    # Two tenants past the threshold arrive before anything is published: both ordered to
    # publish first, in one step.
    later = [vllm_request(tokenizer, "b", "tenant-b", prompt("Bo Quint", "bo@example.com")),
             vllm_request(tokenizer, "c", "tenant-c", prompt("Cy Rowe", "cy@example.com"))]
    for index, request in enumerate(later):
        assert scheduler.matched_tokens(request, 0) == request.num_tokens - 1
        scheduler.after_alloc(request, blocks(request, 32 * index), request.num_tokens - 1)
    orders = scheduler.build_orders(admits=True)
    assert [order.publish_first for order in orders.prefills] == [True, True]
    deployment.worker.start_step(orders)
    deployment.worker.end_step()
    scheduler.worker_reported(deployment.worker.take_report())
    # b publishes and commits before c's publication looks: c finds the document in the
    # pool, publishes nothing and runs no pass; both are prefilled from b's entries.
    published = {request_id: line["num_published_tokens"]
                 for request_id, line in log_lines(deployment, "settled").items()}
    document_tokens = len(tokenizer.encode(DOCUMENT).ids)
    assert published["b"] > 0.8 * document_tokens and published["c"] == 0
    assert len(passes) == 1, "c's publication ran a private-free pass over text the pool had"
    assert log_lines(deployment, "prefill")["c"]["num_pooled"] > 0.8 * document_tokens
    fourth = vllm_request(tokenizer, "d", "tenant-d", prompt("Di Noor", "di@example.com"))
    assert scheduler.matched_tokens(fourth, 0) == fourth.num_tokens - 1  # warm
    for request in [*later, fourth]:
        scheduler.finished(request)
    assert scheduler.num_tracked_requests == 0


def test_routes_follow_what_the_pool_holds_and_what_publishing_needs(deployment):
    tokenizer = deployment.tokenizer
    scheduler, probe = deployment.scheduler, deployment.probe

    def route(request_id: str, tenant: str, text: str) -> Route:
        request = vllm_request(tokenizer, request_id, tenant, text)
        admitted = scheduler._admit(request)
        return probe.route(admitted, scheduler._admissions[request_id].probe, 0)

    public = "Question about the tables, no private detail here.\n\n" + DOCUMENT
    assert route("p1", "tenant-a", public) is Route.VLLM  # under the threshold
    # Common now, nothing private: publishing reads the request's own KV, so cacheprune
    # computes it.
    assert route("p2", "tenant-b", public) is Route.CACHEPRUNE


def test_a_failed_lookup_leaves_the_prompt_to_vllm(deployment, caplog):
    tokenizer, scheduler = deployment.tokenizer, deployment.scheduler
    first = vllm_request(tokenizer, "a", "tenant-a", prompt("Ada Lovegood", "ada@example.com"))
    assert scheduler.matched_tokens(first, 0) == 0
    scheduler.finished(first)
    deployment.probe._engine.pool.close()  # a fault injected on purpose: the pool is gone
    # The second tenant's prompt would be published (first test); its lookup fails instead.
    second = vllm_request(tokenizer, "b", "tenant-b", prompt("Bo Quint", "bo@example.com"))
    assert scheduler.matched_tokens(second, 0) == 0
    assert step(deployment, second, 0).prefills == []
    assert "looking up request b failed" in caplog.text
    scheduler.finished(second)
    assert scheduler.num_tracked_requests == 0


def test_new_text_of_a_prompt_vllm_computes_starts_after_its_own_hit():
    request = SimpleNamespace(num_tokens=5)
    assert new_text_after(request, 2).tolist() == [False, False, True, True, True]
    assert np.all(new_text_after(request, 0))


def detected(scheduler, *requests) -> None:
    """Wait until the detection thread has looked up each arrived request (as it has, in a
    server, by the time vLLM reaches a request queued behind others)."""
    deadline = time.monotonic() + 60
    for request in requests:
        while scheduler._detection.peek(request.request_id) is PENDING:
            assert time.monotonic() < deadline, f"no detection of {request.request_id}"
            time.sleep(0.01)


def cold_then_kth(deployment):
    """Under k = 2, tenant a's cold prompt and tenant b's (the k-th) about one document,
    arrived in that order and looked up."""
    tokenizer, scheduler = deployment.tokenizer, deployment.scheduler
    cold = vllm_request(tokenizer, "a", "tenant-a", prompt("Ada Lovegood", "ada@example.com"))
    kth = vllm_request(tokenizer, "b", "tenant-b", prompt("Bo Quint", "bo@example.com"))
    for request in (cold, kth):
        scheduler.arrived(request)
    detected(scheduler, cold, kth)
    return cold, kth


def test_a_cold_prompt_waits_for_the_kth_tenants_and_is_then_served_warm(threaded):
    """vLLM considers the queue in arrival order; the cold prompt first would cost a full
    prefill and the k-th tenant's behind it publishes the same document: the k-th goes first,
    and the cold prompt, looked up again at the next pass, is served from the pool."""
    tokenizer, scheduler = threaded.tokenizer, threaded.scheduler
    cold, kth = cold_then_kth(threaded)
    assert scheduler.matched_tokens(cold, 0) is None  # put back: not this step
    assert scheduler.matched_tokens(kth, 0) == kth.num_tokens - 1
    (order,) = step(threaded, kth, kth.num_tokens - 1).prefills
    assert order.publish_first
    assert scheduler.matched_tokens(cold, 0) == cold.num_tokens - 1  # warm now
    (order,) = step(threaded, cold, cold.num_tokens - 1, first_block=32).prefills
    assert not order.publish_first and order.request.num_private > 0
    document_tokens = len(tokenizer.encode(DOCUMENT).ids)
    assert log_lines(threaded, "prefill")["a"]["num_pooled"] > 0.8 * document_tokens
    for request in (cold, kth):
        scheduler.finished(request)
    assert scheduler.num_tracked_requests == 0


def test_a_cold_prompt_is_put_back_a_bounded_number_of_times(threaded):
    """A warm prompt waits behind a cold one and vLLM never takes it (no free blocks, say):
    the cold one is put back `MAX_DEFERRALS` times, then goes to vLLM; the warm one is still
    served warm."""
    tokenizer, scheduler = threaded.tokenizer, threaded.scheduler
    for request_id, tenant, name in (("a", "tenant-a", "Ada Lovegood"),
                                     ("b", "tenant-b", "Bo Quint")):  # k = 2: published
        request = vllm_request(tokenizer, request_id, tenant,
                               prompt(name, f"{request_id}@example.com"))
        scheduler.arrived(request)
        answer = scheduler.matched_tokens(request, 0)
        step(threaded, request, answer)
        scheduler.finished(request)
    other_document = ("The orchard's pruning calendar is kept by the county extension "
                      "service and revised whenever a late frost shifts the bloom. ") * 5
    cold = vllm_request(tokenizer, "c", "tenant-c", "Summarize this.\n\n" + other_document)
    warm = vllm_request(tokenizer, "d", "tenant-d", prompt("Di Noor", "di@example.com"))
    for request in (cold, warm):
        scheduler.arrived(request)
    detected(scheduler, cold, warm)
    answers = []
    for _ in range(MAX_DEFERRALS + 1):
        answers.append(scheduler.matched_tokens(cold, 0))
        scheduler.build_orders(computes=False)  # a step without the warm prompt
    assert answers == [None] * MAX_DEFERRALS + [0]
    assert scheduler.matched_tokens(warm, 0) == warm.num_tokens - 1
    for request in (cold, warm):
        scheduler.finished(request)
    assert scheduler.num_tracked_requests == 0


def test_with_cheap_first_off_vllms_order_stands(fifo):
    scheduler = fifo.scheduler
    cold, kth = cold_then_kth(fifo)
    assert scheduler.matched_tokens(cold, 0) == 0  # vLLM computes it, now
    assert scheduler.matched_tokens(kth, 0) == kth.num_tokens - 1  # published first
    for request in (cold, kth):
        scheduler.finished(request)
    assert scheduler.num_tracked_requests == 0
