"""A long editing session holds steady memory (issue 20): checking a document again and
again, as the language server does on every change, keeps no earlier check's trees."""

from __future__ import annotations

import gc

from tapelint.run.runner import Options, run_stdin
from tapelint.run.workspace import Project
from tapelint.semantic import FileModel
from tapelint.settings.config import Settings
from tests.cli_helpers import LOSS_OUTSIDE

CHECKS = 40


def _models_alive() -> int:
    gc.collect()
    return sum(isinstance(found, FileModel) for found in gc.get_objects())


def test_checking_a_changing_buffer_keeps_no_earlier_checks_model(project):
    settings = Settings(root=project)
    workspace = Project(settings, watch_disk=True)  # what the server keeps between checks
    before = _models_alive()
    for version in range(CHECKS):
        text = LOSS_OUTSIDE + f"\nsteps = {version}\n"
        result = run_stdin(
            text.encode(),
            str(project / "train.py"),
            settings,
            Options(force_exclude=True),
            workspace,
        )
        assert [d.code for d in result.report.diagnostics] == ["TAP101"]
    # A few may stay in small caches of the last files seen; not one per check.
    assert _models_alive() - before < CHECKS // 4
