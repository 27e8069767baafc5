"""A file checked again and again as it is edited, with what earlier checks kept (the
language server's `IncrementalParser` and `PositionMemory`), gets exactly the diagnostics
of a check from scratch: positions, fixes and messages."""

from __future__ import annotations

import textwrap

from tapelint.linter.engine import Linter, ModuleContext
from tapelint.linter.registry import all_rules
from tapelint.parsing.incremental import IncrementalParser
from tapelint.parsing.positions import PositionMemory

LINTER = Linter(all_rules())

# Three steps with findings (TAP101, TAP401, TAP102 with its fix), a clean step, helpers.
START = textwrap.dedent(
    """\
    import numpy as np
    import tensorflow as tf


    def batches(features, batch_size=32):
        order = np.random.permutation(len(features))
        return [features[order[i : i + batch_size]] for i in range(0, len(order), batch_size)]


    def critic_step(critic, opt, images):
        with tf.GradientTape() as tape:
            score = critic(images, training=True)
        loss = tf.reduce_mean(score)
        grads = tape.gradient(loss, critic.trainable_variables)
        opt.apply_gradients(zip(grads, critic.trainable_variables))
        return loss


    def clean_step(model, opt, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x, training=True)) * 1.0
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients([(g, v) for g, v in zip(grads, model.trainable_variables) if g is not None])
        return loss


    class Trainer:
        def step(self, x):
            if x is not None:
                with tf.GradientTape(persistent=True) as tape:
                    loss = self.model(x, training=True)
                grads = tape.gradient(loss, self.model.trainable_variables)
                self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
            return x
    """
)

# Each edit from the text before it: a constant, lines added and removed above findings,
# a finding's own line changed, a whole step removed and put back, a new finding.
EDITS = [
    lambda text: text.replace("* 1.0", "* 1.5"),
    lambda text: text.replace("import numpy as np\n", "import numpy as np\nimport os\n\n"),
    lambda text: text.replace(
        "        grads = tape.gradient(loss, critic", "        g = tape.gradient(loss, critic"
    ).replace("zip(grads, critic", "zip(g, critic"),
    lambda text: text.replace("    return [features", "    # shuffled\n    return [features"),
    lambda text: text.replace("import os\n\n", ""),
    lambda text: text.replace(
        "            return x\n", "            print(x)\n            return x\n"
    ),
    lambda text: (
        text
        + "\n\ndef another(model, opt, x):\n    with tf.GradientTape() as t:\n        y = model(x)\n    opt.apply_gradients(zip(t.gradient(y, model.trainable_variables), model.trainable_variables))\n"
    ),
    lambda text: text.replace("    if x is not None:\n", "    if x is not None and x:\n"),
    lambda text: text.replace("\t", "    "),
]


def _context(parser: IncrementalParser, positions: PositionMemory) -> ModuleContext:
    return ModuleContext(parser=parser, positions=positions)


def test_diagnostics_after_each_edit_are_those_of_a_check_from_scratch():
    parser, positions = IncrementalParser(), PositionMemory()
    text = START
    seen = set()
    for edit in [lambda t: t, *EDITS]:
        text = edit(text)
        remembered = LINTER.analyze_text(text, "train.py", context=_context(parser, positions))
        afresh = LINTER.analyze_text(text, "train.py")
        assert remembered.diagnostics == afresh.diagnostics
        assert remembered.summary == afresh.summary
        seen.update((d.code, d.start.line) for d in afresh.diagnostics)
    # The edits moved findings: the same codes were reported on several lines.
    assert len(seen) > len({code for code, _ in seen}) + 3
    assert parser.reused > 20


def test_a_file_indented_with_tabs_after_spaces_gets_its_own_positions():
    # The same statements with another default indentation: positions not reused.
    parser, positions = IncrementalParser(), PositionMemory()
    for text in (START, START.replace("    ", "\t"), START):
        remembered = LINTER.analyze_text(text, "train.py", context=_context(parser, positions))
        assert remembered.diagnostics == LINTER.analyze_text(text, "train.py").diagnostics
