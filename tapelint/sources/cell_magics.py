"""Cell magics a notebook registers itself, and which of them run their cell as Python.

Book notebooks define cell magics of their own. The notebooks of *Deep Learning with
Python* (third edition) register one that runs a cell only under the Keras backend it names:

    @register_cell_magic
    def backend(line, cell):
        current, required = os.environ.get("KERAS_BACKEND", ""), line.split()[-1]
        if current == required:
            get_ipython().run_cell(cell)
        else:
            print(f"This cell requires the {required} backend...")

and then write cells `%%backend tensorflow`, `%%backend jax`. Those cells are Python that the
kernel runs (under that backend), so they are checked like any other cell, read as IPython
reads the cell the magic hands on; a cell magic tapelint does not know still leaves its cell
out (its body may be SQL, C++ or a shell script).

A magic counts when a code cell of the notebook, before the cell that uses it, defines at its
top level a function decorated with `@register_cell_magic` or `@register_line_cell_magic`
(IPython.core.magic's; bare, or called with the magic's name as a string), whose body hands
its cell parameter (the second), never reassigned, to `<shell>.run_cell(cell, ...)` or to
`exec(cell, ...)` (`exec(compile(cell, ...))` too). A registered magic that does anything
else with its cell (writes it to a file, sends it to a database, runs `cell.replace(...)`)
does not count, and a later cell that registers the name again that way removes it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

_REGISTERING = frozenset({"register_cell_magic", "register_line_cell_magic"})


def registered(code: str, known: frozenset[str]) -> frozenset[str]:
    """The cell magics that run their cell as Python after a cell of this code (which
    parses) runs, when `known` are those before it."""
    if "register_" not in code:
        return known
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return known
    names = set(known)
    for function, name in _registrations(tree):
        if _runs_cell_as_python(function):
            names.add(name)
        else:
            names.discard(name)
    return frozenset(names)


def _registrations(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef, str]]:
    """Each top-level function registered as a cell magic, with the magic's name."""
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            name = _registered_name(decorator, node.name)
            if name is not None:
                yield node, name


def _registered_name(decorator: ast.expr, function: str) -> str | None:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    called = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    if called not in _REGISTERING:
        return None
    if not isinstance(decorator, ast.Call) or not (decorator.args or decorator.keywords):
        return function
    match decorator.args, decorator.keywords:
        case [ast.Constant(value=str() as name)], []:
            return name
    return None  # a name tapelint cannot read


def _runs_cell_as_python(function: ast.FunctionDef) -> bool:
    parameters = [*function.args.posonlyargs, *function.args.args]
    if len(parameters) < 2:
        return False
    cell = parameters[1].arg
    nodes = list(ast.walk(function))
    if any(
        isinstance(node, ast.Name) and node.id == cell and not isinstance(node.ctx, ast.Load)
        for node in nodes
    ):
        return False
    return any(isinstance(node, ast.Call) and _hands_on(node, cell) for node in nodes)


def _hands_on(call: ast.Call, cell: str) -> bool:
    """Whether the call runs the text `cell` names as Python."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "run_cell":
        keyword = next((k.value for k in call.keywords if k.arg == "raw_cell"), None)
        return _is_name(call.args[0] if call.args else keyword, cell)
    if isinstance(func, ast.Name) and func.id == "exec" and call.args:
        code: ast.expr | None = call.args[0]
        if isinstance(code, ast.Call) and getattr(code.func, "id", None) == "compile":
            code = code.args[0] if code.args else None
        return _is_name(code, cell)
    return False


def _is_name(node: ast.expr | None, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
