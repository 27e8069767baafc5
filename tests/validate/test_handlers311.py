"""The exception handlers `probe/handlers311.py` puts in front of a code object's own: the
program behaves exactly as before (results, exceptions, tracebacks), and the hook sees every
exception at a watched line, caught or not. Python 3.11's bytecode only: 3.12+ watches
with `sys.monitoring` instead (tests/validate/test_raises.py runs both ways)."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import types

import pytest

if sys.version_info[:2] != (3, 11):  # its opcodes are 3.11's
    pytest.skip("the probe adds handlers on Python 3.11 only", allow_module_level=True)

from tapelint.validate.probe.handlers311 import add_handlers

SHAPES = textwrap.dedent(
    """\
    import contextlib

    def plain(x):
        return 1 / x  # 4

    def caught(x):
        try:
            return 1 / x  # 8
        except ZeroDivisionError:
            return "caught"

    def suppressed(x):
        with contextlib.suppress(ZeroDivisionError):
            return 1 / x  # 14
        return "suppressed"

    def in_with(x):
        with contextlib.nullcontext():
            return 1 / x  # 19

    def loop(xs):
        out = []
        for x in xs:
            try:
                out.append(1 / x)  # 25
            except ZeroDivisionError:
                out.append(None)
                continue
            finally:
                out.append("finally")
        return out

    def comprehension(xs):
        return [1 / x for x in xs]  # 34

    def generator(xs):
        for x in xs:
            yield 1 / x  # 38

    def chained(x):
        try:
            return 1 / x  # 42
        except ZeroDivisionError as error:
            raise ValueError("wrapped") from error  # 44

    def closure(x):
        def inner():
            return x.missing  # 48
        try:
            return inner()  # 50
        except AttributeError:
            return "closure"

    inverse = lambda x: 1 / x  # 54

    class Table:
        def get(self, key):
            return {"a": 1}[key]  # 58

    def multiline(x):
        return (
            1
            / x  # 63
        )

    def finally_returns(x):
        try:
            return 1 / x  # 68
        finally:
            return "overridden"

    def group(x):
        try:
            raise ExceptionGroup("g", [ValueError(x)])  # 74
        except* ValueError:
            pass
        return "star"

    async def coroutine(x):
        return 1 / x  # 80

    def recursive(n, x):
        if n == 0:
            return 1 / x  # 84
        try:
            return recursive(n - 1, x)  # 86
        except KeyError:
            return "never"

    def deep(n):
        return deep(n + 1)  # 91
    """
)
WATCHED = {4, 8, 14, 19, 25, 34, 38, 42, 44, 48, 50, 54, 58, 62, 63, 68, 74, 80, 84, 86, 91}


def _outcomes(code: types.CodeType) -> list:
    """What each function returns or raises (type, traceback lines, cause), run in order."""
    namespace: dict = {}
    exec(code, namespace)
    f = namespace
    outcomes = []

    def call(function, *args):
        try:
            result = function(*args)
            if isinstance(result, types.CoroutineType):
                result = asyncio.run(result)
            outcomes.append(("returned", result))
        except BaseException as error:
            lines, tb = [], error.__traceback__
            while tb is not None:
                lines.append(tb.tb_lineno)
                tb = tb.tb_next
            outcomes.append(("raised", type(error).__name__, lines[1:], repr(error.__cause__)))

    for x in (0, 2):
        for name in ("plain", "caught", "suppressed", "in_with", "chained", "multiline"):
            call(f[name], x)
        call(f["finally_returns"], x)
        call(f["inverse"], x)
        call(f["coroutine"], x)
        call(f["comprehension"], [1, x])
        call(lambda: list(f["generator"]([1, x])))  # noqa: B023
        call(f["Table"]().get, "a" if x else "b")
        call(f["recursive"], 3, x)
    call(f["loop"], [1, 0, 2, 0])
    call(f["closure"], 1)
    call(f["group"], 1)
    generator = f["generator"]([1, 2])
    next(generator)
    generator.close()
    call(f["deep"], 0)  # RecursionError: the hook itself cannot be called at the limit
    return outcomes


def _watched(lines: set[int]) -> tuple[types.CodeType, list[tuple[str, int]]]:
    seen: list[tuple[str, int]] = []

    def hook(error: BaseException) -> None:
        seen.append((type(error).__name__, error.__traceback__.tb_lineno))

    code = compile(SHAPES, "shapes.py", "exec")
    return add_handlers(code, lines.__contains__, hook), seen


def test_the_program_behaves_exactly_as_before() -> None:
    original = _outcomes(compile(SHAPES, "shapes.py", "exec"))
    for lines in (WATCHED, set(range(1, 100))):
        watched, _ = _watched(lines)
        assert _outcomes(watched) == original


def test_the_hook_sees_each_exception_at_the_watched_lines_caught_or_not() -> None:
    watched, seen = _watched(WATCHED)
    _outcomes(watched)
    recorded = set(seen)
    divisions = {4, 8, 14, 19, 25, 34, 38, 42, 54, 62, 68, 80, 84, 86}
    assert {("ZeroDivisionError", line) for line in divisions} <= recorded
    assert {("AttributeError", 48), ("AttributeError", 50), ("KeyError", 58)} <= recorded
    assert ("ValueError", 44) in recorded  # raised in an `except` block
    assert ("ExceptionGroup", 74) in recorded
    assert ("GeneratorExit", 38) in recorded  # closing a generator: the probe ignores it
    assert ("RecursionError", 91) in recorded
    assert all(line in WATCHED for _, line in seen)


def test_a_failing_hook_changes_nothing() -> None:
    def hook(error: BaseException) -> None:
        raise KeyError("the hook broke")

    code = compile(SHAPES, "shapes.py", "exec")
    expected = _outcomes(code)
    assert _outcomes(add_handlers(code, lambda line: True, hook)) == expected


def test_code_without_watched_lines_is_returned_as_is() -> None:
    code = compile(SHAPES, "shapes.py", "exec")
    assert add_handlers(code, lambda line: False, print) is code
