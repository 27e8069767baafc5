from collections.abc import Iterator

import libcst as cst

from tapelint.findings.diagnostics import Severity
from tapelint.findings.rule import Finding, Rule, source_of, tape_label
from tapelint.semantic import FileModel
from tapelint.semantic.file_model.expressions import argument_value
from tapelint.semantic.file_model.model import ApplyCall
from tapelint.semantic.gradient_routes.gradients import (
    Pairing,
    applied_pairing,
    gradients_of,
    swapped_pairing,
)
from tapelint.semantic.gradient_routes.optimizers import gradient_applies
from tapelint.semantic.keras.keras_objects import KerasObjects
from tapelint.semantic.keras.keras_state import NonTrainableState

from ._identity import (
    TRAINABLE_LISTS,
    kept_in_sync,
    same_object_lists,
    variable_lists_differ,
)
from ._lengths import Layout, zip_layout

# Gradients and variables zipped from lists of different lengths, or out of step
# (`gradient_routes.lengths`): a part of the rule still in preview, reported only with
# `--preview` until its first-look findings are measured. Set to False to report it with
# the rule's other findings.
LENGTHS_IN_PREVIEW = True


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
    import tensorflow as tf
    from tensorflow import keras

    generator = keras.Sequential([keras.layers.Dense(4)])
    discriminator = keras.Sequential([keras.layers.Dense(1)])
    g_opt = keras.optimizers.Adam()


    def generator_step(noise):
        with tf.GradientTape() as g_tape:
            g_loss = -tf.reduce_mean(discriminator(generator(noise, training=True)))
        g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
        g_opt.apply_gradients(zip(g_grads, discriminator.trainable_variables))
    ```

    Use instead:
    ```python
    import tensorflow as tf
    from tensorflow import keras

    generator = keras.Sequential([keras.layers.Dense(4)])
    discriminator = keras.Sequential([keras.layers.Dense(1)])
    g_opt = keras.optimizers.Adam()


    def generator_step(noise):
        with tf.GradientTape() as g_tape:
            g_loss = -tf.reduce_mean(discriminator(generator(noise, training=True)))
        g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
        g_opt.apply_gradients(
            [(g, v) for g, v in zip(g_grads, generator.trainable_variables) if g is not None]
        )
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
            layout = zip_layout(model, pairing.gradients, pairing.variables)
            if layout is not None and layout.sliced and layout.aligned:
                continue  # the slice takes the variables' own gradients from a longer list
            found = self._other_variables(model, apply, pairing)
            if found is None and layout is not None:
                message = self._zipped_apart(model, pairing.gradients, pairing.variables, layout)
                if message is not None:
                    found = Finding(apply.node, message, preview=LENGTHS_IN_PREVIEW)
            if found is not None:
                yield found

    def _other_variables(
        self, model: FileModel, apply: ApplyCall, pairing: Pairing
    ) -> Finding | None:
        """The finding when the variables are certainly other variables than the sources
        of the one gradient call the gradients come from."""
        flow = gradients_of(model, pairing.gradients, apply.scope, elementwise=True)
        origins = {origin.node: origin for origin in flow.origins}
        if flow.opaque or len(origins) != 1:
            return None
        (origin,) = origins.values()
        sources = argument_value(origin.node, 1, "sources")
        if sources is None:
            return None
        if not variable_lists_differ(model, sources, pairing.variables):
            out_of_step = self._out_of_step(model, sources, pairing.variables)
            return Finding(apply.node, out_of_step) if out_of_step is not None else None
        if kept_in_sync(model, sources, pairing.variables):
            return None  # a local copy of a shared model (A3C) updates the shared one
        tape = tape_label(origin.tape, "tape")
        computed_for = source_of(model, sources)
        applied_to = f"`{source_of(model, pairing.variables)}`"
        if applied_to == f"`{computed_for}`":
            applied_to += " (rebound to other variables in between)"
        return Finding(
            apply.node,
            f"gradients computed for `{computed_for}` by `{tape}.gradient` are applied to "
            f"{applied_to}; pair them with the variables they were computed for",
        )

    def _zipped_apart(
        self,
        model: FileModel,
        gradients: cst.BaseExpression,
        variables: cst.BaseExpression,
        layout: Layout,
    ) -> str | None:
        """The message when `zip` leaves variables without a gradient, or pairs each with
        another one's gradient."""
        grads, listed = source_of(model, gradients), source_of(model, variables)
        if layout.shift is not None:
            places = "place" if abs(layout.shift) == 1 else "places"
            side = "after" if layout.shift > 0 else "before"
            return (
                f"`{grads}` starts {abs(layout.shift)} {places} {side} the gradients of "
                f"`{listed}` among the sources, so `zip` pairs each variable with another "
                "one's gradient; slice the gradients where the variables sit"
            )
        if layout.short is not None:
            one = layout.short == 1
            fewer = "gradient" if one else "gradients"
            lost = "variable never trains" if one else f"{layout.short} variables never train"
            return (
                f"`{grads}` holds {layout.short} {fewer} fewer than `{listed}` has variables, "
                f"and `zip` stops at the shorter list: the last {lost}; slice the gradients "
                "to the variables' length"
            )
        return None

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
