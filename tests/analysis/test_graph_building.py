"""Code that builds a graph once, and code lifted out by `tf.init_scope` (TAP502)."""

from __future__ import annotations

import textwrap

import pytest
from tapelint.rules.compiled_steps._graph_building import GraphBuilding

from tests.analysis.helpers import code, model_of


def _answers(source: str) -> tuple[bool, bool]:
    """(builds_graph, lifted) for the call `target(...)` in `source`."""
    model = model_of("import tensorflow as tf\n" + textwrap.dedent(source))
    graph = GraphBuilding(model)
    (site,) = [s for s in model.calls if code(model, s.node) == "target()"]
    return graph.builds_graph(site), graph.lifted(site)


@pytest.mark.parametrize(
    "source",
    [
        "with tf.Graph().as_default():\n    for i in range(3):\n        target()\n",
        "g = tf.compat.v1.Graph()\nwith g.as_default(), tf.device('/cpu:0'):\n    target()\n",
        "with tf.Graph().as_default():\n    def f():\n        target()\n",
        "import tensorflow_federated as tff\n@tff.tf_computation\ndef f():\n    target()\n",
        "import tensorflow_federated as tff\n"
        "@tff.tensorflow.computation(tf.int32)\ndef f(x):\n    g = lambda: target()\n",
        "import tensorflow_federated as tff\ndef f():\n    target()\nc = tff.tf_computation(f)\n",
        "def f():\n    target()\nw = tf.compat.v1.wrap_function(f, [])\n",
        "def main():\n    target()\ntf.compat.v1.disable_eager_execution()\n",
    ],
    ids=[
        "graph-default",
        "graph-name",
        "nested-function",
        "tff-decorator",
        "tff-lambda-inside",
        "tff-call",
        "wrap-function",
        "graph-mode-file",
    ],
)
def test_graph_building(source):
    assert _answers(source) == (True, False)


@pytest.mark.parametrize(
    "source",
    [
        "for i in range(3):\n    target()\n",
        "writer = tf.summary.create_file_writer('logs')\nwith writer.as_default():\n    target()\n",
        "g = make_graph()\nwith g.as_default():\n    target()\n",
        "@tf.function\ndef f():\n    target()\n",
    ],
    ids=["eager", "summary-writer", "unknown-graph", "tf-function"],
)
def test_eager_code_builds_no_graph(source):
    assert _answers(source) == (False, False)


def test_init_scope_lifts():
    source = (
        "@tf.function\ndef f():\n    with tf.init_scope():\n        if ok:\n            target()\n"
    )
    assert _answers(source) == (False, True)
    assert _answers(source.replace("tf.init_scope()", "tf.name_scope('x')")) == (False, False)
