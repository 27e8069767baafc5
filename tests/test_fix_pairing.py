"""TAP401's unsafe fix is not offered where TAP402 reports the same apply call: filtering
would keep the gradients paired with the wrong variables (rules/updates/unfiltered_apply_gradients.py,
Fix safety)."""

from __future__ import annotations

import textwrap

from tests.cli_helpers import run_cli, write

APPLY = "    g_opt.apply_gradients(zip(grads, {variables}.trainable_variables))\n"
GAN_STEP = textwrap.dedent(
    """\
    import tensorflow as tf
    from tensorflow import keras

    generator = keras.Sequential([keras.layers.Dense(8)])
    discriminator = keras.Sequential([keras.layers.Dense(1)])
    g_opt = keras.optimizers.Adam()


    def generator_step(noise):
        with tf.GradientTape() as tape:
            fake = generator(noise, training=True)
            loss = -tf.reduce_mean(discriminator(fake, training=True))
        grads = tape.gradient(loss, generator.trainable_variables)
    """
)


def test_no_fix_keeps_gradients_paired_with_the_wrong_variables(project):
    path = write(project, "train.py", GAN_STEP + APPLY.format(variables="discriminator"))
    assert run_cli("check").codes() == [("train.py", "TAP401"), ("train.py", "TAP402")]
    diff = run_cli("check", "--diff", "--unsafe-fixes")
    assert (diff.exit_code, diff.stdout) == (0, "")
    before = path.read_text()
    run_cli("check", "--fix", "--unsafe-fixes")
    assert path.read_text() == before


def test_the_fix_is_still_offered_when_the_pairing_is_right(project):
    path = write(project, "train.py", GAN_STEP + APPLY.format(variables="generator"))
    assert run_cli("check").codes() == [("train.py", "TAP401")]
    run_cli("check", "--fix", "--unsafe-fixes")
    assert "if g is not None" in path.read_text()
