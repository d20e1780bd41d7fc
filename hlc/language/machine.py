"""Machine constants: names a description may use for this host's caches,
page size and cores (``n * hinges(log2(8 * n) at log2(cache_l1) .. log2(cache_l3))``).

They are read from the host where a description is checked, profiled and
fitted, and the models artefact records them (hlc.model.fingerprint), so a
build says which machine its knots and preconditions were placed for;
``hlc recalibrate`` on another machine reads that machine's.  Where the host
does not say (no sysfs, no sysconf entry), a constant takes a common value
and is reported as assumed.
"""

from __future__ import annotations

import os
from dataclasses import fields, is_dataclass
from functools import cache
from pathlib import Path

from hlc.language import ast

#: name → what it holds, as ``hlc check`` and the language reference say it.
MACHINE_CONSTANTS = {
    "cache_l1": "bytes of level-1 data cache of one core",
    "cache_l2": "bytes of level-2 cache of one core",
    "cache_l3": "bytes of the last-level cache (level 3; level 2 where there is none)",
    "cache_line": "bytes of a cache line",
    "page_size": "bytes of a memory page",
    "cores": "processor cores this process may run on",
}

#: Values taken where the host does not tell (recorded as assumed).
_ASSUMED = {"cache_l1": 32 * 1024, "cache_l2": 1024 * 1024, "cache_l3": 32 * 1024 * 1024, "cache_line": 64,
            "page_size": 4096, "cores": 1}

_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")
_SIZE_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}


def _sysfs_caches(root: Path = _SYSFS) -> dict[str, int]:
    """Data and unified cache sizes by level, and the line size, from Linux's sysfs."""
    found: dict[str, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = int((index / "level").read_text().strip())
            kind = (index / "type").read_text().strip()
            size_text = (index / "size").read_text().strip()
            line = int((index / "coherency_line_size").read_text().strip())
        except (OSError, ValueError):
            continue
        if kind not in ("Data", "Unified") or not 1 <= level <= 3:
            continue
        unit = _SIZE_UNITS.get(size_text[-1:].upper(), 1)
        try:
            size = int(size_text.rstrip("KkMmGg")) * unit
        except ValueError:
            continue
        found[f"cache_l{level}"] = size
        found["cache_line"] = line
    return found


def _sysconf(name: str) -> int | None:
    try:
        value = os.sysconf(name)
    except (ValueError, OSError, AttributeError):
        return None
    return value if value and value > 0 else None


def usable_cores() -> int | None:
    """The cores this process may run on (its affinity), else the machine's;
    None where neither can be read."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def read_machine(sysfs: Path = _SYSFS) -> tuple[dict[str, int], list[str]]:
    """This host's constants, and the names whose values were assumed."""
    values = _sysfs_caches(sysfs)
    for name, key in (("cache_l1", "SC_LEVEL1_DCACHE_SIZE"), ("cache_l2", "SC_LEVEL2_CACHE_SIZE"),
                      ("cache_l3", "SC_LEVEL3_CACHE_SIZE"), ("cache_line", "SC_LEVEL1_DCACHE_LINESIZE")):
        if name not in values and (value := _sysconf(key)) is not None:
            values[name] = value
    if "cache_l3" not in values and "cache_l2" in values:
        values["cache_l3"] = values["cache_l2"]
    if (page := _sysconf("SC_PAGE_SIZE")) is not None:
        values["page_size"] = page
    if (cores := usable_cores()) is not None:
        values["cores"] = cores
    assumed = [name for name in MACHINE_CONSTANTS if name not in values]
    return {name: values.get(name, _ASSUMED[name]) for name in MACHINE_CONSTANTS}, assumed


@cache
def machine_constants() -> dict[str, int]:
    """This host's constants (read once per process)."""
    return read_machine()[0]


def names_in(node: object) -> set[str]:
    """Every name read anywhere under a syntax tree node (any dataclass of
    hlc.language.ast, or tuples of them)."""
    found: set[str] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, tuple | list):
            pending.extend(item)
        elif is_dataclass(item) and not isinstance(item, type):
            if isinstance(item, ast.Name):
                found.add(item.id)
            pending.extend(getattr(item, f.name) for f in fields(item))
    return found


def used_machine_constants(library: ast.Library) -> dict[str, int]:
    """The machine constants a description reads, with this host's values."""
    used = names_in(library)
    return {name: value for name, value in machine_constants().items() if name in used}
