"""What the ranks take for a call's variables: each one's largest value over
the ranks, so that every rank chooses alike, and for those a description
declares ``uniform`` the check that they were alike to begin with.  The
profiler checks at every point; a built module under HLC_CHECK_UNIFORM, on
every call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


class NotUniform(ValueError):
    """The ranks' values of a variable the description declares uniform differ."""


def largest_over_ranks(team: Any, values: Mapping[str, float], uniform: Sequence[str] = ()) -> dict[str, float]:
    """Each value's largest over the ranks of ``team``, in one all-reduce
    that also carries each ``uniform`` one's smallest (negated): NotUniform,
    on every rank alike, where the two differ."""
    names = list(values)
    ends = np.array([*values.values(), *(-values[name] for name in uniform)], dtype=float)
    combined = team.reduce(ends, "max").tolist()
    for k, name in enumerate(uniform):
        smallest, largest = -combined[len(names) + k], combined[names.index(name)]
        if smallest != largest:
            raise NotUniform(f"uniform variable '{name}' is {smallest:g} on some ranks and {largest:g} on others")
    return dict(zip(names, combined[:len(names)], strict=True))
