# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Least-significant-digit radix sort with the digit width as a parameter.

Keys of any integer dtype are first mapped, order-preserving, to unsigned
offsets from the smallest key, so only the bits of the span actually present
are sorted: ceil(width / bpd) passes of counting, prefix sums and scatter.
"""

import numpy as np

from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memset

ctypedef fused key_t:
    uint32_t
    uint64_t

cdef uint64_t SIGN_BIT = 0x8000000000000000


cdef void _passes(key_t[::1] keys, key_t[::1] scratch, int width, int bpd, Py_ssize_t[::1] counts) noexcept nogil:
    """Sort ``keys`` in place by its low ``width`` bits, ``bpd`` bits per pass."""
    cdef Py_ssize_t n = keys.shape[0], i, total, count
    cdef Py_ssize_t bins = (<Py_ssize_t>1) << bpd
    cdef key_t mask = <key_t>(bins - 1)
    cdef key_t[::1] source = keys
    cdef key_t[::1] target = scratch
    cdef key_t[::1] swap
    cdef int shift = 0
    cdef size_t digit
    while shift < width:
        memset(&counts[0], 0, bins * sizeof(Py_ssize_t))
        for i in range(n):
            counts[(source[i] >> shift) & mask] += 1
        total = 0
        for i in range(bins):
            count = counts[i]
            counts[i] = total
            total += count
        for i in range(n):
            digit = (source[i] >> shift) & mask
            target[counts[digit]] = source[i]
            counts[digit] += 1
        swap = source
        source = target
        target = swap
        shift += bpd
    if &source[0] != &keys[0]:
        keys[:] = source


def radix_sort(keys, int bpd=8):
    """Return ``keys`` (a 1-D integer array) sorted, using ``bpd`` bits per digit."""
    array = np.asarray(keys)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise TypeError(f"keys must be a 1-D integer array, not {array.dtype} with {array.ndim} dimensions")
    if not 1 <= bpd <= 16:
        raise ValueError(f"bpd must be in 1 .. 16, not {bpd}")
    if array.shape[0] <= 1:
        return array.copy()
    if array.dtype.kind == "i":
        offsets = array.astype(np.int64).view(np.uint64) ^ SIGN_BIT
    else:
        offsets = array.astype(np.uint64)
    smallest = offsets.min()
    offsets -= smallest
    width = int(offsets.max()).bit_length()
    counts = np.empty((<Py_ssize_t>1) << bpd, dtype=np.intp)
    if width <= 32:
        narrow = offsets.astype(np.uint32)
        _passes[uint32_t](narrow, np.empty_like(narrow), width, bpd, counts)
        offsets = narrow.astype(np.uint64)
    else:
        _passes[uint64_t](offsets, np.empty_like(offsets), width, bpd, counts)
    offsets += smallest
    if array.dtype.kind == "i":
        return (offsets ^ SIGN_BIT).view(np.int64).astype(array.dtype)
    return offsets.astype(array.dtype)
