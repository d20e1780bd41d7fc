"""Local sorts that NumPy provides, wrapped to the library's calling convention."""

from __future__ import annotations

import numpy as np


def stable_sort(keys: np.ndarray) -> np.ndarray:
    """NumPy's stable sort: a radix sort for keys of 16 bits or less, else timsort."""
    return np.sort(keys, kind="stable")
