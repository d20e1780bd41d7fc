"""Text of a description → typed syntax tree (:mod:`hlc.language.ast`).

Lark parses with the LALR algorithm and a contextual lexer; keywords are
reserved everywhere (see :class:`_ReservedWords`).  Syntax errors become :class:`HLError`
with the line, column and what was expected, in words rather than terminal
names.
"""

from __future__ import annotations

import ast as python_ast
import inspect
import warnings
from collections.abc import Iterator
from dataclasses import fields, is_dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from hlc.language import ast
from hlc.language.errors import Diagnostic, HLError, file_error, make_diagnostic, source_lines
from hlc.language.expressions import depth, split_terms, unparse, walk
from hlc.resources import read_text


@cache
def grammar_text() -> str:
    """The grammar, shipped as package data of ``hlc.grammar``."""
    return read_text("grammar", "hl.lark")


class _ReservedWords:
    """Refuses a keyword used as a name.  The contextual lexer reads a word as
    a keyword only where one may stand; this makes keywords reserved everywhere,
    so that whether a word is a name never depends on its position."""

    always_accept = ()

    def __init__(self) -> None:
        self.keywords: frozenset[str] = frozenset()

    def process(self, stream):
        for token in stream:
            if token.type == "NAME" and token.value in self.keywords:
                raise _Problem(token.line, token.column,
                               f"unexpected keyword '{token.value}': a name or a value was expected here "
                               f"(keywords cannot be used as names)")
            yield token


@cache
def _parser() -> Lark:
    """The LALR parser.  Building its tables takes ~100 ms, most of what
    ``hlc check`` would spend; Lark keeps them in a file of the temporary
    folder named by the hash of the grammar, the options and the versions of
    Lark and Python, so later processes load them in ~10 ms.  The transformer
    and the post-lexer are not in the file: a changed ``_ToAst`` needs no new
    tables, and a damaged or unwritable file only costs the time again."""
    reserved = _ReservedWords()
    parser = Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        maybe_placeholders=False,
        transformer=_ToAst(),
        postlex=reserved,
        cache=True,
    )
    reserved.keywords = frozenset(
        t.pattern.value for t in parser.terminals
        if t.pattern.type == "str" and t.pattern.value.isidentifier())
    return parser


# ---- tree → AST -----------------------------------------------------------------


class _Doc(str):
    """A doc string, told apart from other strings among a rule's children."""


class _Dotted(str):
    """A dotted name with its position."""

    line: int
    column: int

    @classmethod
    def at(cls, text: str, line: int, column: int) -> _Dotted:
        dotted = cls(text)
        dotted.line, dotted.column = line, column
        return dotted


class _Marked:
    """A child that is tagged so its parent can sort its children."""

    def __init__(self, kind: str, value: Any):
        self.kind, self.value = kind, value


class _Problem(Exception):
    """A problem found while building the tree; becomes an HLError at its position."""

    def __init__(self, line: int, column: int, message: str):
        super().__init__(message)
        self.line, self.column, self.message = line, column, message


def _string_value(token: Token) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = python_ast.literal_eval(str(token))
    except (SyntaxError, ValueError) as error:
        raise _Problem(token.line, token.column, f"invalid string literal: {error}") from None
    return inspect.cleandoc(value) if str(token).startswith('"""') else value


def _constant_term(term: ast.Expression) -> ast.Number | None:
    """A term that is a number (``1``, ``0``, ``-1``): it stands for the constant term."""
    if isinstance(term, ast.Number):
        return term
    if isinstance(term, ast.Unary) and term.operator in "+-" and isinstance(term.operand, ast.Number):
        value = term.operand.value if term.operator == "+" else -term.operand.value
        return ast.Number(line=term.line, column=term.column, value=value)
    return None


def _factors(term: ast.Expression) -> list[ast.Expression]:
    """The factors of a product written without parentheses (``n * iter * x``)."""
    if isinstance(term, ast.Binary) and term.operator == "*" and not term.parenthesized:
        return _factors(term.left) + _factors(term.right)
    return [term]


#: Families one term may hold: a member is a product of one factor of each.
MOST_FAMILIES = 2


