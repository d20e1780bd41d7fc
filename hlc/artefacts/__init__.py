"""The files one stage writes and the next reads, as typed values.

Each artefact has one module: :mod:`samples` (what the profiler measured),
:mod:`models` (what the fitter made of it) and :mod:`evaluation` (how the
choices of a build compared with the measured fastest).  Each holds
dataclasses, a format version and ``load``/``save``; no other module reads
these files by key.  This package imports nothing from the stages, so every
stage may depend on it.
"""

from hlc.artefacts.files import ArtefactError

__all__ = ["ArtefactError"]
