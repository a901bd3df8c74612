"""Where a list of ids enters the library it becomes `TokenIds`: int64, 1-D, an int64 array
passed through as is."""

from __future__ import annotations

import numpy as np
import pytest

from cacheprune.tokens import as_token_ids


def test_a_list_of_ids_becomes_int64_and_an_int64_array_is_kept():
    ids = as_token_ids([5, 0, 2**32 - 1])
    assert ids.dtype == np.int64 and ids.tolist() == [5, 0, 2**32 - 1]
    assert as_token_ids(ids) is ids
    assert as_token_ids([]).shape == (0,)


def test_ids_must_be_one_dimensional():
    with pytest.raises(ValueError, match="1-D"):
        as_token_ids(np.zeros((2, 3), dtype=np.int64))
