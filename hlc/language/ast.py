"""Typed syntax tree of a library description.

One dataclass per construct of the language; every node that a check may
complain about carries the line and column where it starts, so diagnostics can
point at it.  The tree is plain data: later stages (profiling, fitting,
dispatch) read it and never mutate it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Node:
    """Base of every node: where in the description it starts (1-based)."""

    line: int
    column: int


# ---- expressions ------------------------------------------------------------


@dataclass(frozen=True)
class Number(Node):
    value: int | float


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class Call(Node):
    """A call of a built-in function, an imported helper or a model.

    ``function`` is dotted for qualified models (``runtime.BlockTransfer``).
    """

    function: str
    arguments: tuple[Expression, ...]


@dataclass(frozen=True)
class Unary(Node):
    operator: str  # "-", "+", "not"
    operand: Expression


@dataclass(frozen=True)
class Binary(Node):
    operator: str  # + - * / // % ** << >> < <= > >= == != and or
    left: Expression
    right: Expression
    operator_line: int = 0  # where the operator itself is, for diagnostics
    operator_column: int = 0
    parenthesized: bool = False  # written in parentheses: one term of a fitted model


Expression = Number | Name | Call | Unary | Binary


# ---- declarations -----------------------------------------------------------


@dataclass(frozen=True)
class Binding(Node):
    """A name given to the value of an expression: a helper (``let``), an
    explanatory variable, or an argument the profile builds."""

    name: str
    value: Expression


@dataclass(frozen=True)
class Let(Binding):
    """A named helper value: library constant, implementation helper or
    profile value function (``let bins = 2 ** bpd``)."""


@dataclass(frozen=True)
class Uses(Node):
    """``uses runtime``: the models of another calibrated library."""

    library: str


@dataclass(frozen=True)
class Import(Node):
    """``from "sort/support.py" import key_width as kw``.

    ``source`` is a file path (relative to the description's directory) when
    ``is_file`` is true, else a dotted module name.
    """

    source: str
    is_file: bool
    name: str
    alias: str
    alias_line: int = 0  # where the alias is written (the name it defines)
    alias_column: int = 0
    source_line: int = 0  # where the file path or module name is written
    source_column: int = 0

    @property
    def describe(self) -> str:
        where = f'"{self.source}"' if self.is_file else self.source
        return f"{where}:{self.name}"


@dataclass(frozen=True)
class ModelDefinition(Node):
    """A library-level factored model: an exact expression over other models,
    never fitted (``model Communication(width) = BlockTransfer(width / 2)``)."""

    name: str
    parameters: tuple[str, ...]
    body: Expression
    doc: str | None


# ---- interfaces and implementations -----------------------------------------


@dataclass(frozen=True)
class Type(Node):
    """``int`` (any integer dtype), ``float64[]``, ``int32[,]`` ...;
    ``dimensions`` is 0 for a scalar."""

    element: str
    dimensions: int

    def __str__(self) -> str:
        if self.dimensions == 0:
            return self.element
        return f"{self.element}[{',' * (self.dimensions - 1)}]"


@dataclass(frozen=True)
class Argument(Node):
    name: str
    type: Type
    mutable: bool  # implementations may modify it: profiling copies it per run


@dataclass(frozen=True)
class Variable(Binding):
    """An explanatory variable computed from the arguments (``n = len(keys)``).
    ``uniform``: the caller passes arguments that give it the same value on
    every rank, so that under mpiexec the ranks need not agree on it."""

    uniform: bool = False


@dataclass(frozen=True)
class Range(Node):
    """An inclusive integer range ``low .. high``."""

    low: Expression
    high: Expression


@dataclass(frozen=True)
class Parameter(Node):
    """An integer parameter the dispatcher sets at call time."""

    name: str
    type: str
    range: Range | None


@dataclass(frozen=True)
class Family(Node):
    """``steps(digit)`` or ``hinges(log2(n) at 10 .. 22 += 0.5)``: candidate
    factors the fitter chooses among, ``(x >= k)`` or ``max(0, x - k)`` at
    each knot k.  Without ``at`` the knots are the values the samples tell
    apart.  It stands only as a factor of a term of a fitted model."""

    kind: str  # "steps" or "hinges"
    expression: Expression
    knots: Range | None = None
    update: Update | None = None  # None with knots: "++" for steps, "+= 1" for hinges


@dataclass(frozen=True)
class FamilyTerm(Node):
    """A term with one or two families among its factors: ``n * hinges(log2(n))``,
    ``n * steps(digit) * hinges(log2(n))``.  The fitter adds ``base * member``
    for the members the samples need; a member of two families is a product
    of one factor of each (a per-key cost that rises with n for wide digits
    only)."""

    base: Expression | None  # the other factors; None: the families alone
    families: tuple[Family, ...]


@dataclass(frozen=True)
class CostModel(Node):
    """``time ~ 1 + n + n*log2(n)`` (fitted) or ``time = 2 * Sub(n)`` (factored).

    For a fitted model ``terms`` holds the basis functions, split at the
    top-level ``+``; ``constant`` says whether the constant term is offered
    (a ``0`` term withdraws it).  For a factored model ``body`` is the exact
    expression and ``terms`` is empty.
    """

    objective: str
    fitted: bool
    terms: tuple[Expression, ...]
    constant: bool
    body: Expression | None
    numbers: tuple[Number, ...] = ()  # number terms as written (0 withdraws the constant, 1 offers it)
    families: tuple[FamilyTerm, ...] = ()  # terms with a family factor, which the fitter expands


@dataclass(frozen=True)
class Reparameterization(Node):
    """``over i in 1 .. width with bpd = ceil(width / i)`` (thesis §5.3.1)."""

    variable: str
    range: Range
    target: str
    value: Expression


@dataclass(frozen=True)
class Optimization(Node):
    """How the dispatcher sets one parameter at call time (thesis ch. 5).

    ``method`` is ``"minimize"`` (``objective`` is minimized over the
    parameter's range, or over ``over``'s range) or ``"root"`` (a root of
    ``objective`` in the parameter's range).
    """

    parameter: str
    method: str
    objective: Expression
    over: Reparameterization | None


@dataclass(frozen=True)
class Implementation(Node):
    name: str
    parameters: tuple[Parameter, ...]
    callable: str  # imported name or dotted importable path
    callable_line: int
    callable_column: int
    doc: str | None
    requires: tuple[Expression, ...]
    lets: tuple[Let, ...]
    models: tuple[CostModel, ...]
    optimizations: tuple[Optimization, ...]

    def model(self, objective: str = "time") -> CostModel | None:
        return next((m for m in self.models if m.objective == objective), None)

    def optimization(self, parameter: str) -> Optimization | None:
        return next((o for o in self.optimizations if o.parameter == parameter), None)

    def searches(self) -> list[tuple[Parameter, Reparameterization]]:
        """The parameters set by a search ``over i … with p = …``, each with its search."""
        return [(p, rule.over) for p in self.parameters
                if (rule := self.optimization(p.name)) is not None and rule.over is not None]


# ---- profiling ----------------------------------------------------------------


@dataclass(frozen=True)
class Update(Node):
    """How a loop advances: ``++``, ``+= k``, ``*= k`` or ``<<= k``."""

    operator: str  # "++", "+=", "*=", "<<="
    amount: Expression | None


#: How a loop's random points may be drawn: uniformly, or uniformly in the logarithm.
DRAWS = ("uniform", "log")


@dataclass(frozen=True)
class Loop(Node):
    """One loop of the nest: an iteration variable over an inclusive range.

    Its values are the fitting grid; random points (verification, the
    oracle) are drawn from the whole range, uniformly or log-uniformly:
    ``drawn log`` or ``drawn uniform``, and by default log-uniformly for a
    loop that multiplies (``*=``, ``<<=``), so that its random points spread
    over the range as its values do."""

    variable: str
    range: Range
    update: Update
    draw: str | None = None  # as written: one of DRAWS, or None

    @property
    def drawn(self) -> str:
        """How the loop's random points are drawn: 'uniform' or 'log'."""
        if self.draw is not None:
            return self.draw
        return "log" if self.update.operator in ("*=", "<<=") else "uniform"


@dataclass(frozen=True)
class Build(Binding):
    """How the profile builds one interface argument (``keys = make(n, seed)``):
    ``name`` is the argument's."""


@dataclass(frozen=True)
class Setting(Node):
    name: str  # verify, repeat, ranks, timeout
    values: tuple[int | float, ...]


DEFAULT_VERIFY = 20
DEFAULT_REPEAT = 3
DEFAULT_RANKS = (1,)
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Profile(Node):
    loops: tuple[Loop, ...]
    lets: tuple[Let, ...]
    builds: tuple[Build, ...]
    setup: tuple[Expression, ...]
    cleanup: tuple[Expression, ...]
    settings: tuple[Setting, ...]

    def _setting(self, name: str) -> Setting | None:
        return next((s for s in self.settings if s.name == name), None)

    @property
    def verify(self) -> int:
        """Number of random verification samples per implementation (VCOUNT)."""
        setting = self._setting("verify")
        return int(setting.values[0]) if setting else DEFAULT_VERIFY

    @property
    def repeat(self) -> int:
        """Timings per sample; the sample's time is their median."""
        setting = self._setting("repeat")
        return int(setting.values[0]) if setting else DEFAULT_REPEAT

    @property
    def ranks(self) -> tuple[int, ...]:
        """Rank counts to profile with (``mpiexec -n P`` for each P > 1)."""
        setting = self._setting("ranks")
        return tuple(int(v) for v in setting.values) if setting else DEFAULT_RANKS

    @property
    def timeout(self) -> float:
        """Seconds one sample may take before its implementation is excluded."""
        setting = self._setting("timeout")
        return float(setting.values[0]) if setting else DEFAULT_TIMEOUT


@dataclass(frozen=True)
class Interface(Node):
    name: str
    arguments: tuple[Argument, ...]
    returns: Type | None
    doc: str | None
    variables: tuple[Variable, ...]
    reference: Name | None
    implementations: tuple[Implementation, ...]
    profile: Profile | None

    def implementation(self, name: str) -> Implementation | None:
        return next((i for i in self.implementations if i.name == name), None)

    def signature(self, implementation: Implementation) -> tuple[str, ...]:
        """What an implementation's model takes, in order: the interface's
        variables, then the implementation's parameters (P and logP come
        after them in every generated model)."""
        return tuple(v.name for v in self.variables) + tuple(p.name for p in implementation.parameters)

    @property
    def choice_varies(self) -> bool:
        """Whether a call's choice can depend on its variables: more than one
        implementation, a parameter to choose, or a precondition to test.
        Where it cannot, the ranks need not agree on the variables to choose
        alike."""
        return len(self.implementations) > 1 or any(i.parameters or i.requires for i in self.implementations)

    @property
    def reference_implementation(self) -> Implementation | None:
        """The implementation whose results the others are checked against."""
        if self.reference is not None:
            return self.implementation(self.reference.id)
        return self.implementations[0] if self.implementations else None


# ---- the description ----------------------------------------------------------


@dataclass(frozen=True)
class Library(Node):
    name: str
    doc: str | None
    uses: tuple[Uses, ...]
    imports: tuple[Import, ...]
    constants: tuple[Let, ...]
    models: tuple[ModelDefinition, ...]
    interfaces: tuple[Interface, ...]
    filename: str = "<string>"
    source: str = field(default="", repr=False, compare=False)
    # Descriptions named by ``uses``, resolved and checked (filled by the checker).
    used: dict[str, Library] = field(default_factory=dict, repr=False, compare=False)
    # Warnings the checker found (errors are raised instead).
    warnings: tuple = field(default=(), repr=False, compare=False)

    @property
    def directory(self) -> Path:
        """Where relative source paths are resolved: the description's folder."""
        if self.filename.startswith("<"):
            return Path.cwd()
        return Path(self.filename).resolve().parent

    def interface(self, name: str) -> Interface | None:
        return next((i for i in self.interfaces if i.name == name), None)

    @property
    def implementations(self) -> tuple[Implementation, ...]:
        return tuple(impl for interface in self.interfaces for impl in interface.implementations)
