from collections.abc import Callable, Iterator
from functools import cache

import libcst as cst

from tapelint.findings.diagnostics import Applicability, Severity
from tapelint.findings.rule import Finding, FixIntent, NodeEdit, Rule, source_of, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.file_model.model import ApplyCall, Scope
from tapelint.semantic.file_model.test_code import is_test_code
from tapelint.semantic.flow.differentiability import no_gradient_lost_silently
from tapelint.semantic.gradient_routes.gradients import (
    GradientFlow,
    applied_gradients,
    applies_one_variable,
    gradients_of,
    handles_none,
)
from tapelint.semantic.gradient_routes.optimizers import gradient_applies
from tapelint.semantic.project_model.names import dotted_name

from ._appliers import helper_applies
from ._disconnection import discarded_output
from .gradient_variable_mismatch import GradientVariableMismatch


class UnfilteredApplyGradients(Rule):
    """## What it does
    Checks for `optimizer.apply_gradients(...)` / `optimizer.apply(...)` receiving gradients
    straight from `tape.gradient` with no handling of `None` gradients in between, also
    across functions and modules: gradients a helper returns (`grads = compute_grads(...)`),
    and raw gradients handed to a helper that applies them unfiltered (reported at that
    call, `update_weights(grads)`, with the apply as a related place).

    "Straight" means through what repackages a list without looking at its entries: names,
    slices and indexing, unpacking, `list`, `+`, `zip` and written-out pairs, `tf.cond` whose
    branches are lambdas (either branch's list may be the one applied), a dict or list the
    gradients are stored in (`grads[key] = tape.gradient(...)`, `history.append(...)`) and
    read back (`grads[key]`), a name bound raw on one branch and through an unknown call on
    another (the raw branch is reported: unknown does not erase it), and functions
    that keep None entries (`tf.clip_by_global_norm`, `tf.nest.flatten`, TF-Agents'
    `clip_gradient_norms`, a helper of the project that passes its argument through).
    Handling means any of, before the apply and on every path to it: a filter or
    replacement with `is not None` / `is None` on the gradients (a comprehension or a loop),
    an explicit check that raises or logs, or `unconnected_gradients=ZERO` on the gradient
    call. Not reported where no gradient can be None: sources named one by one that the
    loss certainly uses, or `tape.watched_variables()`; nor where there is one source
    (`tape.gradient(loss, [patch])`), or one variable written out in the apply
    (`zip([grad], [weights])`): when its gradient is None, Keras raises "No gradients
    provided for any variable", so nothing is dropped silently.

    `x.apply(grads, variables)` counts only when `x` is known to be a Keras optimizer (built
    by a Keras constructor, annotated as one, or the `self.optimizer` that `compile()` gives
    a Keras model): Sonnet's optimizers and other libraries' `apply` skip None updates
    themselves. `apply_gradients` counts unless the optimizer is known to be another
    library's.

    In test code (a test module, or a method of a `TestCase` class), only when the tape's
    block throws a model output away (`main, _ = model(x)`, `model(x)[0]`): a one-step test
    of a fully connected model has nothing to filter, while a discarded head does get None.

    Gradients that go through a per-gradient comprehension or loop
    (`[tf.clip_by_norm(g, 1.0) for g in grads]`) are not followed: TAP403 reports such a
    transform when it has no None guard, at the transform, where a None gradient raises.

    ## Why is this bad?
    A variable the loss does not reach gets a `None` gradient: a frozen branch, an unused
    head, a wiring mistake. Keras optimizers then drop it with a warning or fail when all are
    `None`, and the broken connectivity goes unnoticed. A `None` gradient is a signal worth
    inspecting (https://www.tensorflow.org/guide/autodiff#getting_a_gradient_of_none), so
    filter it out before the update; silently dropping it is also wrong, so filter *and*
    report the variables that got no gradient.

    ## Example
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.Adam()


    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    model = keras.Sequential([keras.layers.Dense(1)])
    loss_fn = keras.losses.MeanSquaredError()
    optimizer = keras.optimizers.Adam()


    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        pairs = []
        for grad, var in zip(grads, model.trainable_variables):
            if grad is None:
                tf.get_logger().warning("no gradient for %s", var.name)
            else:
                pairs.append((grad, var))
        optimizer.apply_gradients(pairs)
    ```

    ## Fix safety
    For `optimizer.apply_gradients(zip(grads, variables))` written as a statement of its own
    (with `grads` and `variables` plain names or attributes), the fix inserts a check that
    logs the variables without a gradient through `tf.get_logger()`, and passes only the pairs
    whose gradient is not `None`. It is unsafe: it changes what the step logs and what it
    passes to the optimizer (a list instead of a `zip`). No fix is offered where TAP402
    reports the same call (the gradients are paired with other variables than they were
    computed for): filtering would keep the wrong pairing and hide it behind a None check,
    so the pairing is the thing to fix first.
    """

    code = "TAP401"
    name = "unfiltered-apply-gradients"
    severity = Severity.WARNING
    fixable = True
    # A helper module that is handed the tape (`return tape.gradient(loss, vs)`) never
    # names `GradientTape`: its summary is what the caller's check needs.
    triggers = ("GradientTape", ".gradient(")

    def check(self, model: FileModel) -> Iterator[Finding]:
        # Which apply calls TAP402 reports: found once per file, when a fix first asks.
        mismatched = cache(
            lambda: {id(found.node) for found in GradientVariableMismatch().check(model)}
        )
        for apply in gradient_applies(model):
            flow = applied_gradients(model, apply)
            if not _reported(model, flow, apply.scope, apply.stmt) or applies_one_variable(
                model, apply
            ):
                continue
            func = apply.node.func
            owner = dotted_name(func.value) if isinstance(func, cst.Attribute) else None
            callee = f"{owner}.{apply.method}" if owner else apply.method
            yield Finding(
                apply.node,
                f"`{callee}` receives gradients straight from {_origin(model, flow)} without a "
                f"None check; {_ADVICE}",
                _fix(model, apply, mismatched),
                related=tuple(flow.external),
            )
        for helper in helper_applies(model):
            flow = gradients_of(model, helper.argument, helper.scope)
            if not _reported(model, flow, helper.scope, helper.stmt):
                continue
            chain = helper.chains[0]
            last = chain[-1]
            yield Finding(
                helper.node,
                f"`{source_of(model, helper.node.func)}(...)` hands gradients straight from "
                f"{_origin(model, flow)} to {last.label} ({last.where(model.path)}) without a "
                f"None check; "
                f"{_ADVICE}",
                related=(*flow.external, *chain),
            )


