"""Training state rebuilt by a repeated step, or created in compiled code (TAP502)."""

from __future__ import annotations

import textwrap

import pytest
from tapelint.rules.compiled_steps._constructors import StateKind
from tapelint.rules.compiled_steps._state_creation import Where, state_created_per_step

from tapelint.semantic.calls.steps import StepIndex
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\n"
CLASSES = (
    "class Head(tf.keras.layers.Layer):\n    def build(self, shape):\n"
    "        self.w = self.add_weight(shape=shape)\n"
    "class Base(tf.keras.Model):\n    pass\n"
    "class Net(Base):\n    pass\n"
    "class Sampling(tf.keras.layers.Layer):\n    def call(self, x):\n        return x\n"
)
# A loop that trains `model` (and `head`) with `opt`, both bound before it; `{inside}` may
# rebind either in the iteration.
TRAINING_LOOP = (
    "model = make_model()\nhead = make_head()\nopt = make_optimizer()\n"
    "for x, y in ds:\n{inside}"
    "    with tf.GradientTape() as tape:\n"
    "        loss = loss_fn(y, head(model(x, training=True)))\n"
    "    variables = model.trainable_variables + head.trainable_variables\n"
    "    grads = tape.gradient(loss, variables)\n"
    "    opt.apply_gradients(zip(grads, variables))\n"
)


def _state(source: str) -> list[tuple[str, StateKind, Where]]:
    model = model_of(HEADER + textwrap.dedent(source))
    index = StepIndex(model)
    return [(code(model, s.node), s.kind, s.where) for s in state_created_per_step(model, index)]


def _in_loop(inside: str) -> list[tuple[str, StateKind, Where]]:
    return _state(CLASSES + TRAINING_LOOP.format(inside=inside))


# ---------------------------------------------------------------------- training loops
@pytest.mark.parametrize(
    ("inside", "kind"),
    [
        ("    opt = tf.keras.optimizers.Adam(1e-3)\n", StateKind.OPTIMIZER),
        ("    opt = tf.optimizers.RMSprop()\n", StateKind.OPTIMIZER),
        ("    opt = tf.compat.v1.train.AdamOptimizer()\n", StateKind.OPTIMIZER),
        ("    opt = tf.keras.optimizers.SGD(0.1, momentum=0.9)\n", StateKind.OPTIMIZER),
        (
            "    opt = tf.keras.optimizers.SGD(\n"
            "        tf.keras.optimizers.schedules.ExponentialDecay(0.1, 100, 0.9))\n",
            StateKind.OPTIMIZER,
        ),
        ("    opt = tf.keras.optimizers.SGD(0.1, use_ema=True)\n", StateKind.OPTIMIZER),
        ("    model = tf.keras.Sequential([tf.keras.layers.Flatten()])\n", StateKind.MODEL),
        ("    model = tf.keras.applications.MobileNetV2()\n", StateKind.MODEL),
        ("    head = tf.keras.layers.Dense(10)\n", StateKind.LAYER),
        ("    head = Head()\n", StateKind.LAYER),
        ("    model = Net()\n", StateKind.MODEL),
    ],
    ids=[
        "keras",
        "tf-optimizers",
        "compat-v1-adam",
        "sgd-momentum",
        "sgd-schedule",
        "sgd-ema",
        "sequential",
        "application",
        "dense",
        "own-layer",
        "own-model",
    ],
)
def test_state_rebuilt_in_a_training_loop_while_the_rest_persists_is_found(inside, kind):
    assert [(k, w) for _, k, w in _in_loop(inside)] == [(kind, Where.LOOP)]


@pytest.mark.parametrize(
    "inside",
    [
        "    flat = tf.keras.layers.Flatten()\n",
        "    sampler = Sampling()\n",
        "    delta = tf.Variable(tf.zeros_like(x))\n",
        "    sched = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 100, 0.9)\n",
        "    mean = tf.keras.metrics.Mean()\n",
        "    if opt is None:\n        opt = tf.keras.optimizers.Adam()\n",
        "    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "    model.set_weights(teacher.get_weights())\n",
        "    opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)\n",
        "    opt = tf.keras.optimizers.SGD(0.01)\n",
        "    opt = tf.keras.optimizers.SGD(learning_rate=LR, momentum=0.0, nesterov=True)\n",
        "    opt = tf.keras.optimizers.SGD(lr)\n",
        "    with tf.init_scope():\n        opt = tf.keras.optimizers.Adam()\n",
        "    model = make_model()\n    head = make_head()\n    opt = tf.keras.optimizers.Adam()\n",
        "    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "    head = Head()\n    opt = tf.keras.optimizers.Adam()\n",
    ],
    ids=[
        "stateless-layer",
        "weightless-own-layer",
        "eager-variable",
        "schedule",
        "metric",
        "guarded",
        "copy",
        "v1-gradient-descent",
        "sgd",
        "sgd-constant-rate",
        "sgd-unknown-rate",
        "init-scope",
        "fresh-case-factory",
        "fresh-case-built",
    ],
)
def test_look_alikes_in_a_training_loop_are_not_found(inside):
    assert _in_loop(inside) == []


