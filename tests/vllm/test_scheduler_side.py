"""The connector's scheduler half on plain request objects (no vLLM engine): what it offers,
what it orders, how it ends a request, and that nothing outlives a request never scheduled."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from cacheprune.detectors import load_policy
from cacheprune.vllm.orders import WorkerReport
from cacheprune.vllm.scheduler_side import SchedulerSide
from cacheprune.vllm.settings import ISOLATE_KEY, PUBLIC_RANGES_KEY, parse_settings

SECRET = "alice.moreau@example.com"
PROMPT = ("Please answer from the handbook below.\n\nMy e-mail is " + SECRET + ".\n\n"
          + "The office opens at nine and the library keeps the official copy. " * 12
          + "\n\nQuestion: who keeps the official copy? Answer:")


@pytest.fixture(scope="module")
def tokenizer():
    from cacheprune.models import converted_folder, load_tokenizer

    return load_tokenizer(str(converted_folder()))


def make_side(tokenizer, **extra) -> SchedulerSide:
    # NOTE: detection inline (the answer comes at the first call) unless a test says otherwise
    settings = parse_settings({"pool_url": "memory://", "detection_thread": False, **extra})
    return SchedulerSide(settings, tokenizer, load_policy(None), min_tokens=64)


def request(tokenizer, request_id: str = "r1", salt: str | None = "tenant-a",
            text: str = PROMPT, **fields) -> SimpleNamespace:
    ids = tokenizer.encode(text).ids
    attributes = dict(request_id=request_id, prompt_token_ids=ids, all_token_ids=list(ids),
                      num_tokens=len(ids), cache_salt=salt, mm_features=[],
                      prompt_embeds=None, pooling_params=None,
                      status=SimpleNamespace(name="RUNNING"))
    attributes.update(fields)
    return SimpleNamespace(**attributes)


def running(tokenizer) -> tuple[SchedulerSide, SimpleNamespace]:
    """A scheduler side with one request whose first prefill was ordered."""
    side = make_side(tokenizer)
    req = request(tokenizer)
    side.matched_tokens(req, 0)
    side.after_alloc(req, [1, 2, 3], req.num_tokens - 1)
    side.build_orders()
    return side, req


def secret_tokens(tokenizer, text: str, secret: str) -> set[int]:
    """Independent reference: the tokens overlapping the secret's characters (string search)."""
    start = text.index(secret)
    end = start + len(secret)
    return {i for i, (a, b) in enumerate(tokenizer.encode(text).offsets) if a < end and b > start}


def test_offers_every_token_but_the_last_beyond_vllms_own_hit(tokenizer):
    side = make_side(tokenizer)
    req = request(tokenizer)
    assert side.matched_tokens(req, 0) == req.num_tokens - 1
    assert side.matched_tokens(req, 128) == req.num_tokens - 1 - 128


@pytest.mark.parametrize("change, why", [
    ({"salt": None}, "no cache_salt: isolated"),
    ({"text": "Hello there, what time is it?"}, "shorter than a segment"),
    ({"prompt_embeds": object()}, "embeddings"),
    ({"mm_features": [object()]}, "multimodal"),
    ({"kv_transfer_params": {ISOLATE_KEY: True}}, "the front cools off a suspected prober"),
])
def test_leaves_to_vllm_what_cacheprune_cannot_share(tokenizer, change, why):
    side = make_side(tokenizer)
    assert side.matched_tokens(request(tokenizer, **change), 0) == 0, why


@pytest.mark.parametrize("salt", [
    "", "x" * 129, "tenant\x00a", "tenant\na", "\ud800tenant", 12345, b"tenant-a",
])
def test_an_invalid_salt_isolates_the_request_and_raises_nothing(tokenizer, salt):
    """Fail safe (an invalid salt crashed whole engines in another connector): the request is
    left to vLLM alone, nothing is ordered for the worker, and the valid salt still works."""
    side = make_side(tokenizer)
    bad = request(tokenizer, "bad", salt=salt)
    assert side.matched_tokens(bad, 0) == 0
    side.after_alloc(bad, [1, 2, 3], 0)
    assert side.build_orders().prefills == []
    good = request(tokenizer, "good", salt="x" * 128)
    assert side.matched_tokens(good, 0) == good.num_tokens - 1


