"""The rule by which a built module takes array arguments (hlc.arguments.as_array):
converted where nothing is lost, refused naming the argument otherwise."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hlc.arguments import as_array

WHERE = "f(): argument 'x'"
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64", "bool"]
DECLARED = ["int", "float", "bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float32",
            "float64"]


def accepts(element: str, dtype: np.dtype) -> bool:
    kinds = {"int": "iu", "float": "f", "bool": "b"}.get(element)
    return dtype.kind in kinds if kinds else dtype == np.dtype(element)


@settings(max_examples=300, deadline=None)
@given(dtype=st.sampled_from(DTYPES), element=st.sampled_from(DECLARED), data=st.data(),
       listed=st.booleans())
def test_a_conversion_keeps_every_value_or_is_refused(dtype, element, data, listed):
    values = data.draw(hnp.arrays(np.dtype(dtype), st.integers(0, 6),
                                  elements=hnp.from_dtype(np.dtype(dtype), allow_nan=False, allow_infinity=False)))
    given_ = values.tolist() if listed else values
    try:
        result = as_array(given_, WHERE, element, 1)
    except (TypeError, ValueError) as error:
        assert str(error).startswith(WHERE)
        return
    assert isinstance(result, np.ndarray) and result.ndim == 1 and accepts(element, result.dtype)
    assert len(result) == len(values)
    if values.size:
        assert (result.dtype.kind == "b") == (np.asarray(given_).dtype.kind == "b")
        # exact: every value is the one given
        assert [int(a) if result.dtype.kind in "iu" else a for a in result.tolist()] == \
            [int(b) if result.dtype.kind in "iu" else b for b in np.asarray(given_).tolist()]
    if not listed and accepts(element, values.dtype):
        assert result is values  # an array that needs nothing is taken as it is


def test_integers_to_floating_point_are_converted_only_when_exact():
    assert as_array(np.array([2**53, -(2**53)]), WHERE, "float64", 1).dtype == np.float64
    with pytest.raises(ValueError, match=r"holds integers beyond ±2\*\*53"):
        as_array(np.array([2**53 + 1]), WHERE, "float64", 1)
    assert as_array(np.array([2**24], dtype=np.int32), WHERE, "float32", 1).dtype == np.float32
    with pytest.raises(ValueError, match=r"beyond ±2\*\*24"):
        as_array(np.array([2**24 + 1], dtype=np.int32), WHERE, "float32", 1)


def test_arrays_do_not_narrow_but_lists_do_where_the_values_fit():
    with pytest.raises(TypeError, match="must hold int32, not int64"):
        as_array(np.arange(3), WHERE, "int32", 1)
    assert as_array([1, 2, 3], WHERE, "int32", 1).dtype == np.int32
    with pytest.raises(ValueError, match="beyond the range of int32"):
        as_array([2**40], WHERE, "int32", 1)


def test_an_argument_the_implementations_modify_is_never_copied():
    with pytest.raises(TypeError, match="change it in place"):
        as_array([1.0, 2.0], WHERE, "float64", 1, mutable=True)
    with pytest.raises(TypeError, match="must hold float64, not float32"):
        as_array(np.ones(2, dtype=np.float32), WHERE, "float64", 1, mutable=True)
    grid = np.zeros(3)
    assert as_array(grid, WHERE, "float64", 1, mutable=True) is grid


def test_what_is_not_numbers_and_wrong_shapes_are_refused_naming_the_argument():
    for value, error, message in [("abc", TypeError, "must be a NumPy array of float64, not str"),
                                  ([object()], TypeError, "must be a NumPy array of float64, not list"),
                                  ([1, [2]], TypeError, "must be a NumPy array of float64, not list"),
                                  (np.ones((2, 2)), ValueError, "must be 1-dimensional, not 2-dimensional"),
                                  (3.0, ValueError, "must be 1-dimensional, not 0-dimensional"),
                                  (np.array([1 + 2j]), TypeError, "must hold float64, not complex128"),
                                  ([1 + 2j], TypeError, "must hold float64, not complex128")]:
        with pytest.raises(error, match=re.escape(f"{WHERE} {message}")):
            as_array(value, WHERE, "float64", 1)
