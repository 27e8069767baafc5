"""Put on PYTHONPATH by `tapelint validate`: start tapelint's probe in the user's program
before any user code runs, then run the `sitecustomize` this one shadows, if any.

The probe package is loaded by file path under a private name, so the program's interpreter
needs nothing from tapelint on its path and user code cannot import it by accident.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _start_probe() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    probe = os.path.join(os.path.dirname(here), "probe")
    spec = importlib.util.spec_from_file_location(
        "_tapelint_probe", os.path.join(probe, "__init__.py"), submodule_search_locations=[probe]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules["_tapelint_probe"] = package
    spec.loader.exec_module(package)
    importlib.import_module("_tapelint_probe.bootstrap").start()


def _run_shadowed_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _start_probe()
except Exception as error:  # the program must still run, and the parent will say why
    print(f"tapelint: instrumentation not started: {error}", file=sys.stderr)
_run_shadowed_sitecustomize()
