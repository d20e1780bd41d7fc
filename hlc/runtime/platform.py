"""Emulated platforms: what communication would cost on another network.

Calibrated models are only as portable as the platforms they were fitted on
(thesis §3).  To see how the models and the choices change with the network,
a run can pretend its messages travel over a slower one: ``World`` adds, to
every communication operation, start-up + bytes × per-byte seconds of busy
waiting.  The platform is chosen with the environment variable
``HLC_PLATFORM`` — a preset name or a JSON file with the keys ``name``,
``startup_seconds`` and ``seconds_per_byte`` — so that unchanged programs
(profiling runs, built libraries) can be run "on" another machine.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

#: The environment variable that selects the platform.
VARIABLE = "HLC_PLATFORM"


@dataclass(frozen=True)
class Platform:
    """A network's cost per message: a start-up time and a time per byte sent."""

    name: str
    startup_seconds: float
    seconds_per_byte: float

    def __post_init__(self) -> None:
        for field in ("startup_seconds", "seconds_per_byte"):
            value = getattr(self, field)
            if isinstance(value, bool) or not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"platform {self.name!r}: {field} must be a finite number >= 0, not {value!r}")

    @property
    def native(self) -> bool:
        """Whether nothing is added to the machine's own costs."""
        return self.startup_seconds == 0 and self.seconds_per_byte == 0

    def cost(self, sent_bytes: int) -> float:
        """Seconds one operation that sends ``sent_bytes`` from a rank costs that rank."""
        return self.startup_seconds + sent_bytes * self.seconds_per_byte

    def spend(self, sent_bytes: int) -> None:
        """Busy-wait the cost of sending ``sent_bytes``: a sleep would yield the
        processor and overshoot by the scheduler's tick, far more than a start-up."""
        end = time.perf_counter() + self.cost(sent_bytes)
        while time.perf_counter() < end:
            pass


#: The named platforms: this machine as it is, a fast parallel machine's
#: network, and a local-area network (start-up 100× the fast one's).
PRESETS: dict[str, Platform] = {
    "native": Platform("native", 0.0, 0.0),
    "fast": Platform("fast", 2e-6, 1e-9),
    "lan": Platform("lan", 200e-6, 10e-9),
}


def load_platform(path: str | os.PathLike[str]) -> Platform:
    """The platform a JSON file describes (``name`` defaults to the file's stem)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read platform file {path}: {error}") from None
    keys = {"name", "startup_seconds", "seconds_per_byte"}
    if not isinstance(data, dict) or not {"startup_seconds", "seconds_per_byte"} <= data.keys() <= keys:
        raise ValueError(f"platform file {path} must hold a JSON object with the keys "
                         f"startup_seconds, seconds_per_byte and optionally name")
    return Platform(str(data.get("name", path.stem)), data["startup_seconds"], data["seconds_per_byte"])


def platform_named(value: str) -> Platform:
    """A preset by name, or the platform in a JSON file if ``value`` is a path."""
    if value in PRESETS:
        return PRESETS[value]
    if value.endswith(".json") or os.path.exists(value):
        return load_platform(value)
    raise ValueError(f"unknown platform {value!r}: the presets are {', '.join(PRESETS)} "
                     f"(or give the path of a JSON file)")


def current_platform() -> Platform:
    """The platform ``HLC_PLATFORM`` selects; native when it is unset or empty."""
    value = os.environ.get(VARIABLE, "")
    try:
        return platform_named(value) if value else PRESETS["native"]
    except ValueError as error:
        raise ValueError(f"{VARIABLE}={value}: {error}") from None