_ADVICE = "filter out None gradients (`if g is not None`) and report the variables that got none"


def _reported(model: FileModel, flow: GradientFlow, scope: Scope, stmt: cst.CSTNode | None) -> bool:
    """Raw gradients reach here with no None handling on the way; in test code, only when
    the tape's block throws a model output away (a head then certainly gets None)."""
    if not flow.is_raw or handles_none(model, flow, stmt):
        return False
    if (
        not flow.external
        and not flow.received
        and all(no_gradient_lost_silently(model, origin) for origin in flow.origins)
    ):
        return False  # `[w, b]` the loss is computed from both of, or one source: `[patch]`
    if is_test_code(model, scope):
        return any(discarded_output(model, origin.tape) for origin in flow.origins)
    return True


def _origin(model: FileModel, flow: GradientFlow) -> str:
    """Where the gradients come from, for a message: the tape of this file's gradient call,
    or the helper's gradient call and its place."""
    if flow.origins:
        return f"`{tape_label(flow.origins[0].tape, 'tape')}.gradient`"
    if flow.received:
        return f"`{source_of(model, flow.received[0].func)}`"
    site = flow.external[0]
    return f"{site.label} ({site.where(model.path)})"


def _fix(
    model: FileModel, apply: ApplyCall, mismatched: Callable[[], set[int]]
) -> FixIntent | None:
    """Filter and report, for `opt.apply_gradients(zip(grads, variables))` as a statement,
    unless TAP402 reports the call."""
    statement = apply.stmt
    tf = model.imports.local_alias_of("tensorflow")
    if (
        tf is None
        or apply.method != "apply_gradients"
        or not isinstance(statement, cst.SimpleStatementLine)
        or len(statement.body) != 1
        or not isinstance(statement.body[0], cst.Expr)
        or statement.body[0].value is not apply.node
        or len(apply.node.args) != 1
    ):
        return None
    pairs = apply.node.args[0].value
    if not (
        isinstance(pairs, cst.Call)
        and isinstance(pairs.func, cst.Name)
        and pairs.func.value == "zip"
        and len(pairs.args) == 2
        and all(a.keyword is None and a.star == "" for a in pairs.args)
    ):
        return None
    grads, variables = (dotted_name(a.value) for a in pairs.args)
    if grads is None or variables is None or id(apply.node) in mismatched():
        return None
    report = (
        f"if any(g is None for g in {grads}):\n"
        f"    {tf}.get_logger().warning(\n"
        f'        "no gradient for %s",\n'
        f"        [v.name for g, v in zip({grads}, {variables}) if g is None],\n"
        "    )"
    )
    filtered = f"[(g, v) for g, v in zip({grads}, {variables}) if g is not None]"
    return FixIntent(
        "Report the variables without a gradient and apply only the others",
        Applicability.UNSAFE,
        (NodeEdit("insert_before", statement, report), NodeEdit("replace", pairs, filtered)),
    )
