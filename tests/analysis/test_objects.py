"""Which class an object a method is called on is an instance of, and how the call's
arguments are keyed (`calls.objects`, `calls.callees`)."""

from __future__ import annotations

import textwrap

import libcst as cst

from tapelint.semantic import FileModel, build_model
from tapelint.semantic.calls.callees import Callee, callee_of


def _callees(source: str, *, notebook: bool = False) -> dict[str, Callee | None]:
    text = textwrap.dedent(source)
    model: FileModel = build_model(
        cst.parse_module(text), source_text=text, module_name="pkg.mod", is_notebook=notebook
    )
    return {
        model.module.code_for_node(site.node): callee_of(model, site.node) for site in model.calls
    }


CLASSES = """
import tensorflow as tf
from pkg.acc import Accumulator


class Solver:
    def grad(self, x):
        return x

    @staticmethod
    def clip(grads, norm):
        return grads

    @classmethod
    def make(cls, grads):
        return grads
"""


def test_static_and_class_methods_are_keyed_by_how_they_are_called():
    found = _callees(
        CLASSES
        + """
    def run(self, grads):
        self.clip(grads, 1.0)
        Solver.clip(grads, 2.0)
        Solver.make(grads)
        Solver.grad(self, grads)
"""
    )
    assert found["self.clip(grads, 1.0)"] == Callee("pkg.mod.Solver.clip", bound=False)
    assert found["Solver.clip(grads, 2.0)"] == Callee("pkg.mod.Solver.clip", bound=False)
    assert found["Solver.make(grads)"] == Callee("pkg.mod.Solver.make", bound=True)
    assert found["Solver.grad(self, grads)"] == Callee("pkg.mod.Solver.grad", bound=False)


def test_an_annotated_parameter_is_open_to_subclasses_unless_one_here_overrides():
    found = _callees(
        CLASSES + "\n\ndef train(solver: Solver, acc: Accumulator):\n"
        "    solver.grad(1)\n    acc.apply(2)\n"
    )
    assert found["solver.grad(1)"] == Callee("pkg.mod.Solver+.grad", bound=True)
    assert found["acc.apply(2)"] == Callee("pkg.acc.Accumulator+.apply", bound=True)
    overridden = _callees(
        CLASSES + "\n\nclass Mine(Accumulator):\n    def apply(self, g):\n        return g\n\n\n"
        "def train(acc: Accumulator):\n    acc.apply(2)\n"
    )
    assert overridden["acc.apply(2)"] is None


def test_a_nested_function_parameter_every_call_passes_one_class():
    body = """

def fit(model):
    def step(solver):
        return solver.grad(1)

    step(Solver())
    step(solver=Solver())
"""
    assert _callees(CLASSES + body)["solver.grad(1)"] == Callee("pkg.mod.Solver.grad", bound=True)
    two = _callees(CLASSES + body + "    step(Accumulator())\n")
    assert two["solver.grad(1)"] is None
    escaped = _callees(CLASSES + body + "    return step\n")
    assert escaped["solver.grad(1)"] is None


def test_a_module_level_function_of_a_py_file_may_be_called_from_anywhere():
    body = "\n\ndef step(solver):\n    return solver.grad(1)\n\n\nstep(Solver())\n"
    assert _callees(CLASSES + body)["solver.grad(1)"] is None
    assert _callees(CLASSES + body, notebook=True)["solver.grad(1)"] == Callee(
        "pkg.mod.Solver.grad", bound=True
    )


def test_an_attribute_every_store_of_which_constructs_one_class():
    trainer = """

class Trainer:
    def __init__(self):
        self.acc = Accumulator()

    def step(self, grads):
        self.acc.apply(grads)
"""
    found = _callees(CLASSES + trainer)
    assert found["self.acc.apply(grads)"] == Callee("pkg.acc.Accumulator.apply", bound=True)
    for elsewhere in (
        "\n\ndef swap(trainer):\n    trainer.acc = Solver()\n",
        "\n\nsetattr(Trainer(), 'acc', Solver())\n",
        # A subclass's method runs on objects of `Trainer`'s kind too.
        "\n\nclass Sub(Trainer):\n    def __init__(self):\n        self.acc = Solver()\n",
        # A class with a base the module does not define might derive from `Trainer`.
        "\n\nclass Other(Base):\n    def __init__(self):\n        self.acc = Solver()\n",
    ):
        assert _callees(CLASSES + trainer + elsewhere)["self.acc.apply(grads)"] is None
    # An unrelated class's stores are about its own objects.
    unrelated = "\n\nclass Other:\n    def __init__(self):\n        self.acc = Solver()\n"
    found = _callees(CLASSES + trainer + unrelated)
    assert found["self.acc.apply(grads)"] == Callee("pkg.acc.Accumulator.apply", bound=True)
