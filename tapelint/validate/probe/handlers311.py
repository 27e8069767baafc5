"""Python 3.11: see every exception at chosen lines of a code object, caught or not, at no
cost to the code that does not raise.

3.12 has `sys.monitoring`; 3.11 has only `sys.settrace`, which slows every line of every
frame in the thread (measured: a Keras eager step 1.6x slower with a C-level no-op trace
function, 1.8x with a Python one). So on 3.11 the code objects that hold watched lines are
copied with one change: their exception table sends an exception raised at a watched
instruction to a small handler appended after the original bytecode, which calls `hook`
with the exception and then continues exactly where the original table pointed (the
program's own `except`, `finally` or `with` cleanup, with the same stack), or re-raises it
out of the frame when nothing in the frame handled it. The original instructions, their
offsets and their line numbers are untouched, so nothing else about the code changes.

The format of the exception table and of the location table is CPython 3.11's
(Objects/exception_handling_notes.txt, Objects/locations.md).
"""

from __future__ import annotations

import dis
from collections.abc import Callable, Iterator
from types import CodeType
from typing import NamedTuple

_OP = dis.opmap
_CACHES = {name: dis._inline_cache_entries[_OP[name]] for name in ("PRECALL", "CALL")}  # type: ignore[attr-defined]


class _Entry(NamedTuple):
    """One exception-table entry, in code units: [start, end) -> target."""

    start: int
    end: int
    target: int
    depth: int
    lasti: bool


def add_handlers(code: CodeType, watched: Callable[[int], bool], hook: object) -> CodeType:
    """`code` (and the code objects nested in it) with `hook(exception)` called for every
    exception raised at an instruction whose first line satisfies `watched`. The same
    object when none of its lines is watched."""
    consts = tuple(
        add_handlers(const, watched, hook) if isinstance(const, CodeType) else const
        for const in code.co_consts
    )
    lines = _unit_lines(code)
    flagged = [line is not None and watched(line) for line in lines]
    if not any(flagged):
        return code if consts == code.co_consts else code.replace(co_consts=consts)
    return _with_stubs(code.replace(co_consts=consts), flagged, hook)


