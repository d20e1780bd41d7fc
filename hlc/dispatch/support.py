"""Run-time support of generated dispatch modules (the part that is not hot).

The compiled module decides in C; this module does what happens once per
import (reading the models, checking the fingerprint, loading the
implementations, reading ``HLC_FORCE``/``HLC_LOG``) or only when asked
(``choose``, ``explain``, ``predict``, warnings).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy

from hlc.arguments import as_array  # the generated module's _support.as_array
from hlc.artefacts.models import Models, load, load_used
from hlc.calibrate.harness import Sources, load_attribute
from hlc.dispatch.bundle import description_of
from hlc.dispatch.reference import Choice
from hlc.model.fingerprint import digest, machine
from hlc.runtime import world
from hlc.runtime.agreement import NotUniform, largest_over_ranks

__all__ = ["Choice", "ExtrapolationWarning", "ModuleState", "StaleModelError", "StaleModelWarning",
           "as_array", "clock", "load_attribute", "numpy"]

LOG = logging.getLogger("hlc.dispatch")
clock = time.perf_counter


class StaleModelWarning(UserWarning):
    """The models were calibrated on another machine, other versions or other sources."""


class StaleModelError(RuntimeError):
    """A stale model under ``HLC_STRICT=1``."""


class ExtrapolationWarning(UserWarning):
    """A call's variables lie outside the range the models were calibrated on."""


def read_models(module_file: str) -> Models:
    """The models of the build the module ``module_file`` belongs to."""
    return load(Path(module_file).parent / "models.json")


def stale_reasons(models: Models, folder: Path) -> list[str]:
    """What differs between the calibration and now: machine, versions, and
    the sources the build in ``folder`` calls (its own copies).  A field a
    build that recorded its machine lacks (calibrated before hlc recorded
    that field) says nothing; a build that recorded no machine differs in
    every field."""
    recorded = models.fingerprint
    reasons = []
    for key, value in machine().items():
        if (key in recorded or "cpu" not in recorded) and recorded.get(key) != value:
            reasons.append(f"{key}: calibrated with {recorded.get(key)!r}, now {value!r}")
    base = description_of(models, folder).parent
    for name, recorded_digest in recorded.sources.items():
        path = base / name
        if not path.exists():
            reasons.append(f"source {name}: missing")
        elif digest(path) != recorded_digest:
            reasons.append(f"source {name}: changed since calibration")
    return reasons


def _parse_force(text: str) -> tuple[str, dict[str, int]]:
    """``radix:bpd=8`` → ("radix", {"bpd": 8})."""
    name, _, rest = text.partition(":")
    parameters = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:
            parameters[key.strip()] = int(value)
        except ValueError:
            raise ValueError(f"HLC_FORCE={text!r}: parameter values are integers ({item!r})") from None
    return name.strip(), parameters


