"""The description language: grammar, syntax tree, semantic checks."""

from hlc.language.ast import Library
from hlc.language.errors import Diagnostic, HLError

__all__ = ["Diagnostic", "HLError", "Library"]