def test_ids_that_do_not_re_encode_are_private_as_a_whole(tokenizer):
    """Token ids another tokenization produced: no character span can be trusted."""
    side = make_side(tokenizer)
    canonical = tokenizer.encode(PROMPT).ids
    split = tokenizer.encode("Ple").ids + tokenizer.encode("ase").ids
    assert tokenizer.decode(split) == tokenizer.decode(canonical[:1])
    ids = split + canonical[1:]
    req = request(tokenizer, prompt_token_ids=ids, all_token_ids=ids, num_tokens=len(ids))
    assert side.matched_tokens(req, 0) == 0


def test_without_tenant_source_every_request_is_one_shared_tenant(tokenizer):
    side = make_side(tokenizer, tenant_source="none")
    req = request(tokenizer, salt=None)
    assert side.matched_tokens(req, 0) == req.num_tokens - 1
    side.after_alloc(req, [3, 4], req.num_tokens - 1)
    (order,) = side.build_orders().prefills
    assert order.request.tenant == "shared"


def test_order_carries_the_real_private_mask(tokenizer):
    side = make_side(tokenizer)
    req = request(tokenizer)
    side.matched_tokens(req, 0)
    side.after_alloc(req, [7, 2, 9], req.num_tokens - 1)
    orders = side.build_orders()
    (order,) = orders.prefills
    flagged = {i for i, flag in enumerate(order.request.private) if flag}
    assert secret_tokens(tokenizer, PROMPT, SECRET) <= flagged
    assert len(flagged) < 20  # the rest of the prompt stays shareable
    assert (order.request.tenant, order.block_ids, order.num_local_tokens, order.publish) == \
        ("tenant-a", (7, 2, 9), 0, True)
    assert side.build_orders().prefills == []  # one order per allocation


def test_a_request_never_scheduled_leaves_nothing_behind(tokenizer):
    side = make_side(tokenizer)
    req = request(tokenizer)
    for _ in range(3):  # considered again and again, never allocated
        assert side.matched_tokens(req, 0) == req.num_tokens - 1
    req.status = SimpleNamespace(name="FINISHED_ABORTED")
    side.finished(req)
    orders = side.build_orders()
    assert orders.prefills == [] and orders.verdicts == {}
    assert not side.has_pending_publications()
    assert side.num_tracked_requests == 0


@pytest.mark.parametrize("status, publish", [("FINISHED_STOPPED", True),
                                             ("FINISHED_LENGTH_CAPPED", True),
                                             ("FINISHED_ABORTED", False),
                                             ("FINISHED_ERROR", False)])
def test_verdict_follows_how_the_request_ended(tokenizer, status, publish):
    side, req = running(tokenizer)
    assert not side.has_pending_publications()  # running: vLLM steps anyway
    req.status = SimpleNamespace(name=status)
    side.finished(req)
    assert side.has_pending_publications()  # the worker must still settle it
    assert side.build_orders().verdicts == {"r1": publish}
    assert side.has_pending_publications()
    side.worker_reported(WorkerReport({"r1"}))
    assert not side.has_pending_publications()
    assert side.num_tracked_requests == 0


def test_settled_in_the_step_it_ended_sends_no_verdict(tokenizer):
    """The request ended and the worker's report of its settling came in the same step's
    output, the end first: the queued verdict is dropped (the worker would settle it twice)."""
    side, req = running(tokenizer)
    req.status = SimpleNamespace(name="FINISHED_STOPPED")
    side.finished(req)
    side.worker_reported(WorkerReport({"r1"}))
    assert side.build_orders().verdicts == {}
    assert not side.has_pending_publications()
    assert side.num_tracked_requests == 0


def test_a_failed_prefill_leaves_the_request_to_vllm_and_its_publication_settles(tokenizer):
    """vLLM puts a request whose asynchronous load failed back in the queue and asks the
    connector again: the answer is 0 (vLLM computes it alone), not a new order that would
    fail the same way. The first prefill's publication still gets its verdict."""
    side, req = running(tokenizer)
    side.worker_reported(WorkerReport(failed={"r1"}))
    assert side.matched_tokens(req, 0) == 0
    req.status = SimpleNamespace(name="FINISHED_STOPPED")
    side.finished(req)
    assert side.build_orders().verdicts == {"r1": True}
    side.worker_reported(WorkerReport({"r1"}))
    assert not side.has_pending_publications()
    assert side.num_tracked_requests == 0


def test_resumed_request_is_prefilled_again_without_publishing(tokenizer):
    side, req = running(tokenizer)
    # Preempted after two generated tokens; vLLM's prefix cache still holds one block.
    req.all_token_ids = req.all_token_ids + [11, 12]
    req.num_tokens += 2
    offered = side.matched_tokens(req, 128)
    assert offered == req.num_tokens - 1 - 128
    side.after_alloc(req, [5, 6, 8], offered)
    (order,) = side.build_orders().prefills
    assert order.publish is False and order.num_local_tokens == 128
    assert order.request.private[-2:].tolist() == [True, True]  # generated: never shared
    assert order.request.num_tokens == req.num_tokens