def test_an_optimizer_whose_variables_are_unknown_is_not_found():
    assert (
        _state(
            "for x, y in ds:\n    opt = tf.keras.optimizers.Adam()\n"
            "    with tf.GradientTape() as tape:\n        loss = f(x)\n"
            "    opt.apply_gradients(zip(tape.gradient(loss, get_vars()), get_vars()))\n"
            "    for i in range(3):\n        opt.apply_gradients(zip(g, models[i].trainable_variables))\n"
        )
        == []
    )


def test_test_cases_that_build_variables_and_optimizer_per_dtype_are_not_found():
    assert (
        _state(
            "for dtype in (tf.float32, tf.float64):\n"
            "    var = tf.Variable([1.0, 2.0], dtype=dtype)\n"
            "    opt = tf.keras.optimizers.Adam(0.1)\n"
            "    for _ in range(3):\n"
            "        with tf.GradientTape() as tape:\n            loss = tf.reduce_sum(var * var)\n"
            "        opt.apply_gradients([(tape.gradient(loss, var), var)])\n"
        )
        == []
    )
    # the same optimizer test, but the variable is created once for all dtypes
    assert [
        w
        for _, _, w in _state(
            "var = tf.Variable([1.0, 2.0])\nfor dtype in (tf.float32, tf.float64):\n"
            "    opt = tf.keras.optimizers.Adam(0.1)\n"
            "    with tf.GradientTape() as tape:\n        loss = tf.reduce_sum(var * var)\n"
            "    opt.apply_gradients([(tape.gradient(loss, var), var)])\n"
        )
    ] == [Where.LOOP]


def test_a_model_rebuilt_while_a_kept_gradient_descent_optimizer_applies_is_not_found():
    source = (
        "opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)\n"
        "for x, y in ds:\n    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "    with tf.GradientTape() as tape:\n        loss = f(model(x))\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    opt.apply_gradients(zip(grads, model.trainable_variables))\n"
    )
    assert _state(source) == []
    adam = source.replace("compat.v1.train.GradientDescentOptimizer", "keras.optimizers.Adam")
    assert [w for _, _, w in _state(adam)] == [Where.LOOP]


def test_pairs_built_by_a_helper_train_the_sources_of_the_gradient():
    found = _state(
        "model = make_model()\nfor x, y in ds:\n    opt = tf.keras.optimizers.Adam()\n"
        "    with tf.GradientTape() as tape:\n        loss = f(model(x))\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    opt.apply_gradients(keep_present(grads, model.trainable_variables))\n"
    )
    assert [w for _, _, w in found] == [Where.LOOP]


def test_layers_in_the_arguments_of_a_model_built_per_step_are_one_finding():
    found = _in_loop(
        "    model = tf.keras.Sequential([tf.keras.layers.Dense(4), tf.keras.layers.Dense(1)])\n"
    )
    assert [c for c, _, _ in found] == [
        "tf.keras.Sequential([tf.keras.layers.Dense(4), tf.keras.layers.Dense(1)])"
    ]


# ---------------------------------------------------------------------- loops around them
EPOCHS = (
    "{before}for {target} in {iterable}:\n{prelude}"
    "    opt = tf.keras.optimizers.Adam(1e-3)\n"
    "    for x, y in ds:\n"
    "        with tf.GradientTape() as tape:\n            loss = f(model(x, training=True))\n"
    "        grads = tape.gradient(loss, model.trainable_variables)\n"
    "        opt.apply_gradients(zip(grads, model.trainable_variables))\n"
)


def test_an_optimizer_rebuilt_per_epoch_for_a_kept_model_is_found():
    found = _state(
        EPOCHS.format(
            before="model = make_model()\n", target="epoch", iterable="range(10)", prelude=""
        )
    )
    assert [(k, w) for _, k, w in found] == [(StateKind.OPTIMIZER, Where.OUTER_LOOP)]


