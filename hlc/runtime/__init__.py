"""The SPMD runtime parallel implementations are written against.

``world()`` is the group of ranks taking part in a call: every rank of an
``mpiexec`` run, or this process alone when it was started without one (then
no MPI library is loaded at all).  See :mod:`hlc.runtime.spmd`.
"""

from hlc.runtime.spmd import World, launched_by_mpiexec, world

__all__ = ["World", "launched_by_mpiexec", "world"]
