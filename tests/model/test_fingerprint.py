"""The machine a calibration records: what a virtual machine's masked model
name hides, read from /proc/cpuinfo, and what two records are compared on."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from hlc.artefacts.models import Fingerprint
from hlc.dispatch.support import stale_reasons
from hlc.model import fingerprint
from hlc.model.fingerprint import machine_differences, processor, vector_extensions

X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx sse4a avx2 bmi2

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 26
model name\t: another
flags\t\t: avx512f
"""

ARM = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics sve sve2
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd4f
"""


def info(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return fingerprint._cpuinfo(path)


def test_the_first_processor_s_identity_and_vector_instructions(tmp_path):
    x86 = info(tmp_path, X86)
    assert x86["model name"] == "AMD EPYC"  # the second processor's fields do not overwrite the first's
    assert processor(x86) == "AuthenticAMD family 25 model 1 stepping 1"
    assert vector_extensions(x86) == ["sse4_2", "avx", "avx2", "fma"]  # in VECTOR_FLAGS' order; sse4_1 is not one
    arm = info(tmp_path, ARM)
    assert processor(arm) == "implementer 0x41 part 0xd4f variant 0x0"
    assert vector_extensions(arm) == ["asimd", "sve", "sve2"]


def test_a_machine_without_cpuinfo_records_none(tmp_path):
    none = fingerprint._cpuinfo(tmp_path / "missing")
    assert none == {}
    assert processor(none) is None and vector_extensions(none) is None


def test_machines_that_differ_only_in_what_the_model_name_hides_differ():
    zen3 = {"cpu": "AMD EPYC", "processor": "AuthenticAMD family 25 model 1 stepping 1",
            "vector": ["avx", "avx2"], "cores": 2, "constants": {"cache_l2": 524288}}
    zen5 = {**zen3, "processor": "AuthenticAMD family 26 model 2 stepping 0", "vector": ["avx", "avx2", "avx512f"]}
    assert machine_differences(zen3, zen5) == [
        "processor: 'AuthenticAMD family 25 model 1 stepping 1' against 'AuthenticAMD family 26 model 2 stepping 0'",
        "vector: ['avx', 'avx2'] against ['avx', 'avx2', 'avx512f']"]
    assert machine_differences(zen3, Fingerprint(dict(zen5))) == machine_differences(zen3, zen5)


def test_a_record_taken_before_a_field_was_recorded_is_not_compared_on_it():
    older = {"cpu": "AMD EPYC", "cores": 2, "constants": {"cache_l2": 524288}}
    now = {**older, "processor": "AuthenticAMD family 25 model 1 stepping 1", "vector": ["avx2"]}
    assert machine_differences(older, now) == []
    assert machine_differences(Fingerprint(dict(now)), older) == []
    assert "processor" in Fingerprint(dict(now)) and "processor" not in Fingerprint(dict(older))
    assert machine_differences(older, {**now, "cores": 16}) == ["cores: 2 against 16"]


def test_this_machine_is_recorded_with_its_processor():
    here = fingerprint.machine()
    assert {"cpu", "processor", "vector", "cores", "constants"} <= set(here)
    if Path("/proc/cpuinfo").exists():
        assert here["processor"] and isinstance(here["vector"], list)


def test_an_import_names_what_changed_but_not_what_the_build_never_recorded(tmp_path):
    here = fingerprint.machine()

    def reasons(recorded: dict) -> list[str]:
        models = SimpleNamespace(fingerprint=Fingerprint(recorded), description=str(tmp_path / "x.hl"), origin=None)
        return stale_reasons(models, tmp_path)

    assert reasons(dict(here)) == []
    older = {key: value for key, value in here.items() if key not in ("processor", "vector")}
    assert reasons(older) == []  # calibrated before hlc recorded the processor
    now = here["processor"]
    assert reasons({**here, "processor": "another"}) == [f"processor: calibrated with 'another', now {now!r}"]
    assert len(reasons({})) == sum(value is not None for value in here.values())  # no machine: every field differs