@pytest.mark.parametrize(
    ("before", "target", "iterable", "prelude"),
    [
        ("", "fold", "range(5)", "    model = make_model()\n"),
        ("", "model", "models", ""),
        ("model = make_model()\n", "lr", "(1e-3, 1e-4)", ""),
        (
            "model = make_model()\n",
            "stage",
            "range(3)",
            "    model.layers[stage].trainable = True\n",
        ),
    ],
    ids=["model-per-fold", "loop-over-models", "stages", "unfreezing"],
)
def test_outer_loops_that_start_a_new_case_or_stage_are_not_found(
    before, target, iterable, prelude
):
    assert (
        _state(EPOCHS.format(before=before, target=target, iterable=iterable, prelude=prelude))
        == []
    )


RUN = (
    "def train_epoch(model, ds):\n    opt = tf.keras.optimizers.Adam()\n    for x, y in ds:\n"
    "        with tf.GradientTape() as tape:\n            loss = f(model(x))\n"
    "        grads = tape.gradient(loss, model.trainable_variables)\n"
    "        opt.apply_gradients(zip(grads, model.trainable_variables))\n"
)


def test_a_function_that_rebuilds_its_optimizer_per_epoch_call_is_found():
    found = _state(
        RUN + "model = make_model()\nfor epoch in range(10):\n    train_epoch(model, ds)\n"
    )
    assert [(c, w) for c, _, w in found] == [("tf.keras.optimizers.Adam()", Where.RUN)]


@pytest.mark.parametrize(
    "calls",
    [
        "for model in models:\n    train_epoch(model, ds)\n",
        "for epoch in range(10):\n    train_epoch(make_model(), ds)\n",
        "model = make_model()\nfor lr in (0.1, 0.01):\n    train_epoch(model, ds)\n",
        "model = make_model()\ntrain_epoch(model, ds)\n",
    ],
    ids=["model-per-call", "fresh-argument", "not-counting", "called-once"],
)
def test_a_function_called_with_fresh_models_or_not_per_epoch_is_not_found(calls):
    assert _state(RUN + calls) == []


# ---------------------------------------------------------------------- step functions
STEP = (
    "model = make_model()\ndef train_step(x, y):\n    opt = tf.keras.optimizers.Adam()\n"
    "    with tf.GradientTape() as tape:\n        loss = f(model(x, training=True))\n"
    "    grads = tape.gradient(loss, model.trainable_variables)\n"
    "    opt.apply_gradients(zip(grads, model.trainable_variables))\n"
)


def test_state_in_a_step_function_called_in_a_loop_is_found():
    assert _state(STEP + "for x, y in ds:\n    train_step(x, y)\n") == [
        ("tf.keras.optimizers.Adam()", StateKind.OPTIMIZER, Where.STEP)
    ]
    assert _state(STEP + "train_step(x, y)\n") == []
    # a step function that builds its own model per call is a fresh case
    own = STEP.replace("opt = ", "model = make_model()\n    opt = ")
    assert _state(own + "for x, y in ds:\n    train_step(x, y)\n") == []


def test_parameters_are_read_at_the_calls_in_loops():
    step = (
        "def check_dtype(dtype, var):\n    opt = tf.keras.optimizers.Adam()\n"
        "    with tf.GradientTape() as tape:\n        loss = tf.reduce_sum(var * var)\n"
        "    opt.apply_gradients([(tape.gradient(loss, var), var)])\n"
    )
    fresh = "for dtype in dtypes:\n    check_dtype(dtype, tf.Variable(1.0, dtype=dtype))\n"
    assert _state(step + fresh) == []
    fresh_name = "for dtype in dtypes:\n    v = tf.Variable(1.0)\n    check_dtype(dtype, var=v)\n"
    assert _state(step + fresh_name) == []
    kept = "v = tf.Variable(1.0)\nfor dtype in dtypes:\n    check_dtype(dtype, v)\n"
    assert [w for _, _, w in _state(step + kept)] == [Where.STEP]


AGENT = (
    "class Agent:\n    def learn(self, x):\n        opt = tf.keras.optimizers.Adam()\n"
    "        with tf.GradientTape() as tape:\n            loss = f(self.q(x))\n"
    "        grads = tape.gradient(loss, self.q.trainable_variables)\n"
    "        opt.apply_gradients(zip(grads, self.q.trainable_variables))\n"
)


