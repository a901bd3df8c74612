"""The worker half of the connector without vLLM: a step's prefills run in one batched pass
and land in each request's blocks exactly as a prefill of that request alone; one request's
fault costs only that request (its blocks reported not loaded)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cacheprune.detectors import load_policy
from cacheprune.engine import PrefillPlan, ReusedSpan
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

    def prefill(self, orders):
        self.batch_sizes.append(len(orders))
        if any(order.request.tenant == FAULTY for order in orders):
            raise RuntimeError("fault injected by the test")
        return self.inner.prefill(orders)

    def publish(self, request):
        return self.inner.publish(request)

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


def test_a_step_prefills_its_requests_in_one_pass_and_a_fault_costs_one(engine, tmp_path):
    config = engine.model.config
    num_blocks = 64
    layers = {f"model.layers.{i}.self_attn.attn": torch.zeros(
        num_blocks, config.num_kv_heads, BLOCK_SIZE, 2 * config.head_dim)
        for i in range(config.num_layers)}
    blender = FaultOnOneTenant(Blender(engine))
    layout = kv_layout.token_major_layout(BLOCK_SIZE, config.head_dim)
    worker = WorkerSide(blender, BLOCK_SIZE, layout, config.num_layers, RequestLog(None))
    worker.register(layers)
    # A first request publishes the document; the next step's requests reuse it.
    first = served(engine, "r0", "tenant-a", "Client Ada Lovegood, ada@example.com")
    blocks = iter(range(num_blocks))

    def order_of(request: ServedRequest) -> PrefillOrder:
        needed = -(-request.num_tokens // BLOCK_SIZE)
        return PrefillOrder(request, 0, tuple(next(blocks) for _ in range(needed)), False)

    worker.start_step(StepOrders([order_of(first)]))
    worker.end_step()
    with engine.session(first) as session:
        engine.publish(first, session)
        session.commit()
    step = [served(engine, "r1", "tenant-b", "Client Bo Quint, bo@example.com"),
            served(engine, "r2", FAULTY, "Client Faye Ulto, faye@example.com"),
            served(engine, "r3", "tenant-c", "Client Cy Rowe, cy@example.com")]
    orders = [order_of(request) for request in step]
    worker.start_step(StepOrders(orders))
    worker.end_step()
    # One batched pass for the three, then each alone once the batch failed.
    assert blender.batch_sizes[1:] == [3, 1, 1, 1]
    faulty_blocks = set(orders[1].block_ids)
    assert worker.take_failed_blocks() == faulty_blocks
    for order in (orders[0], orders[2]):
        request = order.request
        assert request.status is RequestStatus.PREFILLED
        assert request.plan is not None and request.plan.reused, "the document was reused"
        # Independent of the worker: the same plan prefilled alone by the model.
        alone = engine.model.prefill(PrefillPlan(request.plan.token_ids, request.plan.reused))
        stop = request.num_tokens - 1
        where = kv_layout.slots(order.block_ids, BLOCK_SIZE, 0, stop)
        for index, name in enumerate(sorted(layers, key=lambda n: int(n.split(".")[2]))):
            keys, values = kv_layout.gather(layers[name], where, layout)
            torch.testing.assert_close(keys, alone.keys[index, :, :stop], atol=2e-3, rtol=0)
            torch.testing.assert_close(values, alone.values[index, :, :stop], atol=2e-3,
                                       rtol=0)
    assert orders[1].request.status is not RequestStatus.PREFILLED
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
