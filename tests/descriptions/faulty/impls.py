"""Implementations that fail in every way profiling must survive."""

from __future__ import annotations

import ctypes
import time

import numpy as np


def make_keys(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1000, count)


def sort_copy(keys: np.ndarray) -> np.ndarray:
    return np.sort(keys)


def raises_on_large(keys: np.ndarray) -> np.ndarray:
    if len(keys) > 64:
        raise ValueError(f"{len(keys)} keys are too many for me")
    return np.sort(keys)


def segfaults(keys: np.ndarray) -> np.ndarray:
    if len(keys) > 32:
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return np.sort(keys)


def hangs(keys: np.ndarray) -> np.ndarray:
    if len(keys) > 128:
        while True:
            time.sleep(1)
    return np.sort(keys)


def wrong(keys: np.ndarray) -> np.ndarray:
    return np.sort(keys)[::-1]
