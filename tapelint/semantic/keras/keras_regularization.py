"""Does a Keras model or layer certainly have regularization losses, which `model.losses`
lists and `fit` adds to the loss?

Checked in Keras 3.15 (`model.losses` of each, built and called):

- a built-in layer given a regularizer: any `*_regularizer=` argument (`kernel_`, `bias_`,
  `activity_`, `recurrent_`, `depthwise_`, `pointwise_`, `embeddings_`, `beta_`,
  `gamma_`) that is certainly a regularizer: a `keras.regularizers` function or class
  called with a nonzero factor (`regularizers.l2(1e-4)`, `L1L2(l2=0.01)`), the name of one
  as a string (`"l2"`, `"l1"`, `"orthogonal_regularizer"`), a lambda, or a name bound to
  one of these on every path. `None`, a zero factor, `L1L2()` / `l1_l2()` with no
  argument (both factors default to 0 in Keras 3, to 0.01 in Keras 2), and anything else
  (a parameter, `cfg.reg`, a helper's result, which may be None) are not. A weight's
  regularizer counts only while the weight is trainable: a layer built with
  `trainable=False` has only its activity regularizer's losses;
- `ActivityRegularization` with a nonzero `l1=` or `l2=` written out;
- a class of the file whose code calls `self.add_loss(...)`, or `self.add_weight(...,
  regularizer=...)` with a certain regularizer, or whose `__init__`/`build` creates a
  regularized part its `call` uses (`forward_pass`);
- a model or layer the module calls `.add_loss(...)` on (`model.add_loss(...)` after a
  functional model is built), when every binding of the name asked about reaches such a
  call (a model bound to the same name later, in a notebook's next example, is another);
- what a function of another module builds, as its summary says (`Built.regularized`,
  computed there with this same search).

The walk over a model's composition is `keras_composition`'s; the answer is the name of one
regularized part, or None. A part found through `add_loss` says so (`ADDED_LOSS` in its
name): such a loss is often computed by hand in the training loop too (a VAE's KL term),
which the question of what the target adds must allow for.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from tapelint.semantic.file_model.expressions import argument_value, is_none
from tapelint.semantic.file_model.model import Def, DefKind
from tapelint.semantic.keras.keras_composition import CompositionSearch, calls_in, is_zero
from tapelint.semantic.keras.keras_objects import KerasObjects, Origin

ADDED_LOSS = "add_loss"
_REGULARIZERS = "keras.regularizers."
# Keras 3's regularizer names that `keras.regularizers.get` accepts as strings.
_REGULARIZER_STRINGS = frozenset({"l1", "l2", "orthogonal_regularizer"})
# Regularizers whose factors all default to zero in Keras 3.
_ZERO_BY_DEFAULT = frozenset({"L1L2", "l1_l2"})
_ACTIVITY = "activity_regularizer"
# Words without which a module's text builds nothing regularized (a superset, tested on the
# raw bytes before a module is parsed for what its builders build).
_EVIDENCE_WORDS = re.compile(rb"_regularizer|add_loss|ActivityRegularization|regularizer\s*=")


def may_show_regularization(data: bytes) -> bool:
    """Whether a module's text may show a regularized part (a superset)."""
    return _EVIDENCE_WORDS.search(data) is not None


class RegularizationLosses(CompositionSearch):
    """Answers, with memory, for one file."""

    def __init__(self, keras: KerasObjects) -> None:
        super().__init__(keras)
        self._added_to: frozenset[Def] | None = None

    def of_seen(self, expr: cst.BaseExpression, seen: set[cst.CSTNode]) -> str | None:
        if isinstance(expr, cst.Name):
            if self._added_to is None:
                self._added_to = self._bindings_added_to()
            defs = self.keras.defs_of(expr)
            if defs and all(d in self._added_to for d in defs):
                return f"`{expr.value}.{ADDED_LOSS}(...)`"
        return super().of_seen(expr, seen)

    def _bindings_added_to(self) -> frozenset[Def]:
        """The bindings of the names the module calls `.add_loss(...)` on, as they reach
        each such call: `model.add_loss(...)` adds to that `model`, not to another model
        bound to the name later (a notebook's next example)."""
        found: set[Def] = set()
        for site in self.model.calls:
            func = site.node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == ADDED_LOSS
                and isinstance(func.value, cst.Name)
                and func.value.value != "self"
            ):
                found |= self.model.defs_of(func.value)
        return frozenset(found)

    def built_in_layer(self, name: str, call: cst.Call) -> str | None:
        if name == "ActivityRegularization":
            factors = [argument_value(call, i, k) for i, k in ((0, "l1"), (1, "l2"))]
            nonzero = [f for f in factors if isinstance(f, (cst.Integer, cst.Float))]
            return name if any(not is_zero(f) for f in nonzero) else None
        frozen = argument_value(call, -1, "trainable")
        trainable = not (isinstance(frozen, cst.Name) and frozen.value == "False")
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else ""
            if not keyword.endswith("_regularizer") or not (trainable or keyword == _ACTIVITY):
                continue
            if self.is_regularizer(arg.value, set()):
                return f"{name}({keyword}=...)"
        return None

    def application(self, name: str, call: cst.Call) -> str | None:
        return None  # built without regularizers

    def class_answer(self, class_name: str, methods: dict[str, ast.FunctionDef]) -> str | None:
        for method in methods.values():
            for call in calls_in(method):
                if _on_self(call, ADDED_LOSS):
                    return f"`{class_name}`'s `{ADDED_LOSS}`"
                if _on_self(call, "add_weight") and self._regularized_weight(call, class_name):
                    return f"`{class_name}`'s regularized weight"
        return self.parts_created(class_name, methods)

    def built(self, origin: Origin) -> str | None:
        made = origin.built
        if made is None or made.regularized is None:
            return None
        function = (origin.keras_class or "").rsplit(".", 1)[-1]
        kind = "model" if origin.is_model else "layer"
        part = made.regularized if "`" in made.regularized else f"`{made.regularized}`"
        where = f"the {kind} `{function}` returns"
        if made.of_class:
            where = f"an instance of `{function}`"
        return f"{part} (in {where})"

    def is_regularizer(self, expr: cst.BaseExpression, seen: set[cst.CSTNode]) -> bool:
        """Whether `expr` certainly gives a regularizer with a nonzero factor."""
        if expr in seen:
            return False
        seen.add(expr)
        if isinstance(expr, cst.SimpleString):
            return expr.raw_value in _REGULARIZER_STRINGS
        if isinstance(expr, cst.Lambda):
            return True
        if isinstance(expr, cst.Call):
            qualified = self.model.imports.qualify(expr.func) or ""
            if not qualified.startswith(_REGULARIZERS):
                return False
            factors = [a.value for a in expr.args]
            if not factors:
                return qualified.rsplit(".", 1)[-1] not in _ZERO_BY_DEFAULT
            return any(not is_zero(f) for f in factors)
        if isinstance(expr, cst.Name):
            defs = self.keras.defs_of(expr)
            return bool(defs) and all(
                d.kind is DefKind.ASSIGN
                and d.value is not None
                and not is_none(d.value)
                and self.is_regularizer(d.value, seen)
                for d in defs
            )
        return False

    def _regularized_weight(self, call: ast.Call, class_name: str) -> bool:
        for keyword in call.keywords:
            if keyword.arg == "regularizer":
                value = self.keras.parse_text_expression(keyword.value, class_name)
                return self.is_regularizer(value, set())
        return False


def _on_self(call: ast.Call, method: str) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == method
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    )
