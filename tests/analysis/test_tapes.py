"""Which tapes exist, how they are configured, and which calls belong to them."""

from tapelint.semantic import Tri
from tapelint.semantic.file_model.model import is_recording
from tests.analysis.helpers import code, model_of


def test_with_tape_and_its_gradient_call():
    model = model_of(
        """
        import tensorflow as tf
        def step(x):
            with tf.GradientTape() as tape:
                y = x * x
            return tape.gradient(y, x)
        """
    )
    (tape,) = model.tapes
    assert tape.name == "tape"
    assert tape.persistent is Tri.NO
    assert tape.watch_accessed_variables is Tri.YES
    (call,) = model.gradient_calls
    assert call.tape is tape
    assert not is_recording(call.ctx, tape)


def test_two_tapes_in_one_with_each_get_their_calls():
    model = model_of(
        """
        import tensorflow as tf
        def step(z):
            with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
                fake = gen(z)
                g_loss = -disc(fake)
                d_loss = disc(fake)
            g = g_tape.gradient(g_loss, gen.trainable_variables)
            d = d_tape.gradient(d_loss, disc.trainable_variables)
        """
    )
    names = {t.name: t for t in model.tapes}
    assert set(names) == {"g_tape", "d_tape"}
    owners = {code(model, c.node.args[0].value): c.tape.name for c in model.gradient_calls}
    assert owners == {"g_loss": "g_tape", "d_loss": "d_tape"}


def test_tape_created_first_and_entered_later():
    model = model_of(
        """
        import tensorflow as tf
        tape = tf.GradientTape(persistent=True, watch_accessed_variables=False)
        with tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
        """
    )
    (tape,) = model.tapes
    assert tape.persistent is Tri.YES
    assert tape.watch_accessed_variables is Tri.NO
    assert len(tape.blocks) == 1
    methods = sorted(c.method for c in model.calls_on(tape))
    assert methods == ["gradient", "watch"]


def test_alias_import_and_method_in_keras_model():
    model = model_of(
        """
        from tensorflow import GradientTape as GT
        from tensorflow import keras
        class Net(keras.Model):
            def train_step(self, data):
                x, y = data
                with GT() as tape:
                    pred = self(x, training=True)
                    loss = self.compute_loss(y=y, y_pred=pred)
                grads = tape.gradient(loss, self.trainable_variables)
                return grads
        """
    )
    (tape,) = model.tapes
    assert tape.name == "tape"
    assert len(model.gradient_calls) == 1


def test_persistent_flag_not_literal_is_unknown():
    model = model_of(
        """
        import tensorflow as tf
        def f(flag):
            with tf.GradientTape(persistent=flag) as tape:
                pass
        """
    )
    assert model.tapes[0].persistent is Tri.UNKNOWN


def test_name_rebound_to_two_tapes_attributes_each_call():
    model = model_of(
        """
        import tensorflow as tf
        def f():
            with tf.GradientTape() as tape:
                a = g(x)
            ga = tape.gradient(a, v)
            with tf.GradientTape() as tape:
                b = g(x)
            gb = tape.gradient(b, v)
        """
    )
    first, second = model.tapes
    calls = model.gradient_calls
    assert [c.tape for c in calls] == [first, second]


def test_ambiguous_tape_name_is_not_attributed():
    model = model_of(
        """
        import tensorflow as tf
        def f(flag):
            if flag:
                with tf.GradientTape() as tape:
                    a = g(x)
            else:
                tape = make_tape()
            return tape.gradient(a, v)
        """
    )
    assert model.gradient_calls == []


def test_stop_recording_block_is_not_recording():
    model = model_of(
        """
        import tensorflow as tf
        with tf.GradientTape() as tape:
            y = f(x)
            with tape.stop_recording():
                z = tape.gradient(y, x)
            w = tape.gradient(y, x)
        """
    )
    tape = model.tapes[0]
    stopped, recording = model.gradient_calls
    assert not is_recording(stopped.ctx, tape)
    assert is_recording(recording.ctx, tape)


def test_unrelated_with_and_non_tensorflow_tapes_are_ignored():
    model = model_of(
        """
        import torch
        class GradientTape:
            pass
        with open("f") as tape:
            tape.gradient(1, 2)
        with GradientTape() as tape:
            tape.gradient(1, 2)
        """
    )
    assert model.tapes == []
    assert model.tape_calls == []


def test_closure_sees_the_tape_bound_where_it_is_defined():
    model = model_of(
        """
        import tensorflow as tf
        def update(x):
            with tf.GradientTape() as tape:
                c = critic(x)
            cg = tape.gradient(c, critic.trainable_variables)
            with tf.GradientTape() as tape:
                a = actor(x)
            def apply_actor():
                ag = tape.gradient(a, actor.trainable_variables)
                return ag
            return tf.cond(flag, apply_actor, tf.no_op)
        """
    )
    first, second = model.tapes
    assert [c.tape for c in model.gradient_calls] == [first, second]


def test_function_defined_in_a_loop_has_one_scope():
    model = model_of(
        """
        for i in range(3):
            def f():
                return i
        """
    )
    assert len([s for s in model.scopes if not s.is_module]) == 1


def test_tape_stored_on_self_is_followed_like_a_name():
    model = model_of(
        """
        import tensorflow as tf
        class T:
            def step(self, x):
                self.tape = tf.GradientTape(persistent=True)
                with self.tape:
                    y = self.f(x)
                a = self.tape.gradient(y, x)
                del self.tape
        """
    )
    (tape,) = model.tapes
    assert tape.name == "self.tape"
    assert len(tape.blocks) == 1
    assert [c.method for c in model.calls_on(tape)] == ["gradient"]
    roles = [u.tape_role for u in model.uses_of_tape(tape)]
    assert roles == ["with", "gradient", "del"]
