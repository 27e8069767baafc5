from collections.abc import Iterator

import libcst as cst

from tapelint.analysis import FileModel
from tapelint.analysis.gradients import applied_gradients, handles_none
from tapelint.analysis.names import dotted_name
from tapelint.diagnostics import Severity
from tapelint.rule import Finding, Rule


class UnfilteredApplyGradients(Rule):
    """## What it does
    Checks for `optimizer.apply_gradients(...)` / `optimizer.apply(...)` receiving gradients
    straight from `tape.gradient` (through plain assignments, `zip`, `list`, or the None-safe
    `tf.clip_by_global_norm`) with no handling of `None` gradients in between.

    Handling means any of: a filter or replacement with `is not None` / `is None` on the
    gradients (a comprehension or a loop), an explicit check that raises or logs, or
    `unconnected_gradients=tf.UnconnectedGradients.ZERO` on the gradient call.

    ## Why is this bad?
    A variable the loss does not reach gets a `None` gradient: a frozen branch, an unused
    head, a wiring mistake. Keras optimizers then drop it with a warning or fail when all are
    `None`, and the broken connectivity goes unnoticed. Seed 000: "Filter them before
    applying updates and treat them as a signal worth inspecting." Silently dropping them is
    also wrong, so filter *and* report the variables that got no gradient.

    ## Example
    ```python
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    ```

    Use instead:
    ```python
    grads = tape.gradient(loss, model.trainable_variables)
    pairs = []
    for grad, var in zip(grads, model.trainable_variables):
        if grad is None:
            tf.get_logger().warning("no gradient for %s", var.name)
        else:
            pairs.append((grad, var))
    optimizer.apply_gradients(pairs)
    ```
    """

    code = "TAP401"
    name = "unfiltered-apply-gradients"
    severity = Severity.WARNING

    def check(self, model: FileModel) -> Iterator[Finding]:
        for apply in model.apply_calls:
            flow = applied_gradients(model, apply)
            if not flow.origins or flow.opaque or handles_none(model, flow):
                continue
            func = apply.node.func
            owner = dotted_name(func.value) if isinstance(func, cst.Attribute) else None
            callee = f"{owner}.{apply.method}" if owner else apply.method
            tape = flow.origins[0].tape.name or "tape"
            yield Finding(
                apply.node,
                f"`{callee}` receives gradients straight from `{tape}.gradient` without a "
                "None check; filter out None gradients (`if g is not None`) and report the "
                "variables that got none",
            )
