"""Package layouts that once sent the project index into endless recursion: every run over
them ends, with no internal error, and the other files' findings printed (issue 20, item 1).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.cli_helpers import LOSS_OUTSIDE, run_cli, write

# A training step that calls a helper the package re-exports from a module it does not hold.
STEP = textwrap.dedent(
    """\
    import tensorflow as tf
    from pkg import compute


    def step(model, x, opt):
        with tf.GradientTape() as tape:
            loss = compute(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    """
)

LAYOUTS = {
    # The module the star import names is not in the project (a C extension).
    "star import of a missing module": {"pkg/__init__.py": "from ._native import *\n"},
    # The same, the package itself mentioning a tape (so it is analysed, not only read).
    "analysed package": {
        "pkg/__init__.py": "import tensorflow as tf\nfrom ._native import *\nT = tf.GradientTape\n"
    },
    # Two modules star-importing each other, neither defining the name.
    "star import cycle": {
        "pkg/__init__.py": "from .a import *\n",
        "pkg/a.py": "from .b import *\n",
        "pkg/b.py": "from .a import *\nfrom ._gone import *\n",
    },
    # A re-export whose target re-exports through the package again.
    "re-export loop": {
        "pkg/__init__.py": "from .impl import compute\n",
        "pkg/impl/__init__.py": "from pkg import compute\nfrom ._native import *\n",
    },
}


@pytest.fixture(params=sorted(LAYOUTS), ids=lambda name: name.replace(" ", "-"))
def layout(request, project):
    for relative, text in LAYOUTS[request.param].items():
        write(project, relative, text)
    write(project, "pkg/train.py", STEP)
    write(project, "loose.py", LOSS_OUTSIDE)
    return project


@pytest.mark.parametrize("cache", [["--no-cache"], []], ids=["no-cache", "cache"])
def test_a_package_layout_never_ends_the_run(layout, cache):
    for _ in range(2):  # cold, then warm when cached
        result = run_cli("check", *cache, ".")
        assert "internal error" not in result.stderr
        assert result.exit_code == 1, result.stderr
        assert ("loose.py", "TAP101") in result.codes()
        assert ("pkg/train.py", "TAP401") in result.codes()


def test_flake8_checks_a_file_of_such_a_layout_without_a_traceback(layout):
    process = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "TAP", "pkg/train.py"],
        cwd=layout,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in process.stderr
    assert process.returncode == 1, process.stderr
    assert "pkg/train.py:9:5: TAP401 " in process.stdout
