"""Malformed descriptions: each is rejected with an HLError at the exact place
of its error, with a message that names the problem.

Every case is a small, complete description.  It is written into a folder that
holds the helper files of the ``library_folder`` fixture (sort/support.py,
sort/radix.pyx, runtime.hl, broken.hl), so relative paths and ``uses`` resolve
as they would for a real library.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import hlc
from hlc import HLError
from hlc.language.parser import parse_syntax


def parse_text(folder: Path, text: str) -> hlc.Library:
    """Write ``text`` as folder/demo.hl and parse it, ignoring HLC_PATH."""
    path = folder / "demo.hl"
    path.write_text(text)
    return hlc.parse_file(path, search_path=[])


def case(name: str, text: str, line: int, column: int, message: str, *, xfail: str = ""):
    """One malformed description and where and how its first error is reported;
    ``xfail`` names a known defect of the checker that makes the case fail."""
    marks = [pytest.mark.xfail(reason=xfail, strict=True)] if xfail else []
    return pytest.param(textwrap.dedent(text), line, column, message, id=name, marks=marks)


MALFORMED = [
    # ---- syntax ----------------------------------------------------------------------------
    case("syntax-missing-library", """\
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 1, 1, "must start with 'library NAME', not 'interface'"),
    case("syntax-missing-library-after-comment", """\
        # The library keyword is forgotten below.
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 1, "must start with 'library NAME'"),
    case("syntax-unclosed-parenthesis", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = (n + 1
          impl other = numpy.sort
            time = n
        """, 6, 3, "unexpected 'impl'; expected ')'"),
    case("syntax-extra-closing-parenthesis", """\
        library demo
        interface sort(keys: int[])
          n = len(keys))
          impl numpy = numpy.sort
            time = n
        """, 3, 16, "unexpected ')'"),
    case("syntax-unexpected-token", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy numpy.sort
            time = n
        """, 4, 14, "unexpected 'numpy'; expected one of '(', '='"),
    case("syntax-bad-character", """\
        library demo
        interface sort(keys: int[])
          n = len(keys) $ 2
          impl numpy = numpy.sort
            time = n
        """, 3, 17, "unexpected character '$'"),
    case("syntax-unterminated-string", """\
        library demo "A demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 1, 14, "unterminated string"),
    case("syntax-invalid-escape-in-string", """\
        library demo "bad \\N{no such character}"
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 1, 14, "invalid string literal"),
    case("syntax-truncated-file", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n *
        """, 5, 15, "unexpected end of file"),
    case("syntax-truncated-argument-list", """\
        library demo
        interface sort(keys: int[]
        """, 2, 27, "unexpected end of file; expected one of ')', ','"),
    case("syntax-truncated-after-form-feed", """\
        library demo
        # section\fbreak
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n *
        """, 6, 15, "unexpected end of file"),
    case("syntax-chained-comparison", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            requires 1 < n < 10
            time = n
        """, 5, 20, "unexpected '<'"),
    case("syntax-empty-description", "# only a comment\n", 1, 1, "empty description"),

    # ---- undefined names -------------------------------------------------------------------
    case("undefined-name-in-term", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n + m
        """, 5, 16, "undefined name 'm' in a term of numpy"),
    case("undefined-name-in-variable", """\
        library demo
        interface sort(keys: int[])
          n = m + 1
          m = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 3, 7, "undefined name 'm' in variable 'n'"),
    case("undefined-name-in-constant", """\
        library demo
        let H = K + 1
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 9, "undefined name 'K' in constant 'H'"),

    # ---- duplicate names -------------------------------------------------------------------
    case("duplicate-implementation", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
          impl numpy = numpy.sort
            time = n
        """, 6, 8, "duplicate name 'numpy': already defined at line 4"),
    case("implementation-named-as-its-function", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix_sort = radix_sort
            time = n
        """, 5, 8, "duplicate name 'radix_sort': already defined at line 2, as an imported name"),
    case("duplicate-variable", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          n = size(keys)
          impl numpy = numpy.sort
            time = n
        """, 4, 3, "duplicate name 'n': already defined at line 3"),
    case("duplicate-parameter", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16, bpd: int in 1 .. 8) = radix_sort
            time = n * bpd
        """, 5, 35, "duplicate name 'bpd': already defined at line 5"),
    case("duplicate-argument", """\
        library demo
        interface sort(keys: int[], keys: float[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 29, "duplicate name 'keys': already defined at line 2"),
    case("duplicate-loop", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 ++
            for i in 1 .. 2 ++
            keys = random_keys(1 << i, 8, seed)
        """, 9, 9, "duplicate loop 'i': already defined at line 8"),
    case("duplicate-import", """\
        library demo
        from "sort/support.py" import flush, flush
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 38, "duplicate name 'flush': already defined at line 2"),
    case("duplicate-import-alias", """\
        library demo
        from "sort/support.py" import flush, random_keys as flush
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 53, "duplicate name 'flush': already defined at line 2"),
    case("duplicate-constant", """\
        library demo
        let H = 1
        let H = 2
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 3, 5, "duplicate name 'H': already defined at line 2"),
    case("predefined-name-redefined", """\
        library demo
        let P = 2
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 5, "'P' is predefined"),

    # ---- ranges ----------------------------------------------------------------------------
    case("empty-parameter-range", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 16 .. 1) = radix_sort
            time = n * bpd
        """, 5, 26, "the range of parameter 'bpd' is empty: 16 .. 1"),
    case("empty-parameter-range-of-constants", """\
        library demo
        from "sort/support.py" import radix_sort
        let HI = 4
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in HI * 2 .. HI) = radix_sort
            time = n * bpd
        """, 6, 26, "goes from 8 down to 4"),
    case("empty-loop-range", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 10 .. 4 ++
            keys = random_keys(1 << i, 8, seed)
        """, 8, 14, "the range of loop 'i' is empty"),
    case("empty-reparameterization-range", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time = n * bpd
            choose bpd minimizing time over j in 8 .. 1 with bpd = 16 / j
        """, 7, 42, "the range of 'j' is empty"),
    case("empty-inner-loop-for-every-outer-value", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 ++
            for j in i .. 2 ++
            keys = random_keys(1 << i, j, seed)
        """, 9, 14, "empty"),
    case("infinite-parameter-range", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 1e400) = radix_sort
            time = n * bpd
        """, 5, 26, "integer bounds"),
    case("not-a-number-parameter-range", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 1e400 - 1e400) = radix_sort
            time = n * bpd
        """, 5, 26, "integer bounds"),
    case("infinite-loop-bound", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 1 .. 1e400 ++
            keys = random_keys(1 << i, 8, seed)
        """, 8, 14, "integer bounds"),

    # ---- loops that never terminate ---------------------------------------------------------
    case("loop-multiplied-by-one", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 *= 1
            keys = random_keys(1 << i, 8, seed)
        """, 8, 22, "loop 'i' never terminates: '*= 1'"),
    case("loop-adding-zero", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 += 0
            keys = random_keys(1 << i, 8, seed)
        """, 8, 22, "loop 'i' never terminates: '+= 0'"),
    case("loop-doubling-zero", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 0 .. 10 *= 2
            keys = random_keys(1 << i, 8, seed)
        """, 8, 22, "it starts at 0, which '*=' cannot increase"),
    case("loop-shifted-by-zero", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 1 .. 10 <<= 0
            keys = random_keys(1 << i, 8, seed)
        """, 8, 22, "loop 'i' never terminates: '<<= 0'"),
    case("loop-negative-step", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 += -2
            keys = random_keys(1 << i, 8, seed)
        """, 8, 22, "loop 'i' never terminates: '+= -2'"),
    case("loop-step-zero-for-some-outer-value", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 0 .. 10 ++
            for j in 1 .. 10 += i
            keys = random_keys(1 << i, j, seed)
        """, 9, 9, "loop 'j' never terminates"),
    case("loop-fractional-step", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 += 1.5
            keys = random_keys(1 << i, 8, seed)
        """, 8, 22, "the step of loop 'i' must be an integer, not 1.5"),
    case("loop-multiplied-by-a-fraction", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 *= 0.5
            keys = random_keys(1 << i, 8, seed)
        """, 8, 22, "loop 'i' never terminates: '*= 0.5' does not increase it"),
    case("loop-drawn-some-other-way", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 ++ drawn normal
            keys = random_keys(1 << i, 8, seed)
        """, 8, 31, "a loop's random points are drawn 'uniform' or 'log', not 'normal'"),
    case("loop-drawn-log-from-zero", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 0 .. 10 ++ drawn log
            keys = random_keys(1 << i, 8, seed)
        """, 8, 14, "loop 'i' is drawn log-uniformly, so it must start at 1 or more, not 0"),

    # ---- parameters --------------------------------------------------------------------------
    case("parameter-without-range", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int) = radix_sort
            time = n * bpd
        """, 5, 14, "parameter 'bpd' has no range"),
    case("parameter-not-covered-by-loops", """\
        library demo
        from "sort/support.py" import random_keys, radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time ~ n * bpd
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 5, 14, "parameter 'bpd' of radix is not covered by the loop nest"),
    case("loop-outside-parameter-range", """\
        library demo
        from "sort/support.py" import random_keys, radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time ~ n * bpd
          profile
            for i in 4 .. 10 ++
            for bpd in 1 .. 32 ++
            keys = random_keys(1 << i, 8, seed)
        """, 9, 16, "outside the range 1 .. 16 of parameter 'bpd'"),

    # ---- what terms and preconditions may use ----------------------------------------------
    case("unknown-function-in-term", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n + logn(n)
        """, 5, 16, "unknown function 'logn' in a term of numpy"),
    case("unknown-function-in-fitted-term", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n + n * lg(n)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 20, "unknown function 'lg' in a term of numpy"),
    case("precondition-uses-parameter", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            requires bpd > 2
            time = n * bpd
        """, 6, 14, "'bpd' is a parameter of radix, which a precondition of radix cannot use"),
    case("precondition-uses-argument", """\
        library demo
        interface sort(keys: int[], k: int)
          n = len(keys)
          impl numpy = numpy.sort
            requires k > 2
            time = n
        """, 5, 14, "'k' is an argument of sort, which a precondition of numpy cannot use"),
    case("precondition-uses-iteration-variable", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            requires i > 2
            time ~ n
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 14, "iteration variable"),
    case("term-uses-argument-array", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n + keys
        """, 5, 16, "'keys' is an argument of sort, which a term of numpy cannot use"),
    case("term-uses-iteration-variable", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n * i
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 16, "iteration variable"),
    case("term-uses-profile-seed", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n * seed
        """, 5, 16, "'seed' is defined only for building arguments"),
    case("python-helper-called-in-term", """\
        library demo
        from "sort/support.py" import flush
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n + flush()
        """, 6, 16, "'flush' is a Python helper; a term of numpy must compile to C"),
    case("argument-function-called-in-term", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = len(keys)
        """, 5, 12, "len() reads an interface argument"),
    case("argument-function-of-a-scalar", """\
        library demo
        interface sort(keys: int[], k: int)
          n = len(k)
          impl numpy = numpy.sort
            time = n
        """, 3, 7, "len() takes an array argument of the interface"),
    case("argument-function-needs-two-dimensions", """\
        library demo
        interface sort(keys: int[])
          n = rows(keys)
          impl numpy = numpy.sort
            time = n
        """, 3, 7, "rows() needs an array of at least 2 dimensions"),
    case("difference-at-top-level-of-fitted-model", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n - log2(n)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 14, "terms of a fitted model are joined by '+'"),
    case("fitted-model-withdraws-and-offers-constant", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ 0 + 1 + n
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 5, "withdraws the constant term (0) and offers it (1)"),
    case("fitted-model-without-profile", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
        """, 5, 5, "has a fitted model, but interface 'sort' has no profile section"),
    case("implementation-without-time-model", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            memory = n
        """, 4, 8, "implementation 'numpy' has no time model"),

    # ---- choose ------------------------------------------------------------------------------
    case("choose-minimizes-unknown-model", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time = n * bpd
            choose bpd minimizing memory
        """, 7, 27, "undefined name 'memory' in the objective of 'bpd'"),
    case("choose-calls-unknown-model", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time = n * bpd
            choose bpd minimizing Cost(n, bpd)
        """, 7, 27, "unknown function 'Cost' in the objective of 'bpd'"),
    case("choose-names-model-without-arguments", """\
        library demo
        from "sort/support.py" import radix_sort
        model Cost(a) = a * 2
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time = n * bpd
            choose bpd minimizing Cost
        """, 8, 27, "model 'Cost' must be called with its arguments"),
    case("choose-unknown-parameter", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time = n * bpd
            choose bdp minimizing time
        """, 7, 12, "choose: 'bdp' is not a parameter of radix; did you mean 'bpd'?"),
    case("choose-root-of-unknown-parameter", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time = n * bpd
            choose width as root of time - 1
        """, 7, 12, "choose: 'width' is not a parameter of radix"),

    # ---- model calls with the wrong arity --------------------------------------------------
    case("library-model-called-with-wrong-arity", """\
        library demo
        model Cost(a, b) = a * b
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = Cost(n)
        """, 6, 12, "model 'Cost' takes 2 arguments (a, b), not 1"),
    case("implementation-model-called-with-wrong-arity", """\
        library demo
        from "sort/support.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl radix(bpd: int in 1 .. 16) = radix_sort
            time = n * bpd
          impl numpy = numpy.sort
            time = radix(n)
        """, 8, 12, "the model of radix takes 2 arguments (n, bpd), not 1"),

    # ---- sources and callables ---------------------------------------------------------------
    case("import-from-missing-file", """\
        library demo
        from "sort/missing.py" import radix_sort
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 6, 'no such source file "sort/missing.py"'),
    case("import-name-missing-from-python-file", """\
        library demo
        from "sort/support.py" import quick_sort
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 31, "\"sort/support.py\" does not define 'quick_sort'"),
    case("import-name-missing-from-cython-file", """\
        library demo
        from "sort/radix.pyx" import radix_cy
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 30, "\"sort/radix.pyx\" does not define 'radix_cy'"),
    case("import-from-missing-module", """\
        library demo
        from no_such_module_hlc import sorter
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 6, "cannot import module 'no_such_module_hlc'"),
    case("import-missing-module-attribute", """\
        library demo
        from numpy import no_such_sort
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 19, "module 'numpy' has no attribute 'no_such_sort'"),
    case("callable-in-missing-module", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = no_such_module_hlc.sort
            time = n
        """, 4, 16, "cannot import module 'no_such_module_hlc'"),
    case("callable-missing-from-module", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.no_such_sort
            time = n
        """, 4, 16, "module 'numpy' has no attribute 'no_such_sort'"),
    case("callable-neither-imported-nor-dotted", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = quick_sort
            time = n
        """, 4, 16, "unknown callable 'quick_sort' for implementation 'numpy'"),

    # ---- interfaces -------------------------------------------------------------------------
    case("unknown-argument-type", """\
        library demo
        interface sort(keys: integer[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 22, "unknown type 'integer'; did you mean 'int'?"),
    case("unknown-return-type", """\
        library demo
        interface sort(keys: int[]) -> list
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 32, "unknown type 'list'"),
    case("mutable-scalar", """\
        library demo
        interface sort(keys: int[], k: mutable int)
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 29, "only arrays can be mutable"),
    case("uniform-bitwidth", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          uniform bits = 1 + bitwidth(keys)
          impl numpy = numpy.sort
            time = n
        """, 4, 22, "uniform variable 'bits' cannot read bitwidth(): it spans the values of every rank"),
    case("uniform-as-a-name", """\
        library demo
        interface sort(keys: int[])
          uniform = len(keys)
          impl numpy = numpy.sort
            time = uniform
        """, 3, 11, "unexpected '='; expected a name ('uniform' is a keyword, which marks a variable"),
    case("reference-names-no-implementation", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          reference nympy
          impl numpy = numpy.sort
            time = n
        """, 4, 13, "reference 'nympy' is not an implementation of sort; did you mean 'numpy'?"),
    case("interface-without-implementation", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
        """, 2, 11, "interface 'sort' has no implementation"),

    # ---- profile -----------------------------------------------------------------------------
    case("profile-does-not-build-argument", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 ++
        """, 7, 3, "the profile does not build argument 'keys' of sort"),
    case("verify-zero", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
            verify 0
        """, 10, 5, "'verify 0': must be at least 1"),
    case("setting-given-twice", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
            repeat 3
            repeat 5
        """, 11, 5, "'repeat' is set twice (first at line 10)"),
    case("setup-not-calling-a-helper", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ n
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
            setup log2(2)
        """, 10, 11, "setup must call an imported Python function"),

    # ---- models and used libraries --------------------------------------------------------------
    case("model-calls-itself", """\
        library demo
        model Cost(a) = Cost(a)
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = Cost(n)
        """, 2, 17, "model 'Cost' calls itself"),
    case("uses-library-not-found", """\
        library demo
        uses runtime_missing
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 6, "uses 'runtime_missing': no description runtime_missing.hl"),
    case("uses-library-with-errors", """\
        library demo
        uses broken
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 6, "broken.hl has errors; first: "),
    case("uses-itself", """\
        library demo
        uses demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n
        """, 2, 6, "library 'demo' cannot use itself"),
    case("used-model-called-with-wrong-arity", """\
        library demo
        uses runtime
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n + runtime.Transfer(n)
        """, 6, 16, "model 'runtime.Transfer' takes 2 arguments (n, p), not 1"),
    case("used-model-called-unqualified-with-wrong-arity", """\
        library demo
        uses runtime
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = Block(n, 2)
        """, 6, 12, "model 'runtime.Block' takes 1 argument (n), not 2"),
    case("model-of-library-not-used", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = runtime.Block(n)
        """, 5, 12, "'runtime' is not a used library (add 'uses runtime')"),
    # ---- families and machine constants ---------------------------------------------------
    case("family-inside-a-call", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ 1 + n * max(1, hinges(log2(n)))
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 27, "a family (steps, hinges) must be a factor of a term"),
    case("two-families-of-one-expression", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ 1 + n * steps(n) * hinges(n)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 31, "the two families of a term must be of different expressions: both are of 'n'"),
    case("two-families-with-too-many-products", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          width = bitwidth(keys)
          impl numpy = numpy.sort
            time ~ 1 + n * steps(width at 1 .. 100) * hinges(log2(n) at 1 .. 21 += 0.25)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 7, 16, "the families of this term offer 8100 products of their knots; at most 4096"),
    case("three-families-in-one-term", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          width = bitwidth(keys)
          impl numpy = numpy.sort
            time ~ 1 + n * steps(width) * hinges(log2(n)) * steps(n)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 7, 53, "a term may hold at most 2 families"),
    case("family-in-a-precondition", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            requires steps(n) > 0
            time ~ 1 + n
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 14, "steps() is a family of candidate terms; it stands only as a factor of a term"),
    case("family-in-a-factored-model", """\
        library demo
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time = n * hinges(n)
        """, 5, 16, "hinges() is a family of candidate terms"),
    case("family-knots-read-a-variable", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ 1 + n * hinges(log2(n) at 4 .. n)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 38, "the knots of hinges() must be constants"),
    case("family-knots-do-not-advance", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ 1 + n * hinges(log2(n) at 4 .. 20 += 0)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 38, "the knots must advance"),
    case("family-with-too-many-knots", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ 1 + n * steps(n at 1 .. 1000)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 31, "at most 256 are offered"),
    case("family-of-an-unknown-name", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            time ~ 1 + n * steps(digits)
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 26, "undefined name 'digits'"),
    case("machine-constant-redefined", """\
        library demo
        let cache_l2 = 1000000
        """, 2, 5, "'cache_l2' is a machine constant"),
    case("machine-constant-misspelt", """\
        library demo
        from "sort/support.py" import random_keys
        interface sort(keys: int[])
          n = len(keys)
          impl numpy = numpy.sort
            requires 8 * n <= cache_l4
            time ~ 1 + n
          profile
            for i in 4 .. 10 ++
            keys = random_keys(1 << i, 8, seed)
        """, 6, 23, "undefined name 'cache_l4'"),
]


@pytest.mark.parametrize(("text", "line", "column", "message"), MALFORMED)
def test_malformed_description_is_rejected_at_its_error(library_folder, text, line, column, message):
    with pytest.raises(HLError) as raised:
        parse_text(library_folder, text)
    error = raised.value
    assert (error.filename, error.line, error.column) == (str(library_folder / "demo.hl"), line, column), error
    assert message in error.message, error


USES_AND_CYTHON = """\
    library demo
    uses runtime
    from "sort/support.py" import random_keys, flush
    from "sort/radix.pyx" import radix_pyx
    interface sort(keys: mutable int[])
      n = len(keys)
      impl radix(bpd: int in 1 .. 16) = radix_pyx
        time ~ n + n * bpd + runtime.Block(n) + Transfer(n, bpd)
      profile
        for i in 4 .. 10 ++
        for bpd in 1 .. 16 ++
        keys = random_keys(1 << i, 8, seed)
        setup flush()
    """

SMALLEST = """\
    library demo
    interface sort(keys: int[])
      n = len(keys)
      impl numpy = numpy.sort
        time = n
    """


@pytest.mark.parametrize("text", [pytest.param(USES_AND_CYTHON, id="uses-and-cython-import"),
                                  pytest.param(SMALLEST, id="smallest")])
def test_valid_description_is_accepted(library_folder, text):
    """The cases above break descriptions like these, which are accepted."""
    library = parse_text(library_folder, textwrap.dedent(text))
    assert library.name == "demo"
    assert [i.name for i in library.interfaces] == ["sort"]


def test_used_library_provides_its_models(library_folder):
    library = parse_text(library_folder, textwrap.dedent(USES_AND_CYTHON))
    assert list(library.used) == ["runtime"]
    assert [m.name for m in library.used["runtime"].models] == ["Block", "Transfer"]


def test_all_independent_errors_are_reported_together(library_folder):
    text = textwrap.dedent("""\
        library demo
        from "sort/support.py" import random_keys, radix_sort, nothing
        interface sort(keys: integer[])
          n = len(keys)
          impl radix(bpd: int) = radix_sort
            time ~ n * bpd + q
          profile
            for i in 4 .. 10 *= 1
            for bpd in 1 .. 16 ++
            keys = random_keys(1 << i, 8, seed)
            verify 0
        """)
    expected = [
        (2, 56, "\"sort/support.py\" does not define 'nothing'"),
        (3, 22, "unknown type 'integer'"),
        (5, 14, "parameter 'bpd' has no range"),
        (6, 22, "undefined name 'q' in a term of radix"),
        (8, 22, "loop 'i' never terminates"),
        (11, 5, "'verify 0': must be at least 1"),
    ]
    with pytest.raises(HLError) as raised:
        parse_text(library_folder, text)
    errors = raised.value.errors
    assert len(errors) == len(expected), raised.value
    assert [(e.line, e.column) for e in errors] == [(line, column) for line, column, _ in expected]
    for error, (_, _, message) in zip(errors, expected, strict=True):
        assert message in error.message
        assert error.severity == "error"
    assert (raised.value.line, raised.value.column, raised.value.message) == (2, 56, errors[0].message)


def test_a_fitted_model_may_have_many_terms(library_folder):
    text = SMALLEST.replace("time = n", "time ~ " + " + ".join(f"n * {k}" for k in range(1000)))
    library = parse_syntax(textwrap.dedent(text))
    assert len(library.implementations[0].models[0].terms) == 1000


@pytest.mark.parametrize("time_model", [pytest.param(" + ".join(["n"] * 1000), id="1000-term-sum"),
                                        pytest.param("- " * 1000 + "n", id="1000-fold-negation")])
def test_too_deep_an_expression_is_a_clear_error(library_folder, time_model):
    text = SMALLEST.replace("time = n", f"time = {time_model}")
    with pytest.raises(HLError, match="nested more than 100 levels deep"):
        parse_text(library_folder, textwrap.dedent(text))