def test_methods_called_on_a_kept_instance_are_found():
    found = _state(AGENT + "agent = Agent()\nfor t in range(10):\n    agent.learn(x)\n")
    assert [(c, w) for c, _, w in found] == [("tf.keras.optimizers.Adam()", Where.STEP)]
    # a fresh agent per iteration trains a fresh network each time
    fresh = AGENT + "for t in range(10):\n    agent = Agent()\n    agent.learn(x)\n"
    assert _state(fresh) == []
    # an instance of something else (or of two classes) is not followed
    assert _state(AGENT + "agent = make_agent()\nfor t in range(10):\n    agent.learn(x)\n") == []
    # `self.q` rebuilt in the method itself is a fresh case
    rebuilt = AGENT.replace("opt = ", "self.q = make_q()\n        opt = ")
    assert _state(rebuilt + "agent = Agent()\nfor t in range(10):\n    agent.learn(x)\n") == []


def test_an_optimizer_passed_to_a_step_is_followed():
    source = (
        "model = make_model()\ndef step(optimizer, x):\n    with tf.GradientTape() as tape:\n        loss = f(model(x))\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
        "for x in ds:\n    opt = tf.keras.optimizers.Adam()\n    step(opt, x)\n"
    )
    assert [w for _, _, w in _state(source)] == [Where.LOOP]
    fresh = source.replace("    opt = ", "    model = make_model()\n    opt = ")
    assert _state(fresh) == []


# ---------------------------------------------------------------------- compiled code
def test_state_in_a_compiled_step_is_found_unless_guarded():
    found = _state(
        "@tf.function\ndef step(x):\n    v = tf.Variable(1.0)\n"
        "    opt = tf.keras.optimizers.Adam()\n    return v * x\n"
        "class M(tf.keras.Model):\n    @tf.function\n    def __call__(self, x):\n"
        "        if self.v is None:\n            self.v = tf.Variable(2.0)\n"
        "        return self.v * x\n"
        "    def train_step(self, data):\n        head = tf.keras.layers.Dense(1)\n"
        "        return head(data)\n"
    )
    assert found == [
        ("tf.Variable(1.0)", StateKind.VARIABLE, Where.COMPILED),
        ("tf.keras.optimizers.Adam()", StateKind.OPTIMIZER, Where.COMPILED),
        ("tf.keras.layers.Dense(1)", StateKind.LAYER, Where.COMPILED),
    ]


@pytest.mark.parametrize(
    "body",
    [
        "    m = tf.keras.Sequential([tf.keras.layers.Dense(3)])\n    return m(x)\n",
        "    m = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3)])\n",
        "    m = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(4,))])\n",
        "    m = tf.keras.Model(inputs, outputs)\n",
        "    m = tf.keras.applications.MobileNetV2(weights=None)\n",
        "    head = tf.keras.layers.Dense(3)\n    head.build((None, 4))\n",
        "    y = tf.keras.layers.Dense(3)(x)\n",
        "    head = tf.keras.layers.Dense(3)\n    net = tf.keras.Sequential([base, head])\n"
        "    return net(x)\n",
        "    self.head = tf.keras.layers.Dense(3)\n    return self.head(x)\n",
        "    opt = tf.keras.optimizers.SGD(0.1)\n",
        "    opt = tf.compat.v1.train.AdamOptimizer()\n    opt.apply_gradients(pairs)\n",
        "    v = tf.Variable(1.0)\n",
    ],
    ids=[
        "called",
        "input",
        "input-shape",
        "functional",
        "application",
        "build",
        "called-at-once",
        "part-of-a-called-model",
        "self-attribute",
        "keras-sgd",
        "v1-adam-applied",
        "variable",
    ],
)
def test_compiled_constructions_that_create_variables_are_found(body):
    source = "@tf.function\ndef f(self, x):\n" + body + "    return x\n"
    assert [w for _, _, w in _state(source)] == [Where.COMPILED]


@pytest.mark.parametrize(
    "body",
    [
        "    m = tf.keras.Sequential([tf.keras.layers.Dense(3)])\n",
        "    m = Net()\n    n = len(m.layers)\n",
        "    opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)\n    opt.apply_gradients(p)\n",
        "    opt = tf.compat.v1.train.AdamOptimizer()\n",
        "    with tf.init_scope():\n        v = tf.Variable(1.0)\n",
    ],
    ids=["unbuilt-model", "unbuilt-own-model", "v1-gradient-descent", "v1-unapplied", "init-scope"],
)
def test_compiled_constructions_that_create_nothing_are_not_found(body):
    assert _state(CLASSES + "@tf.function\ndef f(x):\n" + body + "    return x\n") == []


