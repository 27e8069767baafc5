"""Python 3.11: put the exception handlers of `handlers311` into the watched code objects
as they are created, before any of their code runs.

- Modules: their loader's `get_code` (every source module is imported through
  `SourceFileLoader`) returns the copy with handlers.
- The main script: the interpreter compiles it itself, with no hook in between, and
  announces the code object with the `exec` audit event just before running it. An audit
  hook cannot swap the code object, so it runs the copy itself, in the `__main__` namespace
  the interpreter prepared (`sys.argv`, `sys.path[0]`, `__file__` all as usual), and then
  ends the interpreter's own `exec` the way the copy ended: `SystemExit` passes through
  (normal end: status 0), an uncaught exception is printed by `sys.excepthook` without this
  hook's frame and exits with status 1, as Python does. Only the interpreter's own run of
  the main script is taken over (no Python frame calls the hook): `python -m`, `runpy` and
  multiprocessing's re-import of the main module are left alone. The hook is marked
  `__cantrace__`, so debuggers and coverage tools still see the program.
"""

from __future__ import annotations

import functools
import importlib.machinery
import os
import sys
from types import CodeType
from typing import Any

from .handlers311 import add_handlers
from .lines311 import mark_lines
from .raises import Raises


def install(raises: Raises) -> None:
    loader = importlib.machinery.SourceFileLoader
    original_get_code = loader.get_code

    @functools.wraps(original_get_code)
    def get_code(self: Any, fullname: str) -> Any:
        code = original_get_code(self, fullname)
        return with_handlers(code, raises) if code is not None else code

    loader.get_code = get_code
    script = sys.argv[0] if sys.argv else ""
    if script and raises.lines_of(script):  # the main script has watched lines
        sys.addaudithook(_MainScript(raises))


def with_handlers(code: CodeType, raises: Raises) -> CodeType:
    """The code object with a mark at the start of its watched lines and handlers on them
    (itself when it has none)."""
    lines = raises.lines_of(code.co_filename)
    if not lines:
        return code
    path = code.co_filename
    try:
        code = mark_lines(code, lines.__contains__, raises.line_ran, lambda line: (path, line))
    except Exception as error:  # never stop the program: its lines go unmarked
        raises.recorder.probe_error(error)
    try:
        return add_handlers(code, lines.__contains__, raises.at_handler)
    except Exception as error:  # never stop the program: it runs unwatched
        raises.recorder.probe_error(error)
        return code


class _MainScript:
    __cantrace__ = True

    def __init__(self, raises: Raises) -> None:
        self.raises = raises
        self.done = False

    def __call__(self, event: str, args: tuple) -> None:
        if self.done or event != "exec" or not self._is_main_script(args[0]):
            return
        self.done = True
        code = args[0]
        watched = with_handlers(code, self.raises)
        if watched is code:
            return
        try:
            exec(watched, sys.modules["__main__"].__dict__)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as error:
            tb = error.__traceback__
            error.__traceback__ = tb.tb_next if tb is not None else None  # without this frame
            sys.excepthook(type(error), error, error.__traceback__)
            raise SystemExit(1) from None
        raise SystemExit(0)

    @staticmethod
    def _is_main_script(code: object) -> bool:
        if not isinstance(code, CodeType) or code.co_name != "<module>":
            return False
        if sys._getframe(1).f_back is not None:  # `exec` called from Python code
            return False
        main = sys.modules.get("__main__")
        filename = getattr(main, "__file__", None)
        return filename is not None and os.path.realpath(filename) == os.path.realpath(
            code.co_filename
        )
