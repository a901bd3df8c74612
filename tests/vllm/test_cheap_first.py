"""Which waiting prompt goes first (`cheap_first`): the rule alone. Its use by the scheduler
half, over a real pool and model, is tested in test_cold_probe."""

from __future__ import annotations

import pytest

from cacheprune.vllm.cheap_first import MAX_DEFERRALS, goes_later
from cacheprune.vllm.cold_probe import Route

WARM, KTH, COLD = Route.CACHEPRUNE, Route.PUBLISH_FIRST, Route.VLLM


@pytest.mark.parametrize("route, waiting, later", [
    (COLD, [WARM], True),
    (COLD, [KTH], True),  # the k-th tenant's pass makes the document warm for everyone
    (COLD, [COLD, None], False),  # an equal, or one whose lookup is not done: no reason
    (KTH, [WARM], True),
    (KTH, [KTH, COLD], False),
    (WARM, [WARM, KTH, COLD], False),  # nothing goes before a warm prompt
    (COLD, [], False),
])
def test_a_prompt_goes_later_only_for_a_cheaper_one(route, waiting, later):
    assert goes_later(route, waiting, num_deferrals=0) is later


def test_a_prompt_is_put_back_a_bounded_number_of_times():
    assert goes_later(COLD, [WARM], MAX_DEFERRALS - 1)
    assert not goes_later(COLD, [WARM], MAX_DEFERRALS)
