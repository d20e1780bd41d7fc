"""Expressions print as the description syntax, Python and C, all meaning the same."""

from __future__ import annotations

import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlc.language import ast
from hlc.language.expressions import (
    EvaluationError,
    _closure,
    _evaluate,
    evaluate,
    split_terms,
    to_c,
    to_python,
    unparse,
)
from hlc.language.parser import parse_syntax

VARIABLES = {"n": 1000, "width": 28, "bpd": 7, "x": 2.5, "y": -3.0}
BINARY = ["+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!=", "and", "or"]
FUNCTIONS = {"log2": 1, "ln": 1, "exp": 1, "sqrt": 1, "ceil": 1, "floor": 1, "abs": 1, "min": 3, "max": 2, "log": 2}


def parse_expression(text: str) -> ast.Expression:
    """The expression ``text`` as the grammar reads it."""
    return parse_syntax(f"library probe\nlet value = {text}").constants[0].value


def _number(value):
    return ast.Number(0, 0, value)


def _name(name):
    return ast.Name(0, 0, name)


expressions = st.recursive(
    st.one_of(st.integers(0, 50).map(_number), st.sampled_from([0.5, 2.25, 10.0]).map(_number),
              st.sampled_from(sorted(VARIABLES)).map(_name)),
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(BINARY), inner, inner).map(lambda t: ast.Binary(0, 0, t[0], t[1], t[2])),
        st.tuples(st.sampled_from(["-", "not"]), inner).map(lambda t: ast.Unary(0, 0, t[0], t[1])),
        st.sampled_from(sorted(FUNCTIONS)).flatmap(
            lambda f: st.lists(inner, min_size=FUNCTIONS[f], max_size=FUNCTIONS[f]).map(
                lambda args: ast.Call(0, 0, f, tuple(args)))),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_unparse_reads_back_as_the_same_tree(expression):
    text = unparse(expression)
    assert unparse(parse_expression(text)) == text


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_python_spelling_computes_what_evaluate_computes(expression):
    try:
        expected = evaluate(expression, VARIABLES)
    except EvaluationError:
        return
    try:
        actual = eval(to_python(expression), {"math": math}, dict(VARIABLES))  # generated from the tree
    except (ArithmeticError, ValueError, TypeError):
        pytest.fail(f"{to_python(expression)} raised where evaluate() did not")
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual)
    else:
        assert actual == expected or math.isclose(actual, expected, rel_tol=1e-12)



@settings(max_examples=500, deadline=None)
@given(expressions, st.sampled_from(["all", "no x", "calls"]))
def test_the_closures_compute_what_the_tree_walk_computes(expression, case):
    """evaluate() runs an expression as closures made once; on every value
    they agree with walking the tree, and where either fails, evaluate()
    fails as the walk does (an undefined name, a division by zero, a call
    it cannot make)."""
    environment = dict(VARIABLES)
    functions = {}
    if case == "no x":
        del environment["x"]
    elif case == "calls":
        functions = {"log2": lambda v: -1.0, "max": lambda a, b: a - b}  # the caller's come first
    try:
        expected = _evaluate(expression, environment, functions)
    except Exception as walked:
        with pytest.raises(EvaluationError if isinstance(walked, (EvaluationError, ArithmeticError, ValueError,
                                                                   TypeError)) else type(walked)):
            evaluate(expression, environment, functions)
        return
    actual = _closure(expression)(environment, functions)
    assert type(actual) is type(expected)
    if isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual) and math.isnan(evaluate(expression, environment, functions))
    else:
        assert actual == expected
        assert evaluate(expression, environment, functions) == expected


