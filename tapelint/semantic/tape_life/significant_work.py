"""Which work, run while a persistent tape is still held, makes holding it cost memory?

A persistent tape keeps the tensors its block recorded until the tape object is freed.
Holding it a little longer costs nothing that matters while the work running meanwhile
allocates less than the backward pass already did with the tape alive: an optimizer update
(its temporaries are the size of the variables, as the gradients already were), a metric
update, arithmetic on the gradients, a summary. A training step that ends
`grads = tape.gradient(...); opt.apply_gradients(...); return loss` frees the tape on
return, and its peak memory was reached during the backward pass either way. Holding the
tape costs memory when the work runs a model again (a second set of activations joins the
first) or hands control to code that can do anything for a long time.

Significant work is therefore:

- a call of a model or layer: a certain Keras object (see `keras_objects`), a call passing
  `training=` (models and layers take it), or a call of an object whose variables a
  gradient call of the same function differentiates (`model(x_val)` where the function
  asks `tape.gradient(loss, model.trainable_variables)`); also `fit`, `evaluate`,
  `predict` and the `*_on_batch` methods of such an object;
- a call of a function of this file that does significant work (followed through the
  calls it makes);
- `yield`: the generator's consumer runs while the tape is held.

A compound statement (a loop, an `if`, a `with`) is significant when its header or its
body is. Statements that only check or report are idle whatever they contain: `assert`,
`print`, `tf.print`, logging, summaries, `self.assert*` of test cases, `np.testing.*`,
`tf.debugging.*`. A call of a function defined elsewhere (an imported
`evaluate(model, ds)`) is not counted: what it does cannot be seen.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from tapelint.semantic.calls.steps import StepIndex
from tapelint.semantic.file_model.expressions import in_execution_order, statements
from tapelint.semantic.file_model.model import CallSite, FileModel, Scope, Tri
from tapelint.semantic.flow.dataflow import Watched
from tapelint.semantic.keras.keras_objects import RUNNING_METHODS, KerasObjects
from tapelint.semantic.project_model.names import dotted_name

_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
_IDLE_QUALIFIED_PREFIXES = (
    "numpy.testing.",
    "tensorflow.debugging.",
    "tensorflow.summary.",
    "tensorflow.assert_",
)


class SignificantWork:
    """Answers, with memory, for one file."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._keras: KerasObjects | None = None
        self._steps: StepIndex | None = None
        self._owners: dict[Scope, frozenset[str]] | None = None
        self._functions: dict[cst.FunctionDef, bool] = {}

    def in_statement(self, stmt: cst.CSTNode) -> cst.CSTNode | None:
        """The significant call (or `yield`) a statement makes itself (a compound
        statement: its header), or None; None for an idle statement."""
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            if all(is_idle(self.model, small) for small in stmt.body):
                return None
            for small in stmt.body:
                value = getattr(small, "value", None)
                if isinstance(value, cst.Yield):
                    return value
        for site in self.model.calls_in(stmt):
            if self.is_significant_call(site):
                return site.node
        return None

    def in_body(self, stmts: Sequence[cst.CSTNode]) -> cst.CSTNode | None:
        """The first significant work in these statements and the blocks they hold
        (definitions, which do not run, left out)."""
        for stmt in in_execution_order(stmts):
            found = self.in_statement(stmt)
            if found is not None:
                return found
        return None

    def is_significant_call(self, site: CallSite) -> bool:
        call = site.node
        func = call.func
        if any(arg.keyword is not None and arg.keyword.value == "training" for arg in call.args):
            return True
        owners = self._owners_in(site.scope)
        if dotted_name(func) in owners or self._keras_objects().is_keras_object(func) is Tri.YES:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in RUNNING_METHODS:
            runner = func.value
            if dotted_name(runner) in owners:
                return True
            if self._keras_objects().is_keras_object(runner) is Tri.YES:
                return True
        callees = self._step_index().callees(site)
        return any(self._function_is_significant(f) for f in callees or ())

    def _function_is_significant(self, function: cst.FunctionDef) -> bool:
        known = self._functions.get(function)
        if known is not None:
            return known
        self._functions[function] = False  # recursion: a cycle adds nothing
        found = self.in_body(statements(function.body)) is not None
        self._functions[function] = found
        return found

    def _owners_in(self, scope: Scope) -> frozenset[str]:
        """The objects whose variables a gradient call of `scope` differentiates."""
        if self._owners is None:
            owners: dict[Scope, set[str]] = {}
            for call in self.model.gradient_calls:
                owners.setdefault(call.scope, set()).update(
                    Watched(self.model, call).source_callables
                )
            self._owners = {scope: frozenset(names) for scope, names in owners.items()}
        return self._owners.get(scope, frozenset())

    def _keras_objects(self) -> KerasObjects:
        if self._keras is None:
            self._keras = KerasObjects(self.model)
        return self._keras

    def _step_index(self) -> StepIndex:
        if self._steps is None:
            self._steps = StepIndex(self.model)
        return self._steps


def is_idle(model: FileModel, small: cst.BaseSmallStatement) -> bool:
    """Checking, printing, logging or nothing: `assert`, `pass`, a docstring,
    `print(...)`, `logger.info(...)`, `tf.print(...)`, `self.assertAllClose(...)`,
    `np.testing.assert_allclose(...)`, `tf.summary.scalar(...)`."""
    if isinstance(small, (cst.Assert, cst.Pass)):
        return True
    if not isinstance(small, cst.Expr):
        return False
    value = small.value
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Name):
        return func.value == "print"
    if isinstance(func, cst.Attribute) and (
        func.attr.value in _LOG_METHODS or func.attr.value.startswith("assert")
    ):
        return True
    qualified = model.imports.qualify(func) or ""
    return qualified == "tensorflow.print" or qualified.startswith(_IDLE_QUALIFIED_PREFIXES)