def test_settled_before_the_end_needs_no_verdict(tokenizer):
    """The worker found nothing to publish: the request's end sends no verdict."""
    side, req = running(tokenizer)
    side.worker_reported(WorkerReport({"r1"}))
    req.status = SimpleNamespace(name="FINISHED_STOPPED")
    side.finished(req)
    assert side.build_orders().verdicts == {}
    assert not side.has_pending_publications()


def test_a_step_admits_when_it_starts_a_request(tokenizer):
    side = make_side(tokenizer)
    req = request(tokenizer)
    side.matched_tokens(req, 0)
    side.after_alloc(req, [1, 2, 3], req.num_tokens - 1)
    assert side.build_orders().admits  # a prefill order starts the request
    assert not side.build_orders().admits  # a decode step with nothing new is quiet
    assert side.build_orders(admits=True).admits  # vLLM's own new or resumed request


def declaring(tokenizer, ranges, **extra) -> tuple[SchedulerSide, SimpleNamespace]:
    """A scheduler side and a request whose kv_transfer_params declare `ranges` public."""
    side = make_side(tokenizer, **extra)
    req = request(tokenizer, kv_transfer_params={PUBLIC_RANGES_KEY: ranges})
    return side, req


def test_declared_public_ranges_are_not_scanned(tokenizer):
    start = PROMPT.index(SECRET)
    side, req = declaring(tokenizer, [[start, start + len(SECRET)]], accept_public_ranges=True)
    assert side.matched_tokens(req, 0) == req.num_tokens - 1
    side.after_alloc(req, [1, 2, 3], req.num_tokens - 1)
    (order,) = side.build_orders().prefills
    flagged = {i for i, flag in enumerate(order.request.private) if flag}
    assert not flagged & secret_tokens(tokenizer, PROMPT, SECRET)


@pytest.mark.parametrize("ranges, extra, why", [
    ([[0, 10]], {}, "accept_public_ranges is off: a client may not declare its text public"),
    ([[0, len(PROMPT) + 1]], {"accept_public_ranges": True}, "past the prompt's end"),
    ([[5, 2]], {"accept_public_ranges": True}, "ends before it starts"),
    ([[0, "10"]], {"accept_public_ranges": True}, "not integers"),
    ({"start": 0}, {"accept_public_ranges": True}, "not a list"),
])
def test_bad_public_ranges_leave_the_prompt_to_vllm(tokenizer, ranges, extra, why):
    side, req = declaring(tokenizer, ranges, **extra)
    assert side.matched_tokens(req, 0) == 0, why
    side.after_alloc(req, [1, 2, 3], 0)
    assert side.build_orders().prefills == []
    req.status = SimpleNamespace(name="FINISHED_STOPPED")
    side.finished(req)
    assert side.num_tracked_requests == 0


def test_a_step_prefills_up_to_its_token_budget_and_the_rest_waits(tokenizer):
    first, second, third = (request(tokenizer, f"r{i}", salt=f"tenant-{i}") for i in range(3))
    side = make_side(tokenizer, max_prefill_tokens_per_step=first.num_tokens + 1)
    assert side.matched_tokens(first, 0) == first.num_tokens - 1  # one prompt always goes
    assert side.matched_tokens(second, 0) is None  # over the budget: not this step
    assert side.matched_tokens(first, 0) == first.num_tokens - 1  # asked again: same answer
    side.after_alloc(first, [1, 2], first.num_tokens - 1)
    assert [order.request.request_id for order in side.build_orders().prefills] == ["r0"]
    assert side.matched_tokens(second, 0) == second.num_tokens - 1  # the next step
    assert side.matched_tokens(third, 0) is None
    side.build_orders()
    assert side.matched_tokens(third, 0) == third.num_tokens - 1
    isolated = request(tokenizer, "r9", salt=None)  # vLLM computes it: no budget spent
    assert side.matched_tokens(isolated, 0) == 0


def answer_after_detection(side: SchedulerSide, req) -> int | None:
    """Ask as vLLM does, step after step, until the detection thread has answered."""
    deadline = time.monotonic() + 120
    while (answer := side.matched_tokens(req, 0)) is None:
        assert time.monotonic() < deadline, "the detection thread never answered"
        side.build_orders()
        time.sleep(0.01)
    return answer


