"""The connector's publisher thread over the own engine's real model and a real pool (no vLLM
engine): a publication staged in the thread is committed at once and found by another tenant;
the bound refuses more than it holds; a cancelled one is skipped; while the engine's step holds
vLLM's layers (model_turns) the thread waits; closing hands back what never ran."""

from __future__ import annotations

import time

import numpy as np
import pytest

from cacheprune.detectors import load_policy
from cacheprune.pool import Scope
from cacheprune.serving import Engine, EngineConfig, ServedRequest
from cacheprune.vllm import model_turns
from cacheprune.vllm.blend import Blender
from cacheprune.vllm.orders import PrefillOrder
from cacheprune.vllm.publisher import Publisher, Settled

PROFILE = "You answer for Alice Moreau, e-mail alice.moreau@example.com.\n\nDocument:\n"
DOCUMENT = ("The river ferry leaves the north pier every forty minutes from six in the "
            "morning, and bicycles ride free on weekdays. ") * 8


@pytest.fixture(scope="module")
def engine(default_model):
    model, tokenizer = default_model
    # k = 1: one tenant's request publishes (what the threshold changes is tested elsewhere)
    return Engine(model, tokenizer, load_policy(), EngineConfig(publish_threshold=1))


@pytest.fixture(scope="module")
def blender(engine):
    return Blender(engine)


def order(engine: Engine, request_id: str, tenant: str = "tenant-a",
          document: str = DOCUMENT) -> PrefillOrder:
    ids = engine.tokenizer.encode(PROFILE + document + "\nQuestion: when? Answer:").ids
    private = np.zeros(len(ids), dtype=np.bool_)
    private[:24] = True  # the profile's tokens (the e-mail among them)
    request = ServedRequest(request_id, tenant, np.asarray(ids, dtype=np.int64), private, None,
                            np.zeros(len(ids), dtype=np.bool_))
    return PrefillOrder(request, num_local_tokens=0, block_ids=(), publish=True)


def results_until(publisher: Publisher, count: int) -> list[Settled]:
    found: list[Settled] = []
    deadline = time.monotonic() + 600
    while len(found) < count:
        assert time.monotonic() < deadline, "the publisher never answered"
        found += publisher.take_done(wait_s=0.5)
    return found


def prefill(blender: Blender, sent) -> None:
    blender.plan(sent, None, None)
    blender.prefill([sent])


def pooled_tokens(engine: Engine, ids: np.ndarray) -> int:
    scope = Scope(engine.identity, "tenant-b", engine.config.sharing_domain("tenant-b"))
    with engine.pool.session("probe", scope) as session:
        matches = session.lookup(np.asarray(ids, dtype=np.int64),
                                 np.zeros(len(ids), dtype=np.bool_))
        return sum(match.length for match in matches)


def test_a_publication_is_committed_in_the_thread_and_found(engine, blender):
    publisher = Publisher(blender, max_waiting=2)
    try:
        first = order(engine, "p1")
        prefill(blender, first)
        assert pooled_tokens(engine, first.request.token_ids[24:]) == 0
        assert publisher.submit(first.request)
        (settled,) = results_until(publisher, 1)
        assert settled.request_id == "p1" and settled.num_published_tokens > 0
        assert pooled_tokens(engine, first.request.token_ids[24:]) > 0
    finally:
        assert publisher.close() == []


def test_bound_cancel_and_close(engine, blender):
    publisher = Publisher(blender, max_waiting=2)
    # NOTE: a document no other test published: these prefills compute it, so it publishes.
    canal = ("Canal boats queue at the old lock gate until the keeper opens it at noon, and "
             "the towpath café sells tea to walkers from spring to late autumn. ") * 8
    first, second, third = (order(engine, f"q{i}", "tenant-c", canal) for i in range(3))
    for each in (first, second, third):
        prefill(blender, each)
    assert publisher.submit(first.request)
    publisher.cancel("q1")  # ended badly before its publication ran
    assert publisher.submit(second.request)
    assert not publisher.submit(third.request)  # two wait already: refused
    done = results_until(publisher, 2)
    published = {result.request_id: result.num_published_tokens for result in done}
    assert published["q0"] > 0 and published["q1"] == 0
    assert publisher.submit(third.request)  # taken results free their places
    left = publisher.close()
    results = publisher.take_done()
    assert len(left) + len(results) == 1  # the third: never run, or run before the stop
    for result in results:
        assert result.request_id == "q2"