def _family_term(term: ast.Expression) -> ast.FamilyTerm | None:
    """The term as a base times one or two families, when families are among
    its factors.  A family anywhere else in a term has no meaning as a
    candidate factor."""
    found = [node for node in walk(term) if isinstance(node, ast.Family)]
    if not found:
        return None
    factors = _factors(term)
    direct = [f for f in factors if isinstance(f, ast.Family)]
    misplaced = [f for f in found if not any(f is d for d in direct)]
    if misplaced:
        raise _Problem(misplaced[0].line, misplaced[0].column,
                       "a family (steps, hinges) must be a factor of a term: "
                       "write 'n * hinges(log2(n))', not 'n * max(1, hinges(log2(n)))'")
    if len(direct) > MOST_FAMILIES:
        where = direct[MOST_FAMILIES]
        raise _Problem(where.line, where.column,
                       f"a term may hold at most {MOST_FAMILIES} families (each member is a product of one "
                       f"factor of each)")
    if len(direct) == 2 and unparse(direct[0].expression) == unparse(direct[1].expression):
        raise _Problem(direct[1].line, direct[1].column,
                       f"the two families of a term must be of different expressions: both are of "
                       f"'{unparse(direct[0].expression)}'")
    base = None
    for factor in factors:
        if any(factor is family for family in direct):
            continue
        base = factor if base is None else ast.Binary(line=base.line, column=base.column, operator="*",
                                                       left=base, right=factor)
    return ast.FamilyTerm(line=term.line, column=term.column, base=base, families=tuple(direct))


def _integer_value(text: str) -> int:
    return int(text, 16) if text.lower().startswith("0x") else int(text)


def _of(children: list[Any], kind: type) -> list[Any]:
    return [child for child in children if isinstance(child, kind)]


def _marked(children: list[Any], kind: str) -> list[Any]:
    return [child.value for child in children if isinstance(child, _Marked) and child.kind == kind]


def _first(children: list[Any], kind: type) -> Any:
    found = _of(children, kind)
    return found[0] if found else None