def busy(side: SchedulerSide) -> SchedulerSide:
    """The side as under load on a fast device: the last step took microseconds, so the loop
    waits for no detection."""
    side.build_orders()
    side.build_orders()
    return side


def test_detection_in_its_thread_admits_as_detection_inline_does(tokenizer):
    inline, threaded = make_side(tokenizer), busy(make_side(tokenizer, detection_thread=True))
    req = request(tokenizer)
    assert threaded.matched_tokens(req, 0) is None  # detection started: not yet
    assert answer_after_detection(threaded, req) == inline.matched_tokens(req, 0)
    threaded.after_alloc(req, [1, 2, 3], req.num_tokens - 1)
    inline.after_alloc(req, [1, 2, 3], req.num_tokens - 1)
    (ours,), (theirs,) = threaded.build_orders().prefills, inline.build_orders().prefills
    ours, theirs = ours.request.private.tolist(), theirs.request.private.tolist()
    assert ours == theirs and any(ours)  # the e-mail is private
    # Fail closed: a prompt whose ids do not re-encode is not admitted, in the thread too.
    odd = request(tokenizer, "r2", prompt_token_ids=[*req.prompt_token_ids[:-1], 10**6])
    assert answer_after_detection(threaded, odd) == 0
    # A request that ends while its detection runs leaves nothing behind.
    quick = busy(make_side(tokenizer, detection_thread=True))
    gone = request(tokenizer, "r3")
    assert quick.matched_tokens(gone, 0) is None
    quick.finished(gone)
    assert quick.num_tracked_requests == 0
    quick.close()
    threaded.finished(req)
    threaded.finished(odd)
    threaded.build_orders()  # the verdict on r1 goes to the worker
    threaded.worker_reported(WorkerReport({"r1"}))
    assert threaded.num_tracked_requests == 0


def test_detection_starts_on_arrival_and_the_idle_loop_waits_for_it(tokenizer):
    inline, threaded = make_side(tokenizer), make_side(tokenizer, detection_thread=True)
    req = request(tokenizer)
    threaded.arrived(req)
    assert threaded.num_tracked_requests == 1  # detecting before vLLM considers it
    # No step has run a forward pass: waiting costs nobody, the first answer is the admission.
    assert threaded.matched_tokens(req, 0) == inline.matched_tokens(req, 0) > 0
    # A request vLLM computes alone is settled on arrival: no detection.
    odd = request(tokenizer, "r2", salt="bad salt\n")
    threaded.arrived(odd)
    assert threaded.num_tracked_requests == 2  # r1 and r2's verdict, none detecting
    assert threaded.matched_tokens(odd, 0) == 0
    threaded.finished(odd)
    threaded.finished(req)
    assert threaded.num_tracked_requests == 0
    threaded.close()


def test_the_loop_waits_no_longer_than_the_longest_recent_step(tokenizer):
    threaded = make_side(tokenizer, detection_thread=True)
    threaded.build_orders()
    time.sleep(1.5)  # a step that took 1.5 s
    threaded.build_orders()
    req = request(tokenizer)
    start = time.monotonic()
    answer = threaded.matched_tokens(req, 0)
    waited = time.monotonic() - start
    assert waited < 1.5 + 0.5
    assert answer is not None or waited >= 1.4  # answered, or waited out its budget
    threaded.close()


def ordered_mask(side: SchedulerSide, req) -> list[bool]:
    side.matched_tokens(req, 0)
    side.after_alloc(req, [1, 2, 3], req.num_tokens - 1)
    (order,) = side.build_orders().prefills
    return order.request.private.tolist()


def test_known_clean_text_is_skipped_after_the_threshold_and_masks_stay_the_same(tokenizer):
    side, whole = make_side(tokenizer), make_side(tokenizer, skip_known_clean=False)
    threshold = side._settings.publish_threshold
    for index in range(threshold + 1):
        secret = f"tenant{index}.moreau@example.com"
        text = PROMPT.replace(SECRET, secret)
        skipped = side._known_clean.skippable(text)
        assert bool(skipped) == (index == threshold)  # only once enough tenants sent it
        salt = f"tenant-{index}"
        mask = ordered_mask(side, request(tokenizer, f"r{index}", salt, text))
        assert mask == ordered_mask(whole, request(tokenizer, f"r{index}", salt, text))
        assert secret_tokens(tokenizer, text, secret) <= {i for i, f in enumerate(mask) if f}
    assert whole._known_clean is None