def test_a_publisher_layer_call_waits_for_the_step():
    import threading

    import torch

    calls: list[str] = []

    def layer(x: torch.Tensor) -> torch.Tensor:
        calls.append(threading.current_thread().name)
        return x * 2

    def publisher_side() -> None:
        model_turns.mark_background_thread()
        out = model_turns.call_layer(layer, torch.ones(2 * model_turns.BACKGROUND_ROWS + 1, 3))
        assert torch.equal(out, torch.full((2 * model_turns.BACKGROUND_ROWS + 1, 3), 2.0))

    model_turns.hold_for_step()
    thread = threading.Thread(target=publisher_side, name="publisher")
    try:
        thread.start()
        thread.join(timeout=1.0)
        assert thread.is_alive() and calls == []  # blocked: the step holds the layers
        model_turns.call_layer(layer, torch.ones(4, 3))  # the step's own calls go on
        assert calls == ["MainThread"]
    finally:
        model_turns.release_after_step()
    thread.join()
    assert calls == ["MainThread"] + ["publisher"] * 3  # in chunks of BACKGROUND_ROWS rows


def test_the_workers_copy_of_the_weights_is_the_own_engines_model(engine, tmp_path):
    import dataclasses

    import torch

    from cacheprune.models import converted_folder, read_config
    from cacheprune.vllm.startup import weights_copy

    folder = converted_folder()
    config = dataclasses.replace(read_config(folder),
                                 max_context=engine.model.config.max_context)
    copy = weights_copy(folder, config, engine.model.model_id)
    assert copy is not None and copy is not engine.model
    ids = torch.arange(100, 160)
    assert torch.equal(copy.logits(ids), engine.model.logits(ids))
    # A folder it cannot read: None, and the background threads use vLLM's layers instead.
    assert weights_copy(tmp_path, config, engine.model.model_id) is None


def below_threshold_tokens(engine: Engine) -> float:
    for line in engine.pool.metrics_text().splitlines():
        if line.startswith("cacheprune_pool_below_threshold_tokens_total "):
            return float(line.split()[1])
    raise AssertionError("the pool exports no below_threshold_tokens")


def test_a_requests_windows_are_counted_once_and_publish_under_the_threshold(default_model):
    """The reading session counts the request's windows; the publishing session carries that
    count instead of counting again (the pool's counter sees each request once). Under k = 3
    the third tenant to send the document publishes it, the first two nothing."""
    model, tokenizer = default_model
    engine = Engine(model, tokenizer, load_policy(), EngineConfig(publish_threshold=3))
    blender = Blender(engine)
    staged = []
    for tenant in ("tenant-a", "tenant-b", "tenant-c"):
        sent = order(engine, f"k-{tenant}", tenant)
        prefill(blender, sent)
        publication = blender.publish(sent.request)
        staged.append(0 if publication is None else sum(n for _, n in publication.published))
        if publication is not None:
            assert publication.settle(ended_well=True) == staged[-1]
    num_public = sent.request.num_tokens - 24  # the profile's 24 tokens are private
    # Independent reference: the first two find no window that 3 tenants sent (every public
    # token is below the threshold, once each); the third finds every window common.
    assert below_threshold_tokens(engine) == 2 * num_public
    assert staged[:2] == [0, 0] and staged[2] > 0
    assert pooled_tokens(engine, sent.request.token_ids[24:]) > 0
    engine.close()
