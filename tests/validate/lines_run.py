"""Run a script plainly under `sys.settrace` and print, as JSON, the lines of it that ran:
an oracle independent of the probe (tests/validate/test_runtime_fixtures.py)."""

import json
import os
import runpy
import sys

script = os.path.realpath(sys.argv[1])
ran: set[int] = set()


def trace(frame, event, arg):
    if os.path.realpath(frame.f_code.co_filename) != script:
        return None
    if event == "line":
        ran.add(frame.f_lineno)
    return trace


sys.argv = sys.argv[1:]
sys.settrace(trace)
try:
    runpy.run_path(script, run_name="__main__")
except BaseException:  # the fixture's own failure: the lines that ran until then count
    pass
finally:
    sys.settrace(None)
    sys.__stderr__.write("LINES-RUN " + json.dumps(sorted(ran)) + "\n")