def _with_stubs(code: CodeType, flagged: list[bool], hook: object) -> CodeType:
    units = len(code.co_code) // 2
    original = _covering(code, units)
    hook_index = len(code.co_consts)
    stubs: dict[_Entry | None, int] = {}  # original handler -> its stub's first unit
    body = bytearray(code.co_code)
    stack = code.co_stacksize
    extra: list[_Entry] = []  # the stubs' own entries
    for unit in range(units):
        entry = original[unit]
        if flagged[unit] and entry not in stubs:
            start = len(body) // 2
            stubs[entry] = start
            stub, guard = _stub(start, hook_index, entry)
            body += stub
            extra.append(guard)
            stack = max(stack, guard.depth + 3)  # + NULL, the hook, its argument
    stood_in_for = {start: entry for entry, start in stubs.items()}
    keys = [stubs[original[u]] if flagged[u] else original[u] for u in range(units)]
    table = []
    for start, end, key in _runs(keys):
        if isinstance(key, _Entry):
            table.append(_Entry(start, end, key.target, key.depth, key.lasti))
        elif key is not None:  # a stub, entered like the handler it stands in front of
            entry = stood_in_for[key]
            depth, lasti = (entry.depth, entry.lasti) if entry else (0, True)
            table.append(_Entry(start, end, key, depth, lasti))
    return code.replace(
        co_code=bytes(body),
        co_consts=(*code.co_consts, hook),
        co_exceptiontable=_encode_table(table + extra),
        co_linetable=code.co_linetable + _no_locations(len(body) // 2 - units),
        co_stacksize=stack,
    )


def _runs(keys: list) -> Iterator[tuple[int, int, object]]:
    """Maximal runs of equal keys: (start, end, key)."""
    start = 0
    for unit in range(1, len(keys) + 1):
        if unit == len(keys) or keys[unit] != keys[start]:
            yield start, unit, keys[start]
            start = unit


def _stub(at: int, hook_index: int, entry: _Entry | None) -> tuple[bytes, _Entry]:
    """Call the hook with the exception on top of the stack, then go on as the original
    table would have: to the original handler, or out of the frame (RERAISE 1 restores the
    raising instruction as the frame's position; the unwinder looks up handlers by the
    RERAISE's own position, which has none).

    Returned with the stub's own table entry: should the hook itself fail (say at the
    recursion limit), its error is dropped and the original exception goes on unchanged."""
    depth = (entry.depth + entry.lasti if entry else 1) + 1  # ... [lasti] exception
    call = bytearray()
    call += _instruction("PUSH_NULL", 0)
    call += _instruction("LOAD_CONST", hook_index)
    call += _instruction("COPY", 3)
    call += _instruction("PRECALL", 1) + bytes(2 * _CACHES["PRECALL"])
    call += _instruction("CALL", 1) + bytes(2 * _CACHES["CALL"])
    call += _instruction("POP_TOP", 0)
    resume = at + len(call) // 2
    if entry is None:
        go_on = _instruction("RERAISE", 1)
    else:
        # JUMP_BACKWARD counts from the instruction after it; two EXTENDED_ARG slots,
        # always there, keep the stub's size independent of the distance.
        go_on = _extended("JUMP_BACKWARD", resume + 3 - entry.target, prefixes=2)
    fallback = at + len(call) // 2 + len(go_on) // 2
    drop = _instruction("POP_TOP", 0)
    back = _extended("JUMP_BACKWARD", fallback + 1 + 3 - resume, prefixes=2)
    guard = _Entry(at, resume, fallback, depth, False)
    return bytes(call + go_on + drop + back), guard


def _instruction(name: str, arg: int) -> bytes:
    return _extended(name, arg, prefixes=0) if arg < 256 else _extended(name, arg, 3)


def _extended(name: str, arg: int, prefixes: int) -> bytes:
    if arg >= 1 << (8 * (prefixes + 1)):
        raise ValueError(f"argument {arg} too large for {name}")
    code = bytearray()
    for shift in range(prefixes, 0, -1):
        code += bytes((_OP["EXTENDED_ARG"], (arg >> (8 * shift)) & 0xFF))
    return bytes(code + bytes((_OP[name], arg & 0xFF)))


def _unit_lines(code: CodeType) -> list[int | None]:
    """The first line of the instruction each code unit belongs to."""
    return [start for start, _end, _col, _endcol in code.co_positions()]


def _covering(code: CodeType, units: int) -> list[_Entry | None]:
    covering: list[_Entry | None] = [None] * units
    for entry in _decode_table(code.co_exceptiontable):
        for unit in range(entry.start, min(entry.end, units)):
            covering[unit] = entry
    return covering


def _decode_table(table: bytes) -> list[_Entry]:
    entries = []
    data = iter(table)

    def varint() -> int:
        byte = next(data)
        value = byte & 63
        while byte & 64:
            byte = next(data)
            value = (value << 6) | (byte & 63)
        return value

    try:
        while True:
            start = varint()
            size = varint()
            target = varint()
            depth_lasti = varint()
            entries.append(
                _Entry(start, start + size, target, depth_lasti >> 1, bool(depth_lasti & 1))
            )
    except StopIteration:
        return entries


def _encode_table(entries: list[_Entry]) -> bytes:
    table = bytearray()
    for entry in entries:
        depth_lasti = (entry.depth << 1) | entry.lasti
        for index, value in enumerate(
            (entry.start, entry.end - entry.start, entry.target, depth_lasti)
        ):
            table += _varint(value, first=index == 0)
    return bytes(table)


def _varint(value: int, *, first: bool) -> bytes:
    chunks = [value & 63]
    value >>= 6
    while value:
        chunks.append(value & 63)
        value >>= 6
    chunks.reverse()
    encoded = bytearray(chunk | 64 for chunk in chunks[:-1]) + bytes((chunks[-1],))
    if first:
        encoded[0] |= 128
    return bytes(encoded)


def _no_locations(units: int) -> bytes:
    """Location-table entries saying "no location" (code 15) for `units` code units."""
    table = bytearray()
    while units > 0:
        length = min(units, 8)
        table.append(0x80 | (15 << 3) | (length - 1))
        units -= length
    return bytes(table)