class ModuleState:
    """What one imported dispatch module knows beside its C code."""

    def __init__(self, module_file: str, models: Models):
        folder = Path(module_file).parent
        self.folder = folder
        self.models = models
        self.used_models = load_used(folder / "used_models.json")
        self.description = description_of(models, folder)
        self.sources = Sources(str(self.description.parent), str(folder / "ext"))
        self.world = world()
        self.P = float(self.world.size)
        self.logP = math.log2(self.P)
        self.logging = os.environ.get("HLC_LOG", "") not in ("", "0")
        force = os.environ.get("HLC_FORCE", "")
        self.force = _parse_force(force) if force else None
        self.forcing = self.force is not None
        self.checking_uniform = self.P > 1 and os.environ.get("HLC_CHECK_UNIFORM", "") not in ("", "0")
        self._extrapolated: set[tuple[str, str]] = set()
        self._library = None
        reasons = stale_reasons(models, folder)
        if reasons:
            message = f"the models of library {models.library} may not fit: " + "; ".join(reasons)
            if os.environ.get("HLC_STRICT", "") not in ("", "0"):
                raise StaleModelError(message + " (HLC_STRICT is set)")
            warnings.warn(message + ". Run `hlc recalibrate` to refit them here.", StaleModelWarning, stacklevel=3)

    def agree(self, values: tuple[float, ...]) -> list[float]:
        """Under MPI every rank must take the same implementation, or their
        collectives would not match: each variable becomes its largest value
        over the ranks (one small all-reduce per call)."""
        return self.world.reduce(numpy.array(values, dtype=float), "max").tolist()

    def check_uniform(self, interface: str, names: tuple[str, ...], values: tuple[float, ...]) -> None:
        """HLC_CHECK_UNIFORM=1: the ranks compare the variables a description
        declares uniform, which they otherwise take on trust, in one
        all-reduce (the largest value and the negated smallest); each rank
        raises alike where a variable differs, before any rank has chosen."""
        try:
            largest_over_ranks(self.world, dict(zip(names, values, strict=True)), names)
        except NotUniform as error:
            raise ValueError(f"{interface}(): {error}; every rank must pass arguments that give it one value "
                             f"(HLC_CHECK_UNIFORM checks this)") from None

    def forced(self, interface: str, names: list[str]) -> tuple[int, dict[str, int]] | None:
        name, parameters = self.force
        if name not in names:
            return None
        return names.index(name), parameters

    def log(self, interface: str, names: list[str], chosen: int, parameters: dict, variables: dict) -> None:
        """HLC_LOG=1: one line per call, "sort(n=1000, width=12, P=1, logP=0) → radix(bpd=6)"."""
        shown = ", ".join(f"{k}={v:g}" for k, v in variables.items())
        target = names[chosen] if chosen >= 0 else "no implementation"
        settings = ", ".join(f"{k}={v}" for k, v in parameters.items())
        LOG.info("%s(%s) → %s%s", interface, shown, target, f"({settings})" if settings else "")

    def extrapolating(self, interface: str, variables: dict[str, float]) -> None:
        """Warn once per variable whose value lies outside the range calibrated
        for every implementation (one calibrated only at P > 1 does not make
        P = 1 an extrapolation)."""
        for name, value in variables.items():
            low, high = self._domain(interface).get(name, (value, value))
            if (value < low or value > high) and (interface, name) not in self._extrapolated:
                self._extrapolated.add((interface, name))
                warnings.warn(f"{interface}: {name} = {value:g} lies outside the calibrated range "
                              f"{low:g} .. {high:g}; predictions extrapolate", ExtrapolationWarning, stacklevel=3)

    @functools.cache  # noqa: B019 - one ModuleState per imported module, alive as long as it
    def _domain(self, interface: str) -> dict[str, tuple[float, float]]:
        """Each variable's range, the union over the interface's implementations."""
        union: dict[str, tuple[float, float]] = {}
        for record in self.models.implementations.values():
            if record.interface == interface:
                for name, (low, high) in record.time.domain.items():
                    known = union.get(name, (low, high))
                    union[name] = (min(known[0], low), max(known[1], high))
        return union

    def library(self):
        """The description, parsed on first use (explain needs the terms)."""
        if self._library is None:
            from hlc.language.parse import parse_file

            self._library = parse_file(self.description)
        return self._library

    @functools.cached_property
    def measured(self):
        """The build's samples, read on first use where they lie beside the
        module (a package installed without them explains without them)."""
        from hlc.artefacts.samples import Samples

        path = self.folder / "samples.jsonl"
        return Samples.load(path) if path.is_file() else None

    def explain(self, interface: str, variables: dict[str, float], choice: Choice) -> str:
        from hlc.dispatch.explain import explanation

        return explanation(self.library(), self.models, interface, variables, choice, self.used_models,
                           self.measured)


def choice(names: list[str], chosen: int, predicted: list[float], settings: dict[int, dict[str, int]]) -> Choice:
    """A Choice from the C decision: ``settings`` maps the index of each
    parameterized implementation to its parameters (kept where it applies)."""
    applicable = {names[i]: dict(values) for i, values in settings.items()
                  if math.isfinite(predicted[i]) or i == chosen}
    return Choice(names[chosen] if chosen >= 0 else None, applicable.get(names[chosen], {}) if chosen >= 0 else {},
                  dict(zip(names, predicted, strict=True)), applicable)


def none_applies(interface: str, variables: Mapping[str, float]) -> None:
    shown = ", ".join(f"{k}={v:g}" for k, v in variables.items())
    raise ValueError(f"{interface}(): no implementation applies to {shown} "
                     f"(every precondition fails, or no model is calibrated)")


def predict(predictors: Mapping[str, Callable[..., float]], implementation: str, variables: Mapping[str, float],
            P: float, logP: float) -> float:
    if implementation not in predictors:
        raise ValueError(f"no implementation '{implementation}'; there are {', '.join(predictors)}")
    function = predictors[implementation]
    arguments = {f"v_{k}": float(v) for k, v in variables.items() if k not in ("P", "logP")}
    try:
        return function(**arguments, P=float(variables.get("P", P)),
                        logP=float(variables.get("logP", math.log2(variables["P"]) if "P" in variables else logP)))
    except TypeError as error:
        raise TypeError(f"predict({implementation!r}, ...): {error}".replace("v_", "")) from None
