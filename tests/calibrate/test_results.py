"""The check of a candidate's result against the reference's (hlc.calibrate.tasks.same_result)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from hlc.calibrate import tasks
from hlc.calibrate.tasks import same_result

SPECIAL = st.sampled_from([0.0, 1.0, -1.0, 1e300, -1e-300, np.inf, -np.inf, np.nan])


def whole(result: np.ndarray, reference: np.ndarray) -> bool:
    """The rule in one piece: numpy.allclose with the reference's scale."""
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    return bool(np.allclose(result, reference, rtol=1e-9, atol=1e-12 * max(scale, 1.0)))


@settings(max_examples=300, deadline=None)
@given(reference=arrays(np.float64, st.integers(0, 40), elements=st.floats(-1e6, 1e6) | SPECIAL),
       changes=st.lists(st.tuples(st.integers(0, 39), st.sampled_from(
           [0.0, 1e-13, 1e-10, 1e-8, 1e-3, 1.0, np.nan, np.inf, -np.inf])), max_size=4),
       chunk=st.integers(1, 7))
def test_a_result_checked_in_chunks_agrees_with_allclose_over_the_whole(reference, changes, chunk):
    """However the arrays fall into chunks, and with NaNs, infinities and
    changes just inside and outside the tolerance, the chunked check says
    what numpy.allclose says of the whole arrays."""
    result = reference.copy()
    for index, change in changes:
        if index < result.size:
            result[index] = change if not np.isfinite(change) or change == 0.0 else result[index] * (1 + change)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks, "CLOSE_CHUNK", chunk)
        assert same_result(result, reference) == whole(result, reference)


def test_large_results_are_compared_element_by_element():
    """Past one chunk: equal, within 1e-9 relative, and one element beyond it
    in the last, partial chunk."""
    reference = np.random.default_rng(0).random(3 * tasks.CLOSE_CHUNK + 5)
    assert same_result(reference * (1 + 1e-12), reference)
    assert same_result(np.float32(1) * reference.astype(np.float32), reference.astype(np.float32))
    wrong = reference.copy()
    wrong[-1] *= 1 + 1e-6
    assert not same_result(wrong, reference)
    assert not same_result(wrong.reshape(-1, 1), reference)  # the shapes differ


@pytest.mark.parametrize("kind", [np.int64, np.uint8, bool])
def test_integer_and_boolean_results_agree_exactly(kind):
    reference = (np.arange(10) % 3).astype(kind)
    assert same_result(reference.copy(), reference)
    other = reference.copy()
    other[4] = 2 if kind is not bool else not other[4]
    assert not same_result(other, reference)


def test_numbers_agree_whatever_holds_them():
    """A list of the reference array's values is the same result; one value
    more, another shape or None is not."""
    reference = np.cumsum(np.arange(5.0))
    assert same_result(list(reference), reference) and same_result(reference, list(reference))
    assert same_result(tuple(reference * (1 + 1e-12)), reference)
    assert same_result(np.float64(1.5), 1.5) and same_result(3, 3.0)
    assert not same_result(list(reference) + [1.0], reference)
    assert not same_result(reference.reshape(5, 1), list(reference))
    assert not same_result(None, reference) and not same_result(reference, None)
    assert not same_result([[1.0, 2.0], [3.0]], np.ones(2))  # ragged
    assert same_result({"counts": [1, 2], "total": 3.0}, {"counts": np.array([1, 2]), "total": 3.0})


class Grumpy:
    """A result whose comparison raises."""

    def __eq__(self, other):
        raise RuntimeError("cannot compare")

    __hash__ = object.__hash__


@pytest.mark.parametrize("result, reference", [
    (Grumpy(), Grumpy()),
    (Grumpy(), np.ones(3)),
    (["a", "b"], np.ones(2)),
    ({"a": np.ones(2)}, {"a": np.zeros(2)}),
    ({"a": np.ones(2)}, {"b": np.ones(2)}),
])
def test_a_comparison_that_fails_is_a_disagreement_not_an_error(result, reference):
    """Whatever two implementations return, the check answers: an error
    here would end the profile and be blamed on the implementation."""
    assert same_result(result, reference) in (True, False)
    assert not same_result(result, reference) or result is reference


def test_a_result_is_described_in_a_line_however_large():
    from hlc.calibrate.tasks import describe

    assert describe(list(range(10**6))) == "[0, 1, 2, 3, 4, 5, 6, 7, ...]"
    assert len(describe(np.arange(10**6))) <= 80 and describe(None) == "None"
    assert "Grumpy" in describe(Grumpy()) or describe(Grumpy()).startswith("<")
