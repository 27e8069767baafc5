"""The index one file is checked with: the summaries that the names it asks about lead to.

Absolute imports are resolved through `sys.path`, which depends on the program that runs:
`import utils` in `baselines/cifar/train.py` is `baselines/cifar/utils.py`, the same line
in `baselines/jft/train.py` another file. So there is no one index for a project with
several script directories; each file gets the view its own import roots give (files
with the same roots share one).

A view is built by following names, the way `ProjectIndex` will resolve them: each name
the file asked about (`FileAnalysis.asked`) is split into a module and the rest, the
longest module first; the module's file is located (`ModuleLayout.locate`) and its
summary loaded; then what the index would consult next is followed in turn: the alias,
base classes or star imports the rest goes through, and every call and forward target in
the summary of the function it names (what `returns` and `applies` substitute), and each
binding of a name the module binds in more than one way (what `binding` compares). Every
module the index can consult for those names is then in the view, so the view answers
them as an index of the whole project would. Names are followed to MAX_DEPTH modules
away from the file; a name further away is unknown (in every kind of run alike).

A question of what a function does to each gradient it is handed (`transforms-of:` a
name, `summaries.TRANSFORMS_OF`) is followed as its name is, and the module that defines
it is loaded with that question, so that its function is read even where the module has
no trigger (`tapelint.project.transformers`).

A module seen under another name than its own (a script `agents/dqn.py`, itself `dqn`,
imported as `agents.dqn` from the root) is the same summary with its own qualified names
renamed (`renamed`).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tapelint.project.modules import ModuleLayout
from tapelint.semantic.project_model.library import LIBRARY
from tapelint.semantic.project_model.summaries import (
    OPEN,
    TRANSFORMS_OF,
    CallResult,
    Flow,
    Forward,
    FunctionSummary,
    ModuleSummary,
    ProjectIndex,
    class_and_method,
    transforms_question,
)

# How many modules away from the checked file a name is still followed.
MAX_DEPTH = 8


@dataclass(frozen=True)
class View:
    index: ProjectIndex
    names: frozenset[str]  # the names followed: the view answers these completely
    paths: frozenset[str]  # the module files whose summaries it holds


# A module file's summary under its own module name, and that name, for a look-up of a
# name in it (the first part of the rest of a qualified name), with the transforms of
# that name when the third argument is true; None when the file cannot be read or parsed.
LoadSummary = Callable[[str, str, bool], tuple[str, ModuleSummary] | None]


def build_view(
    names: Iterable[str],
    *,
    roots: tuple[str, ...],
    own: ModuleSummary | None,
    layout: ModuleLayout,
    load: LoadSummary,
) -> View:
    """The view for a file whose imports resolve in `roots` and whose own module is
    `own`, following `names`."""
    modules: dict[str, ModuleSummary] = {}
    paths: set[str] = set()
    followed: set[str] = set()
    pending = deque((name, 0) for name in sorted(names))
    while pending:
        name, depth = pending.popleft()
        question = transforms_question(name)
        plain = question if question is not None else name
        if name in followed or plain in LIBRARY:
            continue
        followed.add(name)
        for module, rest in _splits(plain):
            head = rest.partition(".")[0]
            found = _module(module, head, roots, own, layout, load, question is not None)
            if found is None:
                continue
            path, summary = found
            if module not in modules or _blank(modules[module]):
                modules[module] = summary  # blank when the module defines what was asked
            elif summary.functions.keys() - modules[module].functions.keys():
                # Builders found for a later name (`tapelint.project.builders`).
                functions = {**summary.functions, **modules[module].functions}
                modules[module] = dataclasses.replace(modules[module], functions=functions)
            if path is not None:
                paths.add(path)
            if depth < MAX_DEPTH:
                consulted: Iterable[str] = _consulted(summary, rest)
                if question is not None:  # where the name leads, unless it is defined here
                    defined = rest in summary.functions
                    consulted = () if defined else (TRANSFORMS_OF + n for n in consulted)
                pending.extend((next_name, depth + 1) for next_name in consulted)
            break
    return View(ProjectIndex(modules.values()), frozenset(followed), frozenset(paths))


def _module(
    module: str,
    wanted: str,
    roots: tuple[str, ...],
    own: ModuleSummary | None,
    layout: ModuleLayout,
    load: LoadSummary,
    transforms: bool,
) -> tuple[str | None, ModuleSummary] | None:
    if own is not None and module == own.module:
        return None, own
    path = layout.locate(module, roots)
    loaded = load(path, wanted, transforms) if path is not None else None
    if loaded is None:
        return None
    name, summary = loaded
    return path, summary if name == module else renamed(summary, name, module)


def _blank(summary: ModuleSummary) -> bool:
    return not (
        summary.functions
        or summary.aliases
        or summary.star_imports
        or summary.bases
        or summary.classes
        or summary.alternatives
    )


def _consulted(summary: ModuleSummary, rest: str) -> Iterator[str]:
    """The names `ProjectIndex` looks up next when it resolves `rest` in this module (a
    superset: a module more in a view changes no answer)."""
    rest = rest.replace(OPEN, "")  # what an object's subclasses override: the same module
    head, _, tail = rest.partition(".")
    suffix = f".{tail}" if tail else ""
    if head in summary.alternatives:  # what `binding` follows
        yield from (found + suffix for found in summary.alternatives[head] if found)
    function = summary.functions.get(rest)
    if function is not None:
        yield from _targets(function)
        return
    if head in summary.aliases:
        yield summary.aliases[head] + suffix
        return
    owner, method = class_and_method(rest)
    if owner in summary.classes:
        yield from (f"{base}.{method}" for base in summary.bases.get(owner, ()) if base)
        return
    yield from (f"{star}.{rest}" for star in summary.star_imports)


def _targets(function: FunctionSummary) -> Iterator[str]:
    for _, flow in function.returns:
        yield from _flow_targets(flow)
    for forward in function.forwards:
        yield forward.target


def _flow_targets(flow: Flow) -> Iterator[str]:
    for call in flow.calls:
        yield call.target
        for _, argument in call.args:
            yield from _flow_targets(argument)


def _splits(qualified: str) -> Iterator[tuple[str, str]]:
    parts = qualified.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        yield ".".join(parts[:cut]), ".".join(parts[cut:])


# ---------------------------------------------------------------------- renaming
def renamed(summary: ModuleSummary, old: str, new: str) -> ModuleSummary:
    """The summary of module `old` as module `new`: every qualified name in it that is
    `old` or inside it is rewritten. (Its sites and labels are not names.)"""

    def name(qualified: str) -> str:
        if qualified == old:
            return new
        if qualified.startswith(old + "."):
            return new + qualified[len(old) :]
        return qualified

    def flow(value: Flow) -> Flow:
        if not value.calls:
            return value
        calls = tuple(
            CallResult(name(c.target), c.part, tuple((k, flow(f)) for k, f in c.args))
            for c in value.calls
        )
        return dataclasses.replace(value, calls=calls)

    def function(value: FunctionSummary) -> FunctionSummary:
        return dataclasses.replace(
            value,
            returns=tuple((part, flow(f)) for part, f in value.returns),
            forwards=tuple(Forward(f.param, name(f.target), f.arg, f.site) for f in value.forwards),
        )

    return dataclasses.replace(
        summary,
        module=new,
        functions={key: function(value) for key, value in summary.functions.items()},
        aliases={key: name(value) for key, value in summary.aliases.items()},
        star_imports=tuple(name(star) for star in summary.star_imports),
        bases={key: tuple(name(b) for b in value) for key, value in summary.bases.items()},
        alternatives={
            key: tuple(name(b) if b else b for b in value)
            for key, value in summary.alternatives.items()
        },
    )
