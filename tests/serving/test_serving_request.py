"""The request object's lifecycle: statuses advance in order, a wrong step raises an error that
names the request and both statuses, and a copy for another prefill starts over."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cacheprune.engine import PrefillPlan
from cacheprune.serving import Published, RequestStatus, RequestStatusError, ServedRequest


def served(num_tokens: int = 6, private_at: tuple[int, ...] = (2,)) -> ServedRequest:
    private = np.zeros(num_tokens, dtype=np.bool_)
    private[list(private_at)] = True
    return ServedRequest("r1", "tenant-a", np.arange(100, 100 + num_tokens, dtype=np.int64),
                         private, None, np.zeros(num_tokens, dtype=np.bool_))


def test_a_request_advances_through_its_statuses_in_order():
    request = served()
    assert request.status is RequestStatus.ADMITTED
    plan = PrefillPlan.full(torch.from_numpy(request.token_ids))
    request.attach_plan(plan, None)
    assert (request.status, request.plan) == (RequestStatus.PLANNED, plan)
    request.advance(RequestStatus.PREFILLED)
    request.attach_published([Published("entry", 4)])
    assert request.status is RequestStatus.STAGED and request.published == [("entry", 4)]
    request.finish()
    assert request.status is RequestStatus.FINISHED


@pytest.mark.parametrize("steps, wrong", [
    ([], RequestStatus.STAGED),  # staged before any prefill
    ([RequestStatus.PLANNED], RequestStatus.PLANNED),  # planned twice
    ([RequestStatus.PLANNED, RequestStatus.PREFILLED], RequestStatus.PLANNED),  # back again
    ([RequestStatus.FINISHED], RequestStatus.PREFILLED),  # after its end
])
def test_an_illegal_transition_raises_a_clear_error(steps, wrong):
    request = served()
    for status in steps:
        request.advance(status)
    before = request.status
    with pytest.raises(RequestStatusError,
                       match=rf"request 'r1' is {before.name} and cannot become {wrong.name}"):
        request.advance(wrong)
    assert request.status is before  # nothing changed


def test_a_request_may_finish_from_any_status_but_once():
    for steps in ([], [RequestStatus.PLANNED], [RequestStatus.PREFILLED]):
        request = served()
        for status in steps:
            request.advance(status)
        request.finish()
        with pytest.raises(RequestStatusError, match="allowed next: none"):
            request.finish()


def test_a_prefill_copy_starts_over_and_marks_generated_tokens_private():
    request = served()
    request.advance(RequestStatus.PREFILLED)
    same = request.prefill_copy(request.token_ids.tolist())
    assert same.status is RequestStatus.ADMITTED and request.status is RequestStatus.PREFILLED
    assert same.public_view is request.public_view  # shared, not rebuilt
    resumed = request.prefill_copy(request.token_ids.tolist() + [7, 8])
    assert resumed.private.tolist() == request.private.tolist() + [True, True]
    assert resumed.declared_public.tolist() == [False] * 8
    with pytest.raises(ValueError, match="do not continue"):
        request.prefill_copy([1, 2, 3, 4, 5, 6])


def test_flags_must_be_one_per_token():
    with pytest.raises(ValueError, match="one flag per token"):
        ServedRequest("r1", "tenant-a", np.arange(4, dtype=np.int64),
                      np.zeros(3, dtype=np.bool_), None, np.zeros(4, dtype=np.bool_))