class _ToAst(Transformer):
    """Builds the dataclass tree; each method is named after a grammar rule or alias.

    It runs inside the LALR parser (no intermediate parse tree is built), so it
    holds no per-parse state; the caller adds the file name and text.
    """

    # -- description
    def start(self, children):
        header = children[0]
        rest = children[1:]
        flat = [item for child in rest for item in (child if isinstance(child, list) else [child])]
        return ast.Library(
            line=header["line"], column=header["column"], name=header["name"], doc=header["doc"],
            uses=tuple(_of(flat, ast.Uses)), imports=tuple(_of(flat, ast.Import)),
            constants=tuple(_of(flat, ast.Let)), models=tuple(_of(flat, ast.ModelDefinition)),
            interfaces=tuple(_of(flat, ast.Interface)),
        )

    def library_header(self, children):
        name = children[0]
        return {"line": name.line, "column": name.column, "name": str(name),
                "doc": _first(children, _Doc)}

    def doc(self, children):
        return _Doc(_string_value(children[0]))

    # -- declarations
    def uses(self, children):
        return [ast.Uses(line=n.line, column=n.column, library=str(n)) for n in children]

    def import_file(self, children):
        path = children[0]
        return self._imports(_string_value(path), True, path.line, path.column, children[1:])

    def import_module(self, children):
        module = children[0]
        return self._imports(str(module), False, module.line, module.column, children[1:])

    def _imports(self, source, is_file, line, column, names):
        return [ast.Import(line=name.line, column=name.column, source=source, is_file=is_file, name=str(name),
                           alias=str(alias), alias_line=alias.line, alias_column=alias.column,
                           source_line=line, source_column=column) for name, alias in names]

    def import_name(self, children):
        name = children[0]
        alias = children[1] if len(children) > 1 else name
        return (name, alias)

    def let(self, children):
        name, value = children
        return ast.Let(line=name.line, column=name.column, name=str(name), value=value)

    def model_definition(self, children):
        name = children[0]
        doc = _first(children, _Doc)
        body = [c for c in children[1:] if not isinstance(c, (Token, _Doc))][0]
        parameters = tuple(str(c) for c in children[1:] if isinstance(c, Token))
        return ast.ModelDefinition(line=name.line, column=name.column, name=str(name),
                                   parameters=parameters, body=body, doc=doc)

    # -- interfaces
    def interface(self, children):
        name = children[0]
        returns = _marked(children, "returns")
        references = _marked(children, "reference")
        if len(references) > 1:
            second = references[1]
            raise _Problem(second.line, second.column, f"interface '{name}' names its reference twice "
                                                       f"(first at line {references[0].line})")
        return ast.Interface(
            line=name.line, column=name.column, name=str(name),
            arguments=tuple(_of(children, ast.Argument)),
            returns=returns[0] if returns else None, doc=_first(children, _Doc),
            variables=tuple(_of(children, ast.Variable)),
            reference=references[-1] if references else None,
            implementations=tuple(_of(children, ast.Implementation)),
            profile=_first(children, ast.Profile),
        )

    def argument(self, children):
        name = children[0]
        mutable = any(isinstance(c, Token) and c.type == "MUTABLE" for c in children)
        return ast.Argument(line=name.line, column=name.column, name=str(name),
                            type=children[-1], mutable=mutable)

    def type(self, children):
        name = children[0]
        dimensions = children[1] if len(children) > 1 else 0
        return ast.Type(line=name.line, column=name.column, element=str(name), dimensions=dimensions)

    def dimensions(self, children):
        return 1 + sum(1 for c in children if str(c) == ",")

    def returns(self, children):
        return _Marked("returns", children[0])

    def variable(self, children):
        *marker, name, value = children
        return ast.Variable(line=name.line, column=name.column, name=str(name), value=value,
                            uniform=bool(marker))

    def reference(self, children):
        name = children[0]
        return _Marked("reference", ast.Name(line=name.line, column=name.column, id=str(name)))

    # -- implementations
    def implementation(self, children):
        name = children[0]
        parameters = _marked(children, "parameters")
        callable_ = _first(children, _Dotted)
        return ast.Implementation(
            line=name.line, column=name.column, name=str(name),
            parameters=parameters[0] if parameters else (),
            callable=str(callable_), callable_line=callable_.line, callable_column=callable_.column,
            doc=_first(children, _Doc), requires=tuple(_marked(children, "requires")),
            lets=tuple(_of(children, ast.Let)), models=tuple(_of(children, ast.CostModel)),
            optimizations=tuple(_of(children, ast.Optimization)),
        )

    def parameters(self, children):
        return _Marked("parameters", tuple(children))

    def parameter(self, children):
        name, type_name = children[0], children[1]
        range_ = children[2] if len(children) > 2 else None
        return ast.Parameter(line=name.line, column=name.column, name=str(name),
                             type=str(type_name), range=range_)

    def range(self, children):
        low, high = children
        return ast.Range(line=low.line, column=low.column, low=low, high=high)

    def requires(self, children):
        return _Marked("requires", children[0])

    def fitted_model(self, children):
        name, formula = children
        terms = split_terms(formula)
        numbers = [_constant_term(t) for t in terms if _constant_term(t) is not None]
        withdrawn = any(n.value == 0 for n in numbers)
        families = [_family_term(t) for t in terms]
        return ast.CostModel(line=name.line, column=name.column, objective=str(name), fitted=True,
                             terms=tuple(t for t, f in zip(terms, families, strict=True)
                                         if _constant_term(t) is None and f is None),
                             constant=not withdrawn, body=None, numbers=tuple(numbers),
                             families=tuple(f for f in families if f is not None))

    def family(self, children):
        kind, expression, *rest = children
        knots = next((c for c in rest if isinstance(c, ast.Range)), None)
        update = next((c for c in rest if isinstance(c, ast.Update)), None)
        return ast.Family(line=kind.line, column=kind.column, kind=str(kind), expression=expression,
                          knots=knots, update=update)

    def factored_model(self, children):
        name, body = children
        return ast.CostModel(line=name.line, column=name.column, objective=str(name), fitted=False,
                             terms=(), constant=False, body=body)

    def choose_minimum(self, children):
        parameter = children[0]
        over = children[2] if len(children) > 2 else None
        return ast.Optimization(line=parameter.line, column=parameter.column, parameter=str(parameter),
                                method="minimize", objective=children[1], over=over)

    def choose_root(self, children):
        parameter, objective = children
        return ast.Optimization(line=parameter.line, column=parameter.column, parameter=str(parameter),
                                method="root", objective=objective, over=None)

    def reparameterization(self, children):
        variable, range_, target, value = children
        return ast.Reparameterization(line=variable.line, column=variable.column, variable=str(variable),
                                      range=range_, target=str(target), value=value)

    # -- profile
    def profile(self, children):
        keyword = children[0]
        return ast.Profile(
            line=keyword.line, column=keyword.column, loops=tuple(_of(children, ast.Loop)),
            lets=tuple(_of(children, ast.Let)), builds=tuple(_of(children, ast.Build)),
            setup=tuple(_marked(children, "setup")), cleanup=tuple(_marked(children, "cleanup")),
            settings=tuple(_of(children, ast.Setting)),
        )

    def loop(self, children):
        variable, range_, update, *draw = children
        return ast.Loop(line=variable.line, column=variable.column, variable=str(variable),
                        range=range_, update=update, draw=draw[0] if draw else None)

    def draw(self, children):
        _, name = children
        if str(name) not in ast.DRAWS:
            raise _Problem(name.line, name.column, f"a loop's random points are drawn "
                           f"{' or '.join(map(repr, ast.DRAWS))}, not {str(name)!r}")
        return str(name)

    def _update(self, operator, children):
        token = children[0]
        amount = children[1] if len(children) > 1 else None
        return ast.Update(line=token.line, column=token.column, operator=operator, amount=amount)

    def increment(self, children):
        return self._update("++", children)

    def add(self, children):
        return self._update("+=", children)

    def multiply(self, children):
        return self._update("*=", children)

    def shift(self, children):
        return self._update("<<=", children)

    def build(self, children):
        name, value = children
        return ast.Build(line=name.line, column=name.column, name=str(name), value=value)

    def setup(self, children):
        return _Marked("setup", children[0])

    def cleanup(self, children):
        return _Marked("cleanup", children[0])

    def setting(self, children):
        keyword = children[0]
        values = tuple(_integer_value(str(c)) for c in children[1:])
        return ast.Setting(line=keyword.line, column=keyword.column, name=str(keyword), values=values)

    def timeout(self, children):
        keyword, number = children
        return ast.Setting(line=keyword.line, column=keyword.column, name="timeout", values=(number.value,))

    # -- expressions
    def binary(self, children):
        left, operator, right = children
        return ast.Binary(line=left.line, column=left.column, operator=str(operator), left=left, right=right,
                          operator_line=operator.line, operator_column=operator.column)

    def unary(self, children):
        operator, operand = children
        return ast.Unary(line=operator.line, column=operator.column, operator=str(operator), operand=operand)

    def parenthesized(self, children):
        inner = children[0]
        return replace(inner, parenthesized=True) if isinstance(inner, ast.Binary) else inner

    def name(self, children):
        token = children[0]
        return ast.Name(line=token.line, column=token.column, id=str(token))

    def call(self, children):
        function = children[0]
        return ast.Call(line=function.line, column=function.column, function=str(function),
                        arguments=tuple(children[1:]))

    def integer(self, children):
        token = children[0]
        return ast.Number(line=token.line, column=token.column, value=_integer_value(str(token)))

    def real(self, children):
        token = children[0]
        return ast.Number(line=token.line, column=token.column, value=float(token))

    def dotted(self, children):
        return _Dotted.at(".".join(str(c) for c in children), children[0].line, children[0].column)


