"""The SPMD runtime parallel implementations are written against.

``world()`` is the group of ranks taking part in a call: every rank of an
``mpiexec`` run, or this process alone when it was started without one (then
no MPI library is loaded at all).  See :mod:`hlc.runtime.spmd`.  Under
``HLC_PLATFORM`` communication pays an emulated network's costs: see
:mod:`hlc.runtime.platform`.
"""

from hlc.runtime.platform import PRESETS, Platform, current_platform
from hlc.runtime.spmd import SplitBarrier, World, launched_by_mpiexec, world

__all__ = ["PRESETS", "Platform", "SplitBarrier", "World", "current_platform", "launched_by_mpiexec", "world"]
