"""Which calls apply gradients: is the receiver of `.apply_gradients(...)` / `.apply(...)` a
Keras optimizer, another library's, or unknown?

`apply` is a common method name (Sonnet 2's optimizers, `DataFrame.apply`, transforms), and
only a Keras optimizer's `apply(grads, variables)` is the Keras 3 update that drops None
gradients with a warning. Sonnet's `snt.optimizers.Adam().apply(updates, parameters)` skips
None updates by design, as do other libraries' optimizers. So:

- `x.apply(...)` applies gradients only when `x` is certainly a Keras optimizer;
- `x.apply_gradients(...)` does unless `x` is certainly another library's optimizer.

TensorFlow 1's optimizers (`tf.train.AdamOptimizer`, `tf.compat.v1.train.*Optimizer`) count
as another library's: their `apply_gradients` leaves out the pairs whose gradient is None
itself, and raises only when every one is None. So does an optimizer of unknown origin in a
TensorFlow 1 program (a module that calls `tf.enable_eager_execution()`, which TensorFlow 2
removed): its optimizers are TensorFlow 1's.

A call of the project's own method named so (`self.apply_gradients(gen_grads, disc_grads)`
on a model that defines it) is no optimizer's: the method's summary says what it does.

A Keras optimizer is made by a Keras constructor (`keras.optimizers.Adam(...)`,
`tf.keras.optimizers.get(...)`, `tf.optimizers.SGD(...)`, TensorFlow Addons' optimizers,
`LossScaleOptimizer`), is a parameter annotated with a Keras optimizer class, is
`self.optimizer` inside a Keras model subclass that never assigns it (the optimizer
`compile()` set), or `model.optimizer` of a known Keras model, or a parameter that every
call of its function in this file gives a Keras optimizer (a GAN's `compile(d_optimizer,
g_optimizer)`, called with `keras.optimizers.Adam(...)`); names, `self.x` attributes
and the results of functions of this file are followed to one of those. Another library's
is made by, or annotated with, a class of an optimizer module outside TensorFlow and Keras
(`snt.optimizers.Adam`, `snt.Optimizer`); an instance of a class of this file that does not
derive from a Keras optimizer is the file's own update rule, and counts as another
library's (a guide's hand-written `Adam` with its own `apply_gradients`).
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum

import libcst as cst

from tapelint.semantic.calls.callees import arguments_passed, callee_of, qualified_name
from tapelint.semantic.file_model.model import ApplyCall, Def, DefKind, FileModel
from tapelint.semantic.keras.keras_objects import KerasObjects, returns_of

_KERAS_NAMESPACES = ("keras.optimizers.", "tensorflow.optimizers.", "tensorflow_addons.optimizers.")
_KERAS_FACTORIES = frozenset({"keras.optimizers.get", "keras.mixed_precision.LossScaleOptimizer"})
_OWN_MODULES = ("tensorflow", "keras", "tensorflow_addons")
_TF1_TRAIN = ("tensorflow.train.", "tensorflow.compat.v1.train.")
_TF1_EAGER = frozenset(
    {"tensorflow.enable_eager_execution", "tensorflow.compat.v1.enable_eager_execution"}
)


class Library(Enum):
    KERAS = "keras"
    OTHER = "other"  # an optimizer of another library (Sonnet, ...)


def library_of_class(qualified: str) -> Library | None:
    """Whose optimizer a constructor or annotation with this qualified name makes."""
    last = qualified.rsplit(".", 1)[-1]
    if qualified.startswith(_TF1_TRAIN) and last.endswith("Optimizer"):
        return Library.OTHER  # TensorFlow 1's: it skips None gradients itself
    if qualified in _KERAS_FACTORIES:
        return Library.KERAS
    if qualified.startswith(_KERAS_NAMESPACES):
        is_class = last[:1].isupper() and ".schedules." not in qualified
        return Library.KERAS if is_class else None
    top = qualified.split(".", 1)[0]
    if top in _OWN_MODULES or not last[:1].isupper():
        return None
    module = qualified.rpartition(".")[0]
    if "optim" in module.lower() or last.endswith("Optimizer"):
        return Library.OTHER
    return None


def gradient_applies(model: FileModel) -> Iterator[ApplyCall]:
    """The `apply_gradients` / `apply` calls that apply gradients with an optimizer that
    treats None gradients as Keras does (see the module docs)."""
    if not model.apply_calls:
        return
    optimizers = Optimizers(model)
    own = _own_functions(model)
    tf1_program = _is_tf1_program(model)
    for apply in model.apply_calls:
        func = apply.node.func
        if not isinstance(func, cst.Attribute):
            continue
        callee = callee_of(model, apply.node)
        if callee is not None and (
            callee.target in own or (model.index and model.index.function(callee.target))
        ):
            continue  # the project's own `apply_gradients`: its summary speaks for it
        library = optimizers.library(func.value)
        if apply.method == "apply" and library is not Library.KERAS:
            continue
        if library is Library.OTHER or (library is None and tf1_program):
            continue
        yield apply


def _is_tf1_program(model: FileModel) -> bool:
    """Whether the module turns on TensorFlow 1's eager mode (`tf.enable_eager_execution()`
    at its top level, as TensorFlow 1 scripts did)."""
    for statement in model.module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            value = small.value if isinstance(small, cst.Expr) else None
            if isinstance(value, cst.Call) and model.imports.qualify(value.func) in _TF1_EAGER:
                return True
    return False


def _own_functions(model: FileModel) -> set[str]:
    return {
        qualified_name(model, scope.node)
        for scope in model.scopes
        if isinstance(scope.node, cst.FunctionDef)
    }


class Optimizers:
    """Answers, with memory, for one file."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.keras = KerasObjects(model)
        self._defs: dict[Def, Library | None] = {}
        self._functions: dict[cst.FunctionDef, Library | None] = {}

    def library(self, expr: cst.BaseExpression) -> Library | None:
        """Whose optimizer `expr` certainly is, on every path; None when unknown."""
        if isinstance(expr, cst.Name):
            defs = self.keras.defs_of(expr)
            return _same([self._def_library(d) for d in defs])
        if isinstance(expr, cst.Call):
            return self._call_library(expr)
        if isinstance(expr, cst.Attribute):
            return self._attribute_library(expr)
        return None

    def _def_library(self, d: Def) -> Library | None:
        if d in self._defs:
            return self._defs[d]
        self._defs[d] = None  # cycles
        answer: Library | None = None
        if d.kind is DefKind.ASSIGN and d.value is not None:
            answer = self.library(d.value)
        elif d.kind is DefKind.PARAM:
            answer = self._annotated(d) or self._passed(d)
        self._defs[d] = answer
        return answer

    def _passed(self, d: Def) -> Library | None:
        """A parameter every call of its function in this file gives the same kind of
        optimizer (`gan.compile(d_optimizer=keras.optimizers.Adam(...))`)."""
        passed = arguments_passed(self.model, d)
        if not passed:
            return None
        return _same([self.library(value) if value is not None else None for value in passed])

    def _annotated(self, d: Def) -> Library | None:
        annotation = d.annotation()
        qualified = self.model.imports.qualify(annotation) if annotation is not None else None
        return library_of_class(qualified) if qualified is not None else None

    def _call_library(self, call: cst.Call) -> Library | None:
        qualified = self.model.imports.qualify(call.func)
        if qualified is not None:
            return library_of_class(qualified)
        if not isinstance(call.func, cst.Name):
            return None
        made = [d.stmt for d in self.keras.defs_of(call.func) if d.kind is DefKind.DEFINITION]
        if made and all(isinstance(c, cst.ClassDef) for c in made):
            return _same([self._class_library(c, set()) for c in made])
        if not made or not all(isinstance(f, cst.FunctionDef) for f in made):
            return None
        return _same([self._returned(f) for f in made if isinstance(f, cst.FunctionDef)])

    def _class_library(self, node: cst.CSTNode, seen: set[cst.CSTNode]) -> Library | None:
        """A class of this file: a Keras optimizer when it derives from one, else the file's
        own update rule (its `apply_gradients` is its author's, not Keras')."""
        if not isinstance(node, cst.ClassDef) or node in seen:
            return None
        seen.add(node)
        for base in node.bases:
            qualified = self.model.imports.qualify(base.value)
            if qualified is not None:
                found = library_of_class(qualified)
                if found is not None:
                    return found
            elif isinstance(base.value, cst.Name):
                for d in self.keras.defs_of(base.value):
                    inherited = self._class_library(d.stmt, seen)
                    if d.kind is DefKind.DEFINITION and inherited is Library.KERAS:
                        return inherited
        return Library.OTHER

    def _returned(self, function: cst.FunctionDef) -> Library | None:
        """A function of this file (`make_optimizer()`) whose every `return` gives one."""
        if function not in self._functions:
            self._functions[function] = None  # recursion
            returned = [r.value for r in returns_of(function)]
            answers = [self.library(v) if v is not None else None for v in returned]
            self._functions[function] = _same(answers)
        return self._functions[function]

    def _attribute_library(self, expr: cst.Attribute) -> Library | None:
        values = self.keras.self_attribute_values(expr)
        if values:
            return _same([self.library(v) if v is not None else None for v in values])
        if expr.attr.value != "optimizer":
            return None
        owner = expr.value
        is_self = isinstance(owner, cst.Name) and owner.value == "self"
        if is_self and self.keras.self_class(expr) is None:
            return None
        # The optimizer `compile()` gives a Keras model: `self.optimizer` in its subclass,
        # `model.optimizer` of a model this file knows.
        origins = self.keras.origins(owner)
        if origins and all(origin.is_model for origin in origins):
            return Library.KERAS
        return None


def _same(answers: list[Library | None]) -> Library | None:
    """The answer when every path gives the same one."""
    if answers and all(a is answers[0] for a in answers):
        return answers[0]
    return None
