"""`lines311`: each watched line that starts with plain loads is marked when it runs, and
nothing else about the code changes (results, positions, tracebacks)."""

from __future__ import annotations

import sys
import traceback
from types import CodeType

import pytest

pytestmark = pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="CPython 3.11 bytecode")

SOURCE = """
def train(batches, log):
    total = 0
    for batch in batches:
        total = total + batch
        if total > 3:
            log.append(total)
    try:
        log.missing_method()
    except AttributeError:
        log.append("caught")
    return total


def fails(value):
    return value.no_such_attribute


result = train([1, 2, 3], [])
if result > 100:
    print("never")
"""


def _marked(watched: set[int]) -> tuple[CodeType, CodeType, list]:
    from tapelint.validate.probe.lines311 import mark_lines

    code = compile(SOURCE, "/virtual/train.py", "exec")
    ran: list = []
    return code, mark_lines(code, watched.__contains__, ran.append, lambda line: line), ran


def test_the_lines_that_ran_are_marked_once_each_and_the_others_not() -> None:
    _, marked, ran = _marked({5, 7, 9, 11, 16, 19, 21})
    namespace: dict = {}
    exec(marked, namespace)
    assert namespace["result"] == 6
    # 5 and 7 ran several times: marked at each run; 16 (fails) and 21 never ran.
    assert sorted(set(ran)) == [5, 7, 9, 11, 19]
    assert ran.count(5) == 3


def test_positions_of_the_original_instructions_are_unchanged() -> None:
    code, marked, _ = _marked(set(range(1, 22)))

    def pairs(original: CodeType, copy: CodeType) -> list[tuple[CodeType, CodeType]]:
        nested = [c for c in original.co_consts if isinstance(c, CodeType)]
        copies = [c for c in copy.co_consts if isinstance(c, CodeType)]
        return [(original, copy)] + [
            p for o, c in zip(nested, copies, strict=True) for p in pairs(o, c)
        ]

    for original, copy in pairs(code, marked):
        units = len(original.co_code) // 2
        assert list(copy.co_positions())[:units] == list(original.co_positions())


def test_an_error_in_a_marked_line_has_the_same_traceback() -> None:
    def failure(code: CodeType) -> str:
        namespace: dict = {}
        exec(code, namespace)
        try:
            namespace["fails"](1)
        except AttributeError:
            return "".join(traceback.format_exc().splitlines(keepends=True)[2:])
        raise AssertionError("did not raise")

    code, marked, ran = _marked({16})
    assert failure(marked) == failure(code)
    assert ran == [16]
