"""hlc — the high-level library compiler.

A library description (``.hl``) names one interface, several implementations
and the terms their costs depend on; hlc calibrates a cost model for each on
this machine and generates a module that calls the fastest on every call.
"""

from hlc.language.ast import Library
from hlc.language.errors import Diagnostic, HLError
from hlc.language.parse import parse, parse_file

__version__ = "0.1.0"
__all__ = ["Choice", "Diagnostic", "Evaluation", "ExtrapolationWarning", "Fit", "HLError", "Library",
           "Report", "StaleModelError", "StaleModelWarning", "build", "evaluate", "fit", "load", "parse", "parse_file",
           "recalibrate", "report", "__version__"]

# Imported on first use: the fitter needs SciPy, which `hlc check` and `hlc.load` do not.
_LAZY = {
    "fit": "hlc.model.fit", "Fit": "hlc.model.fit",
    "load": "hlc.dispatch.loading", "build": "hlc.dispatch.build", "recalibrate": "hlc.dispatch.build",
    "Choice": "hlc.dispatch.reference",
    "StaleModelWarning": "hlc.dispatch.support", "StaleModelError": "hlc.dispatch.support",
    "ExtrapolationWarning": "hlc.dispatch.support",
    "evaluate": "hlc.evaluation", "Evaluation": "hlc.evaluation",
    "report": "hlc.reports:write_report", "Report": "hlc.reports",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, _, attribute = _LAZY[name].partition(":")
        return getattr(importlib.import_module(module), attribute or name)
    raise AttributeError(f"module 'hlc' has no attribute '{name}'")