def test_an_own_model_whose_init_creates_variables_is_built_at_construction():
    source = (
        "class Scale(tf.keras.Model):\n    def __init__(self):\n        super().__init__()\n"
        "        self.s = tf.Variable(1.0)\n"
        "@tf.function\ndef f(x):\n    m = Scale()\n    return x\n"
    )
    assert [(c, w) for c, _, w in _state(source)] == [("Scale()", Where.COMPILED)]


def test_a_method_compiled_through_self_attribute_is_a_compiled_step():
    found = _state(
        "class T:\n    def __init__(self):\n        self.step = tf.function(self._step)\n"
        "    def _step(self, x):\n        opt = tf.keras.optimizers.Adam()\n        return x\n"
    )
    assert [(c, w) for c, _, w in found] == [("tf.keras.optimizers.Adam()", Where.COMPILED)]


# ---------------------------------------------------------------------- graph building
V1_LOOP = TRAINING_LOOP.format(inside="    opt = tf.compat.v1.train.AdamOptimizer()\n")


def test_the_loop_outside_a_graph_is_found():
    assert [w for _, _, w in _state(V1_LOOP)] == [Where.LOOP]


@pytest.mark.parametrize(
    "source",
    [
        "with tf.Graph().as_default():\n" + textwrap.indent(V1_LOOP, "    "),
        "graph = tf.Graph()\nwith graph.as_default():\n" + textwrap.indent(V1_LOOP, "    "),
        "tf.compat.v1.disable_eager_execution()\n" + V1_LOOP,
        "import tensorflow_federated as tff\n"
        "@tff.tf_computation\ndef init():\n    v = tf.Variable(1.0)\n"
        "    opt = tf.keras.optimizers.Adam()\n    return v\n",
        "import tensorflow_federated as tff\n"
        "@tff.tf_computation\n@tf.function\ndef init():\n    v = tf.Variable(1.0)\n    return v\n",
        "def init():\n    v = tf.Variable(1.0)\n    return v\n"
        "graph_init = tf.compat.v1.wrap_function(init, [])\n",
    ],
    ids=[
        "graph-default",
        "graph-name",
        "graph-mode-file",
        "tff",
        "tff-tf-function",
        "wrap-function",
    ],
)
def test_code_that_builds_a_graph_once_is_not_found(source):
    assert _state(source) == []


def test_a_graph_name_bound_to_something_else_is_no_graph():
    source = "writer = make_writer()\nwith writer.as_default():\n" + textwrap.indent(
        TRAINING_LOOP.format(inside="    opt = tf.keras.optimizers.Adam()\n"), "    "
    )
    assert [w for _, _, w in _state(source)] == [Where.LOOP]


def test_a_compiled_function_called_only_where_an_error_is_expected_is_not_found():
    function = "@tf.function\ndef f(x):\n    v = tf.Variable(1.0)\n    return v * x\n"
    for expecting in ("pytest.raises(ValueError)", "self.assertRaisesRegex(ValueError, 'x')"):
        assert _state(function + f"with {expecting}:\n    f(1.0)\n") == []
    also_called = function + "with pytest.raises(ValueError):\n    f(1.0)\nf(2.0)\n"
    assert [w for _, _, w in _state(also_called)] == [Where.COMPILED]
    assert [w for _, _, w in _state(function)] == [Where.COMPILED]


def test_a_model_rebuilt_per_case_for_a_kept_optimizer_is_found_in_any_loop():
    source = (
        "opt = tf.keras.optimizers.Adam()\nfor train_ds in folds:\n"
        "    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "    for x, y in train_ds:\n"
        "        with tf.GradientTape() as tape:\n            loss = f(model(x))\n"
        "        grads = tape.gradient(loss, model.trainable_variables)\n"
        "        opt.apply_gradients(zip(grads, model.trainable_variables))\n"
    )
    assert [(k, w) for _, k, w in _state(source)] == [(StateKind.MODEL, Where.OUTER_LOOP)]
    # with its own optimizer per fold, it is a fresh case
    own = source.replace("opt = tf.keras.optimizers.Adam()\n", "").replace(
        "    for x, y", "    opt = tf.keras.optimizers.Adam()\n    for x, y"
    )
    assert _state(own) == []
