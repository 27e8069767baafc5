"""Python 3.11: know that a watched line ran, at no cost to any other line.

A verdict of `not-reached` must mean the line never ran, and the probe's patches see a line
only through the calls it makes into TensorFlow or Keras (an update by an optimizer no patch
follows is invisible). 3.12 has `sys.monitoring`'s LINE event per code object; 3.11 has only
`sys.settrace`, which slows every line of every frame (see `handlers311`). So, as for
exceptions, the code objects that hold watched lines are copied with one change per watched
line: the first instructions of the line (loads, arithmetic, stores: none jumps) move to a stub
after the original bytecode that first calls `hook(marker)`, then runs them and jumps back;
in their place a jump to the stub, and `NOP`s. Offsets of everything else, the exception
table's entries and every instruction's position are kept (the moved instructions keep
theirs in the stub, so an error they raise points at the same line).

A line whose first instructions cannot be moved (an `import`, a `for` header, a comparison)
is not marked:
the verdicts fall back to what the patches saw. Formats are CPython 3.11's
(Objects/locations.md, Objects/exception_handling_notes.txt).
"""

from __future__ import annotations

import dis
from collections.abc import Callable, Hashable
from types import CodeType

from .handlers311 import (
    _CACHES,
    _covering,
    _decode_table,
    _encode_table,
    _Entry,
    _extended,
    _instruction,
)

_OP = dis.opmap
# Instructions that may run elsewhere unchanged: they read no offset, never jump, and no
# specialized form of theirs looks at a jump after them (COMPARE_OP's do).
_MOVABLE = frozenset(
    _OP[name]
    for name in (
        "NOP",
        "PUSH_NULL",
        "LOAD_FAST",
        "LOAD_CONST",
        "LOAD_NAME",
        "LOAD_GLOBAL",
        "LOAD_DEREF",
        "LOAD_CLASSDEREF",
        "LOAD_ATTR",
        "LOAD_METHOD",
        "BINARY_OP",
        "BINARY_SUBSCR",
        "BUILD_LIST",
        "BUILD_TUPLE",
        "LIST_EXTEND",
        "UNARY_NEGATIVE",
        "UNARY_NOT",
        "STORE_FAST",
        "STORE_NAME",
    )
)
_JUMP_UNITS = 3  # EXTENDED_ARG, EXTENDED_ARG, JUMP_FORWARD


def mark_lines(
    code: CodeType, watched: Callable[[int], bool], hook: object, key: Callable[[int], Hashable]
) -> CodeType:
    """`code` (and the code objects nested in it) with `hook(key(line))` called each time a
    watched line starts running. The same object when it has no line that can be marked."""
    consts = tuple(
        mark_lines(const, watched, hook, key) if isinstance(const, CodeType) else const
        for const in code.co_consts
    )
    if consts != code.co_consts:
        code = code.replace(co_consts=consts)
    blocks = _movable_blocks(code, watched)
    if not blocks:
        return code
    return _with_marks(code, blocks, hook, key)


def _movable_blocks(code: CodeType, watched: Callable[[int], bool]) -> dict[int, tuple[int, int]]:
    """For each watched line, the first run of movable instructions of it, long enough for
    the jump: line -> (first unit, units)."""
    instructions = list(dis.get_instructions(code))
    targets = {entry.target for entry in _decode_table(code.co_exceptiontable)}
    covering = _covering(code, len(code.co_code) // 2)
    blocks: dict[int, tuple[int, int]] = {}
    for index, first in enumerate(instructions):
        line = first.positions.lineno if first.positions else None
        if line is None or line in blocks or not watched(line):
            continue
        if index and instructions[index - 1].opcode == _OP["EXTENDED_ARG"]:
            continue
        start = first.offset // 2
        units = 0
        for instruction in instructions[index:]:
            if units >= _JUMP_UNITS:
                break
            unit = instruction.offset // 2
            if (
                instruction.opcode not in _MOVABLE
                or (units and (instruction.is_jump_target or unit in targets))
                or instruction.positions is None
                or instruction.positions.lineno != line
                or covering[unit] != covering[start]
            ):
                break
            units += 1 + dis._inline_cache_entries[instruction.opcode]  # type: ignore[attr-defined]
        if units >= _JUMP_UNITS:
            blocks[line] = (start, units)
    return blocks


def _with_marks(
    code: CodeType,
    blocks: dict[int, tuple[int, int]],
    hook: object,
    key: Callable[[int], Hashable],
) -> CodeType:
    body = bytearray(code.co_code)
    units = len(body) // 2
    positions = list(code.co_positions())
    covering = _covering(code, units)
    consts = list(code.co_consts)
    hook_index = len(consts)
    consts.append(hook)
    table = _decode_table(code.co_exceptiontable)
    for line, (start, length) in sorted(blocks.items(), key=lambda item: item[1]):
        stub = len(body) // 2
        consts.append(key(line))
        call = bytearray()
        call += _instruction("PUSH_NULL", 0)
        call += _instruction("LOAD_CONST", hook_index)
        call += _instruction("LOAD_CONST", len(consts) - 1)
        call += _instruction("PRECALL", 1) + bytes(2 * _CACHES["PRECALL"])
        call += _instruction("CALL", 1) + bytes(2 * _CACHES["CALL"])
        call += _instruction("POP_TOP", 0)
        moved = body[2 * start : 2 * (start + length)]
        after = stub + (len(call) + len(moved)) // 2 + _JUMP_UNITS
        back = _extended("JUMP_BACKWARD", after - (start + length), prefixes=2)
        body += call + moved + back
        positions += [positions[start]] * (len(call) // 2)
        positions += positions[start : start + length]
        positions += [positions[start + length - 1]] * _JUMP_UNITS
        jump = _extended("JUMP_FORWARD", stub - (start + _JUMP_UNITS), prefixes=2)
        body[2 * start : 2 * (start + length)] = jump + _instruction("NOP", 0) * (
            length - _JUMP_UNITS
        )
        entry = covering[start]
        if entry is not None:  # the stub raises into the same handler as the line
            table.append(_Entry(stub, len(body) // 2, entry.target, entry.depth, entry.lasti))
    return code.replace(
        co_code=bytes(body),
        co_consts=tuple(consts),
        co_exceptiontable=_encode_table(table),
        co_linetable=_encode_positions(positions, code.co_firstlineno),
        co_stacksize=code.co_stacksize + 3,  # NULL, the hook, its argument
    )


def _encode_positions(positions: list[tuple], first_line: int) -> bytes:
    """A location table giving each code unit its position: the long form, or "none"."""
    table = bytearray()
    line = first_line
    for start, end, column, end_column in positions:
        if start is None:
            table.append(0x80 | (15 << 3))
            continue
        table.append(0x80 | (14 << 3))
        table += _signed_varint(start - line)
        table += _varint((end if end is not None else start) - start)
        table += _varint(0 if column is None else column + 1)
        table += _varint(0 if end_column is None else end_column + 1)
        line = start
    return bytes(table)


def _varint(value: int) -> bytes:
    encoded = bytearray()
    while value >= 64:
        encoded.append(64 | (value & 63))
        value >>= 6
    encoded.append(value)
    return bytes(encoded)


def _signed_varint(value: int) -> bytes:
    return _varint((-value << 1) | 1 if value < 0 else value << 1)
