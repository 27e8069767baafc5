"""Which gradient calls train a Keras model that has regularization losses, and
differentiate a target that never adds them? (TAP304)

`fit` adds `model.losses` (the weights' regularizers, activity regularizers, `add_loss`) to
the loss; a hand-written step must add them itself. A `tape.gradient` call is reported when
one of the models whose whole variable list it differentiates (`trained`; a slice such as
`model.trainable_variables[-2:]` trains a head, whose penalties may be none of them)
certainly has such losses
(`keras_regularization`), and its target certainly does not depend on them: the target is
followed back through the names it is computed from, in the tape's function and in the
module's top level (a notebook's earlier cells), and every value on the way is one whose
content is known not to add them.

What may add them, and keeps the call quiet:

- any read of an attribute named `losses` (`model.losses`, `self.losses`,
  `sum(model.losses)`, `tf.add_n(model.losses)`, `reg = model.losses` then `reg`);
- a hand-written penalty on weights: a read of variables (`model.trainable_variables`,
  `layer.kernel`, `get_weights()`), a TensorFlow name about regularization or weight decay
  (`tf.nn.l2_loss`, `tf.compat.v1.losses.get_regularization_loss`), or a name or attribute
  whose name says it (`reg_loss`, `self.l2_penalty`, `weight_decay`); when the model's
  only regularized parts come from `add_loss`, any second term added to the loss
  (`recon + kl`, a VAE's KL term computed by hand beside a layer's `add_loss`);
- a method called on the model, on `self` or on any object that is not a known loss or
  model (`self.compute_loss(...)`: Keras 3's `compute_loss` adds `self.losses`, and so does
  its deprecated `compiled_loss`, whatever `regularization_losses=` says; Keras 2's
  `compute_loss` adds them, its `compiled_loss` only when given `regularization_losses=`:
  both are left quiet; `trainer.loss(x)`, whose object may hold the model);
- a call of a function passed in as a parameter (a closure may add them), unless every
  call of a function only this file calls passes one that cannot (a notebook's `train(loss,
  model, ...)` handed its own `loss`); of a function of the file whose code reads
  `losses`, variables, `self` or the trained model by name (or calls another such
  function); and of any function handed the trained model;
- a value this module does not see computed in an additive position (an attribute such as
  `self.aux_loss` added to the loss, a name with no definition).

Nothing is reported in a module that freezes a part (`base.trainable = False`, also
through `model.layers[i]`): Keras adds the penalties of trainable weights only, and which
regularized weights are still trainable is not followed.

Values known not to add them: a call of the trained model itself (`model(x)`: its outputs
are not its losses); a Keras loss (`keras.losses.*`, or a name bound to one); a TensorFlow
op that computes a new value from its inputs (`tf.nn.softmax_cross_entropy_with_logits`);
a function of another module not handed the model; numbers, parameters (computed before
the tape recorded: they carry no gradient the tape could give), and factors that only
scale (`0.5 * loss`, `loss / batch_size`). Arithmetic, reductions and aggregations
(`+`, `tf.reduce_mean`, `tf.add_n`, `sum`, `tf.nn.compute_average_loss`) and functions of
the file pass their operands' answers on.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass

import libcst as cst

from tapelint.semantic.calls.callees import arguments_passed, only_called_here
from tapelint.semantic.file_model.children import child_nodes
from tapelint.semantic.file_model.expressions import argument_value
from tapelint.semantic.file_model.model import Def, DefKind, FileModel, TapeCall
from tapelint.semantic.keras.keras_objects import VARIABLE_LISTS, KerasObjects
from tapelint.semantic.keras.keras_regularization import ADDED_LOSS, RegularizationLosses
from tapelint.semantic.project_model.names import dotted_name

from ._trained import Owners, trained_by_call

# Names (of values, attributes, functions) that say they hold a penalty on the weights.
_PENALTY_WORDS = re.compile(
    r"regulari|penalty|decay|weight_loss|(?:^|_)(?:l1|l2|reg|wd)(?:_|$)", re.IGNORECASE
)
# Attributes that read weights: a hand-written penalty over them.
_WEIGHT_ATTRIBUTES = VARIABLE_LISTS | {
    "kernel",
    "bias",
    "embeddings",
    "get_weights",
    "trainable_params",
}
# TensorFlow and Keras ops through which a term of their operands stays a term of the result.
_PASS_THROUGH = frozenset(
    {
        "add",
        "add_n",
        "subtract",
        "multiply",
        "divide",
        "truediv",
        "scalar_mul",
        "reduce_sum",
        "reduce_mean",
        "sum",
        "mean",
        "cast",
        "identity",
        "reshape",
        "squeeze",
        "stack",
        "concat",
        "convert_to_tensor",
        "compute_average_loss",
        "accumulate_n",
    }
)
# Python builtins through which a term stays a term.
_BUILTIN_PASS_THROUGH = frozenset({"sum", "float", "abs", "max", "min", "list", "tuple"})
# Builtins that read an attribute or a name by its spelling.
_INTROSPECTION = frozenset({"getattr", "vars", "eval", "exec", "globals", "locals"})
_LOSS_MODULES = ("keras.losses.",)
# `part.trainable = False` (not a constructor's `trainable=False`, which the composition
# search reads per layer).
_FREEZES = re.compile(r"\.trainable\s*=\s*False")
_FACTOR_OPERATORS = (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power, cst.MatrixMultiply)


@dataclass(frozen=True)
class IgnoredLosses:
    call: TapeCall  # the gradient call
    owner: str  # the trained model, as written (`model`, `self.encoder`)
    part: str  # its regularized part (`Dense(kernel_regularizer=...)`)
    target: cst.BaseExpression


def ignored_regularization(model: FileModel) -> list[IgnoredLosses]:
    """The gradient calls that train a model with regularization losses, with a target that
    certainly never adds them (see the module's doc)."""
    found: list[IgnoredLosses] = []
    keras: KerasObjects | None = None
    search: RegularizationLosses | None = None
    for call in model.gradient_calls:
        target = argument_value(call.node, 0, "target")
        if call.method != "gradient" or target is None:
            continue
        keras = keras or KerasObjects(model)
        search = search or RegularizationLosses(keras)
        owners = trained_by_call(model, keras, call, whole_lists=True)
        regularized = [(name, search.of(expr)) for name, expr in owners.items()]
        parts = [(name, part) for name, part in regularized if part]
        if not parts or _FREEZES.search(model.source_text):
            continue  # Keras adds the penalties of trainable weights only: which are frozen?
        only_added = all(ADDED_LOSS in part for _, part in parts)
        if _Target(model, keras, owners, only_added).may_add_losses(target):
            continue
        name, part = parts[0]
        found.append(IgnoredLosses(call, name, part, target))
    return found


class _Target:
    """Follows a gradient target back through what it is computed from."""

    def __init__(
        self, model: FileModel, keras: KerasObjects, owners: Owners, only_added: bool
    ) -> None:
        self.model = model
        self.keras = keras
        self.owners = set(owners)
        self.roots = {name.split(".")[0] for name in owners}
        # With `add_loss` only, a second term may be the same loss written by hand.
        self.one_term = only_added
        self._seen: set[tuple[int, bool]] = set()
        self._functions: dict[cst.CSTNode, bool] = {}

    def may_add_losses(self, node: cst.BaseExpression, additive: bool = True) -> bool:
        key = (id(node), additive)
        if key in self._seen:
            return False
        self._seen.add(key)
        if isinstance(node, (cst.BaseNumber, cst.SimpleString, cst.ConcatenatedString)):
            return False
        if isinstance(node, cst.Name):
            return self._name(node, additive)
        if isinstance(node, cst.Attribute):
            return self._attribute(node, additive)
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, cst.BinaryOperation):
            return self._operation(node, additive)
        if isinstance(node, cst.UnaryOperation):
            return self.may_add_losses(node.expression, additive)
        if isinstance(node, cst.Subscript):
            return self.may_add_losses(node.value, additive)
        if isinstance(node, (cst.List, cst.Tuple)):
            if self.one_term and len(node.elements) > 1:
                return True
            return any(self.may_add_losses(e.value, additive) for e in node.elements)
        if isinstance(node, cst.IfExp):
            return self.may_add_losses(node.body, additive) or self.may_add_losses(
                node.orelse, additive
            )
        if isinstance(node, (cst.GeneratorExp, cst.ListComp)):
            return self.may_add_losses(node.elt, additive)
        return True  # anything else is not followed

    def _operation(self, node: cst.BinaryOperation, additive: bool) -> bool:
        if isinstance(node.operator, _FACTOR_OPERATORS):
            # A factor scales the loss: an unknown one adds nothing to it.
            return self.may_add_losses(node.left, False) or self.may_add_losses(node.right, False)
        if self.one_term and isinstance(node.operator, (cst.Add, cst.Subtract)):
            return True
        return self.may_add_losses(node.left, True) or self.may_add_losses(node.right, True)

    def _name(self, name: cst.Name, additive: bool) -> bool:
        if _PENALTY_WORDS.search(name.value):
            return True
        defs = self.model.defs_of(name)
        if not defs:
            return additive  # a builtin, or a name bound where this file does not show
        for d in defs:
            if d.kind in (DefKind.ASSIGN, DefKind.UNPACK, DefKind.FOR, DefKind.COMP):
                if d.value is None or self.may_add_losses(d.value, additive):
                    return True
            elif d.kind is DefKind.AUG:
                if self.one_term and d.value is not None:
                    return True
                if d.value is None or self.may_add_losses(d.value, True):
                    return True
                if isinstance(d.target, cst.Name) and self.may_add_losses(d.target, True):
                    return True
            elif d.kind not in (DefKind.PARAM, DefKind.IMPORT, DefKind.WITH):
                return True
        return False

    def _attribute(self, node: cst.Attribute, additive: bool) -> bool:
        attribute = node.attr.value
        if _reads_losses_here(self.model, node) or attribute in _WEIGHT_ATTRIBUTES:
            return True
        if _PENALTY_WORDS.search(attribute):
            return True
        return additive  # a value computed where this module does not show

    def _call(self, call: cst.Call) -> bool:
        if _reads_losses(self.model, call):
            return True
        func = call.func
        if self.keras.origins(func) is not None:
            return False  # the model's (or a layer's) forward pass: outputs, not losses
        qualified = self.model.imports.qualify(func)
        if qualified is not None:
            return self._library_call(call, qualified)
        if isinstance(func, cst.Name):
            return self._local_call(call, func)
        return True  # a method of an object that may hold the model

    def _library_call(self, call: cst.Call, qualified: str) -> bool:
        last = qualified.rsplit(".", 1)[-1]
        if _PENALTY_WORDS.search(last) or last in _WEIGHT_ATTRIBUTES:
            return True
        if qualified.startswith(_LOSS_MODULES):
            return False
        if qualified.startswith(("tensorflow.", "keras.", "numpy.")):
            return last in _PASS_THROUGH and self._arguments(call)
        # A function of another module: it reaches the model only if handed it.
        return self._hands_model(call) or self._arguments(call)

    def _local_call(self, call: cst.Call, func: cst.Name) -> bool:
        if _PENALTY_WORDS.search(func.value):
            return True
        defs = self.model.defs_of(func)
        if not defs:
            if func.value in _BUILTIN_PASS_THROUGH:
                return self._arguments(call)
            if func.value in _INTROSPECTION:
                return True  # `getattr(model, "losses")`
            if hasattr(builtins, func.value):
                return False  # `len(batch)`: a new value
            return self._hands_model(call) or self._arguments(call)  # a star import
        if all(
            d.kind is DefKind.ASSIGN and d.value is not None and self._is_loss_object(d.value)
            for d in defs
        ):
            return False  # a Keras loss of its arguments
        if self._callable_may_add(func, set()):
            return True
        return self._hands_model(call) or self._arguments(call)

    def _callable_may_add(self, name: cst.Name, seen: set[cst.CSTNode]) -> bool:
        """Whether a function `name` may hold could add the losses itself: a function of
        the file whose code may (`_code_may_add`), a lambda, any value but a Keras loss; a
        parameter, unless the function is one only this file calls and every call passes a
        function that cannot (`train(loss, model, ...)` handed the notebook's `loss`)."""
        if name in seen:
            return False
        seen.add(name)
        for d in self.model.defs_of(name):
            function = d.stmt if d.kind is DefKind.DEFINITION else None
            if isinstance(function, cst.FunctionDef):
                if self._function_may_add(function, set()):
                    return True
            elif d.kind is DefKind.ASSIGN and d.value is not None:
                if not self._is_loss_object(d.value):
                    return True
            elif d.kind is DefKind.PARAM:
                if self._passed_may_add(d, seen):
                    return True
            elif d.kind is not DefKind.IMPORT:
                return True
        return False

    def _passed_may_add(self, d: Def, seen: set[cst.CSTNode]) -> bool:
        function = d.stmt
        if not isinstance(function, cst.FunctionDef) or not only_called_here(self.model, function):
            return True
        passed = arguments_passed(self.model, d)
        if not passed:
            return True
        return any(
            not isinstance(value, cst.Name) or self._callable_may_add(value, seen)
            for value in passed
        )

    def _arguments(self, call: cst.Call) -> bool:
        if self.one_term and len(call.args) > 1 and not _reduction(call):
            return True
        return any(self.may_add_losses(arg.value, True) for arg in call.args)

    def _hands_model(self, call: cst.Call) -> bool:
        return any(
            dotted_name(arg.value) in self.owners or dotted_name(arg.value) in self.roots
            for arg in call.args
        )

    def _is_loss_object(self, value: cst.BaseExpression) -> bool:
        """`keras.losses.MeanSquaredError()`, `keras.losses.mse`, or a lambda whose code
        adds nothing (the same test as for a function of the file)."""
        if isinstance(value, cst.Lambda):
            return not self._code_may_add(value, set())
        target = value.func if isinstance(value, cst.Call) else value
        qualified = self.model.imports.qualify(target) or ""
        return qualified.startswith(_LOSS_MODULES)

    def _function_may_add(self, function: cst.FunctionDef, seen: set[cst.CSTNode]) -> bool:
        if function not in self._functions:
            self._functions[function] = True  # recursion
            self._functions[function] = self._code_may_add(function, seen)
        return self._functions[function]

    def _code_may_add(self, node: cst.FunctionDef | cst.Lambda, seen: set[cst.CSTNode]) -> bool:
        """Whether the code of a function (or lambda) of the file reads `losses`, weights,
        `self`, a penalty or the trained model by name, or calls a function of the file
        that does."""
        if node in seen:
            return False
        seen.add(node)
        pending: list[cst.CSTNode] = [node.body]
        while pending:
            current = pending.pop()
            if isinstance(current, cst.Attribute) and (
                _reads_losses_here(self.model, current)
                or current.attr.value in _WEIGHT_ATTRIBUTES
                or _PENALTY_WORDS.search(current.attr.value)
            ):
                return True
            if isinstance(current, cst.Name):
                if current.value == "self" or current.value in self.roots:
                    return True
                if _PENALTY_WORDS.search(current.value):
                    return True
                for d in self.model.defs_of(current):
                    stmt = d.stmt
                    if (
                        d.kind is DefKind.DEFINITION
                        and isinstance(stmt, cst.FunctionDef)
                        and stmt is not node
                        and self._code_may_add(stmt, seen)
                    ):
                        return True
            pending.extend(child_nodes(current))
        return False


def _reads_losses(model: FileModel, node: cst.CSTNode) -> bool:
    """Whether `node`'s own code reads an attribute named `losses` (names not followed)."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Attribute) and _reads_losses_here(model, current):
            return True
        if not isinstance(current, cst.Lambda):
            pending.extend(child_nodes(current))
    return False


def _reads_losses_here(model: FileModel, node: cst.Attribute) -> bool:
    """`x.losses` of an object, not the module `keras.losses` (`tf.keras.losses.mse`)."""
    return node.attr.value == "losses" and model.imports.qualify(node) is None


def _reduction(call: cst.Call) -> bool:
    """A call whose one operand is the loss, the others options (`reduce_mean(l, axis=0)`)."""
    return sum(1 for arg in call.args if arg.keyword is None) <= 1
