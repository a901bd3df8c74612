"""The worker half of the connector without vLLM: a step's prefills run in one batched pass
and land in each request's blocks exactly as a prefill of that request alone; one request's
fault costs only that request (its blocks reported not loaded)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from cacheprune.detectors import load_policy
from cacheprune.engine import PrefillPlan, ReusedSpan
from cacheprune.pool import Scope
from cacheprune.serving import Engine, EngineConfig, RequestStatus, ServedRequest
from cacheprune.vllm import kv_layout
from cacheprune.vllm.blend import Blender
from cacheprune.vllm.orders import PrefillOrder, StepOrders
from cacheprune.vllm.request_log import RequestLog
from cacheprune.vllm.worker_side import WorkerSide, _batches

BLOCK_SIZE = 16
DOCUMENT = ("Tide tables for the estuary are printed each spring by the harbour office, and "
            "the ferry timetable follows them closely through the summer months. ") * 5
FAULTY = "tenant-faulty"


class FaultOnOneTenant:
    """The real blender, except that a prefill holding FAULTY's request fails (on purpose)."""

    def __init__(self, inner: Blender) -> None:
        self.inner = inner
        self.batch_sizes: list[int] = []

    def plan(self, order, local_keys, local_values):
        return self.inner.plan(order, local_keys, local_values)

    def prefill(self, orders, background=False):
        self.batch_sizes.append(len(orders))
        if any(order.request.tenant == FAULTY for order in orders):
            raise RuntimeError("fault injected by the test")
        return self.inner.prefill(orders, background)

    def worth_publishing(self, request):
        return self.inner.worth_publishing(request)

    def publish(self, request, new_text=None, background=True):
        return self.inner.publish(request, new_text, background)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def engine(default_model):
    model, tokenizer = default_model
    return Engine(model, tokenizer, load_policy(), EngineConfig(publish_threshold=1))


def served(engine: Engine, request_id: str, tenant: str, profile: str) -> ServedRequest:
    ids = engine.tokenizer.encode(f"{profile}\n\nDocument:\n{DOCUMENT}\nQuestion: when?").ids
    private = np.zeros(len(ids), dtype=np.bool_)
    private[:6] = True
    return ServedRequest(request_id, tenant, np.asarray(ids, dtype=np.int64), private, None,
                         np.zeros(len(ids), dtype=np.bool_))


