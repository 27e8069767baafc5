from collections.abc import Iterator

import libcst as cst

from tapelint.analysis import FileModel
from tapelint.analysis.file_model.expressions import argument_value
from tapelint.analysis.gradient_routes.gradients import (
    applied_pairing,
    gradients_of,
    swapped_pairing,
)
from tapelint.analysis.gradient_routes.identity import (
    TRAINABLE_LISTS,
    kept_in_sync,
    same_object_lists,
    variable_lists_differ,
)
from tapelint.analysis.gradient_routes.optimizers import gradient_applies
from tapelint.analysis.keras.keras_objects import KerasObjects
from tapelint.analysis.keras.keras_state import NonTrainableState
from tapelint.diagnostics import Severity
from tapelint.rule import Finding, Rule, source_of, tape_label


class GradientVariableMismatch(Rule):
    """## What it does
    Checks that `optimizer.apply_gradients(zip(grads, variables))` (or Keras 3's
    `optimizer.apply(grads, variables)`) pairs the gradients with the variables they were
    computed for: the `sources` of the `tape.gradient` call that produced them.

    Reported only when the two are certainly different: different models' variables
    (`generator` and `discriminator`, `self.actor` and `self.critic`, and two models from one
    factory or class: `student, teacher = make_net(), make_net()`, `self.q_network =
    self._build()` and `self.target_network = self._build()`, since each call constructs its
    own), whatever each list is called (`encoder.variables` applied with
    `decoder.trainable_variables`) and whatever the two objects are (two parameters, two
    results of imported factories: two objects never share one list), different literal
    lists (`[w, b]` and `[b, w]`), or a name rebound to another model's variables in
    between. Also one object's trainable variables applied with its `variables` (or
    `weights`) when the object is known to hold non-trainable state there (batch
    normalisation, a frozen part; dropout's seed state for `variables` in Keras 3), as
    TAP203 knows it, also for a model built by a function of another module: the lists
    then differ, and `zip` pairs each gradient after the first non-trainable variable with
    the wrong variable. The reverse, gradients of `variables` zipped with
    `trainable_variables`, is TAP203's (the sources are what must change).

    One call bound to two names (`a = b = make_net()`), a call that hands out an existing
    object (`models.get(...)`, `copy.copy(m)`), a function of the file that may return a
    shared one (decorated, such as `functools.lru_cache`, or using `global`), an attribute
    built from the other (`clone(self.online)`), and a model reset from the one its
    gradients are applied to (`local.set_weights(global_model.get_weights())`: an A3C
    worker applies its local gradients to the shared model on purpose) are not reported. The
    same expression, or the same name bound to the same list, is fine, and so are
    concatenations of the same objects' lists in the same order (`g.trainable_variables +
    d.trainable_variables` on both sides); so is one object's `variables` and
    `trainable_variables` when nothing shows it holds non-trainable state (the lists are
    then equal). Anything the analysis cannot pin down (a list returned by a function, a
    parameter holding the variables, a name bound on several paths) is not reported.

    Also reported: the pair written the wrong way round, `zip(variables, grads)` where
    `variables` are the very sources of the gradient call that produced `grads`.

    ## Why is this bad?
    The optimizer updates each variable with the gradient it is paired with. With the wrong
    list, one model is updated with the other's gradients: a shape error when the shapes
    differ, and silently wrong training when they happen to match (a GAN whose discriminator
    takes the generator's steps).

    ## Example
    ```python
    g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
    g_opt.apply_gradients(zip(g_grads, discriminator.trainable_variables))
    ```

    Use instead:
    ```python
    g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
    g_opt.apply_gradients(zip(g_grads, generator.trainable_variables))
    ```
    """

    code = "TAP402"
    name = "gradient-variable-mismatch"
    severity = Severity.ERROR

    def check(self, model: FileModel) -> Iterator[Finding]:
        for apply in gradient_applies(model):
            pairing = applied_pairing(model, apply)
            if pairing is None:
                continue
            reversed_origin = swapped_pairing(model, apply)
            if reversed_origin is not None:
                grads = source_of(model, pairing.variables)
                variables = source_of(model, pairing.gradients)
                yield Finding(
                    apply.node,
                    f"the pairs are reversed: `{variables}` sits where the gradients go and "
                    f"`{grads}` where the variables go; pair them as `zip({grads}, "
                    f"{variables})`",
                )
                continue
            flow = gradients_of(model, pairing.gradients, apply.scope, elementwise=True)
            origins = {origin.node: origin for origin in flow.origins}
            if flow.opaque or len(origins) != 1:
                continue
            (origin,) = origins.values()
            sources = argument_value(origin.node, 1, "sources")
            if sources is None:
                continue
            if not variable_lists_differ(model, sources, pairing.variables):
                out_of_step = self._out_of_step(model, sources, pairing.variables)
                if out_of_step is not None:
                    yield Finding(apply.node, out_of_step)
                continue
            if kept_in_sync(model, sources, pairing.variables):
                continue  # a local copy of a shared model (A3C) updates the shared one
            tape = tape_label(origin.tape, "tape")
            computed_for = source_of(model, sources)
            applied_to = f"`{source_of(model, pairing.variables)}`"
            if applied_to == f"`{computed_for}`":
                applied_to += " (rebound to other variables in between)"
            yield Finding(
                apply.node,
                f"gradients computed for `{computed_for}` by `{tape}.gradient` are applied to "
                f"{applied_to}; pair them with the variables they were computed for",
            )

    def _out_of_step(
        self, model: FileModel, sources: cst.BaseExpression, applied: cst.BaseExpression
    ) -> str | None:
        """The message when gradients of an object's trainable variables are zipped with
        its `variables` (or `weights`) and the object is known to hold non-trainable
        state: the lists then differ, and `zip` pairs them out of step. (Gradients taken
        for `variables` and applied to `trainable_variables` are TAP203's: the sources are
        what must change.)"""
        lists = same_object_lists(model, sources, applied)
        if lists is None:
            return None
        source_list, applied_list = lists
        listed = applied_list.attr.value
        if source_list.attr.value not in TRAINABLE_LISTS or listed not in ("variables", "weights"):
            return None
        part = NonTrainableState(KerasObjects(model), listed).of(applied_list.value)
        if part is None:
            return None
        owner = source_of(model, applied_list.value)
        return (
            f"gradients computed for `{source_of(model, source_list)}` are applied to "
            f"`{owner}.{listed}`, which also lists non-trainable variables ({part}): `zip` "
            f"pairs them out of step, so gradients go to the wrong variables; pair them with "
            f"`{source_of(model, source_list)}`"
        )
