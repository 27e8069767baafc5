"""Which tapes record their block for nothing: never asked for a gradient, and never handed
on to code that could ask them? (TAP107)

A tape is unused when every place that reads it is one this module can follow: its `with`
statement, `watch`, `stop_recording`, `reset` and `del`. Anything else may ask it for a
gradient where this analysis cannot see: a gradient, jacobian or batch_jacobian call; the
tape returned, yielded, stored on an object or in a container, passed to any call
(`optimizer.minimize(loss, variables, tape=tape)`, `print(tape)`), aliased to another
name, read from a nested function, or reached through a name that may hold another value
too. Each of those keeps it quiet, and so does:

- a tape stored on an attribute (`self.tape`) or created in a class body, whose readers
  are other methods;
- a name declared `global` or `nonlocal` where the tape is made (the name is another
  scope's), and `locals()`, `vars()`, `globals()`, `eval` or `exec` in that scope (the
  name may be read by its spelling);
- a tape at a module's (or a notebook's) top level whose name any function or class of
  the file's whole text reads: functions that mention no trigger are cut out before the
  parse, and one of them may ask it; and one in a notebook with a Python cell that was
  left out for not parsing (`UNREAD_CELL`), which may ask it;
- code left to write (`# YOUR CODE HERE`, `### START CODE HERE ###`, a `TODO`, the
  tape's gradient call in a comment or a string: `# grads = tape.gradient(...)`) in the
  tape's function, or anywhere in the file for a top-level tape: the gradient call is an
  exercise, or work in progress;
- a block with `yield` in it (a generator runs its caller's code under the tape);
- a block that records nothing: no call but printing, logging, builtins, NumPy and
  TensorFlow's constants and metadata (`tf.shape`, `tf.zeros`), or a tape that watches
  neither the variables it reads (`watch_accessed_variables=False`) nor any tensor.

What counts as recorded work is deliberately broad (a model call, any other TensorFlow op,
a call of a function of yours, arithmetic on a tensor the tape watches): the finding's
point is that the tape answers nothing, and what its block runs only says what the tape
holds meanwhile.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import libcst as cst

from tapelint.parsing.slicer import Literals
from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.model import (
    UNREAD_CELL,
    CallSite,
    FileModel,
    TapeInstance,
    Tri,
    is_recording,
)
from tapelint.semantic.project_model.names import is_numpy
from tapelint.settings.policies.exercise_cells import asks_for_code

# How a tape is read without being asked for anything (`Use.tape_role`).
_FOLLOWED_ROLES = frozenset({"with", "watch", "stop_recording", "reset", "del"})
# Builtins through which a name can be read by its spelling.
_INTROSPECTION = frozenset({"locals", "vars", "globals", "eval", "exec"})
# Calls that put nothing on a tape: printing, Python's own builtins, and TensorFlow's
# constants, metadata and logging (no input is a watched tensor, or no gradient exists).
_RECORDS_NOTHING = frozenset(
    {
        "tensorflow.print",
        "tensorflow.shape",
        "tensorflow.size",
        "tensorflow.rank",
        "tensorflow.constant",
        "tensorflow.zeros",
        "tensorflow.ones",
        "tensorflow.fill",
        "tensorflow.range",
    }
)
_RECORDS_NOTHING_PREFIXES = ("tensorflow.summary.", "tensorflow.debugging.", "logging.")
_PYTHON_BUILTINS = frozenset(
    {
        "print",
        "len",
        "range",
        "int",
        "float",
        "str",
        "bool",
        "list",
        "tuple",
        "dict",
        "set",
        "enumerate",
        "zip",
        "isinstance",
        "repr",
        "format",
        "sorted",
    }
)
_TODO = re.compile(r"\bTODO\b")
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})


@dataclass(frozen=True)
class UnusedTape:
    tape: TapeInstance
    block: cst.With  # its first `with` block, where it is reported
    # The first call its block records; None when it records only arithmetic on a tensor
    # it watches.
    recorded: cst.Call | None


def unused_tapes(model: FileModel) -> list[UnusedTape]:
    """The tapes of the module that are entered by a `with` block that records work, and
    that are never asked for a gradient and never handed on (see the module's doc)."""
    found = []
    for tape in model.tapes:
        if not tape.blocks or not _only_followed_uses(model, tape):
            continue
        if _name_may_be_read_elsewhere(model, tape):
            continue
        records, first = _recorded_work(model, tape)
        if records:
            found.append(UnusedTape(tape, next(iter(tape.blocks)), first))
    return found


def _only_followed_uses(model: FileModel, tape: TapeInstance) -> bool:
    scope = tape.scope.node
    if not isinstance(scope, (cst.Module, cst.FunctionDef)):
        return False  # a class body's tape is read through the class by its methods
    if tape.name is not None and "." in tape.name:
        return False  # on an object: other methods read it
    return all(
        use.tape_role in _FOLLOWED_ROLES and use.scope is tape.scope
        for use in model.uses_of_tape(tape)
    )


def _name_may_be_read_elsewhere(model: FileModel, tape: TapeInstance) -> bool:
    """The tape's name (or its scope) may be read where the model cannot follow it."""
    scope = tape.scope
    if scope.is_module:
        text = model.source_text
        if UNREAD_CELL in text or _left_to_write(text, tape.name):
            return True
        tree = model.text_tree()
        return tree is None or _read_in_definitions(tree, tape.name)
    function = scope.node
    assert isinstance(function, cst.FunctionDef)
    if _left_to_write(model.module.code_for_node(function), tape.name):
        return True
    if tape.name is not None and _declared_outside(function, tape.name):
        return True
    return any(_introspects(model, site) for site in model.calls if site.scope is scope)


def _left_to_write(text: str, name: str | None) -> bool:
    """Whether code is left to write where the tape is: a line that asks for code, a
    `TODO`, or the tape's gradient call in a comment or a string (`# grads =
    tape.gradient(...)`, an exercise's hint)."""
    if _TODO.search(text) or any(asks_for_code(line) for line in text.splitlines()):
        return True
    if name is None:
        return False
    mentions = re.compile(rf"\b{re.escape(name)}\s*\.\s*\w*(?:gradient|jacobian)")
    literals = Literals(text)
    return any(literals.contains(found.start()) for found in mentions.finditer(text))


def _read_in_definitions(tree: ast.Module, name: str | None) -> bool:
    """Whether a function, lambda or class of the module's whole text reads the module's
    `name`, or any code calls one of the introspection builtins. A function that binds a
    `name` of its own (`with tf.GradientTape() as tape:` in a training step) reads its
    own, unless it declares it `global`."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _INTROSPECTION
        ):
            return True
        definition = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        if name is not None and isinstance(node, definition) and _reads_global(node, name):
            return True
    return False


def _reads_global(definition: ast.AST, name: str) -> bool:
    loads = binds = declared = False
    inner = getattr(definition, "body", [])
    for part in inner if isinstance(inner, list) else [inner]:
        for node in ast.walk(part):
            if isinstance(node, ast.Name) and node.id == name:
                loads = loads or isinstance(node.ctx, ast.Load)
                binds = binds or not isinstance(node.ctx, ast.Load)
            elif isinstance(node, ast.Global) and name in node.names:
                declared = True
    arguments = getattr(definition, "args", None)
    if isinstance(arguments, ast.arguments):
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        binds = binds or any(a.arg == name for a in every)
    return loads and (declared or not binds)


def _declared_outside(function: cst.FunctionDef, name: str) -> bool:
    """`global name` or `nonlocal name` in the function (not in functions nested in it)."""
    pending: list[cst.CSTNode] = [function.body]
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            if any(item.name.value == name for item in node.names):
                return True
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            pending.extend(child_nodes(node))
    return False


def _introspects(model: FileModel, site: CallSite) -> bool:
    func = site.node.func
    return isinstance(func, cst.Name) and func.value in _INTROSPECTION and not model.defs_of(func)


def _recorded_work(model: FileModel, tape: TapeInstance) -> tuple[bool, cst.Call | None]:
    """Whether the tape's block records work, with the first call run while it records
    that may put operations on it (None when the work is arithmetic on a tensor the tape
    watches). No work: the block records nothing, or runs its caller's code (`yield`)."""
    watches = [c for c in model.calls_on(tape) if c.method == "watch"]
    if tape.watch_accessed_variables is Tri.NO and not watches:
        return False, None
    if any(_yields_in(block) for block in tape.blocks):
        return False, None
    for site in model.calls:
        if (
            site.scope is tape.scope
            and is_recording(site.ctx, tape)
            and model.tape_call_at(site.node) is None
            and _may_record(model, site)
        ):
            return True, site.node
    watched = {
        name.value for call in watches for arg in call.node.args for name in _names(arg.value)
    }
    for use in model.uses_by_node.values():
        if (
            use.scope is tape.scope
            and isinstance(use.node, cst.Name)
            and use.node.value in watched
            and is_recording(use.ctx, tape)
            and not any(use.stmt is call.stmt for call in watches)
        ):
            return True, None
    return False, None


def _may_record(model: FileModel, site: CallSite) -> bool:
    """Whether a call may run operations a tape records: anything but printing, logging,
    Python's builtins, NumPy and TensorFlow's constants and metadata."""
    qualified = site.qualified
    if qualified is not None:
        if qualified in _RECORDS_NOTHING or qualified.startswith(_RECORDS_NOTHING_PREFIXES):
            return False
        return not is_numpy(qualified)
    func = site.node.func
    if isinstance(func, cst.Name):
        return func.value not in _PYTHON_BUILTINS or bool(model.defs_of(func))
    if isinstance(func, cst.Attribute):
        return func.attr.value not in _LOG_METHODS
    return True


def _yields_in(block: cst.With) -> bool:
    pending: list[cst.CSTNode] = [block.body]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Yield):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            pending.extend(child_nodes(node))
    return False


def _names(node: cst.CSTNode) -> list[cst.Name]:
    if isinstance(node, cst.Name):
        return [node]
    return [n for child in child_nodes(node) for n in _names(child)]