def test_a_failure_reads_the_same_from_the_closures():
    with pytest.raises(EvaluationError, match="'z' has no value here"):
        evaluate(parse_expression("n + z"), VARIABLES)
    with pytest.raises(EvaluationError, match="1 / \\(n - n\\): division by zero"):
        evaluate(parse_expression("1 / (n - n)"), VARIABLES)
    with pytest.raises(EvaluationError, match="Radix\\(\\) cannot be evaluated here"):
        evaluate(parse_expression("Radix(n)"), VARIABLES)
    with pytest.raises(EvaluationError, match="too large"):
        evaluate(parse_expression("2 ** (n * 100)"), VARIABLES)

def test_precedence_follows_python():
    assert unparse(parse_expression("1 + 2 * 3 ** 2")) == "1 + 2 * 3 ** 2"
    assert unparse(parse_expression("(1 + 2) * 3")) == "(1 + 2) * 3"
    assert unparse(parse_expression("a - (b - c)")) == "a - (b - c)"
    assert unparse(parse_expression("-x ** 2")) == "-x ** 2"
    assert unparse(parse_expression("(-x) ** 2")) == "(-x) ** 2"
    assert unparse(parse_expression("2 ** -1")) == "2 ** -1"
    assert unparse(parse_expression("1 << k + 1")) == "1 << k + 1"
    assert unparse(parse_expression("not a < b and c")) == "not a < b and c"
    assert evaluate(parse_expression("2 ** 3 ** 2"), {}) == 512


def test_literals():
    assert evaluate(parse_expression("0x1F + 1_000 + 1.5e3 + 2e-3"), {}) == 31 + 1000 + 1500 + 0.002


def test_fitted_formula_splits_at_top_level_plus():
    formula = parse_expression("1 + n * (iter + 1) + bins * iter")
    assert [unparse(t) for t in split_terms(formula)] == ["1", "n * (iter + 1)", "bins * iter"]


def test_c_spelling_of_operators_python_lacks_in_c():
    assert to_c(parse_expression("a // b")) == "floor(a / b)"
    assert to_c(parse_expression("a % b")) == "hlc_mod(a, b)"
    assert to_c(parse_expression("2 ** bpd")) == "hlc_exp2(bpd)"
    assert to_c(parse_expression("a * (log2(n) >= 12)")) == "a * (n >= 4096.0)"
    assert to_c(parse_expression("log2(n + 1) > 17.5")) == "n + 1.0 > 185363.80004736633"
    assert to_c(parse_expression("log2(n) <= 12")) == "hlc_log2(n) <= 12.0"
    assert to_c(parse_expression("3 ** bpd")) == "pow(3.0, bpd)"
    assert to_c(parse_expression("1 << i")) == "ldexp(1.0, (int)(i))"
    assert to_c(parse_expression("min(a, b, c)")) == "hlc_min(hlc_min(a, b), c)"
    assert to_c(parse_expression("max(a, b)")) == "hlc_max(a, b)"
    assert to_c(parse_expression("not a < b")) == "!(a < b)"
    assert to_c(parse_expression("- -a")) == "-(-a)"


def test_names_and_calls_are_spelled_by_the_caller():
    expression = parse_expression("Radix(n, 7) + n")
    text = to_c(expression, spell_name=lambda name: f"v_{name}",
                spell_call=lambda call, arguments: f"model_{call.function}({', '.join(arguments)})")
    assert text == "model_Radix(v_n, 7.0) + v_n"