# ---- syntax errors ---------------------------------------------------------------

# How terminals are named in messages.
_TERMINAL_WORDS = {
    "NAME": "a name", "INT": "an integer", "FLOAT": "a number", "STRING": "a string",
    "MUTABLE": "'mutable'", "UNIFORM": "'uniform'", "$END": "the end of the file",
}


_COMPARISONS = {"LT", "LE", "GT", "GE", "EQ", "NE"}


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    try:
        pattern = _parser().get_terminal(name).pattern
    except KeyError:
        return name
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return name.lower()


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    text = str(token)
    if token.type == "STRING":
        return "string " + (text if len(text) <= 20 else text[:17] + '..."')
    return f"'{text}'"


def _expected_text(expected: set[str]) -> str:
    words = sorted({_describe_terminal(name) for name in expected})
    if not words:
        return ""
    if len(words) > 10:
        words = words[:10] + ["…"]
    return "; expected " + (words[0] if len(words) == 1 else "one of " + ", ".join(words))


def _end_position(source: str) -> tuple[int, int]:
    """Where the end of file is reported: just after the last visible text."""
    lines = source_lines(source)
    for index in range(len(lines) - 1, -1, -1):
        text = lines[index].split("#", 1)[0].rstrip()
        if text:
            return index + 1, len(text) + 1
    return 1, 1


