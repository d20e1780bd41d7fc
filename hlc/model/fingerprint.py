"""What a calibration depends on: this machine, these versions, these sources.

Models are valid for the machine and software they were measured on.  The
fingerprint records everything that can invalidate them — like an autotuner's
cache key — so a build can tell, when it is imported elsewhere, what changed.
"""

from __future__ import annotations

import hashlib
import os
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from hlc.artefacts.models import Fingerprint
from hlc.language import ast
from hlc.language.machine import machine_constants

#: The vector instruction sets a kernel's cost turns on (NumPy's sorts take
#: AVX-512 or AVX2 kernels by what the processor offers), as /proc/cpuinfo
#: names them on x86 and on Arm.
VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vbmi2",
                "avx512_fp16", "amx_tile", "asimd", "sve", "sve2")


def _cpuinfo(path: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """The first processor's fields in ``path`` (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        text = path.read_text()
    except OSError:
        return fields
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def _cpu_model(info: dict[str, str]) -> str:
    return info.get("model name") or platform.processor() or platform.machine()


def processor(info: dict[str, str]) -> str | None:
    """Vendor, family, model and stepping (x86) or implementer, part and
    variant (Arm): what a virtual machine's masked model name leaves out.
    Three generations of one vendor's server processors, whose costs
    differ by up to three times, all read "AMD EPYC" in their model name."""
    if "vendor_id" in info:
        return (f"{info['vendor_id']} family {info.get('cpu family', '?')} model {info.get('model', '?')} "
                f"stepping {info.get('stepping', '?')}")
    if "CPU implementer" in info:
        return (f"implementer {info['CPU implementer']} part {info.get('CPU part', '?')} "
                f"variant {info.get('CPU variant', '?')}")
    return None


def vector_extensions(info: dict[str, str]) -> list[str] | None:
    """The VECTOR_FLAGS the processor has (None where /proc/cpuinfo lists no flags)."""
    flags = info.get("flags") or info.get("Features")
    if flags is None:
        return None
    present = set(flags.split())
    return [flag for flag in VECTOR_FLAGS if flag in present]


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_files(library: ast.Library) -> list[Path]:
    """The description and every source file it imports from."""
    files = {(library.directory / i.source).resolve() for i in library.imports if i.is_file}
    if not library.filename.startswith("<"):
        files.add(Path(library.filename).resolve())
    return sorted(files)


def machine() -> dict[str, Any]:
    """The parts of the fingerprint that describe this machine and its software."""
    info = _cpuinfo()
    return {
        "cpu": _cpu_model(info),
        "processor": processor(info),
        "vector": vector_extensions(info),
        "cores": os.cpu_count(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "cython": _version("cython"),
        "mpi4py": _version("mpi4py"),
        "platform": os.environ.get("HLC_PLATFORM", "native"),
        "constants": machine_constants(),
    }


def source_digests(library: ast.Library) -> dict[str, str]:
    """Each of ``source_files``, named relative to the description's folder, and its digest."""
    base = library.directory
    sources = {}
    for path in source_files(library):
        try:
            name = str(path.relative_to(base))
        except ValueError:
            name = str(path)
        sources[name] = digest(path)
    return sources


def implementation_digests(library: ast.Library) -> dict[str, str]:
    """The digests of the source files the implementations are imported
    from, without the description's own: what timings of the
    implementations depend on, whatever description chose among them (a
    stored evaluation judges models fitted with another description, and
    nothing once the kernels it timed have changed)."""
    own = Path(library.filename).resolve().name if not library.filename.startswith("<") else None
    return {name: value for name, value in source_digests(library).items() if name != own}


#: What makes two machines alike for timings: the processor, its vector
#: instructions, its cores and its caches (the versions of Python and NumPy
#: change the calls' costs less than another host does, and a fingerprint
#: records them apart).
MACHINE_KEYS = ("cpu", "processor", "vector", "cores", "constants")


def machine_differences(recorded: Mapping[str, Any] | Fingerprint, other: Mapping[str, Any] | Fingerprint) -> list[str]:
    """``cpu: 'A' against 'B'`` for each of MACHINE_KEYS whose value differs
    between two records of a machine (an evaluation's, a fingerprint,
    ``machine()``); none where one of them records no machine.  A key one
    record lacks (taken before it was recorded) is not compared."""
    if not any(recorded.get(key) is not None for key in MACHINE_KEYS) or \
            not any(other.get(key) is not None for key in MACHINE_KEYS):
        return []
    return [f"{key}: {recorded.get(key)!r} against {other.get(key)!r}" for key in MACHINE_KEYS
            if key in recorded and key in other and recorded.get(key) != other.get(key)]


def fingerprint(library: ast.Library, *, quick: bool = False) -> Fingerprint:
    """Machine, versions and the hashes of the description and its sources."""
    return Fingerprint(machine(), quick, source_digests(library))