def _random_expression(rng: random.Random, depth: int) -> ast.Expression:
    """A random arithmetic expression whose C and Python values must agree."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.5:
            return _name(rng.choice(sorted(VARIABLES)))
        return _number(rng.choice([0, 1, 2, 3, 7, 10, 0.5, 2.25]))
    choice = rng.random()
    if choice < 0.6:
        operator = rng.choice(BINARY)
        return ast.Binary(0, 0, operator, _random_expression(rng, depth - 1), _random_expression(rng, depth - 1))
    if choice < 0.7:
        return ast.Unary(0, 0, rng.choice(["-", "not"]), _random_expression(rng, depth - 1))
    function = rng.choice(sorted(FUNCTIONS))
    arguments = tuple(_random_expression(rng, depth - 1) for _ in range(FUNCTIONS[function]))
    return ast.Call(0, 0, function, arguments)


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_c_and_python_agree_on_random_expressions(tmp_path):
    rng = random.Random(20261121)
    cases = []
    while len(cases) < 400:
        expression = _random_expression(rng, 4)
        try:
            value = evaluate(expression, VARIABLES)
        except EvaluationError:
            continue
        if isinstance(value, float) and not math.isfinite(value) or abs(value) > 1e12:
            continue
        cases.append((expression, float(value)))
    declarations = "".join(f"    double {name} = {float(value)!r};\n" for name, value in VARIABLES.items())
    body = "".join(f'    printf("%.17g\\n", (double)({to_c(e)}));\n' for e, _ in cases)
    program = tmp_path / "agree.c"
    program.write_text("#define HLC_SCAN_LIMIT 64L\n#define HLC_COARSE 16L\n"
                       f"#include \"hlc_dispatch.h\"\n#include <stdio.h>\n"
                       f"int main(void) {{\n{declarations}{body}    return 0;\n}}\n")
    binary = tmp_path / "agree"
    headers = Path(__file__).resolve().parents[2] / "templates"
    subprocess.run(["cc", "-O0", "-Wno-unused-variable", "-Wno-unused-function", f"-I{headers}", str(program),
                    "-o", str(binary), "-lm"], check=True)
    output = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout.split()
    assert len(output) == len(cases)
    for (expression, expected), printed in zip(cases, output, strict=True):
        assert math.isclose(float(printed), expected, rel_tol=1e-9, abs_tol=1e-9), (
            f"{unparse(expression)}: C {printed}, Python {expected}")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_c_compares_with_a_power_of_two_where_the_description_compares_a_logarithm(tmp_path):
    """``log2(x) >= k`` compiles to ``x >= 2 ** k``: the same truth as the
    logarithm's at whole sizes around every knot, at zero, negatives, NaN
    and infinity.  Within an ulp of 2 ** k the logarithm rounds to k, and
    the comparison of x is the exact one."""
    knots = [0, 1, 3, 12, 17.5, 18.25, -2, 0.5, 40]
    sizes = [0.0, -1.0, -4096.0, 0.5, 1.0, 2.0, 3.0, 1e300, float("inf"), float("nan")]
    for k in knots:
        center = 2.0 ** k
        sizes += [center, math.nextafter(center, 0), math.nextafter(center, math.inf), math.floor(center),
                  math.ceil(center), math.floor(center) - 1, math.ceil(center) + 1]
    lines = []
    for k in knots:
        for operator in (">=", ">"):
            rewritten = to_c(parse_expression(f"log2(x) {operator} {k}"))
            assert "log2" not in rewritten
            logarithm = f"(int)(log2(x) {operator} {float(k)!r})"
            lines.append(f'        printf("%g %.17g %d %d\\n", {float(k)!r}, x, {logarithm}, (int)({rewritten}));\n')
    values = ", ".join("NAN" if math.isnan(x) else "INFINITY" if math.isinf(x) else repr(x) for x in sizes)
    program = tmp_path / "steps.c"
    program.write_text("#include <math.h>\n#include <stdio.h>\nint main(void) {\n"
                       f"    double xs[] = {{{values}}};\n"
                       "    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {\n        double x = xs[i];\n"
                       f"{''.join(lines)}    }}\n    return 0;\n}}\n")
    binary = tmp_path / "steps"
    subprocess.run(["cc", "-O2", str(program), "-o", str(binary), "-lm"], check=True)
    rows = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout.splitlines()
    assert len(rows) == len(sizes) * len(knots) * 2
    differ = [(float(k), float(x)) for k, x, logarithm, power in map(str.split, rows) if logarithm != power]
    rounding = [(k, x) for k, x in differ if math.isclose(x, 2.0 ** k, rel_tol=1e-15)
                and (x != 2.0 ** k or not k.is_integer())]
    assert differ == rounding