def _syntax_error(error: UnexpectedInput, filename: str, source: str) -> HLError:
    if all(not line.split("#", 1)[0].strip() for line in source_lines(source)):
        return HLError(make_diagnostic(filename, source, 1, 1,
                                       "empty description: it must start with 'library NAME'"))
    if isinstance(error, UnexpectedCharacters):
        character = source[error.pos_in_stream] if error.pos_in_stream < len(source) else ""
        message = f"unexpected character {character!r}"
        if character == '"':
            message = "unterminated string: it needs a closing \" on the same line (or use \"\"\"…\"\"\")"
        return HLError(make_diagnostic(filename, source, error.line, error.column, message))
    if isinstance(error, UnexpectedToken) and error.token.type != "$END":
        token = error.token
        if token.line == 1 and token.column == 1 or "LIBRARY" in error.expected:
            message = f"a description must start with 'library NAME', not {_describe_token(token)}"
        else:
            expected = set(getattr(error, "accepts", None) or error.expected)
            message = f"unexpected {_describe_token(token)}{_expected_text(expected)}"
            before = source[:token.start_pos].split()
            if str(token) in _parser().lexer_conf.postlex.keywords:  # a keyword where a name was meant?
                message += f" ('{token}' is a keyword and cannot be used as a name)"
            elif before and before[-1] == "uniform" and "NAME" in expected:  # `uniform = …`
                message += " ('uniform' is a keyword, which marks a variable: uniform NAME = …)"
            if token.type in _COMPARISONS and not expected & _COMPARISONS:
                message += " (comparisons cannot be chained: write 'a < b and b < c')"
        return HLError(make_diagnostic(filename, source, token.line, token.column, message))
    expected = set(getattr(error, "expected", ()) or ())
    line, column = _end_position(source)
    message = f"unexpected end of file{_expected_text(expected)}"
    return HLError(make_diagnostic(filename, source, line, column, message))


def parse_syntax(source: str, filename: str = "<string>") -> ast.Library:
    """Parse ``source`` into a :class:`~hlc.language.ast.Library` without
    semantic checks; syntax errors raise :class:`HLError`."""
    if not isinstance(source, str):
        raise TypeError(f"source must be str, not {type(source).__name__}")
    try:
        library = _parser().parse(source)
    except (UnexpectedToken, UnexpectedCharacters, UnexpectedEOF) as error:
        raise _syntax_error(error, filename, source) from None
    except _Problem as error:
        raise HLError(make_diagnostic(filename, source, error.line, error.column, error.message)) from None
    _check_depth(library, filename, source)
    return replace(library, filename=filename, source=source)


# Deeper expressions are refused: the printers and the evaluator recurse.
MAX_DEPTH = 100


def _expressions(node: Any) -> Iterator[ast.Expression]:
    """Every expression held by the tree (each root once), found iteratively."""
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, ast.Number | ast.Name | ast.Call | ast.Unary | ast.Binary):
            yield item
        elif isinstance(item, tuple | list):
            pending += item
        elif is_dataclass(item):
            pending += [getattr(item, f.name) for f in fields(item) if f.name not in ("used", "warnings")]


def _check_depth(library: ast.Library, filename: str, source: str) -> None:
    for expression in _expressions(library):
        if depth(expression) > MAX_DEPTH:
            raise HLError(make_diagnostic(filename, source, expression.line, expression.column,
                                          f"expression nested more than {MAX_DEPTH} levels deep; "
                                          f"split it with 'let' helpers"))


def read_description(path: str | Path) -> str:
    """The text of a description file; every way of failing is an HLError."""
    name = str(path)
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise file_error(name, "no such file") from None
    except IsADirectoryError:
        raise file_error(name, "is a directory, not a description file") from None
    except PermissionError:
        raise file_error(name, "permission denied") from None
    except OSError as error:
        raise file_error(name, f"cannot read: {error.strerror or error}") from None
    if b"\0" in data:
        raise file_error(name, "binary file, not a description (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        line_start = data.rfind(b"\n", 0, error.start) + 1
        column = len(data[line_start:error.start].decode("utf-8", errors="replace")) + 1
        message = f"not UTF-8 text: invalid byte 0x{data[error.start]:02x}"
        raise HLError(Diagnostic(name, line, column, message)) from None
