"""What a function does with gradients, as facts its callers can use: function summaries,
the library table's entries, and the project index that resolves them.

A summary says what a function does with gradients and tapes, for its callers in other
modules and cells. For each function and method of a module:

- `returns`: what each part of its return value holds (the whole value, `"*"`, or the
  element `"0"`, `"1"`, ... of a returned tuple), as a `Flow`: the raw (possibly None)
  gradient lists of gradient calls (`raw`, each with its `Site`), the parameters it passes
  through without filtering None (`params`), the results of other functions it passes
  through (`calls`, resolved by the index), and whether some path is not followed
  (`opaque`);
- `applies`: each parameter that reaches an optimizer's `apply_gradients` / `apply`
  without a None check, with the apply's site;
- `forwards`: each parameter handed, unfiltered, to another function's parameter;
- `spends`: each parameter that the function asks for gradients (`p.gradient(...)`,
  `jacobian`, `batch_jacobian`) on every path through it, before it can return: handed a
  non-persistent tape, it leaves the tape spent;
- `transforms`: each parameter that goes, with no None guard, through an op that raises on
  None: the parameter itself (`def add_noise(g): return g + noise`, what
  `tf.nest.map_structure(add_noise, grads)` calls with each gradient), or each of its
  elements (`def scale(grads): return [g * s for g in grads]`, what `scale(grads)` and
  `self.accumulate(grads)` run on each gradient), with the op's site;
- `builds`: the Keras model or layer it returns on every path, built in its module
  (`def build_model(): return keras.Sequential([...])`), with the part of it that holds
  non-trainable variables, if one is known: a caller in another module then knows what
  `model = build_model()` holds;
- `hands_back`: each part of its return value that is, on every path, a tape it created
  and let go of only by returning it (`return out, tape`), with the tape's persistence:
  `out, tape = self._forward(x)` then binds a tape of the caller, whose `tape.gradient`
  counts as a call on it, while what the tape recorded stays in
  the helper, unseen by the caller.

Unknown is never reported: a fact is only ever a definite path, and a function, callee or
part with no fact means "not known", never "safe" or "raw".

Summaries are plain data (JSON round-trips), computed per module from its own text only:
what crosses into another module is a symbolic `CallResult` / `Forward` naming the callee by
its qualified name. `ProjectIndex` joins the modules of a project and resolves those names
through imports, re-exports, star imports and base classes; the library table
(`project_model.library`) gives well-known functions of other packages summaries of
the same form.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tapelint.semantic.project_model.names import canonical, is_tensorflow_or_keras

WHOLE = "*"  # the whole return value, as opposed to one element of a returned tuple
NOT_IMPORTED = ""  # an alternative binding of a name by something that is not an import


@dataclass(frozen=True, order=True)
class Site:
    """Where a fact comes from, for messages and related locations: a file as reported, a
    1-based line and column (a notebook's within its `cell`), and what is there."""

    path: str
    line: int
    column: int
    label: str  # "`tape.gradient` in `compute_grads`"
    cell: int | None = None

    def where(self, reported_in: str | None = None) -> str:
        """`utils.py:12` (`nb.ipynb:cell 3:12`), or `line 12` in the file `reported_in`.
        Paths are as reported; two absolute ones (files outside the current directory, as
        an editor's server sees them) are shortened to the site's path from the reporting
        file's directory."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        if self.path == reported_in:
            return f"{cell}line {self.line}" if not cell else f"{cell}{self.line}"
        path = self.path
        if reported_in and os.path.isabs(path) and os.path.isabs(reported_in):
            path = os.path.relpath(path, os.path.dirname(reported_in))
        return f"{path}:{cell}{self.line}"


@dataclass(frozen=True)
class CallResult:
    """The part `part` of what `target` returns, called with these argument flows."""

    target: str
    part: str
    args: tuple[tuple[str, Flow], ...] = ()  # argument position ("0", "1") or keyword


@dataclass(frozen=True)
class Flow:
    raw: tuple[Site, ...] = ()
    params: tuple[int, ...] = ()
    calls: tuple[CallResult, ...] = ()
    opaque: bool = False

    @property
    def is_empty(self) -> bool:
        return not (self.raw or self.params or self.calls)

    def join(self, other: Flow) -> Flow:
        return Flow(
            raw=_merged(self.raw, other.raw),
            params=_merged(self.params, other.params),
            calls=_merged(self.calls, other.calls),
            opaque=self.opaque or other.opaque,
        )


@dataclass(frozen=True)
class Applied:
    """Parameter `param` reaches the optimizer apply at `site` with no None check."""

    param: int
    site: Site


@dataclass(frozen=True)
class Forward:
    """Parameter `param` is handed, unfiltered, to argument `arg` of `target` at `site`."""

    param: int
    target: str
    arg: str
    site: Site


@dataclass(frozen=True)
class Spent:
    """Parameter `param` is asked for gradients at `site` on every path through the
    function."""

    param: int
    site: Site


@dataclass(frozen=True)
class Transformed:
    """Parameter `param` goes through the op at `site`, which raises on None, with no None
    guard: the parameter itself, or with `each`, each of its elements (a loop or a
    comprehension over it, a lambda mapped over it)."""

    param: int
    each: bool
    site: Site


@dataclass(frozen=True)
class Built:
    """What a function returns on every path is a Keras model (or a layer) that its module
    builds. `legacy`: the module runs Keras 2 (`tf_keras`), whose variables are
    `tf.Variable`s. `in_variables` / `in_weights`: a part of it whose non-trainable
    variables `variables` / `weights` list (`BatchNormalization`), or None when none is
    known (Keras 3 lists a seed generator's state in `variables` only). `regularized`: a
    part of it whose regularization losses `losses` lists (`Dense(kernel_regularizer=...)`),
    or None when none is known. `training_part`: a part of it that computes something
    different when called with `training=True` (`Dropout`, `BatchNormalization`, a `call`
    that reads `training`), or None when none is known. The same facts describe an
    instance of a Keras subclass that a module defines (`Generator(...)` built from
    another module: the summary under the class's name, with `of_class`)."""

    is_model: bool
    legacy: bool = False
    in_variables: str | None = None
    in_weights: str | None = None
    regularized: str | None = None
    training_part: str | None = None
    of_class: bool = False


@dataclass(frozen=True)
class HandedBack:
    """Part `part` of what a function returns is, on every path, a tape it created at
    `site` and holds nowhere else. `persistent`: True, False, or None when not known
    (`persistent=flag`). `asked`: the most gradient calls the function itself made on it
    before returning (capped at 2). `toy`: it records only toy values written out in the
    code (`tape_life.toy_values`)."""

    part: str
    persistent: bool | None
    asked: int
    toy: bool
    site: Site


@dataclass(frozen=True)
class FunctionSummary:
    params: tuple[str, ...]
    returns: tuple[tuple[str, Flow], ...] = ()
    applies: tuple[Applied, ...] = ()
    forwards: tuple[Forward, ...] = ()
    spends: tuple[Spent, ...] = ()
    builds: Built | None = None
    transforms: tuple[Transformed, ...] = ()
    hands_back: tuple[HandedBack, ...] = ()

    def returned(self, part: str) -> Flow | None:
        for key, flow in self.returns:
            if key == part:
                return flow
        return None

    def param_index(self, argument: str) -> int | None:
        """The parameter an argument binds: a position ("0") or a keyword."""
        if argument.isdigit():
            index = int(argument)
            return index if index < len(self.params) else None
        return self.params.index(argument) if argument in self.params else None

    def handed_back(self, part: str) -> HandedBack | None:
        """The tape the function hands back as `part` of its return value, if it does."""
        return next((tape for tape in self.hands_back if tape.part == part), None)

    @property
    def has_facts(self) -> bool:
        facts = (
            self.applies
            or self.forwards
            or self.spends
            or self.builds
            or self.transforms
            or self.hands_back
        )
        return bool(facts) or any(not flow.is_empty for _, flow in self.returns)

    def spent_at(self, param: int) -> Site | None:
        """Where the function asks parameter `param` for gradients, if it always does."""
        return next((spent.site for spent in self.spends if spent.param == param), None)


@dataclass(frozen=True)
class ModuleSummary:
    """One module's summaries, and the names it binds from elsewhere (to resolve calls that
    reach it through a re-export or a star import, and names such as `tf` that other
    modules import from it).

    `alternatives`: the imported names the module binds in more than one way at its top
    level (an import in a `try` and another in its `except ImportError`, an assignment
    after the import), with every binding: a qualified name, or `""` for one that is not
    an imported name (`tf = None`, a stub object, a definition); and the names it binds
    only to imported names or their attributes (`Adam = keras.optimizers.Adam`). Only
    `binding` reads them. `exports`: the names
    `from module import *` binds when the module lists them in `__all__` (None: every
    public name)."""

    module: str
    functions: Mapping[str, FunctionSummary] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)  # top-level name -> qualified
    star_imports: tuple[str, ...] = ()
    # Each class (by local name, `Outer.Inner`) with the qualified names of its bases, in
    # order; `""` for a base the module cannot name (`make_base()`, a name bound at run
    # time). `classes`: each class with the names its body binds (its methods, assignments,
    # imports), which end Python's look-up of a method there.
    bases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    classes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    alternatives: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exports: tuple[str, ...] | None = None

    def exported(self, name: str) -> bool:
        """Whether `from module import *` binds `name`."""
        return name in self.exports if self.exports is not None else not name.startswith("_")

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "functions": {name: _function_json(f) for name, f in self.functions.items()},
            "aliases": dict(self.aliases),
            "star_imports": list(self.star_imports),
            "bases": {name: list(bases) for name, bases in self.bases.items()},
            "classes": {name: list(bound) for name, bound in self.classes.items()},
            "alternatives": {name: list(found) for name, found in self.alternatives.items()},
            "exports": list(self.exports) if self.exports is not None else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModuleSummary:
        exports = data["exports"]
        return cls(
            module=str(data["module"]),
            functions={str(k): _function_from(v) for k, v in data["functions"].items()},
            aliases={str(k): str(v) for k, v in data["aliases"].items()},
            star_imports=tuple(str(m) for m in data["star_imports"]),
            bases={str(k): tuple(str(b) for b in v) for k, v in data["bases"].items()},
            classes={str(k): tuple(str(b) for b in v) for k, v in data["classes"].items()},
            alternatives={
                str(k): tuple(str(b) for b in v) for k, v in data["alternatives"].items()
            },
            exports=tuple(str(name) for name in exports) if exports is not None else None,
        )


# How a check records, among the names it asked about, that it asked what a function does
# to each gradient it is handed (`ProjectIndex.transforms`): `transforms-of:pkg.utils.scale`.
# Only such a question makes the project read that function in a module it does not
# otherwise analyse, and only it makes a result depend on the function's `transforms`.
TRANSFORMS_OF = "transforms-of:"


def transforms_question(name: str) -> str | None:
    """The function an asked name asks the transforms of, if it is such a question."""
    return name[len(TRANSFORMS_OF) :] if name.startswith(TRANSFORMS_OF) else None


# After a class's name in a method's qualified name (`pkg.solvers.Solver+.grad`): the
# method of an object of that class or of a subclass (a parameter annotated with it), not
# of exactly that class (`self`, an object the module constructs).
OPEN = "+"


def class_and_method(rest: str) -> tuple[str, str]:
    """(`Outer.Inner`, `m`) for `Outer.Inner.m`; the class part keeps `OPEN`."""
    owner, _, method = rest.rpartition(".")
    return owner, method


# The names one look-up may pass through (aliases, star imports, base classes). Any
# layout then ends: a star import of a module the index does not hold (a C extension, an
# excluded file) sends `pkg.f` to `pkg._native.f`, which re-enters `pkg` with a longer
# name at every step, so no name repeats. A name not reached within them is unknown.
MAX_LOOKUP_STEPS = 64


class ProjectIndex:
    """The summaries of a project's modules and of the library table, by qualified name.

    `function` resolves a qualified name (`pkg.utils.grad`, `pkg.agent.Agent.update`)
    through re-exports (`from .utils import grad` in `pkg/__init__.py`), star imports and
    base classes. `returns` and `applies` answer with every `CallResult` and `Forward`
    resolved, following chains of helpers; a cycle, or a name that resolves to nothing,
    adds nothing (and makes a returned flow opaque).
    """

    def __init__(
        self,
        modules: Iterable[ModuleSummary] = (),
        library: Mapping[str, FunctionSummary] | None = None,
    ) -> None:
        self.modules = {m.module: m for m in modules}
        # The module being checked, when this index is its view (`with_module`), and every
        # name outside it that the check looked up: a result that used none of them does
        # not depend on other modules.
        self.own_module: str | None = None
        self.asked: set[str] = set()
        # The module being checked, for `binding`: what it binds, its own imports say.
        self.checked_module: str | None = None
        if library is None:
            from tapelint.semantic.project_model.library import LIBRARY

            library = LIBRARY
        self.library = library
        self._returns: dict[tuple[str, str], Flow] = {}
        self._applies: dict[str, dict[int, tuple[tuple[Site, ...], ...]]] = {}

    def with_module(self, summary: ModuleSummary) -> ProjectIndex:
        """The view of the index that checking `summary`'s module uses: its own summary in
        place of the module of the same name, recording the other names it asks about."""
        view = ProjectIndex({**self.modules, summary.module: summary}.values(), self.library)
        view.own_module = view.checked_module = summary.module
        return view

    # ------------------------------------------------------------------ names
    def function(self, qualified: str) -> FunctionSummary | None:
        found = self._function(qualified, set())
        return found[1] if found is not None else None

    def resolve(self, qualified: str) -> str | None:
        """The qualified name of the definition `qualified` reaches, if it has a summary."""
        found = self._function(qualified, set())
        return found[0] if found is not None else None

    def _function(self, qualified: str, seen: set[str]) -> tuple[str, FunctionSummary] | None:
        if qualified in seen or len(seen) >= MAX_LOOKUP_STEPS:
            return None
        seen.add(qualified)
        if qualified in self.library:
            return qualified, self.library[qualified]
        if self.own_module is None or not qualified.startswith(self.own_module + "."):
            self.asked.add(qualified)
        for module, rest in _splits(qualified):
            summary = self.modules.get(module)
            if summary is None:
                continue
            owner, method = class_and_method(rest)
            if owner.removesuffix(OPEN) in summary.classes:
                return self._method(module, owner, method, seen)
            if rest in summary.functions:
                return qualified, summary.functions[rest]
            head, _, tail = rest.partition(".")
            if head in summary.aliases:
                target = summary.aliases[head] + (f".{tail}" if tail else "")
                return self._function(target, seen)
            for star in summary.star_imports:
                found = self._function(f"{star}.{rest}", seen)
                if found is not None:
                    return found
            return None
        return None

    def _method(
        self, module: str, owner: str, method: str, seen: set[str]
    ) -> tuple[str, FunctionSummary] | None:
        """Method `method` of class `owner` of `module`, looked up as Python does: the
        class, then each base in order, depth first. A class whose body binds the name ends
        the look-up, with its summary or with nothing known (an override that filters None
        has no fact to give, and the base's must not be found instead). A base the module
        cannot name, a base outside the project (`keras.Model`, which may define the name)
        and a class reached twice (a diamond, where Python's order is not depth first) make
        it unknown. `Owner+` (`OPEN`): the object may be of a subclass, so a subclass that
        overrides the method in `owner`'s module makes it unknown too (the caller's module
        asks the same of its own classes: `calls.objects`)."""
        if owner.endswith(OPEN):
            owner = owner.removesuffix(OPEN)
            if self._overridden_below(f"{module}.{owner}", method, seen):
                return None
        order = self._ancestry(module, owner, method, seen)
        for place in order:
            if place is None or order.count(place) > 1:
                return None  # an unknown base, or a class reached twice, comes first
            place_module, place_owner = place
            summary = self.modules[place_module]
            if method in summary.classes.get(place_owner, ()):
                found = summary.functions.get(f"{place_owner}.{method}")
                return (f"{place_module}.{place_owner}.{method}", found) if found else None
        return None

    def _ancestry(
        self, module: str, owner: str, method: str, seen: set[str]
    ) -> list[tuple[str, str] | None]:
        """Class `owner` of `module` and its bases, depth first, left to right, a class
        reached twice listed twice; None for a base not known to be the project's class."""
        order: list[tuple[str, str] | None] = []
        pending: list[tuple[str, str] | None] = [(module, owner)]
        while pending and len(order) < MAX_LOOKUP_STEPS:
            place = pending.pop()
            order.append(place)
            if place is None or order.count(place) > 1:
                continue
            bases = self.modules[place[0]].bases.get(place[1], ())
            found: list[tuple[str, str] | None] = []
            for base in bases:
                if base and (self.own_module is None or not base.startswith(self.own_module + ".")):
                    # What the base's module says decides the answer (and a view follows it).
                    self.asked.add(f"{base}.{method}")
                found.append(self._class(base, set(seen)) if base else None)
            pending.extend(reversed(found))
        if pending:
            order.append(None)  # too deep to tell
        return order

    def _class(self, qualified: str, seen: set[str]) -> tuple[str, str] | None:
        """(module, local name) of the project's class `qualified` reaches through
        re-exports and star imports; None for a name outside the index."""
        if qualified in seen or len(seen) >= MAX_LOOKUP_STEPS:
            return None
        seen.add(qualified)
        for module, rest in _splits(qualified):
            summary = self.modules.get(module)
            if summary is None:
                continue
            if rest in summary.classes:
                return module, rest
            head, _, tail = rest.partition(".")
            if head in summary.aliases:
                return self._class(summary.aliases[head] + (f".{tail}" if tail else ""), seen)
            for star in summary.star_imports:
                found = self._class(f"{star}.{rest}", seen)
                if found is not None:
                    return found
            return None
        return None

    def _overridden_below(self, qualified: str, method: str, seen: set[str]) -> bool:
        """Whether a class derived from class `qualified`, in its module, binds `method`
        itself."""
        target = self._class(qualified, set(seen))
        if target is None:
            return True
        below: dict[tuple[str, str], bool] = {target: True}

        def derives(place: tuple[str, str], path: frozenset[tuple[str, str]]) -> bool:
            if place not in below:
                below[place] = False  # a cycle derives from nothing
                summary = self.modules[place[0]]
                for base in summary.bases.get(place[1], ()):
                    found = self._class(base, set(seen)) if base else None
                    if found is not None and found not in path and derives(found, path | {place}):
                        below[place] = True
                        break
            return below[place]

        summary = self.modules[target[0]]
        return any(
            (target[0], owner) != target
            and method in bound
            and derives((target[0], owner), frozenset())
            for owner, bound in summary.classes.items()
        )

    def tensorflow_binding(self, qualified: str) -> str | None:
        """The canonical TensorFlow or Keras name that `qualified`, a name of the project
        (`mypkg.tf`, `mypkg.compat.tf_keras.optimizers.Adam`), stands for through the
        project's imports (`binding`); None when it stands for no such name, or is one
        already (it is asked nothing then: TensorFlow's and Keras' own sources import
        from themselves)."""
        if is_tensorflow_or_keras(canonical(qualified)):
            return None
        bound = self.binding(qualified)
        if bound is None or bound == qualified:
            return None
        found = canonical(bound)
        return found if is_tensorflow_or_keras(found) else None

    def binding(self, qualified: str) -> str | None:
        """What `qualified` is bound to through the project's imports: the name it reaches
        by following the modules' aliases, re-exports, star imports (of the names the
        star-imported module exports) and alternative bindings, or `qualified` itself when
        no module of the index binds it to another name (a name outside the project, or one
        a module defines). None when what it is bound to is not known: a module binds it to
        something that is not an imported name, or its alternative bindings are not all the
        same (`tf_keras` and `tensorflow.keras` are the same: both are Keras). A name not
        reached within MAX_LOOKUP_STEPS look-ups is not known either."""
        return self._binding(qualified, (), [MAX_LOOKUP_STEPS])

    def _binding(self, qualified: str, path: tuple[str, ...], budget: list[int]) -> str | None:
        """`path`: the names this look-up went through (a cycle is not known); `budget`:
        the look-ups left (alternatives branch, so a path's length is not enough)."""
        budget[0] -= 1
        if qualified in path or budget[0] < 0:
            return None
        if self.own_module is None or not qualified.startswith(self.own_module + "."):
            self.asked.add(qualified)
        path = (*path, qualified)
        for module, rest in _splits(qualified):
            summary = self.modules.get(module)
            if summary is None:
                continue
            if module == self.checked_module:
                return qualified  # the checked module's own imports say what it is
            head, _, tail = rest.partition(".")
            suffix = f".{tail}" if tail else ""
            if head in summary.alternatives:
                every = summary.alternatives[head]
                if NOT_IMPORTED in every:
                    return None
                return self._agreed([self._binding(b + suffix, path, budget) for b in every])
            if head in summary.aliases:
                return self._binding(summary.aliases[head] + suffix, path, budget)
            if head in summary.bases:
                return qualified  # a class defined here
            through_stars: list[str | None] = []
            for star in summary.star_imports:
                exporter = self.modules.get(star)
                if exporter is not None and not exporter.exported(head):
                    continue
                found = self._binding(f"{star}.{rest}", path, budget)
                if found != f"{star}.{rest}":
                    through_stars.append(found)
            return self._agreed(through_stars) if through_stars else qualified
        return qualified

    @staticmethod
    def _agreed(bindings: list[str | None]) -> str | None:
        """The binding all of `bindings` are, in canonical form, if they are one."""
        names = {canonical(found) if found is not None else None for found in bindings}
        return bindings[0] if len(names) == 1 else None

    # ------------------------------------------------------------------ resolved facts
    def returns(self, qualified: str, part: str) -> Flow | None:
        """What `part` of `qualified`'s return value holds, with every call resolved;
        `params` stay symbolic (the caller maps them to its arguments). None when the
        function has no summary or nothing is known of that part."""
        resolved = self.resolve(qualified)
        if resolved is None:
            return None
        key = (resolved, part)
        if key not in self._returns:
            self._returns[key] = Flow(opaque=True)  # a cycle resolves to nothing known
            summary = self.function(resolved)
            flow = summary.returned(part) if summary is not None else None
            self._returns[key] = self.substituted(flow) if flow is not None else Flow()
        flow = self._returns[key]
        return None if flow.is_empty and not flow.opaque else flow

    def substituted(self, flow: Flow) -> Flow:
        """`flow` with each call result replaced by what the callee returns, its parameters
        mapped to the call's argument flows."""
        result = Flow(raw=flow.raw, params=flow.params, opaque=flow.opaque)
        for call in flow.calls:
            returned = self.returns(call.target, call.part)
            if returned is None:
                result = result.join(Flow(opaque=True))
                continue
            result = result.join(Flow(raw=returned.raw, opaque=returned.opaque))
            summary = self.function(call.target)
            arguments = dict(call.args)
            for param in returned.params:
                argument = _argument_of(summary, param, arguments) if summary else None
                result = result.join(
                    self.substituted(argument) if argument is not None else Flow(opaque=True)
                )
        return result

    def applies(self, qualified: str) -> dict[int, tuple[tuple[Site, ...], ...]]:
        """Parameter index -> the chains of sites by which it reaches an apply unfiltered
        (the apply last: `update_weights(grads)` -> `self._step(grads)` -> `apply_gradients`)."""
        resolved = self.resolve(qualified)
        if resolved is None:
            return {}
        if resolved not in self._applies:
            self._applies[resolved] = {}  # cycles add nothing
            summary = self.function(resolved)
            found: dict[int, list[tuple[Site, ...]]] = {}
            for applied in summary.applies if summary else ():
                found.setdefault(applied.param, []).append((applied.site,))
            for forward in summary.forwards if summary else ():
                callee = self.function(forward.target)
                index = callee.param_index(forward.arg) if callee is not None else None
                if index is None:
                    continue
                for chain in self.applies(forward.target).get(index, ()):
                    found.setdefault(forward.param, []).append((forward.site, *chain))
            self._applies[resolved] = {k: tuple(sorted(set(v))) for k, v in found.items()}
        return self._applies[resolved]

    def transforms(self, qualified: str) -> tuple[Transformed, ...]:
        """What the function `qualified` runs, unguarded, on its parameters or on each of
        their elements; recorded as a question of its own (`TRANSFORMS_OF`), also
        for a name of the checked module: a method of its class may be a base class's, in
        a module that only this question makes the project read."""
        self.asked.add(TRANSFORMS_OF + qualified)
        summary = self.function(qualified)
        return summary.transforms if summary is not None else ()

    # ------------------------------------------------------------------ cache keys
    def answers(self, name: str) -> tuple[str | None, Any, str | None]:
        """Everything a check can learn of `name` from the index: the definition it
        resolves to, that definition's summary (but its `transforms`), and the TensorFlow
        or Keras name it stands for (`tensorflow_binding`); for a question of transforms,
        the definition and its `transforms`."""
        question = transforms_question(name)
        if question is not None:
            summary = self.function(question)
            return self.resolve(question), summary.transforms if summary else None, None
        summary = self.function(name)
        without = replace(summary, transforms=()) if summary is not None else None
        return self.resolve(name), without, self.tensorflow_binding(name)

    def digest(self, names: Iterable[str]) -> str:
        """A stable digest of what this index says of `names`: for each, the definition it
        resolves to, its summary, its resolved returns and applies, or "unknown", and what
        it is bound to. A check that looked up only these names (`asked`) gives the same
        result with any index of the same digest, so the result cache keys re-checked files
        by it. Looking them up here is not recorded in `asked`."""
        asked = set(self.asked)
        facts: list[Any] = []
        for name in sorted(set(names)):
            question = transforms_question(name)
            if question is not None:
                resolved, transforms, _ = self.answers(name)
                facts.append([name, resolved, _transforms_json(transforms or ())])
                continue
            resolved = self.resolve(name)
            summary = self.function(name)
            if resolved is None or summary is None:
                facts.append([name, "unknown", self.tensorflow_binding(name)])
                continue
            returns = [
                [part, _flow_json(self.returns(name, part) or Flow())]
                for part, _ in summary.returns
            ]
            applies = [
                [param, [[_site_json(site) for site in chain] for chain in chains]]
                for param, chains in sorted(self.applies(name).items())
            ]
            facts.append(
                [
                    name,
                    resolved,
                    _function_json(replace(summary, transforms=())),
                    returns,
                    applies,
                    self.tensorflow_binding(name),
                ]
            )
        self.asked = asked
        encoded = json.dumps(facts, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


def _argument_of(
    summary: FunctionSummary, param: int, arguments: Mapping[str, Flow]
) -> Flow | None:
    """The flow of the argument a call gives parameter `param`."""
    if str(param) in arguments:
        return arguments[str(param)]
    name = summary.params[param] if param < len(summary.params) else None
    return arguments.get(name) if name is not None else None


def _splits(qualified: str) -> Iterator[tuple[str, str]]:
    """(module, rest) for each way to split a qualified name, the longest module first."""
    parts = qualified.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        yield ".".join(parts[:cut]), ".".join(parts[cut:])


def _merged(first: tuple[Any, ...], second: tuple[Any, ...]) -> tuple[Any, ...]:
    return first + tuple(item for item in second if item not in first)


# ---------------------------------------------------------------------- JSON
def _site_json(site: Site) -> list[Any]:
    return [site.path, site.line, site.column, site.label, site.cell]


def _site_from(data: list[Any]) -> Site:
    path, line, column, label, cell = data
    return Site(str(path), int(line), int(column), str(label), None if cell is None else int(cell))


def _flow_json(flow: Flow) -> dict[str, Any]:
    return {
        "raw": [_site_json(s) for s in flow.raw],
        "params": list(flow.params),
        "calls": [
            {"target": c.target, "part": c.part, "args": [[k, _flow_json(f)] for k, f in c.args]}
            for c in flow.calls
        ],
        "opaque": flow.opaque,
    }


def _flow_from(data: Mapping[str, Any]) -> Flow:
    return Flow(
        raw=tuple(_site_from(s) for s in data["raw"]),
        params=tuple(int(p) for p in data["params"]),
        calls=tuple(
            CallResult(
                str(c["target"]),
                str(c["part"]),
                tuple((str(k), _flow_from(f)) for k, f in c["args"]),
            )
            for c in data["calls"]
        ),
        opaque=bool(data["opaque"]),
    )


def _function_json(summary: FunctionSummary) -> dict[str, Any]:
    return {
        "params": list(summary.params),
        "returns": [[part, _flow_json(flow)] for part, flow in summary.returns],
        "applies": [[a.param, _site_json(a.site)] for a in summary.applies],
        "forwards": [[f.param, f.target, f.arg, _site_json(f.site)] for f in summary.forwards],
        "spends": [[spent.param, _site_json(spent.site)] for spent in summary.spends],
        "builds": None if summary.builds is None else _built_json(summary.builds),
        "transforms": _transforms_json(summary.transforms),
        "hands_back": [_handed_back_json(tape) for tape in summary.hands_back],
    }


def _transforms_json(transforms: tuple[Transformed, ...]) -> list[Any]:
    return [[t.param, t.each, _site_json(t.site)] for t in transforms]


def _function_from(data: Mapping[str, Any]) -> FunctionSummary:
    return FunctionSummary(
        params=tuple(str(p) for p in data["params"]),
        returns=tuple((str(part), _flow_from(flow)) for part, flow in data["returns"]),
        applies=tuple(Applied(int(p), _site_from(s)) for p, s in data["applies"]),
        forwards=tuple(
            Forward(int(p), str(t), str(a), _site_from(s)) for p, t, a, s in data["forwards"]
        ),
        spends=tuple(Spent(int(p), _site_from(s)) for p, s in data["spends"]),
        builds=None if data["builds"] is None else _built_from(data["builds"]),
        transforms=tuple(
            Transformed(int(p), bool(each), _site_from(s)) for p, each, s in data["transforms"]
        ),
        hands_back=tuple(_handed_back_from(tape) for tape in data["hands_back"]),
    )


def _built_json(built: Built) -> list[Any]:
    return [
        built.is_model,
        built.legacy,
        built.in_variables,
        built.in_weights,
        built.regularized,
        built.training_part,
        built.of_class,
    ]


def _built_from(data: list[Any]) -> Built:
    is_model, legacy, in_variables, in_weights, regularized, training_part, of_class = data
    return Built(
        bool(is_model),
        bool(legacy),
        None if in_variables is None else str(in_variables),
        None if in_weights is None else str(in_weights),
        None if regularized is None else str(regularized),
        None if training_part is None else str(training_part),
        bool(of_class),
    )


def _handed_back_json(tape: HandedBack) -> list[Any]:
    return [tape.part, tape.persistent, tape.asked, tape.toy, _site_json(tape.site)]


def _handed_back_from(data: list[Any]) -> HandedBack:
    part, persistent, asked, toy, site = data
    return HandedBack(
        str(part),
        None if persistent is None else bool(persistent),
        int(asked),
        bool(toy),
        _site_from(site),
    )