class PagedCache:
    """A token-major paged cache of 64 blocks per layer, handed out in order."""

    def __init__(self, engine: Engine) -> None:
        config = engine.model.config
        self.layers = {f"model.layers.{i}.self_attn.attn": torch.zeros(
            64, config.num_kv_heads, BLOCK_SIZE, 2 * config.head_dim)
            for i in range(config.num_layers)}
        self.layout = kv_layout.token_major_layout(BLOCK_SIZE, config.head_dim)
        self._blocks = iter(range(64))

    def order(self, request: ServedRequest, publish: bool = False,
              in_background: bool = False) -> PrefillOrder:
        needed = -(-request.num_tokens // BLOCK_SIZE)
        return PrefillOrder(request, 0, tuple(next(self._blocks) for _ in range(needed)),
                            publish, in_background)

    def assert_holds_its_prefill_alone(self, engine: Engine, order: PrefillOrder) -> None:
        """The order's blocks hold what the model gives the same plan prefilled alone
        (independent of the worker)."""
        request = order.request
        assert request.status is RequestStatus.PREFILLED
        assert request.plan is not None and request.plan.reused, "the document was reused"
        alone = engine.model.prefill(PrefillPlan(request.plan.token_ids, request.plan.reused))
        stop = request.num_tokens - 1
        where = kv_layout.slots(order.block_ids, BLOCK_SIZE, 0, stop)
        for index, name in enumerate(sorted(self.layers, key=lambda n: int(n.split(".")[2]))):
            keys, values = kv_layout.gather(self.layers[name], where, self.layout)
            torch.testing.assert_close(keys, alone.keys[index, :, :stop], atol=2e-3, rtol=0)
            torch.testing.assert_close(values, alone.values[index, :, :stop], atol=2e-3,
                                       rtol=0)


def published_worker(engine: Engine, blender, cache: PagedCache,
                     max_waiting_publications: int = 4) -> WorkerSide:
    """A worker over `cache`, after a first request (prefilled in a step) published the
    document: the next requests reuse it."""
    config = engine.model.config
    worker = WorkerSide(blender, BLOCK_SIZE, cache.layout, config.num_layers, RequestLog(None),
                        max_waiting_publications)
    worker.register(cache.layers)
    first = served(engine, "r0", "tenant-a", "Client Ada Lovegood, ada@example.com")
    worker.start_step(StepOrders([cache.order(first)]))
    worker.end_step()
    with engine.session(first) as session:
        engine.publish(first, session)
        session.commit()
    return worker


def test_a_step_prefills_its_requests_in_one_pass_and_a_fault_costs_one(engine):
    cache = PagedCache(engine)
    blender = FaultOnOneTenant(Blender(engine))
    worker = published_worker(engine, blender, cache)
    step = [served(engine, "r1", "tenant-b", "Client Bo Quint, bo@example.com"),
            served(engine, "r2", FAULTY, "Client Faye Ulto, faye@example.com"),
            served(engine, "r3", "tenant-c", "Client Cy Rowe, cy@example.com")]
    orders = [cache.order(request) for request in step]
    worker.start_step(StepOrders(orders))
    worker.end_step()
    # One batched pass for the three, then each alone once the batch failed.
    assert blender.batch_sizes[1:] == [3, 1, 1, 1]
    faulty_blocks = set(orders[1].block_ids)
    assert worker.take_failed_blocks() == faulty_blocks
    for order in (orders[0], orders[2]):
        cache.assert_holds_its_prefill_alone(engine, order)
    assert orders[1].request.status is not RequestStatus.PREFILLED
    worker.close()


LEAFLET = ("A new leaflet for the lighthouse museum describes the lamp room, the keeper's "
           "cottage and the shop, which sells maps and postcards of the coast. ")


def fresh_request(engine: Engine, request_id: str, tenant: str,
                  sentence: str = LEAFLET) -> ServedRequest:
    """A request about a document nobody sent before (`sentence` four times; each test its
    own, since publications are committed as soon as staged): it has something to publish."""
    fresh = sentence * 4
    ids = engine.tokenizer.encode(f"Client Di Vell, di@example.com\n\n{fresh}").ids
    private = np.zeros(len(ids), dtype=np.bool_)
    private[:8] = True
    return ServedRequest(request_id, tenant, np.asarray(ids, dtype=np.int64), private, None,
                         np.zeros(len(ids), dtype=np.bool_))


def test_requests_with_nothing_to_publish_take_no_publisher_slot(engine):
    """Warm requests (they reuse the whole document) have nothing to publish: they are settled
    at once and leave the one publisher slot to the request that has something."""
    cache = PagedCache(engine)
    worker = published_worker(engine, Blender(engine), cache, max_waiting_publications=1)
    warm = [served(engine, f"w{i}", f"tenant-{i}", f"Client Wu {i}, wu{i}@example.com")
            for i in range(3)]
    orders = [cache.order(request, publish=True) for request in warm]
    orders.append(cache.order(fresh_request(engine, "fresh", "tenant-f"), publish=True))
    worker.start_step(StepOrders(orders))
    worker.end_step()
    assert worker.take_figures()["dropped"] == 0
    report = worker.take_report()
    assert report is not None and report.settled == {"w0", "w1", "w2"}
    assert worker.num_pending_publications == 1  # the fresh request's, with the publisher
    worker.close()


class HeldInBackground(FaultOnOneTenant):
    """Background prefills wait until the test lets them go (on purpose: to end a request
    while the loader holds it)."""

    def __init__(self, inner: Blender) -> None:
        super().__init__(inner)
        self.go = threading.Event()
        self.threads: set[str] = set()

    def prefill(self, orders, background=False):
        if background:
            assert self.go.wait(300), "the test never let the loader go"
            self.threads.add(threading.current_thread().name)
        return super().prefill(orders, background)


def test_background_orders_load_beside_the_steps_and_are_reported_once(engine):
    """Orders `in_background` leave the step at once; the loader prefills them in one batch;
    each is reported loaded exactly once, a faulty one with its blocks failed in the same
    take; a request that ended badly while loading publishes nothing and is settled."""
    cache = PagedCache(engine)
    blender = HeldInBackground(Blender(engine))
    worker = published_worker(engine, blender, cache)
    aborted = fresh_request(engine, "r4", "tenant-d", sentence=(
        "Tram drivers of the old depot tell visitors how the overhead wires were mended in "
        "winter storms, while the volunteers repaint a wooden carriage every year. "))
    step = [served(engine, "r1", "tenant-b", "Client Bo Quint, bo@example.com"),
            served(engine, "r2", FAULTY, "Client Faye Ulto, faye@example.com"),
            served(engine, "r3", "tenant-c", "Client Cy Rowe, cy@example.com")]
    orders = [cache.order(request, in_background=True) for request in step]
    orders.append(cache.order(aborted, publish=True, in_background=True))
    worker.start_step(StepOrders(orders, computes=False))
    worker.end_step()
    assert worker.take_loaded() == set()
    assert all(order.request.status is not RequestStatus.PREFILLED for order in orders)
    # The aborted request's verdict comes while the loader holds it: it waits.
    worker.start_step(StepOrders([], {"r4": False}, computes=False))
    worker.end_step()
    blender.go.set()
    loaded: list[str] = []
    failed: set[int] = set()
    deadline = time.monotonic() + 300
    while len(loaded) < 4:
        assert time.monotonic() < deadline, "the loader never finished"
        worker.start_step(StepOrders([], computes=False))
        worker.end_step()
        loaded += worker.take_loaded()
        failed |= worker.take_failed_blocks()
    assert sorted(loaded) == ["r1", "r2", "r3", "r4"]
    assert blender.threads == {"cacheprune-loader"}
    assert blender.batch_sizes[1:5] == [4, 1, 1, 1]  # one batch, then each alone
    assert failed == set(orders[1].block_ids)
    for order in (orders[0], orders[2]):
        cache.assert_holds_its_prefill_alone(engine, order)
    settled: set[str] = set()
    failed_requests: set[str] = set()
    while "r4" not in settled:
        assert time.monotonic() < deadline, "the aborted request was never settled"
        worker.start_step(StepOrders([], computes=False))
        worker.end_step()
        report = worker.take_report()
        if report is not None:
            settled |= report.settled
            failed_requests |= report.failed
    assert failed_requests == {"r2"}  # vLLM computes it alone from now on
    assert worker.num_pending_publications == 0
    fresh_ids = aborted.token_ids[8:]
    scope = Scope(engine.identity, "auditor", engine.config.sharing_domain("auditor"))
    with engine.pool.session("audit", scope) as session:
        found = session.lookup(fresh_ids, np.zeros(len(fresh_ids), dtype=np.bool_))
    assert found == [], "an aborted request published its document"
    worker.close()


def test_batches_keep_their_computed_rows_within_the_limit(engine):
    """Orders go in runs of at most `max_rows` computed rows, in order; an order larger than
    the limit goes alone."""
    def planned(request_id: str, num_tokens: int, num_reused: int) -> PrefillOrder:
        request = served(engine, request_id, "tenant-a", "Client")
        request = ServedRequest(request_id, "tenant-a", request.token_ids[:num_tokens],
                                request.private[:num_tokens], None,
                                np.zeros(num_tokens, dtype=np.bool_))
        config = engine.model.config
        kv = torch.zeros(config.num_layers, config.num_kv_heads, num_reused, config.head_dim)
        plan = PrefillPlan(torch.from_numpy(request.token_ids),
                           [ReusedSpan(0, kv, kv, torch.arange(num_reused))] if num_reused
                           else [])
        request.attach_plan(plan, None)
        return PrefillOrder(request, 0, (), False)

    orders = [planned("a", 40, 30), planned("b", 40, 0), planned("c", 100, 0),
              planned("d", 20, 15), planned("e", 30, 0)]
    rows = [int(order.request.plan.compute_mask().sum()) for order in orders]
    assert rows == [10, 40, 100, 5, 30]
    runs = [[order.request.request_id for order in run] for run in _batches(orders, 60)]
    assert runs == [["a", "b"], ["c"], ["d", "e"]]
    assert list(_batches([], 60)) == []
