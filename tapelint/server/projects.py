"""The project index the server checks documents with: one `tapelint.project.Project` per
configuration, kept between checks.

A `Project` holds the summaries of the modules a check needed, and the text of the open
documents it was given: so a helper module edited in the editor is seen as its buffer, not
as the file on disk, and a module changed on disk (a `git checkout`) is read again when its
modification time changed. Documents are parsed through one `IncrementalParser`: after an
edit, only the top-level statements whose text changed are parsed again, and findings in
the others are placed with the positions of the last check (`PositionMemory`). It is used
from the checking thread only, as it must be.
"""

from __future__ import annotations

import os

from tapelint.parsing.incremental import IncrementalParser
from tapelint.parsing.positions import PositionMemory
from tapelint.run.workspace import Project
from tapelint.settings.config import Settings


class Projects:
    def __init__(self) -> None:
        self._projects: dict[Settings, Project] = {}
        # One for all projects: a document checked again after a change of settings still
        # reuses the parse of its statements and their positions.
        self.parser = IncrementalParser()
        self._positions = PositionMemory()

    def for_settings(self, settings: Settings) -> Project:
        """The project a document with these settings is checked in; a change of settings
        (a new configuration, the editor's select/ignore) starts a new one."""
        project = self._projects.get(settings)
        if project is None:
            project = Project(
                settings, watch_disk=True, parser=self.parser, positions=self._positions
            )
            self._projects[settings] = project
        return project

    def closed(self, path: str) -> None:
        """A document was closed: its file on disk stands for it again."""
        for project in self._projects.values():
            project.drop_source(os.path.realpath(path))

    def dependents(self, settings: Settings, path: str) -> set[str]:
        """The files (real paths) whose last check used the module at `path`."""
        project = self._projects.get(settings)
        return project.dependents(os.path.realpath(path)) if project is not None else set()
