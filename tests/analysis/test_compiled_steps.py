"""Compiled functions, training steps and loops; retracing; state built per step."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from tapelint.rules.compiled_steps._retracing import counter_arguments, creations_per_step

from tapelint.semantic.calls.steps import StepIndex, under_condition
from tests.analysis.helpers import code, model_of

HEADER = "import tensorflow as tf\n"

STEP = (
    "@tf.function\n"
    "def train_step(x, y, *extra):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = loss_fn(y, model(x, training=True))\n"
    "    return tape.gradient(loss, model.trainable_variables)\n"
)


def _dedent(source: str) -> str:
    return HEADER + textwrap.dedent(source)


# ---------------------------------------------------------------------- steps and loops
def _loops(source: str) -> dict[str, bool]:
    """Each loop of the module (by its header line) -> whether it is a training loop."""
    model = model_of(_dedent(source))
    index = StepIndex(model)
    answers: dict[str, bool] = {}
    for scope in model.scopes:
        for site in model.calls:
            for frame in site.ctx:
                if site.scope is scope and isinstance(frame.node, (cst.For, cst.While)):
                    header = code(model, frame.node).strip().split("\n", 1)[0]
                    answers[header] = index.is_training_loop(frame.node, scope)
    return answers


def test_a_loop_that_opens_a_tape_is_a_training_loop():
    assert _loops(
        """
        for x, y in ds:
            with tf.GradientTape() as tape:
                loss = f(model(x, training=True))
            opt.apply_gradients(g(tape, loss))
        """
    ) == {"for x, y in ds:": True}


def test_only_the_loop_that_runs_the_step_in_its_own_iteration_is_one():
    answers = _loops(
        STEP
        + textwrap.dedent(
            """
            for epoch in range(3):
                log(epoch)
                for x, y in ds:
                    train_step(x, y)
            """
        )
    )
    assert answers == {"for epoch in range(3):": False, "for x, y in ds:": True}


def test_a_function_whose_tape_is_in_its_own_loop_is_not_a_step():
    answers = _loops(
        """
        def train_model(model, ds):
            for x, y in ds:
                with tf.GradientTape() as tape:
                    loss = f(model(x, training=True))
                opt.apply_gradients(g(tape, loss))

        for fold in range(5):
            train_model(build(), ds)
        """
    )
    assert answers["for fold in range(5):"] is False


def test_steps_are_resolved_through_tf_function_wrapping_and_self():
    source = _dedent(
        """
        def step_fn(x):
            with tf.GradientTape() as tape:
                loss = f(x)
            return tape.gradient(loss, vs)

        compiled = tf.function(step_fn)

        class Trainer:
            @tf.function
            def train_step(self, x):
                self.optimizer.apply_gradients(pairs(x))

            def fit(self, ds):
                for x in ds:
                    self.train_step(x)

        for x in ds:
            compiled(x)
        """
    )
    model = model_of(source)
    index = StepIndex(model)
    callees = {
        code(model, site.node): [f.name.value for f in index.callees(site) or []]
        for site in model.calls
        if code(model, site.node) in ("compiled(x)", "self.train_step(x)")
    }
    assert callees == {"compiled(x)": ["step_fn"], "self.train_step(x)": ["train_step"]}
    (compiled_step,) = [
        s
        for s in model.scopes
        if isinstance(s.node, cst.FunctionDef) and s.node.name.value == "step_fn"
    ]
    assert index.is_compiled(compiled_step)


def test_unknown_callees_make_no_training_loop():
    assert _loops("for x in ds:\n    trainer.step(x)\n") == {"for x in ds:": False}


@pytest.mark.parametrize(
    ("body", "conditional"),
    [
        ("    if self.v is None:\n        self.v = make()\n", True),
        ("    if a:\n        pass\n    elif self.v is None:\n        self.v = make()\n", True),
        ("    try:\n        self.v = make()\n    except ValueError:\n        pass\n", False),
        ("    try:\n        pass\n    except ValueError:\n        self.v = make()\n", True),
        ("    with scope():\n        self.v = make()\n", False),
        ("    self.v = make()\n", False),
    ],
    ids=["if", "elif", "try-body", "except", "with", "plain"],
)
def test_under_condition(body, conditional):
    model = model_of(_dedent("def f(self):\n" + body))
    (site,) = [s for s in model.calls if code(model, s.node) == "make()"]
    assert under_condition(model, site.stmt, site.scope.node) is conditional


# ---------------------------------------------------------------------- retracing
def _counters(source: str) -> list[tuple[str, str]]:
    model = model_of(_dedent(source))
    index = StepIndex(model)
    return [(code(model, a.call), a.counter) for a in counter_arguments(model, index)]


@pytest.mark.parametrize(
    ("loop", "expected"),
    [
        ("for epoch in range(3):\n    train_step(x, y, epoch)\n", "epoch"),
        ("for i, (x, y) in enumerate(ds):\n    train_step(x, y, i)\n", "i"),
        ("n = 0\nfor x, y in ds:\n    train_step(x, y, n)\n    n += 1\n", "n"),
        ("for e in range(3):\n    lr = 0.1 * 0.9 ** e\n    train_step(x, y, lr)\n", "e"),
        ("for e in range(3):\n    train_step(x, y, f'epoch-{e}')\n", "e"),
        ("for e in range(3):\n    train_step(x, y, [x, float(e)])\n", "e"),
        ("for e in range(3):\n    for x, y in ds:\n        train_step(x, y, e)\n", "e"),
    ],
    ids=["range", "enumerate", "counter", "arithmetic", "f-string", "list", "outer-loop"],
)
def test_python_counters_passed_to_a_tf_function_are_found(loop, expected):
    assert _counters(STEP + loop) == [(code_line(loop), expected)]


def code_line(loop: str) -> str:
    return next(line.strip() for line in loop.splitlines() if "train_step(" in line)


@pytest.mark.parametrize(
    "loop",
    [
        "for epoch in range(3):\n    train_step(x, y, tf.constant(epoch))\n",
        "for x, y in ds:\n    train_step(x, y, True)\n",
        "lr = 0.1\nfor x, y in ds:\n    train_step(x, y, lr)\n",
        "for step, (x, y) in ds.enumerate():\n    train_step(x, y, step)\n",
        "n = tf.constant(0)\nfor x, y in ds:\n    train_step(x, y, n)\n    n += 1\n",
        "for e in range(3):\n    pass\ntrain_step(x, y, e)\n",
        "for lr in [0.1, 0.01]:\n    train_step(x, y, lr)\n",
        "for x, y in ds:\n    train_step(x, y, float(loss_of(x)))\n",
        "for e in range(3):\n    plain(x, y, e)\n",
    ],
    ids=[
        "tensor",
        "constant",
        "loop-invariant",
        "dataset-enumerate",
        "tensor-counter",
        "after-the-loop",
        "literal-sweep",
        "float-of-tensor",
        "plain-function",
    ],
)
def test_values_that_do_not_retrace_are_not_found(loop):
    assert _counters(STEP + "def plain(*a):\n    return a\n" + loop) == []


SAMPLER = (
    "@tf.function(jit_compile=True)\n"
    "def sample(state, *, num_draws):\n"
    "    draws = run_chain(num_draws, state)\n"
    "    return {use}\n"
)


@pytest.mark.parametrize(
    "use",
    [
        "draws[-num_draws // 2:]",
        "tf.stack([draws[i] for i in range(num_draws)])",
        "tf.zeros(shape=[num_draws, 3]) + draws",
    ],
    ids=["slice", "python-range", "shape-keyword"],
)
def test_python_values_that_set_a_shape_are_not_found(use):
    sweep = "for idx in range(4):\n    size = 25 * 2 ** idx\n    sample(s, num_draws=size)\n"
    assert _counters(SAMPLER.format(use=use) + sweep) == []


def test_python_values_used_otherwise_by_the_same_function_are_found():
    assert _counters(
        SAMPLER.format(use="kernel(draws, step_size=num_draws)")
        + "for idx in range(4):\n    sample(s, num_draws=idx)\n"
    ) == [("sample(s, num_draws=idx)", "idx")]
    sampler = SAMPLER.format(use="draws * tf.cast(num_draws, tf.float32)")
    sweep = "for idx in range(4):\n    size = 25 * 2 ** idx\n    sample(s, num_draws=size)\n"
    assert _counters(sampler + sweep) == [("sample(s, num_draws=size)", "idx")]
    positional = SAMPLER.format(use="draws[-num_draws // 2:]").replace(", *,", ",")
    shaped = "for idx in range(4):\n    sample(s, idx)\n"
    assert _counters(positional + shaped) == []
    assert _counters(positional + "for idx in range(4):\n    sample(idx, 5)\n") == [
        ("sample(idx, 5)", "idx")
    ]


def test_the_counter_of_a_written_out_sweep_is_not_found():
    assert _counters(STEP + "for i, lr in enumerate([0.1, 0.01]):\n    train_step(x, y, i)\n") == []
    assert _counters(STEP + "for i, x in enumerate(batches):\n    train_step(x, y, i)\n") == [
        ("train_step(x, y, i)", "i")
    ]


def test_input_signature_and_compiled_callers_are_not_found():
    signature = STEP.replace(
        "@tf.function\n", "@tf.function(input_signature=[tf.TensorSpec(None)] * 3)\n"
    )
    assert _counters(signature + "for e in range(3):\n    train_step(x, y, e)\n") == []
    traced = "@tf.function\ndef epoch(ds):\n    for i in range(3):\n        train_step(x, y, i)\n"
    assert _counters(STEP + traced) == []


def test_reduce_retracing_does_not_silence_python_values():
    relaxed = STEP.replace("@tf.function\n", "@tf.function(reduce_retracing=True)\n")
    assert _counters(relaxed + "for e in range(3):\n    train_step(x, y, e)\n") == [
        ("train_step(x, y, e)", "e")
    ]


def test_wrapped_definition_and_methods_are_followed():
    wrapped = STEP.replace("@tf.function\n", "") + "train_step = tf.function(train_step)\n"
    assert _counters(wrapped + "def main():\n    for e in range(3):\n        train_step(x, y, e)\n")
    method = (
        "class T:\n    @tf.function\n    def step(self, x, e):\n        return x\n"
        "    def fit(self, ds):\n        for e in range(3):\n            self.step(x, e)\n"
    )
    assert _counters(method) == [("self.step(x, e)", "e")]


def _creations(source: str) -> list[tuple[str, str | None]]:
    model = model_of(_dedent(source))
    index = StepIndex(model)
    return [(code(model, c.node), c.per_call_of) for c in creations_per_step(model, index)]


def test_function_created_in_the_loop_that_calls_it_is_found():
    assert _creations(
        "def plain(x):\n    return x\n"
        "for epoch in range(3):\n    step = tf.function(plain)\n"
        "    for x in ds:\n        step(x)\n"
    ) == [("tf.function(plain)", None)]


def test_decorated_step_in_a_loop_called_once_is_found():
    assert _creations(
        "for x in ds:\n    @tf.function\n    def step():\n"
        "        with tf.GradientTape() as tape:\n            loss = model(x)\n"
        "        return tape.gradient(loss, vs)\n    step()\n"
    ) == [("tf.function", None)]


def test_function_created_by_a_function_called_per_step_is_found():
    assert _creations(
        "def forward(x):\n    return model(x)\n"
        "def train_step(x):\n    return tf.function(forward)(x)\n"
        "for x in ds:\n    train_step(x)\n"
    ) == [("tf.function(forward)", "train_step")]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # cases computed at run time, and the call gives it nothing that changes per case
        (
            "for dtype in supported_dtypes():\n    tf.function(plain)(x)\n",
            ("tf.function(plain)", None),
        ),
        # a written-out sweep inside an epoch loop: created again every epoch
        (
            "for epoch in range(3):\n    for lr in [0.1, 0.01]:\n"
            "        step = tf.function(plain)\n        step(x)\n",
            ("tf.function(plain)", None),
        ),
        # a list of cases that grows in place is not written out
        (
            "cases = [1]\ncases.append(2)\nfor case in cases:\n    tf.function(plain)(case)\n",
            ("tf.function(plain)", None),
        ),
        # a training step compiled anew by the epoch function, called once per epoch
        (
            STEP.replace("@tf.function\n", "")
            + "def run_epoch(ds):\n    step = tf.function(train_step)\n"
            "    for x, y in ds:\n        step(x, y)\n"
            "for epoch in range(3):\n    run_epoch(ds)\n",
            ("tf.function(train_step)", "run_epoch"),
        ),
    ],
    ids=["computed-cases", "sweep-in-epoch-loop", "appended-cases", "step-per-epoch-call"],
)
def test_creations_that_look_like_cases_but_repeat_are_found(source, expected):
    assert _creations("import itertools\ndef plain(x):\n    return x\n" + source) == [expected]


@pytest.mark.parametrize(
    "source",
    [
        # once, before the loop
        "step = tf.function(plain)\nfor x in ds:\n    step(x)\n",
        # one per model, each run over the whole dataset
        "for m in models:\n    f = tf.function(m)\n    for x in ds:\n        f(x)\n",
        # a closure over the model of this fold, run many times
        "for fold in range(3):\n    m = build()\n    @tf.function\n    def f(x):\n"
        "        return m(x)\n    for x in ds:\n        f(x)\n",
        # one compiled variant per option value, each tried once
        "for jit in (True, False):\n    f = tf.function(plain, jit_compile=jit)\n    f(1)\n",
        "for jit in (True, False):\n    @tf.function(jit_compile=jit)\n    def f(x):\n"
        "        return x\n    f(1)\n",
        # stored, never called here
        "fs = {}\nfor name in names:\n    fs[name] = tf.function(plain)\n",
        # a factory: returns the function, called once per fold
        "def make():\n    @tf.function\n    def f(x):\n        return x\n    return f\n"
        "for fold in range(3):\n    step = make()\n",
        # created while an enclosing tf.function is traced
        "@tf.function\ndef outer(x):\n    for i in range(3):\n        x = tf.function(plain)(x)\n"
        "    return x\n",
        # graph building: a closure over this round's converter, outside any training step
        "def convert(converter, xs):\n    @tf.function\n    def f(*args):\n"
        "        return converter(args)\n    return f(*xs)\n"
        "while not done:\n    out = convert(Converter(), xs)\n",
        # a function that creates and calls it, called only once
        "def main():\n    return tf.function(plain)(1)\nmain()\n",
        # a sweep of test cases: one trace per case whatever happens
        "dtypes = [tf.float32, tf.float64]\ndims = [1, 2]\n"
        "for dtype, dim in itertools.product(dtypes, dims):\n"
        "    tf.function(plain, jit_compile=True)(dim)\n",
        # a computed list of cases, but each call gets the case's Python value
        "for dtype, dim in itertools.product(supported(), [1, 2, 3]):\n"
        "    tf.function(plain)(dtype, dim)\n",
        # a two-case loop building a new model for each case
        "for i, n in enumerate((10, 250)):\n    m = build(n)\n    tf.function(fit)(100, m)\n",
        # compiled once per call of a function that runs it over a whole dataset
        "def scores(ds, models):\n    @tf.function\n    def score(batch, ms):\n"
        "        return [m(batch) for m in ms]\n"
        "    return [score(batch, models) for batch in ds]\n"
        "for m in trained:\n    scores(ds, [m])\n",
    ],
    ids=[
        "before-loop",
        "per-model",
        "per-fold-closure",
        "per-option",
        "per-option-decorator",
        "stored",
        "factory",
        "traced",
        "graph-building",
        "called-once",
        "sweep",
        "case-value",
        "two-case-notebook-loop",
        "compiled-per-pass-over-data",
    ],
)
def test_creations_that_do_not_retrace_per_step_are_not_found(source):
    assert _creations("import itertools\ndef plain(x):\n    return x\n" + source) == []


def test_tf_function_assigned_to_an_attribute_is_followed():
    source = (
        "class T:\n    def __init__(self):\n        self.step = tf.function(self._step)\n"
        "    def _step(self, x, e):\n        with tf.GradientTape() as tape:\n"
        "            loss = f(x)\n        return tape.gradient(loss, vs)\n"
        "    def fit(self, ds):\n        for e in range(3):\n            self.step(x, e)\n"
    )
    assert _counters(source) == [("self.step(x, e)", "e")]
    model = model_of(_dedent(source))
    (call,) = [s for s in model.calls if code(model, s.node) == "self.step(x, e)"]
    assert [f.name.value for f in StepIndex(model).callees(call)] == ["_step"]
    # rebound elsewhere: which function runs is no longer known
    rebound = source + "    def eager(self):\n        self.step = self._step\n"
    assert _counters(rebound) == []


def test_function_stored_on_self_in_the_epoch_loop_is_found():
    assert _creations(
        "class T:\n    def _step(self, x):\n        return x\n"
        "    def fit(self, ds):\n        for epoch in range(3):\n"
        "            self.step = tf.function(self._step)\n"
        "            for x in ds:\n                self.step(x)\n"
    ) == [("tf.function(self._step)", None)]


def test_methods_called_on_an_instance_of_a_class_of_the_file_are_followed():
    source = (
        "class Agent:\n    def learn(self, x):\n"
        "        with tf.GradientTape() as tape:\n            loss = f(x)\n"
        "        return tape.gradient(loss, vs)\n"
        "    @tf.function\n    def act(self, x, t):\n        return x\n"
        "agent = Agent()\nfor t in range(10):\n    agent.act(x, t)\n    agent.learn(x)\n"
    )
    assert _counters(source) == [("agent.act(x, t)", "t")]
    model = model_of(_dedent(source))
    (call,) = [s for s in model.calls if code(model, s.node) == "agent.learn(x)"]
    assert [f.name.value for f in StepIndex(model).callees(call)] == ["learn"]
    # an instance of something else (or of two classes) is not followed
    unknown = source.replace("agent = Agent()", "agent = make_agent()")
    assert _counters(unknown) == []
